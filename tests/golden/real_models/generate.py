#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Golden logits of the real model TinyStories-656K (raincandy-u, Apache-2.0) from an independent
PyTorch forward written here in plain torch (HF LlamaForCausalLM's arithmetic: RMSNorm, rotate_half
RoPE, GQA, SwiGLU, tied head), for tests/engine/real_models_test.cpp. The model itself is never
committed: it is read from $LATENTAUDIT_MODELS (default ../shared/models from the repo root).

The CSV is kept small: for each reported position, the row's logit scale (max |logit| over the
whole vocabulary, token_id -1) and the logits of 18 ids (every 128th id and the row's top two).
Run from the repo root with Debian's python3-torch:
  /usr/bin/python3 tests/golden/real_models/generate.py
"""
import json
import os
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
MODELS = os.environ.get("LATENTAUDIT_MODELS") or os.path.join(ROOT, "..", "shared", "models")
MODEL = os.path.join(MODELS, "tinystories-656k")


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        assert meta["dtype"] == "F32", meta["dtype"]
        b, e = meta["data_offsets"]
        arr = np.frombuffer(data[8 + n + b:8 + n + e], dtype="<f4").reshape(meta["shape"])
        out[name] = torch.from_numpy(arr.copy()).double()  # f64: the golden values' own error is negligible
    return out


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(cfg, w, tokens):
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads", H)
    hd = cfg.get("head_dim", d // H)
    eps, theta = cfg["rms_norm_eps"], cfg["rope_theta"]
    emb_w = w.get("model.embed_tokens.weight", w.get("lm_head.weight"))  # tied: only lm_head is stored
    T = len(tokens)
    x = emb_w[torch.tensor(tokens)]
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(T, H, hd).transpose(0, 1)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(T, Hkv, hd).transpose(0, 1)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(T, Hkv, hd).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(H // Hkv, dim=0)
        v = v.repeat_interleave(H // Hkv, dim=0)
        att = torch.softmax((q @ k.transpose(-1, -2)) / (hd ** 0.5) + mask, dim=-1)
        o = (att @ v).transpose(0, 1).reshape(T, H * hd)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        x = x + (torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T) * (h @ w[p + "mlp.up_proj.weight"].T)) \
            @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = emb_w if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    return x @ head.T


def greedy_ids(vocab, text):
    """Longest-match segmentation of '▁' + text into vocabulary ids (valid ids of real text; the
    exact BPE segmentation is the tokenizer tests' business, not this one's)."""
    s, out, i = "\u2581" + text.replace(" ", "\u2581"), [], 0
    while i < len(s):
        j = max(j for j in range(i + 1, len(s) + 1) if s[i:j] in vocab)
        out.append(vocab[s[i:j]])
        i = j
    return out


def main():
    cfg = json.load(open(os.path.join(MODEL, "config.json")))
    w = load_safetensors(os.path.join(MODEL, "model.safetensors"))
    vocab = json.load(open(os.path.join(MODEL, "tokenizer.json"), encoding="utf-8"))["model"]["vocab"]
    seqs = [[1] + greedy_ids(vocab, "Once upon a time, there was a little girl named Lily. She had a dog named Max."),
            [1] + greedy_ids(vocab, "The sun")]
    report = [(0, p) for p in range(len(seqs[0]) - 8, len(seqs[0]))] + [(1, p) for p in range(len(seqs[1]))]
    logits = [forward(cfg, w, s) for s in seqs]
    with open(os.path.join(HERE, "tokens.txt"), "w") as f:
        f.write("\n".join(",".join(map(str, s)) for s in seqs) + "\n")
    with open(os.path.join(HERE, "tinystories656k_logits.csv"), "w") as f:
        f.write("seq,pos,token_id,logit\n")
        for s, p in report:
            row = logits[s][p]
            f.write(f"{s},{p},-1,{float(row.abs().max()):.9g}\n")
            ids = sorted(set(range(0, row.numel(), 128)) | set(torch.topk(row, 2).indices.tolist()))
            for t in ids:
                f.write(f"{s},{p},{t},{float(row[t]):.9g}\n")


if __name__ == "__main__":
    main()
