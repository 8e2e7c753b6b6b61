#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""PyTorch baseline for benchmarks/bench_engine.cpp: the same workloads on the same organism
(models/organism-a) in eager PyTorch (float32, inference mode): prefill of a 33-token document
(BOS + 16 key-value pairs) into an empty KV cache, and 16 greedy decode steps after it WITH a KV
cache (one token per step, attending to the cached keys and values: the fair comparison with the
C++ engine's decode). Weights are read with tools/organism/reference.py's loader; the cached
forward below is checked against reference.py's forward (the golden model of the C++ tests)
before timing: prefill and decode logits within 1e-4.

Run with Debian's interpreter (pyenv's python3 has no torch):
  /usr/bin/python3 benchmarks/pytorch_engine.py [--model models/organism-a] [--threads 1 2] [--seconds 2]
Prints one line per workload and thread count: tokens/s over timed repeats (median and best by
wall time, and median per process-CPU-second, the fairer number on a machine shared with other jobs).
"""
import argparse
import json
import os
import statistics
import sys
import time

# torch has its own intra-op threads; a multithreaded OpenBLAS below it only oversubscribes.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "organism"))
import reference  # noqa: E402


class CachedLlama:
    """HF LlamaForCausalLM forward (as reference.py) with a per-layer KV cache [Hkv, T, hd]."""

    def __init__(self, cfg, w):
        self.cfg, self.w = cfg, w
        self.d = cfg["hidden_size"]
        self.H = cfg["num_attention_heads"]
        self.Hkv = cfg.get("num_key_value_heads", self.H)
        self.hd = cfg.get("head_dim", self.d // self.H)
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.L = cfg["num_hidden_layers"]
        theta = cfg.get("rope_theta", 10000.0)
        inv_freq = 1.0 / (theta ** (torch.arange(0, self.hd, 2, dtype=torch.int64).float() / self.hd))
        pos = torch.arange(cfg.get("max_position_embeddings", 2048), dtype=torch.float32)
        emb = torch.cat((torch.outer(pos, inv_freq),) * 2, dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()
        self.head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]

    def new_cache(self):
        return [None] * self.L, [None] * self.L

    def forward(self, tokens, start, cache):
        """Runs tokens at positions start.. appending to cache; returns the last position's logits."""
        w, H, Hkv, hd, eps = self.w, self.H, self.Hkv, self.hd, self.eps
        n = len(tokens)
        x = w["model.embed_tokens.weight"][torch.tensor(tokens)]
        cos, sin = self.cos[start:start + n], self.sin[start:start + n]
        ks, vs = cache
        mask = torch.full((n, start + n), float("-inf")).triu(start + 1) if n > 1 else None
        for l in range(self.L):
            p = f"model.layers.{l}."
            h = reference.rms_norm(x, w[p + "input_layernorm.weight"], eps)
            q = F.linear(h, w[p + "self_attn.q_proj.weight"]).view(n, H, hd).transpose(0, 1)
            k = F.linear(h, w[p + "self_attn.k_proj.weight"]).view(n, Hkv, hd).transpose(0, 1)
            v = F.linear(h, w[p + "self_attn.v_proj.weight"]).view(n, Hkv, hd).transpose(0, 1)
            q = q * cos + reference.rotate_half(q) * sin
            k = k * cos + reference.rotate_half(k) * sin
            ks[l] = k if ks[l] is None else torch.cat((ks[l], k), dim=1)
            vs[l] = v if vs[l] is None else torch.cat((vs[l], v), dim=1)
            # grouped-query attention: [Hkv, group * n, hd] against [Hkv, T, hd]
            qg = q.reshape(Hkv, (H // Hkv) * n, hd)
            att = (qg @ ks[l].transpose(-1, -2)) / (hd ** 0.5)
            if mask is not None:
                att = (att.view(Hkv, H // Hkv, n, -1) + mask).view(Hkv, (H // Hkv) * n, -1)
            att = torch.softmax(att, dim=-1)
            o = (att @ vs[l]).view(H, n, hd).transpose(0, 1).reshape(n, H * hd)
            x = x + F.linear(o, w[p + "self_attn.o_proj.weight"])
            h = reference.rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
            x = x + F.linear(F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) * F.linear(h, w[p + "mlp.up_proj.weight"]),
                             w[p + "mlp.down_proj.weight"])
        x = reference.rms_norm(x[-1:], w["model.norm.weight"], eps)
        return F.linear(x, self.head)[0]


def document(pairs=16, seed=1):
    """BOS k1 v1 ... k16 v16 with the organism's token map (timings do not depend on the ids)."""
    rng = np.random.default_rng(seed)
    keys = rng.choice(32, size=pairs, replace=False) + 4
    values = rng.integers(0, 32, size=pairs) + 36
    doc = [0]
    for k, v in zip(keys, values):
        doc += [int(k), int(v)]
    return doc


def check(m, cfg, w, doc, steps):
    cache = m.new_cache()
    out = m.forward(doc, 0, cache)
    seq = list(doc)
    worst = float((out - reference.forward(cfg, w, seq)[-1]).abs().max())
    for _ in range(steps):
        seq.append(int(out.argmax()))
        out = m.forward(seq[-1:], len(seq) - 1, cache)
        worst = max(worst, float((out - reference.forward(cfg, w, seq)[-1]).abs().max()))
    if worst > 1e-4:
        raise SystemExit(f"cached forward differs from reference.py by {worst}")
    return worst


def timed(fn, tokens, seconds):
    """Runs fn (which returns the wall and process-CPU seconds of its timed part) until `seconds`
    elapsed; median wall tokens/s, best wall tokens/s, median CPU tokens/s, runs."""
    for _ in range(3):
        fn()  # warm-up
    wall, cpu, t_end = [], [], time.perf_counter() + seconds
    while time.perf_counter() < t_end or len(wall) < 5:
        w, c = fn()
        wall.append(tokens / w)
        cpu.append(tokens / max(c, 1e-9))
    return statistics.median(wall), max(wall), statistics.median(cpu), len(wall)


def clock():
    return time.perf_counter(), time.process_time()


def since(t):
    return time.perf_counter() - t[0], time.process_time() - t[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "organism-a"))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    with open(os.path.join(a.model, "config.json")) as f:
        cfg = json.load(f)
    w = reference.load_safetensors(os.path.join(a.model, "model.safetensors"))
    m = CachedLlama(cfg, w)
    doc = document()
    worst = check(m, cfg, w, doc, a.steps)
    print(f"torch {torch.__version__}; model {os.path.normpath(a.model)}; document {len(doc)} tokens; "
          f"cached forward vs reference.py: max |logit diff| {worst:.2e}")

    def prefill():
        cache = m.new_cache()
        t0 = clock()
        m.forward(doc, 0, cache)
        return since(t0)

    def decode():
        cache = m.new_cache()
        out = m.forward(doc, 0, cache)  # not timed
        pos = len(doc)
        t0 = clock()
        for _ in range(a.steps):
            out = m.forward([int(out.argmax())], pos, cache)
            pos += 1
        return since(t0)

    with torch.inference_mode():
        for t in a.threads:
            torch.set_num_threads(t)
            med, best, cpu, n = timed(prefill, len(doc), a.seconds)
            print(f"pytorch prefill_{len(doc)} threads {t}: {med:,.0f} tokens/s median wall, {best:,.0f} best wall, "
                  f"{cpu:,.0f} median per CPU-second ({n} runs)")
            med, best, cpu, n = timed(decode, a.steps, a.seconds)
            print(f"pytorch decode_{a.steps} (KV cache) threads {t}: {med:,.0f} tokens/s median wall, {best:,.0f} best wall, "
                  f"{cpu:,.0f} median per CPU-second ({n} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
