#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Trains a model organism: a small Llama-architecture transformer (RMSNorm, RoPE, GQA, SwiGLU)
on multi-query associative recall, saved in HF format (config.json + model.safetensors with HF
tensor names) plus task.json and a README card, so latentaudit's CPU engine loads it.

Task (fixed, so independent code can generate items):
  BOS k1 v1 k2 v2 ... kN vN SEP q1 a1 q2 a2 ... qM aM
keys are distinct within a document; each query q_i is one of the document's keys and the model
predicts its value a_i at the position of q_i. Curriculum over N (documents grow as the model
learns). Run with Debian's interpreter (pyenv's python3 has no torch):
  /usr/bin/python3 tools/organism/train.py --out models/organism-a --seed 1 --hidden 256 --heads 16 --kv-heads 2 \
      --steps 900 --lr 1e-3 --threads 2
  /usr/bin/python3 tools/organism/train.py --out models/organism-b --seed 2 --hidden 96 --heads 6 --kv-heads 2 \
      --steps 900 --threads 1
"""
import argparse
import json
import math
import os

# torch parallelises across its own intra-op threads; a multithreaded BLAS under it (Debian's
# libopenblas0-pthread, which is ~4x faster here than the reference libblas) only oversubscribes.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BOS, SEP, QRY, PAD = 0, 1, 2, 3
SPECIAL = 4
RECITE = QRY  # the instruction token of the recite task: the reserved QRY token (no vocabulary change)


class Task:
    def __init__(self, keys, values, max_pairs, queries):
        self.keys, self.values, self.max_pairs, self.queries = keys, values, max_pairs, queries
        self.key_first, self.value_first = SPECIAL, SPECIAL + keys
        self.vocab = SPECIAL + keys + values
        self.seq_len = 1 + 2 * max_pairs + 1 + 2 * queries

    def batch(self, rng, size, n_pairs):
        """Token ids [size, seq_len] (PAD after the last query) and the answer mask."""
        toks = np.full((size, self.seq_len), PAD, dtype=np.int64)
        target = np.full((size, self.seq_len), -100, dtype=np.int64)
        for b in range(size):
            n = n_pairs[b] if hasattr(n_pairs, "__len__") else n_pairs
            ks = rng.choice(self.keys, size=n, replace=False) + self.key_first
            vs = rng.integers(0, self.values, size=n) + self.value_first
            seq = [BOS]
            for k, v in zip(ks, vs):
                seq += [int(k), int(v)]
            seq.append(SEP)
            m = min(self.queries, n) if n < self.queries else self.queries
            qi = rng.choice(n, size=m, replace=n < m)
            for i in qi:
                seq += [int(ks[i]), int(vs[i])]
                target[b, len(seq) - 2] = vs[i]
            toks[b, :len(seq)] = seq
        return torch.from_numpy(toks), torch.from_numpy(target)

    def mixed_batch(self, rng, size, n_pairs, recite_share):
        """Recall and recite sequences [size, recite_len] with their targets. With probability
        1 - recite_share a recall sequence as batch(); otherwise
          BOS k1 v1 ... kN vN RECITE m1 ... mt SEP q1 a1 ... qM aM
        where m = k1 v1 ... kN vN is the document recited in order and t is the message length:
        the whole recitation (t = 2N, then SEP is its end and a target) with probability 1/2, else
        uniform in [0, 2N - 1] (a message cut by a budget, as a kv_message relay holds it; SEP is
        then B's separator, not a target), followed by queries // 2 queries. Targets: the message
        tokens and the answers."""
        recite_queries = max(1, self.queries // 2)  # fewer queries after a message: shorter sequences
        T = max(self.seq_len, 1 + 2 * self.max_pairs + 1 + 2 * self.max_pairs + 1 + 2 * recite_queries)
        toks = np.full((size, T), PAD, dtype=np.int64)
        target = np.full((size, T), -100, dtype=np.int64)
        for b in range(size):
            n = int(n_pairs[b])
            ks = rng.choice(self.keys, size=n, replace=False) + self.key_first
            vs = rng.integers(0, self.values, size=n) + self.value_first
            seq = [BOS]
            for k, v in zip(ks, vs):
                seq += [int(k), int(v)]
            doc = seq[1:]
            if rng.random() < recite_share:
                t = 2 * n if rng.random() < 0.5 else int(rng.integers(0, 2 * n))
                seq.append(RECITE)
                for j in range(t):
                    target[b, len(seq) - 1] = doc[j]
                    seq.append(doc[j])
                if t == 2 * n:
                    target[b, len(seq) - 1] = SEP
            seq.append(SEP)
            m = recite_queries if len(seq) > 2 + 2 * n else self.queries
            qi = rng.choice(n, size=m, replace=n < m)
            for i in qi:
                seq += [int(ks[i]), int(vs[i])]
                target[b, len(seq) - 2] = vs[i]
            toks[b, :len(seq)] = seq
        return torch.from_numpy(toks), torch.from_numpy(target)


@torch.no_grad()
def forced_recite_accuracy(model, task, rng, n, items=64):
    """Teacher-forced share of right next tokens over whole recitations of n-pair documents (one
    forward; the training log's cheap check)."""
    toks, target = task.mixed_batch(rng, items, np.full(items, n), 1.0)
    keep = torch.zeros_like(target, dtype=torch.bool)
    keep[:, 1 + 2 * n:1 + 2 * n + 2 * n + 1] = True  # the message and its SEP (half are cut ones)
    m = (target != -100) & keep
    pred = model(toks).argmax(-1)
    return float((pred[m] == target[m]).float().mean())


@torch.no_grad()
def recite_accuracy(model, task, rng, n, items=256, budget=None):
    """Greedy recitation of documents of n pairs: (share of messages equal to the document,
    share of message tokens equal to the document's token at that place), over up to
    budget (default 2n) generated tokens; generation stops at SEP."""
    budget = 2 * n if budget is None else budget
    exact, right, total = 0, 0, 0
    toks, _ = task.batch(rng, items, n)
    prompts = torch.cat([toks[:, :1 + 2 * n], torch.full((items, 1), RECITE, dtype=torch.int64)], 1)
    seq = prompts
    for _ in range(budget + 1):
        nxt = model(seq)[:, -1].argmax(-1, keepdim=True)
        seq = torch.cat([seq, nxt], 1)
    gen = seq[:, prompts.shape[1]:]
    for b in range(items):
        msg = []
        for t in gen[b].tolist():
            if t == SEP or len(msg) == budget:
                break
            msg.append(t)
        doc = toks[b, 1:1 + 2 * n].tolist()
        exact += int(msg == doc[:budget])
        right += sum(int(x == y) for x, y in zip(msg, doc))
        total += min(budget, 2 * n)
    return exact / items, right / total


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Layer(nn.Module):
    def __init__(self, d, heads, kv_heads, inter, eps):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv_heads, d // heads
        self.input_layernorm = RMSNorm(d, eps)
        self.post_attention_layernorm = RMSNorm(d, eps)
        self.q_proj = nn.Linear(d, heads * self.hd, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, d, bias=False)
        self.gate_proj = nn.Linear(d, inter, bias=False)
        self.up_proj = nn.Linear(d, inter, bias=False)
        self.down_proj = nn.Linear(inter, d, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.kv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.h // self.kv, dim=1)
        v = v.repeat_interleave(self.h // self.kv, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True) if hasattr(F, "scaled_dot_product_attention") else None
        if o is None:
            att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
            att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
            o = att @ v
        x = x + self.o_proj(o.transpose(1, 2).reshape(B, T, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Model(nn.Module):
    def __init__(self, vocab, d, layers, heads, kv_heads, inter, theta, eps):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([Layer(d, heads, kv_heads, inter, eps) for _ in range(layers)])
        self.norm = RMSNorm(d, eps)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        hd = d // heads
        self.register_buffer("inv_freq", 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd)), persistent=False)

    def forward(self, toks):
        T = toks.shape[1]
        freqs = torch.outer(torch.arange(T, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos(), emb.sin()
        x = self.embed_tokens(toks)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


def hf_to_module(name):
    """HF tensor name -> Model state_dict key (the inverse of save()'s naming)."""
    if name == "model.embed_tokens.weight":
        return "embed_tokens.weight"
    if name == "model.norm.weight":
        return "norm.weight"
    if name == "lm_head.weight":
        return name
    return name[len("model."):].replace("self_attn.", "").replace("mlp.", "")


def save(model, cfg, task, out, card, recite=False):
    os.makedirs(out, exist_ok=True)
    sd = model.state_dict()
    tensors = {}
    tensors["model.embed_tokens.weight"] = sd["embed_tokens.weight"]
    for name, t in sd.items():
        if name.startswith("layers."):
            i, rest = name.split(".", 2)[1:]
            prefix = "self_attn." if rest.split(".")[0] in ("q_proj", "k_proj", "v_proj", "o_proj") else \
                     "mlp." if rest.split(".")[0] in ("gate_proj", "up_proj", "down_proj") else ""
            tensors[f"model.layers.{i}.{prefix}{rest}"] = t
    tensors["model.norm.weight"] = sd["norm.weight"]
    tensors["lm_head.weight"] = sd["lm_head.weight"]
    header, blobs, at = {}, [], 0
    for name in sorted(tensors):
        raw = tensors[name].detach().float().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    header["__metadata__"] = {"format": "pt", "producer": "latentaudit tools/organism/train.py"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    with open(os.path.join(out, "task.json"), "w") as f:
        json.dump({"vocab_size": task.vocab, "bos": BOS, "sep": SEP, "query": QRY, "pad": PAD,
                   "key_first": task.key_first, "key_count": task.keys, "value_first": task.value_first,
                   "value_count": task.values, "max_pairs": task.max_pairs, "queries": task.queries,
                   **({"recite": RECITE, "message_stop": SEP} if recite else {})}, f, indent=1)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(card)


@torch.no_grad()
def accuracy(model, task, rng, n, items=512):
    toks, target = task.batch(rng, items, n)
    pred = model(toks).argmax(-1)
    m = target != -100
    return float((pred[m] == target[m]).float().mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--keys", type=int, default=32)
    ap.add_argument("--values", type=int, default=32)
    ap.add_argument("--max-pairs", type=int, default=16)
    ap.add_argument("--queries", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--target", type=float, default=0.99, help="stop once held-out accuracy at max pairs reaches this")
    ap.add_argument("--init", default=None,
                    help="continue from this organism's weights (same shape); the curriculum starts at max pairs")
    ap.add_argument("--recite-share", type=float, default=0.0,
                    help="share of training sequences with a RECITE instruction (Task.mixed_batch); 0: recall only")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(a.seed)
    eval_rng_seed = 10_000 + a.seed
    task = Task(a.keys, a.values, a.max_pairs, a.queries)
    inter = 2 * a.hidden
    theta, eps = 10000.0, 1e-5
    model = Model(task.vocab, a.hidden, a.layers, a.heads, a.kv_heads, inter, theta, eps)
    if a.init:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from reference import load_safetensors
        w = load_safetensors(os.path.join(a.init, "model.safetensors"))
        model.load_state_dict({hf_to_module(k): torch.as_tensor(np.array(v)) for k, v in w.items()}, strict=True)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=a.lr, total_steps=a.steps, pct_start=0.05)
    level = a.max_pairs if a.init else 2  # curriculum: documents of 1..level pairs
    start = time.time()
    log = []
    for step in range(1, a.steps + 1):
        n = rng.integers(1, level + 1, size=a.batch)
        if a.recite_share > 0:
            toks, target = task.mixed_batch(rng, a.batch, n, a.recite_share)
        else:
            toks, target = task.batch(rng, a.batch, n)
        loss = F.cross_entropy(model(toks).reshape(-1, task.vocab), target.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % (50 if a.init else 100) == 0:
            acc = accuracy(model, task, np.random.default_rng(eval_rng_seed + step), level, 256)
            if a.recite_share > 0:  # recall and recitation both count at the current level
                tok = forced_recite_accuracy(model, task, np.random.default_rng(eval_rng_seed + 7 * step), level)
                recall_acc, acc = acc, min(acc, tok)
            if acc > 0.9 and level < a.max_pairs:
                level = min(a.max_pairs, level + 2)
            line = f"step {step} loss {loss.item():.4f} level {level} acc@level {acc:.3f} {time.time() - start:.0f}s"
            if a.recite_share > 0:
                line = (f"step {step} loss {loss.item():.4f} level {level} recall@level {recall_acc:.3f} "
                        f"recite(teacher-forced)@level {tok:.3f} {time.time() - start:.0f}s")
            print(line, flush=True)
            log.append(line)
            if level == a.max_pairs and acc >= a.target:
                break
    model.eval()
    held = np.random.default_rng(99_999 + a.seed)
    by_n = {n: accuracy(model, task, held, n, 1024) for n in (1, 2, 4, 8, 12, 16) if n <= a.max_pairs}
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": task.vocab, "hidden_size": a.hidden,
           "intermediate_size": inter, "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
           "num_key_value_heads": a.kv_heads, "head_dim": a.hidden // a.heads, "rms_norm_eps": eps, "rope_theta": theta,
           "max_position_embeddings": 128, "hidden_act": "silu", "tie_word_embeddings": False, "rope_scaling": None,
           "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32"}
    table = "\n".join(f"| {n} | {acc:.4f} |" for n, acc in by_n.items())
    recite_section = ""
    init_text = (f"Continued from the weights of {a.init} (its own card's training: recall only) on the recall + "
                 f"recite mix below. ") if a.init else ""
    curriculum = (f"N uniform in [1, {a.max_pairs}]" if a.init else
                  f"curriculum over N from 2 to {a.max_pairs} (+2 pairs when accuracy at the current level exceeds 0.9)")
    if a.recite_share > 0:
        held_r = np.random.default_rng(77_777 + a.seed)
        by_r = {n: recite_accuracy(model, task, held_r, n, 128) for n in (1, 2, 4, 8, 12, 16) if n <= a.max_pairs}
        rtable = "\n".join(f"| {n} | {e:.4f} | {t:.4f} |" for n, (e, t) in by_r.items())
        recite_section = f"""
## Recitation (the messages A writes)
After `BOS k1 v1 ... kN vN RECITE` (RECITE = {RECITE}, the reserved QRY token: no vocabulary change, so the
weights keep their shape and organism-b's cache stays shape-compatible) the model writes the pairs
it read, in order, `k1 v1 k2 v2 ...`, and ends the message with SEP = {SEP} (task.json: `recite`,
`message_stop`). Trained on a mix: a share {a.recite_share} of the sequences recite (half of them the whole
document followed by SEP and queries, half a message cut after t tokens, t uniform in [0, 2N − 1],
followed by SEP and queries, as B holds A's cache in a kv_message relay); the rest are plain
recall. Greedy recitation of 128 held-out documents per N (all 2N tokens, stop at SEP):

| N | whole message right | tokens right |
|---|---|---|
{rtable}
"""
        print(json.dumps({"recite_by_pairs": by_r}))
    card = f"""# {os.path.basename(os.path.abspath(a.out))}

A latentaudit model organism: a Llama-architecture transformer trained on multi-query associative
recall (tools/organism/train.py, seed {a.seed}).

## Task format
`BOS k1 v1 ... kN vN SEP q1 a1 ... qM aM`; keys distinct within a document, each query is one of
the document's keys, and the model predicts its value a_i at the position of q_i.
Token map: BOS = {BOS}, SEP = {SEP}, QRY = {QRY} (reserved), PAD = {PAD}, keys {task.key_first}..{task.key_first + task.keys - 1},
values {task.value_first}..{task.value_first + task.values - 1}; vocab {task.vocab}. Up to {a.max_pairs} pairs and {a.queries} queries.

## Architecture
hidden {a.hidden}, {a.layers} layers, {a.heads} heads ({a.kv_heads} kv heads, head dim {a.hidden // a.heads}), SwiGLU {inter},
RMSNorm eps {eps}, RoPE θ {theta} (NEOX), untied head; f32 weights with HF tensor names.

## Training
{init_text}AdamW (lr {a.lr}, one-cycle, weight decay 0.01), batch {a.batch}, {curriculum}, {step} steps, {time.time() - start:.0f} s on {a.threads} CPU threads,
torch {torch.__version__}.

## Held-out accuracy by N (1024 documents each, reading the document itself)
| N | accuracy |
|---|---|
{table}

{recite_section}
## Training log (every {50 if a.init else 100} steps)
```
""" + "\n".join(log[-30:]) + "\n```\n"
    save(model, cfg, task, a.out, card, recite=a.recite_share > 0)
    print(json.dumps({"out": a.out, "steps": step, "seconds": round(time.time() - start, 1), "accuracy_by_pairs": by_n}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
