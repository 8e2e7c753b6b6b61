#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An independent PyTorch implementation of HF LlamaForCausalLM's forward pass (float32), used to
write golden logits for the C++ reference engine. It reads an HF model directory (config.json +
model.safetensors in F32/F16/BF16) without the transformers or safetensors packages.

Run with Debian's interpreter (the pyenv python3 first on PATH has no torch):
  /usr/bin/python3 tools/organism/reference.py MODEL_DIR --tokens 1,2,3 [--tokens ...] --out FILE.csv
The CSV has one row per (sequence, position): sequence index, position, then the logits.
"""
import argparse
import json
import struct
import sys

import numpy as np
import torch


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = meta["data_offsets"]
        raw = data[base + begin:base + end]
        shape = meta["shape"]
        if meta["dtype"] == "F32":
            arr = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        elif meta["dtype"] == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif meta["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            raise SystemExit(f"unsupported dtype {meta['dtype']} for {name}")
        out[name] = torch.from_numpy(arr.reshape(shape).copy())
    return out


def rms_norm(x, w, eps):
    # HF LlamaRMSNorm: hidden.float(); variance = mean(x^2); x * rsqrt(var + eps); weight * x
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(cfg, w, tokens):
    d = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads", H)
    hd = cfg.get("head_dim", d // H)
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = cfg.get("rope_theta", 10000.0)
    T = len(tokens)
    x = w["model.embed_tokens.weight"][torch.tensor(tokens)]
    # HF LlamaRotaryEmbedding (default rope type)
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    pos = torch.arange(T, dtype=torch.float32)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.full((T, T), float("-inf")).triu(1)
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
        att = (q @ k.transpose(-1, -2)) / (hd ** 0.5) + mask
        att = torch.softmax(att, dim=-1)
        o = (att @ v).transpose(0, 1).reshape(T, H * hd)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        u = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    return x @ head.T


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model")
    ap.add_argument("--tokens", action="append", required=True, help="comma-separated token ids; repeatable")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    with open(f"{a.model}/config.json") as f:
        cfg = json.load(f)
    w = load_safetensors(f"{a.model}/model.safetensors")
    with open(a.out, "w") as f:
        for s, text in enumerate(a.tokens):
            tokens = [int(t) for t in text.split(",")]
            logits = forward(cfg, w, tokens)
            for p in range(len(tokens)):
                f.write(",".join([str(s), str(p)] + [repr(float(v)) for v in logits[p]]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
