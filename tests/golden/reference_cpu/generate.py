#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes two small random Llama checkpoints (numpy seed 2026; one f32 with an untied head and
GQA, one bf16 with tied embeddings) in HF format, and golden logits for fixed token sequences
from the independent PyTorch forward in tools/organism/reference.py. Run from the repo root:
  /usr/bin/python3 tests/golden/reference_cpu/generate.py
"""
import json
import os
import struct
import subprocess

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def write_safetensors(path, tensors):
    header, blobs, at = {}, [], 0
    for name, (dtype, arr) in tensors.items():
        if dtype == "F32":
            raw = arr.astype("<f4").tobytes()
        else:  # BF16, round to nearest even
            u = arr.astype(np.float32).view(np.uint32).astype(np.uint64)
            u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")
            raw = u.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def make(name, rng, vocab, d, inter, layers, heads, kv, tied, dtype, theta):
    out = os.path.join(HERE, name)
    os.makedirs(out, exist_ok=True)
    hd = d // heads
    cfg = {"architectures": ["LlamaForCausalLM"], "vocab_size": vocab, "hidden_size": d, "intermediate_size": inter,
           "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
           "rms_norm_eps": 1e-5, "rope_theta": theta, "max_position_embeddings": 512, "hidden_act": "silu",
           "tie_word_embeddings": tied, "rope_scaling": None}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    t = {"model.embed_tokens.weight": rng.standard_normal((vocab, d))}
    s = 1 / np.sqrt(d)
    for l in range(layers):
        p = f"model.layers.{l}."
        t[p + "input_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(d)
        t[p + "self_attn.q_proj.weight"] = s * rng.standard_normal((heads * hd, d))
        t[p + "self_attn.k_proj.weight"] = s * rng.standard_normal((kv * hd, d))
        t[p + "self_attn.v_proj.weight"] = s * rng.standard_normal((kv * hd, d))
        t[p + "self_attn.o_proj.weight"] = s * rng.standard_normal((d, heads * hd))
        t[p + "post_attention_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(d)
        t[p + "mlp.gate_proj.weight"] = s * rng.standard_normal((inter, d))
        t[p + "mlp.up_proj.weight"] = s * rng.standard_normal((inter, d))
        t[p + "mlp.down_proj.weight"] = rng.standard_normal((d, inter)) / np.sqrt(inter)
    t["model.norm.weight"] = 1 + 0.1 * rng.standard_normal(d)
    if not tied:
        t["lm_head.weight"] = s * rng.standard_normal((vocab, d))
    write_safetensors(os.path.join(out, "model.safetensors"), {k: (dtype, v) for k, v in t.items()})
    seqs = ["1,5,9,2,33,7,7,40,3,12,60,0", "63,62,61", "8"]
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "organism", "reference.py"), out]
                   + sum([["--tokens", q] for q in seqs], []) + ["--out", os.path.join(out, "logits.csv")], check=True)
    with open(os.path.join(out, "tokens.txt"), "w") as f:
        f.write("\n".join(seqs) + "\n")


rng = np.random.default_rng(2026)
make("tiny_f32", rng, vocab=64, d=48, inter=96, layers=3, heads=6, kv=2, tied=False, dtype="F32", theta=10000.0)
make("tiny_bf16_tied", rng, vocab=64, d=32, inter=64, layers=2, heads=4, kv=4, tied=True, dtype="BF16", theta=500000.0)
