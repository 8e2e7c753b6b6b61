#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The relay protocol end to end in PyTorch, audited with the `latentaudit` Python module.

Agent A reads a document; agent B answers a query about it. B answers with no communication
(no_comm), with the document as text in its prompt (text_full), with A's KV cache imported in front
of its own tokens (kv_full), with the placebos built by `latentaudit.kv` (deranged: another item's
cache, zeroed, random: moment-matched noise) and with a noised cache (`latentaudit.kv.add_noise`,
arm kv_noise_<sigma>). Both agents are the model organism models/organism-a, run through the HF-Llama
forward of tools/organism/reference.py (imported, extended here with a KV cache). Every trial becomes
one record (docs/records.md) written with `latentaudit.RecordWriter`; `latentaudit.report` audits them.

The items are a task file as `latentaudit organism tasks --out FILE` writes it (docs/tasks.md); each
item is restricted to one query (index item mod queries) and that task file is written to the
output directory, so `latentaudit audit --tasks OUT/tasks.jsonl --seed S` runs the C++ audit on the
very same trials (docs/python.md, "The relay protocol in PyTorch").

  PYTHONPATH=build/release/python /usr/bin/python3 examples/python/relay_audit.py \
      --tasks examples/python/organism-a-tasks.jsonl --items 120 --out relay-py
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

import latentaudit as la

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "organism"))
import reference  # noqa: E402  (tools/organism/reference.py: load_safetensors, rms_norm, rotate_half, forward)

ARMS = ("no_comm", "text_full", "kv_full", "deranged", "zeroed", "random")
LINK_BYTES_PER_S, LINK_ALPHA_S = 25e9, 10e-6  # the pcie4 preset (docs/audit-report.md)
MASK64 = (1 << 64) - 1


def policy_seed(design_seed, seed_index):
    """trial/record_builder.hpp policy_seed: the seed of unit (item, seed index)'s placebo and noise
    streams, so the random and noise arms draw what the C++ driver draws for the same design seed."""
    z = (design_seed ^ ((0x9E3779B97F4A7C15 * (seed_index + 1)) & MASK64)) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


