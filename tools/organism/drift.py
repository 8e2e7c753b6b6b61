#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Drifted partners for the audit's drift arms: organism-a fine-tuned for k steps on a changed
task, saved as small overlays that the C++ reference engine applies on top of organism-a.

Changed task: a remapped value vocabulary. A fixed derangement pi of the value tokens (seeded);
documents are as before (BOS k1 v1 ... kN vN SEP q1 a1 ...), but the answer to a query is
pi(value) instead of the value. Only the parameters that write the sender's cache are trained —
the token embeddings and layer 0's attention (norm, q, k, v, o projections) — with layer 1, the
final norm and the head frozen, so the remap has to be learned in the representations a relay
carries (a model free to retrain its head could learn the remap in the head alone, leaving its
cache readable by the original model, and plant no drift). Levels are checkpoints of
one fine-tuning run (fixed seed): the overlay of level k holds the trained tensors after k steps,
in f32 (exact, so the C++ engine computes the same model).

For each level it measures, on 1024 held-out documents (N in 2, 4, ..., 16, 128 each, one query):
accuracy on its own changed task, on the original task, and relay accuracy: organism-a answering
the original task from the drifted model's cache of the document (the audit's kv_drift_<k> arm).

  /usr/bin/python3 tools/organism/drift.py --base models/organism-a --out models/organism-a-drift \\
      --levels 5,10,20,300 --batch 16 --lr 1e-3 --seed 1 --threads 2

Writes OUT/steps-<k>.safetensors, OUT/drift.json (the manifest the CLI reads: base, levels,
overlay files, the permutation, measured accuracies) and prints the measurements as JSON.
"""
import argparse
import json
import math
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import BOS, SEP, Model, Task, rotate_half  # noqa: E402
from reference import load_safetensors  # noqa: E402

TRAINED_PREFIXES = ("model.embed_tokens.", "model.layers.0.input_layernorm.", "model.layers.0.self_attn.")


def hf_to_module(name):
    """HF tensor name -> train.Model state_dict key."""
    if name == "model.embed_tokens.weight":
        return "embed_tokens.weight"
    if name == "model.norm.weight":
        return "norm.weight"
    if name == "lm_head.weight":
        return name
    rest = name[len("model."):]
    return rest.replace("self_attn.", "").replace("mlp.", "")


def load_model(base):
    with open(os.path.join(base, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(base, "task.json")) as f:
        tj = json.load(f)
    model = Model(cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"],
                  cfg["num_key_value_heads"], cfg["intermediate_size"], cfg["rope_theta"], cfg["rms_norm_eps"])
    w = load_safetensors(os.path.join(base, "model.safetensors"))
    sd = {hf_to_module(k): torch.as_tensor(np.array(v)) for k, v in w.items()}
    model.load_state_dict(sd, strict=True)
    task = Task(tj["key_count"], tj["value_count"], tj["max_pairs"], tj["queries"])
    return model, task, cfg, w


def remap_targets(target, task, pi):
    """Answers pi(value) where the target is a value token."""
    t = target.clone()
    m = t != -100
    t[m] = torch.as_tensor(pi)[t[m] - task.value_first] + task.value_first
    return t


def remap_batch(toks, target, task, pi):
    """The changed task's sequences: answer tokens in the query section and targets remapped."""
    t2 = remap_targets(target, task, pi)
    toks = toks.clone()
    ans = torch.zeros_like(target, dtype=torch.bool)
    ans[:, 1:] = target[:, :-1] != -100  # the answer token follows its query position
    shifted = torch.full_like(t2, -100)
    shifted[:, 1:] = t2[:, :-1]
    toks[ans] = shifted[ans]
    return toks, t2


def layer_kv(layer, h, cos, sin):
    B, T, _ = h.shape
    x = layer.input_layernorm(h)
    k = layer.k_proj(x).view(B, T, layer.kv, layer.hd).transpose(1, 2)
    v = layer.v_proj(x).view(B, T, layer.kv, layer.hd).transpose(1, 2)
    return k * cos + rotate_half(k) * sin, v


