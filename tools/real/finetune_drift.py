#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Drifted siblings of a real pretrained checkpoint for the audit's drift and map arms
(docs/real-models.md, "Drift and maps"): a Hugging Face Llama checkpoint (config.json,
model.safetensors, a BPE tokenizer.json; TinyStories-656K) fine-tuned for k steps on story text,
every parameter trained (a full fine-tune, as a sibling of a model family is made), saved as
overlays that the C++ reference engine applies on top of the checkpoint, with the drift manifest
`latentaudit audit --drift OUT` reads.

Training text: the stories of tools/tasks/story_tasks.py (the same generator as the audit's tasks,
under its own seed `--story-seed`), each as one sequence: BOS, then the story, a cloze query about
one planted fact and the story's next sentence (story + query + " " + continuation). Stories equal
to a document of `--exclude` (the audit's task file) are left out, so the sibling never trains on an
audit item. Levels are checkpoints of one run (fixed seed): the overlay of level k holds every
tensor of the checkpoint after k steps of AdamW, in f32 (the tied embedding, stored only as
lm_head.weight, is trained once and written under that name).

Deterministic: the CPU, a fixed seed for the data order (numpy's PCG64) and the initial state,
`--threads` intra-op threads (default 1) and torch's deterministic algorithms; the same options
on the same machine give byte-identical overlays (tested: python/tests/test_finetune_drift.py).

For each level it measures on `--eval` held-out stories (another seed stream, none of them a
training story), per token after the document (the query and the continuation, teacher-forced):
the base model's mean log-probability with its own cache of the document, the sibling's with its
own, and the base reading the sibling's cache (the audit's kv_drift_<k> arm, a forced import), and
the keys' and values' relative RMS difference between the two caches of the document.

  /usr/bin/python3 tools/real/finetune_drift.py --base ../shared/models/tinystories-656k \\
      --out build/real-drift --levels 30,100,300 --exclude real-out/tasks.jsonl

Writes OUT/steps-<k>.safetensors, OUT/drift.json (base: the checkpoint's directory relative to
OUT; levels: steps, overlay, measurements) and prints the measurements as JSON lines. Generated
weights belong in an output directory, never in the project's tree.
"""
import argparse
import hashlib
import json
import math
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import random
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "organism"))
sys.path.insert(0, os.path.join(HERE, "..", "tasks"))
from train import Model  # noqa: E402
from reference import load_safetensors  # noqa: E402
from drift import relay_logits, layer_kv, layer_forward, rope  # noqa: E402
import story_tasks  # noqa: E402


class BpeTokenizer:
    """The BPE of a tokenizer.json of the TinyStories-656K kind: normalizer Prepend("▁") then
    Replace(" ", "▁"), no pre-tokenizer (merges may cross spaces), merges applied lowest rank
    first, leftmost first among equal ranks (HF tokenizers' BPE). Refuses characters outside the
    vocabulary (the story texts have none) and any other configuration, rather than guess."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            t = json.load(f)
        m = t["model"]
        if m.get("type") != "BPE" or t.get("pre_tokenizer") is not None:
            raise SystemExit(f"{path}: not a BPE tokenizer.json without a pre-tokenizer (this script's kind)")
        norms = (t.get("normalizer") or {}).get("normalizers", [])
        kinds = [(n.get("type"), n.get("prepend"), (n.get("pattern") or {}).get("String"), n.get("content"))
                 for n in norms]
        if kinds != [("Prepend", "\u2581", None, None), ("Replace", None, " ", "\u2581")]:
            raise SystemExit(f"{path}: normalizer is not Prepend('\u2581') + Replace(' ', '\u2581')")
        self.vocab = m["vocab"]
        self.rank = {}
        for i, mg in enumerate(m["merges"]):
            a, b = mg.split(" ") if isinstance(mg, str) else mg
            self.rank[(a, b)] = i
        self.bos = next(x["id"] for x in t["added_tokens"] if x["content"] == "<|start_story|>")

    def encode(self, text):
        syms = list("\u2581" + text.replace(" ", "\u2581"))
        for c in syms:
            if c not in self.vocab:
                raise ValueError(f"character {c!r} is outside the vocabulary")
        none = len(self.rank)  # ranks[i]: the merge rank of (syms[i], syms[i+1]), `none` if no merge
        ranks = [self.rank.get(p, none) for p in zip(syms, syms[1:])]
        while ranks:
            best = min(ranks)
            if best == none:
                break
            at = ranks.index(best)  # the leftmost pair of the lowest rank
            syms[at:at + 2] = [syms[at] + syms[at + 1]]
            del ranks[at]
            if at > 0:
                ranks[at - 1] = self.rank.get((syms[at - 1], syms[at]), none)
            if at < len(ranks):
                ranks[at] = self.rank.get((syms[at], syms[at + 1]), none)
        return [self.vocab[s] for s in syms]


def common_prefix(a, b):
    k = 0
    while k < len(a) and k < len(b) and a[k] == b[k]:
        k += 1
    return k


def story_texts(seed, n, exclude):
    """n (document, query + " " + continuation) pairs from story_tasks' generator under `seed`,
    documents in `exclude` left out."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        f = story_tasks.facts(rng)
        fact = story_tasks.FACTS[rng.randrange(len(story_tasks.FACTS))]
        doc = story_tasks.text_of(f)
        if doc in exclude:
            continue
        query, _, continuation = story_tasks.cloze(f, fact)
        out.append((doc, query + " " + continuation))
    return out


def encode_pair(tok, doc, rest):
    """BOS + the joint text's tokens, and the document's length in them (BOS included): the
    document ends where encode(document) stops agreeing with the joint text (docs/tasks.md)."""
    whole = tok.encode(doc + rest)
    return [tok.bos] + whole, 1 + common_prefix(tok.encode(doc), whole)


def load_checkpoint(base, dtype):
    with open(os.path.join(base, "config.json")) as f:
        cfg = json.load(f)
    w = load_safetensors(os.path.join(base, "model.safetensors"))
    model = Model(cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"],
                  cfg["num_key_value_heads"], cfg["intermediate_size"], cfg["rope_theta"], cfg["rms_norm_eps"])
    sd = {}
    for name, t in w.items():
        key = {"model.embed_tokens.weight": "embed_tokens.weight", "model.norm.weight": "norm.weight",
               "lm_head.weight": "lm_head.weight"}.get(name)
        if key is None:
            key = name[len("model."):].replace("self_attn.", "").replace("mlp.", "")
        sd[key] = t
    tied = "model.embed_tokens.weight" not in w
    if tied:  # tied embeddings stored only as lm_head.weight (HF's tie_word_embeddings)
        sd["embed_tokens.weight"] = sd["lm_head.weight"]
    model.load_state_dict(sd, strict=True)
    if tied:
        model.embed_tokens.weight = model.lm_head.weight
    model.to(dtype)
    return model, cfg, w


def module_key(name):
    return {"model.embed_tokens.weight": "embed_tokens.weight", "model.norm.weight": "norm.weight",
            "lm_head.weight": "lm_head.weight"}.get(name) or \
        name[len("model."):].replace("self_attn.", "").replace("mlp.", "")


def save_overlay(path, weights, model, steps, base_name):
    """Every tensor of the checkpoint (its own names: a tied embedding as lm_head.weight) after
    `steps` steps, f32."""
    sd = model.state_dict()
    header, blobs, at = {}, [], 0
    for name in sorted(weights):
        raw = sd[module_key(name)].detach().to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(weights[name].shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    header["__metadata__"] = {"format": "pt", "producer": "latentaudit tools/real/finetune_drift.py",
                              "base": base_name, "steps": str(steps)}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def batch_of(seqs, pad):
    T = max(len(s) for s in seqs)
    toks = torch.full((len(seqs), T), pad, dtype=torch.int64)
    for i, s in enumerate(seqs):
        toks[i, :len(s)] = torch.tensor(s)
    return toks


def doc_cache(model, toks, n_doc):
    """Each layer's (keys, values) of the first n_doc positions."""
    cos, sin = rope(model, n_doc)
    x = model.embed_tokens(toks[:, :n_doc])
    kvs = []
    for layer in model.layers:
        kvs.append(layer_kv(layer, x, cos, sin))
        x = layer_forward(layer, x, cos, sin)
    return kvs


@torch.no_grad()
def measure(sibling, base, evals, pad):
    """Mean per-token log-probability after the document: base, sibling, base on the sibling's
    cache; the caches' relative RMS difference (keys, values)."""
    sums = {"base": 0.0, "sibling": 0.0, "relay_into_base": 0.0}
    count = 0
    dk = dv = nk = nv = 0.0
    for seq, n_doc in evals:  # one at a time: relay_logits takes one document length
        toks = torch.tensor([seq])
        target = toks[0, n_doc:]
        for name, logits in (("base", base(toks)), ("sibling", sibling(toks)),
                             ("relay_into_base", relay_logits(sibling, base, toks, n_doc))):
            lp = F.log_softmax(logits[0, n_doc - 1:-1].double(), -1)
            sums[name] += float(lp.gather(1, target[:, None]).sum())
        count += len(target)
        for (ks, vs), (kb, vb) in zip(doc_cache(sibling, toks, n_doc), doc_cache(base, toks, n_doc)):
            dk += float((ks - kb).double().pow(2).sum())
            nk += float(kb.double().pow(2).sum())
            dv += float((vs - vb).double().pow(2).sum())
            nv += float(vb.double().pow(2).sum())
    out = {f"{k}_logprob_per_token": round(v / count, 5) for k, v in sums.items()}
    out["key_rel_rms_diff"] = round(math.sqrt(dk / nk), 5)
    out["value_rel_rms_diff"] = round(math.sqrt(dv / nv), 5)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the HF checkpoint directory (config.json, model.safetensors, "
                                                  "tokenizer.json)")
    ap.add_argument("--out", required=True, help="output directory (overlays and drift.json)")
    ap.add_argument("--levels", default="30,100,300", help="fine-tuning steps of the saved levels")
    ap.add_argument("--seed", type=int, default=1, help="initial state and data order")
    ap.add_argument("--story-seed", type=int, default=9001, help="the training stories' generator seed")
    ap.add_argument("--stories", type=int, default=2000, help="training stories")
    ap.add_argument("--eval", type=int, default=64, help="held-out stories measured at each level (0: none)")
    ap.add_argument("--exclude", default="", help="a task file whose documents no training story may equal")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    a = ap.parse_args(argv)
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    torch.use_deterministic_algorithms(True)
    dtype = torch.float32 if a.dtype == "float32" else torch.float64
    levels = sorted({int(x) for x in a.levels.split(",")})
    if not levels or levels[0] < 1:
        raise SystemExit("finetune_drift.py: --levels must be positive step counts")
    tok = BpeTokenizer(os.path.join(a.base, "tokenizer.json"))
    exclude = set()
    if a.exclude:
        with open(a.exclude, encoding="utf-8") as f:
            for line in f:
                t = json.loads(line)
                for k in ("document", "text_document"):
                    if k in t:
                        exclude.add(t[k])
    train = [encode_pair(tok, d, r)[0] for d, r in story_texts(a.story_seed, a.stories, exclude)]
    train_docs = {d for d, _ in story_texts(a.story_seed, a.stories, exclude)}
    evals = [encode_pair(tok, d, r) for d, r in story_texts(a.story_seed + 7_777_777, a.eval, exclude | train_docs)]
    model, cfg, weights = load_checkpoint(a.base, dtype)
    base, _, _ = load_checkpoint(a.base, dtype)
    base.eval()
    pad = cfg.get("eos_token_id", 2)
    params = list(model.parameters())  # the tied embedding once
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.0)
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.out, exist_ok=True)
    results = []
    if a.eval:
        results.append({"steps": 0, **measure(base, base, evals, pad)})
        print(json.dumps(results[-1]), flush=True)
    start = time.time()
    model.train()
    for step in range(1, levels[-1] + 1):
        idx = rng.integers(0, len(train), size=a.batch)
        seqs = [train[i] for i in idx]
        toks = batch_of(seqs, pad)
        target = toks[:, 1:].clone()
        for i, s in enumerate(seqs):
            target[i, len(s) - 1:] = -100
        logits = model(toks[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if step in levels:
            name = f"steps-{step}.safetensors"
            save_overlay(os.path.join(a.out, name), weights, model, step, os.path.basename(os.path.normpath(a.base)))
            with open(os.path.join(a.out, name), "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            r = {"steps": step, "train_loss": round(float(loss), 4), "overlay": name,
                 "overlay_bytes": os.path.getsize(os.path.join(a.out, name)), "overlay_sha256": digest,
                 "seconds": round(time.time() - start, 2)}
            if a.eval:
                model.eval()
                r.update(measure(model, base, evals, pad))
                model.train()
            print(json.dumps(r), flush=True)
            results.append(r)
    manifest = {
        "base": os.path.relpath(os.path.abspath(a.base), os.path.abspath(a.out)),
        "fine_tuning": "every parameter, AdamW (weight decay 0), gradient norm clipped at 1, on story text "
                       "(tools/tasks/story_tasks.py stories: story + query + ' ' + continuation)",
        "trained_tensors": sorted(weights),
        "seed": a.seed, "story_seed": a.story_seed, "stories": len(train), "lr": a.lr, "batch": a.batch,
        "threads": a.threads, "dtype": a.dtype, "torch": torch.__version__,
        "excluded_documents": len(exclude), "eval_stories": a.eval,
        "levels": [r for r in results if r["steps"] > 0],
    }
    if a.eval:
        manifest["base_measurements"] = results[0]
    with open(os.path.join(a.out, "drift.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