class Agent:
    """organism-a with a KV cache: reference.py's forward, split into prefill over new tokens at given
    positions on top of a cache. K and V are numpy arrays [layers][tokens][kv_heads][head_dim]
    (keys RoPE-rotated, HF's rotate_half: pairing "neox"), the layout of latentaudit.kv."""

    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = json.load(f)
        self.w = reference.load_safetensors(os.path.join(model_dir, "model.safetensors"))
        c = self.cfg
        self.H = c["num_attention_heads"]
        self.Hkv = c.get("num_key_value_heads", self.H)
        self.hd = c.get("head_dim", c["hidden_size"] // self.H)
        self.eps = c.get("rms_norm_eps", 1e-6)
        self.theta = float(c.get("rope_theta", 10000.0))
        self.L = c["num_hidden_layers"]
        self.inv_freq = 1.0 / (self.theta ** (torch.arange(0, self.hd, 2, dtype=torch.int64).float() / self.hd))

    def prefill(self, tokens, positions, past=None):
        """Logits of `tokens` at `positions` after the cache `past` = (k, v) (or None); returns
        (logits [T][vocab], k, v) with k, v the cache of past + tokens."""
        w, T, H, Hkv, hd = self.w, len(tokens), self.H, self.Hkv, self.hd
        x = w["model.embed_tokens.weight"][torch.tensor(tokens)]
        freqs = torch.outer(torch.tensor(positions, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        P = 0 if past is None else past[0].shape[1]
        mask = torch.full((T, P + T), float("-inf")).triu(P + 1)
        ks, vs = [], []
        for l in range(self.L):
            p = f"model.layers.{l}."
            h = reference.rms_norm(x, w[p + "input_layernorm.weight"], self.eps)
            q = (h @ w[p + "self_attn.q_proj.weight"].T).view(T, H, hd).transpose(0, 1)
            k = (h @ w[p + "self_attn.k_proj.weight"].T).view(T, Hkv, hd).transpose(0, 1)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).view(T, Hkv, hd).transpose(0, 1)
            q = q * cos + reference.rotate_half(q) * sin
            k = k * cos + reference.rotate_half(k) * sin
            if past is not None:  # [tokens][kv_heads][head_dim] -> [kv_heads][tokens][head_dim]
                k = torch.cat((torch.from_numpy(past[0][l]).transpose(0, 1), k), dim=1)
                v = torch.cat((torch.from_numpy(past[1][l]).transpose(0, 1), v), dim=1)
            ks.append(k.transpose(0, 1))
            vs.append(v.transpose(0, 1))
            kk = k.repeat_interleave(H // Hkv, dim=0)
            vv = v.repeat_interleave(H // Hkv, dim=0)
            att = torch.softmax((q @ kk.transpose(-1, -2)) / (hd ** 0.5) + mask, dim=-1)
            o = (att @ vv).transpose(0, 1).reshape(T, H * hd)
            x = x + o @ w[p + "self_attn.o_proj.weight"].T
            h = reference.rms_norm(x, w[p + "post_attention_layernorm.weight"], self.eps)
            g = h @ w[p + "mlp.gate_proj.weight"].T
            u = h @ w[p + "mlp.up_proj.weight"].T
            x = x + (torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
        x = reference.rms_norm(x, w["model.norm.weight"], self.eps)
        head = w["model.embed_tokens.weight"] if self.cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
        k = torch.stack(ks).contiguous().numpy()
        v = torch.stack(vs).contiguous().numpy()
        return x @ head.T, k, v

    def answer(self, tokens, first_position, past, n_answer):
        """B prefills `tokens` after `past` and decodes `n_answer` tokens greedily: (answer ids,
        log-softmax of the first answer position, prefill seconds, decode seconds)."""
        t0 = time.perf_counter()
        logits, k, v = self.prefill(tokens, list(range(first_position, first_position + len(tokens))), past)
        prefill_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        logp = torch.log_softmax(logits[-1], dim=-1)
        out = [int(torch.argmax(logits[-1]))]
        pos = first_position + len(tokens)
        while len(out) < n_answer:
            logits, k, v = self.prefill([out[-1]], [pos], (k, v))
            out.append(int(torch.argmax(logits[-1])))
            pos += 1
        return out, logp, prefill_s, time.perf_counter() - t0


def read_tasks(path, items):
    """The header and the first `items` tasks of a task file, each restricted to query item mod
    (number of queries) so that every seed asks the same query in Python and in the C++ audit."""
    header, tasks = {}, []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            obj = json.loads(line)
            if "latentaudit_tasks" in obj:
                header = obj
                continue
            if len(tasks) == items:
                break
            if "queries" in obj:
                queries = obj.pop("queries")
                q = queries[len(tasks) % len(queries)]
                obj["query_tokens"], obj["answers"] = q["query_tokens"], q["answers"]
                if "stale_answer_tokens" in q:
                    obj["stale_answer_tokens"] = q["stale_answer_tokens"]
                obj["covariates"] = {**obj.get("covariates", {}), **q.get("covariates", {})}
            tasks.append(obj)
    if header.get("scoring", "token_exact") != "token_exact":
        raise SystemExit("relay_audit.py: only token tasks with token_exact scoring (the organism's) are supported")
    if len(tasks) < 2:
        raise SystemExit("relay_audit.py: the deranged arm needs at least 2 items")
    return header, tasks


def text_frame_bytes(n_tokens):
    # docs/wire-format.md: 20-byte prefix, kind-2 header (u64 count), i32 ids, CRC32C, HMAC tag
    return 20 + 8 + 4 * n_tokens + 4 + 32


def run(tasks_path, items, seeds, out, model_dir, design_seed=1, sigma=0.5, quiet=False):
    """Runs every (item, seed, arm) trial, writes out/records.jsonl and out/tasks.jsonl, and
    returns the path of the records."""
    torch.set_grad_enabled(False)
    header, tasks = read_tasks(tasks_path, items)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tasks.jsonl"), "w") as f:  # the same trials for `latentaudit audit --tasks`
        f.write(json.dumps(header) + "\n")
        for t in tasks:
            f.write(json.dumps(t) + "\n")
    agent = Agent(model_dir)
    bos = header.get("bos")
    no_relay = [] if bos is None else [int(bos)]
    n_answer = header.get("max_answer_tokens") or max(len(a) for t in tasks for a in t["answers"])
    fingerprint = "LlamaForCausalLM:%dx%dx%d:%s" % (agent.L, agent.Hkv, agent.hd, os.path.basename(model_dir))
    rope = dict(pairing="neox", theta=agent.theta)
    key = bytes(range(32))  # the relays' HMAC key (any shared secret)
    noise_arm = "kv_noise_%g" % sigma
    arms = ARMS + (noise_arm,)

    # A reads every document once (its cache is what the KV arms relay, and the deranged arm's donor).
    caches = []
    for t in tasks:
        doc = t["document_tokens"]
        t0 = time.perf_counter()
        _, k, v = agent.prefill(doc, list(range(len(doc))))
        caches.append((k, v, time.perf_counter() - t0))

    records = os.path.join(out, "records.jsonl")
    if os.path.exists(records):
        os.remove(records)
    with la.RecordWriter(records) as writer:
        for s in range(seeds):
            pseed = policy_seed(design_seed, s)
            donors = la.kv.random_derangement(len(tasks), design_seed)
            for i, t in enumerate(tasks):
                own = list(t.get("prompt_tokens", [])) + list(t["query_tokens"])
                k_a, v_a, a_prefill_s = caches[i]
                n = k_a.shape[1]
                for arm in arms:
                    rec = {"item": i, "seed": s, "arm": arm, "regime": t.get("regime", "need"),
                           "receiver_fingerprint": fingerprint, "link": "pcie4",
                           "covariates": t.get("covariates", {})}
                    if "id" in t:
                        rec["task_id"] = t["id"]
                    past, first = None, 0
                    timing = dict.fromkeys(("a_prefill_s", "export_s", "policy_s", "encode_s", "transfer_s",
                                            "decode_s", "import_s"), 0.0)
                    if arm == "no_comm":
                        tokens, relay_tokens, nbytes = no_relay + own, 0, 0
                        rec.update(arm_kind="no_comm", policy=None)
                    elif arm == "text_full":
                        text = list(t.get("text_document_tokens", t["document_tokens"]))
                        tokens, relay_tokens, nbytes = text + own, len(text), text_frame_bytes(len(text))
                        rec.update(arm_kind="text_full", sender_fingerprint=fingerprint, policy=None)
                        timing["transfer_s"] = nbytes / LINK_BYTES_PER_S + LINK_ALPHA_S
                    else:
                        timing["a_prefill_s"] = a_prefill_s
                        t0 = time.perf_counter()
                        k, v = k_a, v_a
                        noise = None
                        if arm == "deranged":  # the donor's rows, cycled to this document's length and
                            k_d, v_d, _ = caches[donors[i]]  # re-rotated to positions 0..n-1 (kv::length_matched)
                            rows = np.arange(n) % k_d.shape[1]
                            k, v, _ = la.kv.set_positions(k_d[:, rows], v_d[:, rows], positions=rows.tolist(),
                                                          new_positions=list(range(n)), **rope)
                        elif arm == "zeroed":
                            k, v = la.kv.zeroed_placebo(k, v, **rope)
                        elif arm == "random":
                            k, v = la.kv.random_placebo(k, v, seed=pseed, item=i, **rope)
                        elif arm == noise_arm:
                            k, v, noise = la.kv.add_noise(k, v, sigma, seed=pseed, item=i, **rope)
                        timing["policy_s"] = time.perf_counter() - t0
                        t0 = time.perf_counter()
                        frame = la.kv.encode_relay(k, v, positions=list(range(n)), key=key, **rope)
                        timing["encode_s"] = time.perf_counter() - t0
                        t0 = time.perf_counter()
                        got = la.kv.decode_relay(frame, key=key, require_authentication=True)
                        timing["decode_s"] = time.perf_counter() - t0
                        past, first, tokens, relay_tokens, nbytes = (got["k"], got["v"]), n, own, n, len(frame)
                        timing["transfer_s"] = nbytes / LINK_BYTES_PER_S + LINK_ALPHA_S
                        kind = {"kv_full": "kv_full", noise_arm: "kv_policy"}.get(arm, arm)
                        rec.update(arm_kind=kind, sender_fingerprint=fingerprint,
                                   policy={"policy": kind if arm != noise_arm else arm, "tokens_in": n,
                                           "tokens_kept": n, "bytes_after": nbytes,
                                           **({"noise": noise} if noise else {})})
                        if arm == noise_arm:
                            rec["noise_sigma"] = sigma
                    ans, logp, b_prefill_s, b_decode_s = agent.answer(tokens, first, past, n_answer)
                    rec.update(correct=any(ans[:len(a)] == list(a) for a in t["answers"]),
                               answer_logprob=min(0.0, float(logp[t["answers"][0][0]])),
                               generated_tokens=len(ans), bytes=nbytes, relay_tokens=relay_tokens,
                               b_prefill_s=b_prefill_s, b_decode_s=b_decode_s, **timing)
                    if t.get("regime") == "stale" and "stale_answer_tokens" in t:
                        rec["stale_answer"] = ans[:len(t["stale_answer_tokens"])] == list(t["stale_answer_tokens"])
                    writer.write(rec)
    return records


def accuracies(records):
    acc = {}
    for r in la.read_records(records):
        acc.setdefault(r["arm"], []).append(1.0 if r["correct"] else 0.0)
    return {a: sum(v) / len(v) for a, v in acc.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=os.path.join(os.path.dirname(__file__), "organism-a-tasks.jsonl"),
                    help="task file of `latentaudit organism tasks` (default: the 120 items shipped beside this script)")
    ap.add_argument("--model", default=os.path.join(SOURCE_DIR, "models", "organism-a"))
    ap.add_argument("--items", type=int, default=120)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1, help="design seed (as `latentaudit audit --seed`)")
    ap.add_argument("--sigma", type=float, default=0.5, help="noise of the kv_noise_<sigma> arm, relative to the RMS")
    ap.add_argument("--out", default="relay-py")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    t0 = time.perf_counter()
    records = run(a.tasks, a.items, a.seeds, a.out, a.model, design_seed=a.seed, sigma=a.sigma)
    trials_s = time.perf_counter() - t0
    rep = la.report(records, out=a.out)
    acc = accuracies(records)
    print("trials: %.1f s; records: %s" % (trials_s, records))
    for arm, x in acc.items():
        print("  %-14s accuracy %.3f" % (arm, x))
    d = rep["decision"]
    print("decision: %s" % d["verdict"])
    print("report: %s" % os.path.join(a.out, "report.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