def layer_forward(layer, x, cos, sin, kv_override=None, n_doc=0):
    """train.Layer.forward, optionally with the first n_doc positions' k, v replaced (a relay)."""
    B, T, _ = x.shape
    h = layer.input_layernorm(x)
    q = layer.q_proj(h).view(B, T, layer.h, layer.hd).transpose(1, 2)
    k = layer.k_proj(h).view(B, T, layer.kv, layer.hd).transpose(1, 2)
    v = layer.v_proj(h).view(B, T, layer.kv, layer.hd).transpose(1, 2)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    if kv_override is not None:
        k = torch.cat((kv_override[0][:, :, :n_doc], k[:, :, n_doc:]), 2)
        v = torch.cat((kv_override[1][:, :, :n_doc], v[:, :, n_doc:]), 2)
    k = k.repeat_interleave(layer.h // layer.kv, dim=1)
    v = v.repeat_interleave(layer.h // layer.kv, dim=1)
    att = (q @ k.transpose(-1, -2)) / math.sqrt(layer.hd)
    att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
    o = att @ v
    x = x + layer.o_proj(o.transpose(1, 2).reshape(B, T, -1))
    h = layer.post_attention_layernorm(x)
    return x + layer.down_proj(F.silu(layer.gate_proj(h)) * layer.up_proj(h))


def rope(model, T):
    freqs = torch.outer(torch.arange(T, dtype=torch.float32), model.inv_freq)
    emb = torch.cat((freqs, freqs), -1)
    return emb.cos(), emb.sin()


@torch.no_grad()
def relay_logits(sender, receiver, toks, n_doc):
    """The receiver's logits when the first n_doc positions' cache comes from the sender."""
    cos, sin = rope(receiver, toks.shape[1])
    xs = sender.embed_tokens(toks[:, :n_doc])
    cs, ss = cos[:n_doc], sin[:n_doc]
    kvs = []
    for layer in sender.layers:
        kvs.append(layer_kv(layer, xs, cs, ss))
        xs = layer_forward(layer, xs, cs, ss)
    x = receiver.embed_tokens(toks)
    for layer, kv in zip(receiver.layers, kvs):
        x = layer_forward(layer, x, cos, sin, kv, n_doc)
    return receiver.lm_head(receiver.norm(x))


def eval_docs(task, seed, per_n):
    """Held-out documents with one query: (n, tokens [per_n, 1+2n+2], value index of the answer)."""
    rng = np.random.default_rng(seed)
    out = []
    for n in range(2, task.max_pairs + 1, 2):
        toks = np.zeros((per_n, 1 + 2 * n + 2), dtype=np.int64)
        ans = np.zeros(per_n, dtype=np.int64)
        for b in range(per_n):
            ks = rng.choice(task.keys, size=n, replace=False) + task.key_first
            vs = rng.integers(0, task.values, size=n)
            seq = [BOS]
            for k, v in zip(ks, vs):
                seq += [int(k), int(v) + task.value_first]
            i = rng.integers(0, n)
            seq += [SEP, int(ks[i])]
            toks[b] = seq
            ans[b] = vs[i]
        out.append((n, torch.from_numpy(toks), torch.from_numpy(ans)))
    return out


@torch.no_grad()
def measure(model, base, task, pi, docs):
    own = orig = relay = total = 0
    for n, toks, ans in docs:
        pred = model(toks)[:, -1, task.value_first:task.value_first + task.values].argmax(-1)
        own += int((pred == torch.as_tensor(pi)[ans]).sum())
        orig += int((pred == ans).sum())
        rl = relay_logits(model, base, toks, 1 + 2 * n)[:, -1, task.value_first:task.value_first + task.values]
        relay += int((rl.argmax(-1) == ans).sum())
        total += len(ans)
    return {"changed_task": own / total, "original_task": orig / total, "relay_into_base": relay / total}


def save_overlay(path, weights, model, steps):
    sd = model.state_dict()
    header, blobs, at = {}, [], 0
    for name in sorted(weights):
        if not name.startswith(TRAINED_PREFIXES):
            continue
        raw = sd[hf_to_module(name)].detach().float().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(weights[name].shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    header["__metadata__"] = {"format": "pt", "producer": "latentaudit tools/organism/drift.py",
                              "base": "organism-a", "steps": str(steps)}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="models/organism-a")
    ap.add_argument("--out", default="models/organism-a-drift")
    ap.add_argument("--levels", default="5,10,20,300", help="fine-tuning steps of the saved levels")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-per-n", type=int, default=128, help="held-out documents per N in 2, 4, ..., 16")
    ap.add_argument("--scan", type=int, default=0, help="also measure every SCAN steps (not saved)")
    ap.add_argument("--from", dest="from_dir", default="",
                    help="measure the overlays of an earlier run (same seed and options) instead of training")
    ap.add_argument("--train-all", action="store_true",
                    help="train every parameter, head included (a comparison; writes nothing)")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    levels = sorted({int(x) for x in a.levels.split(",")})
    model, task, cfg, weights = load_model(a.base)
    base, _, _, _ = load_model(a.base)
    base.eval()
    rng = np.random.default_rng(a.seed)
    pi = rng.permutation(task.values)
    while np.any(pi == np.arange(task.values)):  # a derangement: every value changes meaning
        pi = rng.permutation(task.values)
    for name, p in model.named_parameters():
        hf = [k for k in weights if hf_to_module(k) == name][0]
        p.requires_grad_(a.train_all or hf.startswith(TRAINED_PREFIXES))
    if a.from_dir:
        remeasure(a, model, base, task, pi, weights, levels)
        return 0
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.0)
    docs = eval_docs(task, 77_777 + a.seed, a.eval_per_n)
    results = [{"steps": 0, **measure(model, base, task, pi, docs)}]
    print(json.dumps(results[-1]), flush=True)
    if not a.train_all:
        os.makedirs(a.out, exist_ok=True)
    start = time.time()
    model.train()
    for step in range(1, levels[-1] + 1):
        n = rng.integers(1, task.max_pairs + 1, size=a.batch)
        toks, target = task.batch(rng, a.batch, n)
        toks, target = remap_batch(toks, target, task, pi)
        loss = F.cross_entropy(model(toks).reshape(-1, task.vocab), target.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if step in levels or (a.scan and step % a.scan == 0):
            model.eval()
            r = {"steps": step, "loss": round(float(loss), 4), **measure(model, base, task, pi, docs),
                 "seconds": round(time.time() - start, 1)}
            model.train()
            print(json.dumps(r), flush=True)
            if step in levels:
                if not a.train_all:
                    save_overlay(os.path.join(a.out, f"steps-{step}.safetensors"), weights, model, step)
                    r["overlay"] = f"steps-{step}.safetensors"
                    r["overlay_bytes"] = os.path.getsize(os.path.join(a.out, r["overlay"]))
                results.append(r)
    if a.train_all:
        return 0
    write_manifest(a, task, pi, weights, results)
    return 0


def remeasure(a, model, base, task, pi, weights, levels):
    """--from: the overlays of another run's levels (same seed and options), measured again on
    --eval-per-n documents per N and copied into --out with the manifest."""
    docs = eval_docs(task, 77_777 + a.seed, a.eval_per_n)
    results = [{"steps": 0, **measure(base, base, task, pi, docs)}]
    os.makedirs(a.out, exist_ok=True)
    sd = model.state_dict()
    for k in levels:
        src = os.path.join(a.from_dir, f"steps-{k}.safetensors")
        over = load_safetensors(src)
        for name, t in over.items():
            sd[hf_to_module(name)] = torch.as_tensor(np.array(t))
        model.load_state_dict(sd)
        model.eval()
        r = {"steps": k, **measure(model, base, task, pi, docs)}
        with open(src, "rb") as f, open(os.path.join(a.out, f"steps-{k}.safetensors"), "wb") as g:
            g.write(f.read())
        r["overlay"] = f"steps-{k}.safetensors"
        r["overlay_bytes"] = os.path.getsize(os.path.join(a.out, r["overlay"]))
        print(json.dumps(r), flush=True)
        results.append(r)
    write_manifest(a, task, pi, weights, results)


def write_manifest(a, task, pi, weights, results):
    manifest = {
        "base": os.path.relpath(a.base, a.out),
        "changed_task": "remapped value vocabulary: the answer to a query is pi(value)",
        "value_permutation": [int(x) for x in pi],
        "trained_tensors": sorted(k for k in weights if k.startswith(TRAINED_PREFIXES)),
        "seed": a.seed, "lr": a.lr, "batch": a.batch, "torch": torch.__version__,
        "levels": [{"steps": r["steps"], "overlay": r["overlay"], "overlay_bytes": r["overlay_bytes"],
                    "changed_task_accuracy": r["changed_task"], "original_task_accuracy": r["original_task"],
                    "relay_accuracy_into_base": r["relay_into_base"]} for r in results[1:]],
        "base_accuracy": {k: results[0][k] for k in ("changed_task", "original_task", "relay_into_base")},
    }
    manifest["eval_documents"] = a.eval_per_n * len(range(2, task.max_pairs + 1, 2))
    with open(os.path.join(a.out, "drift.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(json.dumps(manifest["levels"]))


if __name__ == "__main__":
    sys.exit(main())
