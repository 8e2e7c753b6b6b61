#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Trains the text organism: a small Llama (the organisms' blocks, tools/organism/train.py) on a
text rendering of the recall task over a real tokenizer's vocabulary (llama.cpp's
ggml-vocab-llama-spm.gguf: SentencePiece, 32 000 tokens), and writes
  - the GGUF model with that vocabulary's tokenizer (through `latentaudit gguf export --vocab`, the
    one GGUF writer of the project), bf16 weights;
  - its card (README.md next to it);
  - the task file of the text audit (examples/data/recall-text.jsonl: id, document, prompt, query,
    answers, regime, covariates).

Text rendering (every word below is ONE token of the vocabulary, checked against the GGUF's token
list, and, with --latentaudit, the rendering against llama.cpp's tokenizer itself):
  document  "cat red, dog blue, horse green."   (A reads it; N pairs, keys distinct)
  prompt    "dog blue, horse green, cat red."   (B's own context: the same pairs in another order in
                                               the no_need regime; absent in the need regime)
  query     "dog"                             (B's question: the key)
  answer    " blue", then the end-of-sequence token </s>
B's context is [relay of A's document (text or cache)][prompt][query]; the document starts with
BOS (trained both with and without it). Training sequences hold several queries, each followed
by its answer and </s> (the first one is the audit's case: B's context ends with the query). Training mixes: the document and the query (need); the
document, the prompt and the query (no_need with a relay); the prompt and the query (no_need,
no relay); and a document binding the prompt's keys to other values before the prompt (the later
binding wins), so a relayed document that disagrees with B's own prompt does not override it.

Vocabulary: the model is trained over the 68 tokens the rendering uses plus one fixed zero logit
that stands for every other token; the GGUF's token_embd and output have the trained rows at those
ids and zero rows elsewhere (every other token's logit is exactly 0, so the trained answer, whose
logit is pushed above that zero, is also the argmax over the full 32 000-token vocabulary). The
head is tied to the embeddings (half the file of an untied head): need-regime accuracy at 2 pairs
then sits at 0.5 (one of the two values, unbound) for about 1000 steps before the binding forms;
`--untied` leaves that plateau after 200 steps.

Cost: under a CPU-minute with an optimized BLAS. Debian's python3-torch calls the system's
libblas.so.3: with libopenblas0-pthread (apt) a step is ~7x faster here than with the reference
libblas3 (the card names the BLAS the run loaded). Run with Debian's interpreter (torch 1.13):
  /usr/bin/python3 tools/organism/train_text.py --vocab .deps/llama.cpp/models/ggml-vocab-llama-spm.gguf \
      --latentaudit build/release/tools/cli/latentaudit --out models/organism-text.gguf \
      --card models/organism-text/README.md --tasks examples/data/recall-text.jsonl --audit-out /tmp/organism-text-audit
(on this VM a rerun wrote the byte-identical GGUF; --audit-out audits it on llama.cpp and
puts the findings in the card.)
"""
import argparse
import json
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import math
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import Layer, RMSNorm  # noqa: E402  (the organisms' Llama blocks: HF names, NEOX RoPE)

KEY_WORDS = ("cat dog cow ant bat rat hen fly horse mouse sheep bear fish bird crow dove house car tree door "
             "book table water fire stone river city road ship king queen star").split()
VALUE_WORDS = ("red blue green black white brown gray gold silver orange yellow dark light north south east "
               "west hot cold big small old new fast slow soft hard wet dry left right low").split()


def read_gguf_vocab(path):
    """(tokens, bos, eos) of a GGUF file's tokenizer.ggml.* metadata (a minimal GGUF reader)."""
    with open(path, "rb") as f:
        d = f.read()
    if d[:4] != b"GGUF":
        sys.exit(f"train_text.py: {path} is not a GGUF file")
    _, _, nkv = struct.unpack_from("<IQQ", d, 4)
    off = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    fmts = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}

    def rstr(o):
        n, = struct.unpack_from("<Q", d, o)
        return d[o + 8:o + 8 + n].decode("utf-8", "replace"), o + 8 + n

    meta = {}
    for _ in range(nkv):
        key, off = rstr(off)
        t, = struct.unpack_from("<I", d, off)
        off += 4
        if t == 9:
            et, n = struct.unpack_from("<IQ", d, off)
            off += 12
            if et == 8:
                vals = []
                for _ in range(n):
                    s, off = rstr(off)
                    vals.append(s)
            else:
                vals = None
                off += n * sizes[et]
            meta[key] = vals
        elif t == 8:
            meta[key], off = rstr(off)
        else:
            meta[key] = struct.unpack_from(fmts[t], d, off)[0]
            off += sizes[t]
    if meta.get("tokenizer.ggml.model") != "llama":
        sys.exit(f"train_text.py: {path}: the rendering assumes a SentencePiece ('llama') tokenizer")
    return meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.bos_token_id"], meta["tokenizer.ggml.eos_token_id"]


class TextTask:
    """The recall task rendered as text, with the token ids of each piece."""

    def __init__(self, tokens, bos, eos, max_pairs):
        idx = {t: i for i, t in enumerate(tokens)}
        missing = [w for w in KEY_WORDS + VALUE_WORDS if "\u2581" + w not in idx]
        if missing:
            sys.exit(f"train_text.py: words that are not single tokens of the vocabulary: {missing}")
        self.keys = [idx["\u2581" + w] for w in KEY_WORDS]
        self.values = [idx["\u2581" + w] for w in VALUE_WORDS]
        self.comma, self.period = idx[","], idx["."]
        self.bos, self.eos = bos, eos
        self.vocab_size = len(tokens)
        self.max_pairs = max_pairs
        # the compact vocabulary the model is trained over; index len(used) is the fixed zero logit
        self.used = [bos, eos, self.comma, self.period] + self.keys + self.values
        self.compact = {t: i for i, t in enumerate(self.used)}

    # text
    @staticmethod
    def text(pairs):
        return ", ".join(f"{KEY_WORDS[k]} {VALUE_WORDS[v]}" for k, v in pairs) + "."

    @staticmethod
    def query_text(k):
        return KEY_WORDS[k]

    # ids (what llama.cpp's tokenizer gives for the text, checked by check_rendering)
    def ids(self, pairs):
        out = []
        for i, (k, v) in enumerate(pairs):
            out += [self.keys[k], self.values[v], self.comma if i + 1 < len(pairs) else self.period]
        return out

    def query_ids(self, k):
        return [self.keys[k]]

    def draw(self, rng, n, kind, queries=1):
        """One training or evaluation example: (context ids, [(query ids, answer id)]) for the kinds
        need (document, query), no_need (document, prompt, query), own (prompt, query) and
        conflict (document with other values, prompt, query: the prompt's value)."""
        ks = rng.choice(len(KEY_WORDS), size=n, replace=False)
        vs = rng.integers(0, len(VALUE_WORDS), size=n)
        pairs = list(zip(ks.tolist(), vs.tolist()))
        asks = rng.integers(0, n, size=queries).tolist()
        perm = rng.permutation(n)
        own = [pairs[i] for i in perm]
        ctx = [self.bos] if rng.random() < 0.5 else []
        if kind == "need":
            ctx += self.ids(pairs)
        elif kind == "no_need":
            ctx += self.ids(pairs) + self.ids(own)
        elif kind == "own":
            ctx += self.ids(own)
        elif kind == "conflict":
            other = [(k, int((v + 1 + rng.integers(0, len(VALUE_WORDS) - 1)) % len(VALUE_WORDS))) for k, v in pairs]
            ctx += self.ids(other) + self.ids(own)
        else:
            raise ValueError(kind)
        return ctx, [(self.query_ids(pairs[i][0]), self.values[pairs[i][1]]) for i in asks]

    def batch(self, rng, size, level, mix, queries):
        """Compact ids [size, T] and targets (answer after each query, </s> after each answer)."""
        kinds = list(mix)
        p = np.array([mix[k] for k in kinds], dtype=float)
        seqs = []
        for _ in range(size):
            kind = kinds[int(rng.choice(len(kinds), p=p / p.sum()))]
            n = int(rng.integers(2, level + 1))
            seqs.append(self.draw(rng, n, kind, queries))
        rows, targets = [], []
        for ctx, qa in seqs:
            row, tgt = [self.compact[t] for t in ctx], [-100] * len(ctx)
            for q, ans in qa:
                row += [self.compact[t] for t in q]
                tgt += [-100] * (len(q) - 1) + [self.compact[ans]]
                row += [self.compact[ans], self.compact[self.eos]]
                tgt += [self.compact[self.eos], -100]
            rows.append(row)
            targets.append(tgt)
        T = max(len(r) for r in rows)
        toks = np.full((size, T), self.compact[self.eos], dtype=np.int64)
        target = np.full((size, T), -100, dtype=np.int64)
        for b, (row, tgt) in enumerate(zip(rows, targets)):
            toks[b, :len(row)] = row
            target[b, :len(tgt)] = tgt
        return torch.from_numpy(toks), torch.from_numpy(target)


class TextModel(nn.Module):
    """Llama over the compact vocabulary (untied head), plus a fixed zero logit for every other token."""

    def __init__(self, vocab, d, layers, heads, kv_heads, inter, theta, eps, tied=False):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([Layer(d, heads, kv_heads, inter, eps) for _ in range(layers)])
        self.norm = RMSNorm(d, eps)
        self.tied = tied
        self.lm_head = None if tied else nn.Linear(d, vocab, bias=False)
        hd = d // heads
        self.register_buffer("inv_freq", 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd)),
                             persistent=False)

    def forward(self, toks):
        T = toks.shape[1]
        freqs = torch.outer(torch.arange(T, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos(), emb.sin()
        x = self.embed_tokens(toks)
        for layer in self.layers:
            x = layer(x, cos, sin)
        h = self.norm(x)
        logits = h @ self.embed_tokens.weight.t() if self.tied else self.lm_head(h)
        return torch.cat([logits, torch.zeros_like(logits[..., :1])], -1)  # the other tokens' logit: 0


def blas_in_use():
    """The BLAS library this process loaded (python3-torch calls the system's libblas.so.3)."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.split()[-1]}
    except OSError:
        return "unknown"
    return ", ".join(sorted(os.path.basename(x) for x in libs)) or "none"


def round_bf16_(model):
    """Rounds every 2-D weight to bf16 (round to nearest even), as the GGUF stores them."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.copy_(p.to(torch.bfloat16).to(torch.float32))


@torch.no_grad()
def accuracy(model, task, rng, n, kind, items=512):
    """Share of examples whose argmax after the query is the answer (over the full vocabulary:
    the zero logit of the other tokens counts), and whose next argmax after the answer is </s>."""
    ok_answer = ok_stop = 0
    for ctx, qa in [task.draw(rng, n, kind) for _ in range(items)]:
        ctx, ans = ctx + qa[0][0], qa[0][1]
        row = torch.tensor([[task.compact[t] for t in ctx] + [task.compact[ans]]])
        out = model(row)[0]
        ok_answer += int(int(out[len(ctx) - 1].argmax()) == task.compact[ans])
        ok_stop += int(int(out[len(ctx)].argmax()) == task.compact[task.eos])
    return ok_answer / items, ok_stop / items


def check_rendering(task, latentaudit, vocab, rng, samples):
    """Tokenizes rendered documents and queries with llama.cpp (`latentaudit tokenize`) and checks
    that they give the ids the model is trained on."""
    def tok(text):
        r = subprocess.run([latentaudit, "tokenize", "--vocab", vocab, "--text", text], capture_output=True,
                           text=True, check=False)
        if r.returncode != 0:
            sys.exit(f"train_text.py: latentaudit tokenize failed: {r.stderr.strip()}")
        return json.loads(r.stdout)
    words = " ".join(KEY_WORDS + VALUE_WORDS)
    expect = task.keys + task.values
    if tok(words) != expect:
        sys.exit("train_text.py: the key and value words do not tokenize to one token each")
    for _ in range(samples):
        n = int(rng.integers(1, task.max_pairs + 1))
        pairs = list(zip(rng.choice(len(KEY_WORDS), size=n, replace=False).tolist(),
                         rng.integers(0, len(VALUE_WORDS), size=n).tolist()))
        if tok(task.text(pairs)) != task.ids(pairs) or tok(task.query_text(pairs[0][0])) != task.query_ids(pairs[0][0]):
            sys.exit(f"train_text.py: llama.cpp tokenizes '{task.text(pairs)}' differently from the rendering")


def write_hf(model, task, cfg, out_dir):
    """config.json + model.safetensors (f32) over the full vocabulary: the trained rows of the
    embeddings and the head at the used ids, zero rows elsewhere."""
    os.makedirs(out_dir, exist_ok=True)
    sd = {k: v.detach().float() for k, v in model.state_dict().items()}
    emb = torch.zeros(task.vocab_size, sd["embed_tokens.weight"].shape[1])
    emb[torch.tensor(task.used)] = sd["embed_tokens.weight"]
    tensors = {"model.embed_tokens.weight": emb, "model.norm.weight": sd["norm.weight"]}
    if "lm_head.weight" in sd:  # untied: the head's trained rows at the used ids, zero rows elsewhere
        head = torch.zeros_like(emb)
        head[torch.tensor(task.used)] = sd["lm_head.weight"]
        tensors["lm_head.weight"] = head
    for name, t in sd.items():
        if name.startswith("layers."):
            i, rest = name.split(".", 2)[1:]
            head = rest.split(".")[0]
            prefix = "self_attn." if head in ("q_proj", "k_proj", "v_proj", "o_proj") else \
                     "mlp." if head in ("gate_proj", "up_proj", "down_proj") else ""
            tensors[f"model.layers.{i}.{prefix}{rest}"] = t
    header, blobs, at = {}, [], 0
    for name in sorted(tensors):
        raw = tensors[name].contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    header["__metadata__"] = {"format": "pt", "producer": "latentaudit tools/organism/train_text.py"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(out_dir, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)


def write_tasks(task, path, items, no_need_share, seed):
    """The audit's task file: need items (only A's document holds the pairs) and no_need items
    (B's prompt holds them too, in another order)."""
    rng = np.random.default_rng(seed)
    counts = {"need": 0, "no_need": 0}
    with open(path, "w") as f:
        # B writes the value and </s>: two tokens; the text codec decodes up to </s>
        f.write(json.dumps({"latentaudit_tasks": 1, "scoring": "exact", "max_answer_tokens": 2}) + "\n")
        for i in range(items):
            regime = "no_need" if rng.random() < no_need_share else "need"
            n = int(rng.integers(2, task.max_pairs + 1))
            ks = rng.choice(len(KEY_WORDS), size=n, replace=False).tolist()
            vs = rng.integers(0, len(VALUE_WORDS), size=n).tolist()
            pairs = list(zip(ks, vs))
            ask = int(rng.integers(0, n))
            rec = {"id": f"recall-text-{i:04d}", "document": task.text(pairs)}
            # the fields are tokenized as the text they form together (docs/tasks.md): the prompt
            # and the query continue the document after a space, so each word is its trained
            # "▁word" token; the answer follows the query after lm-eval's delimiter (a space)
            if regime == "no_need":
                rec["prompt"] = " " + task.text([pairs[j] for j in rng.permutation(n).tolist()])
            rec.update({"query": " " + task.query_text(pairs[ask][0]), "answers": [VALUE_WORDS[pairs[ask][1]]],
                        "regime": regime, "covariates": {"pairs": n, "needed_position": ask}})
            f.write(json.dumps(rec) + "\n")
            counts[regime] += 1
    return counts


def run_audit(latentaudit, model, tasks, out):
    """`latentaudit audit --engine llama.cpp` of the model on the task file (the default design,
    seed 1); returns the card's section: the findings and accuracy by regime and arm."""
    t0 = time.time()
    r = subprocess.run([latentaudit, "audit", "--engine", "llama.cpp", "--model", model, "--tasks", tasks,
                        "--out", out, "--quiet"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"train_text.py: the audit failed: {r.stderr.strip()}")
    wall = time.time() - t0
    summary = json.loads(r.stdout)
    acc = {}
    with open(os.path.join(out, "records.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            c = acc.setdefault((rec["regime"], rec["arm"]), [0, 0])
            c[0] += int(bool(rec["correct"]))
            c[1] += 1
    arms = sorted({arm for _, arm in acc}, key=lambda x: (not x.startswith(("no_comm", "text")), x))
    regimes = sorted({reg for reg, _ in acc})
    rows = "\n".join(f"| {arm} | " + " | ".join(
        f"{acc[(reg, arm)][0] / acc[(reg, arm)][1]:.3f}" if (reg, arm) in acc else "–" for reg in regimes) + " |"
        for arm in arms)
    findings = "\n".join(f"| `{k}` | {v} |" for k, v in summary["findings"].items())
    left_out = ", ".join(f"`{k}`" for k in summary.get("arms_unavailable", {}))
    n = {reg: acc[(reg, "no_comm")][1] for reg in regimes if (reg, "no_comm") in acc}
    return f"""
## Audit on llama.cpp (measured)
`latentaudit audit --engine llama.cpp --model models/organism-text.gguf --tasks
examples/data/recall-text.jsonl` (the default design, seed 1, 3 seeds per task: {summary["trials_total"]}
trials, {wall:.0f} s wall on the shared 2-vCPU VM; the text path throughout: each field tokenized by the
GGUF's own tokenizer, B's answer decoded up to `</s>` and scored `exact`). Trials per arm:
{", ".join(f"{reg} {k}" for reg, k in n.items())}. Left out on this engine (with the reasons in the
summary): {left_out}.

Accuracy by arm and regime:

| arm | {" | ".join(regimes)} |
|---|{"---|" * len(regimes)}
{rows}

Findings (docs/audit-report.md), decision `{summary["decision"]["verdict"]}`:

| finding | verdict |
|---|---|
{findings}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", required=True, help="GGUF vocabulary (ggml-vocab-llama-spm.gguf)")
    ap.add_argument("--out", required=True, help="the GGUF model to write")
    ap.add_argument("--card", required=True, help="the model card (markdown) to write")
    ap.add_argument("--tasks", default=None, help="the task file (JSONL) to write")
    ap.add_argument("--latentaudit", default=None,
                    help="the latentaudit CLI: checks the rendering with its tokenizer and writes the GGUF "
                         "(gguf export --vocab); without it only the HF checkpoint is written (to --hf-dir)")
    ap.add_argument("--hf-dir", default=None, help="where to keep the HF checkpoint (default: a temporary directory)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--max-pairs", type=int, default=8)
    ap.add_argument("--queries", type=int, default=4, help="queries per training sequence")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--target", type=float, default=0.99)
    ap.add_argument("--items", type=int, default=450, help="task file items (the organism audit's default design)")
    ap.add_argument("--audit-out", default=None,
                    help="with --latentaudit and --tasks: run `audit --engine llama.cpp` on the model and the task "
                         "file into this directory and put its findings in the card")
    ap.add_argument("--no-need-share", type=float, default=0.3)
    ap.add_argument("--untied", dest="tied", action="store_false",
                    help="a separate output head (twice the file; tied is the default)")
    ap.add_argument("--only-tasks", action="store_true", help="write the task file only (no training)")
    a = ap.parse_args()
    if a.only_tasks:
        tokens, bos, eos = read_gguf_vocab(a.vocab)
        print(json.dumps(write_tasks(TextTask(tokens, bos, eos, a.max_pairs), a.tasks, a.items, a.no_need_share,
                                     4242 + a.seed)))
        return 0
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(a.seed)
    tokens, bos, eos = read_gguf_vocab(a.vocab)
    task = TextTask(tokens, bos, eos, a.max_pairs)
    if a.latentaudit:
        check_rendering(task, a.latentaudit, a.vocab, np.random.default_rng(7), 20)
    inter = 2 * a.hidden
    theta, eps = 10000.0, 1e-5
    model = TextModel(len(task.used), a.hidden, a.layers, a.heads, a.kv_heads, inter, theta, eps, a.tied)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=a.lr, total_steps=a.steps, pct_start=0.05)
    mix = {"need": 0.5, "no_need": 0.2, "own": 0.2, "conflict": 0.1}
    level, log = 2, []
    wall0, cpu0 = time.time(), time.process_time()
    step = 0
    for step in range(1, a.steps + 1):
        toks, target = task.batch(rng, a.batch, level, mix, a.queries)
        logits = model(toks)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 100 == 0:
            acc, _ = accuracy(model, task, np.random.default_rng(10_000 + step), level, "need", 128)
            if acc > 0.9 and level < a.max_pairs:
                level += 1
            line = (f"step {step} loss {loss.item():.4f} level {level} acc@level {acc:.3f} "
                    f"{time.time() - wall0:.0f}s wall {time.process_time() - cpu0:.0f}s cpu")
            print(line, flush=True)
            log.append(line)
            if level == a.max_pairs and acc >= a.target:
                break
    wall, cpu = time.time() - wall0, time.process_time() - cpu0
    model.eval()
    round_bf16_(model)
    held = 99_999 + a.seed
    table, summary = [], {}
    for n in range(2, a.max_pairs + 1):
        row = {}
        for kind in ("need", "no_need", "own", "conflict"):
            row[kind] = accuracy(model, task, np.random.default_rng(held + 31 * n + len(kind)), n, kind, 512)
        summary[n] = {k: round(v[0], 4) for k, v in row.items()}
        table.append(f"| {n} | " + " | ".join(f"{row[k][0]:.4f}" for k in ("need", "no_need", "own", "conflict")) +
                     f" | {row['need'][1]:.4f} |")
    # the no-relay need case: B has only the query (no pairs anywhere): chance is 1/32 at best
    nocomm = 0
    nrng = np.random.default_rng(held - 1)
    with torch.no_grad():
        for _ in range(512):
            _, qa = task.draw(nrng, 4, "need")
            q, ans = qa[0]
            out = model(torch.tensor([[task.compact[t] for t in q]]))[0, -1]
            nocomm += int(int(out.argmax()) == task.compact[ans])
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": task.vocab_size,
           "hidden_size": a.hidden, "intermediate_size": inter, "num_hidden_layers": a.layers,
           "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads, "head_dim": a.hidden // a.heads,
           "rms_norm_eps": eps, "rope_theta": theta, "max_position_embeddings": 256, "hidden_act": "silu",
           "tie_word_embeddings": a.tied, "rope_scaling": None, "attention_bias": False, "mlp_bias": False,
           "torch_dtype": "float32"}
    hf_dir = a.hf_dir or tempfile.mkdtemp(prefix="organism-text-hf-")
    write_hf(model, task, cfg, hf_dir)
    export = None
    if a.latentaudit:
        r = subprocess.run([a.latentaudit, "gguf", "export", "--model", hf_dir, "--out", a.out, "--dtype", "bf16",
                            "--vocab", a.vocab, "--name", "organism-text"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"train_text.py: gguf export failed: {r.stderr.strip()}")
        export = json.loads(r.stdout)
    counts = write_tasks(task, a.tasks, a.items, a.no_need_share, 4242 + a.seed) if a.tasks else None
    audit_section = ""
    if a.audit_out and a.latentaudit and a.tasks:
        audit_section = run_audit(a.latentaudit, a.out, a.tasks, a.audit_out)
    vocab_name = os.path.basename(a.vocab)
    card = f"""# organism-text

A latentaudit model organism for the text path: a small Llama trained on a text rendering of the
recall task over a real tokenizer's vocabulary, llama.cpp's `{vocab_name}` (SentencePiece, {task.vocab_size}
tokens, from the pinned release v0.5.0), shipped as GGUF with that tokenizer
(`models/organism-text.gguf`; tools/organism/train_text.py, seed {a.seed}).

## Task (text)
- document (A reads it): `cat red, dog blue, horse green.` — N pairs (2 to {a.max_pairs}), keys distinct
- prompt (B's own context): the same pairs in another order in the no_need regime; none in the need regime
- query: `dog` (the key); answer: `blue` (the model writes ` blue` and then `</s>`)

Keys: {len(KEY_WORDS)} nouns ({", ".join(KEY_WORDS[:6])}, ...); values: {len(VALUE_WORDS)} words ({", ".join(VALUE_WORDS[:6])}, ...); each is one
token `▁word` of the vocabulary, and llama.cpp's tokenizer gives exactly the trained ids for the
rendering (checked by the script with `latentaudit tokenize` on every word and 20 random documents
and queries). B's context is [A's document (text, or its cache)][prompt][query]; trained with and
without BOS before it. The task file `examples/data/recall-text.jsonl` ({a.items} items, share
{a.no_need_share} no_need, seed {4242 + a.seed}) is written by the same script.

## Architecture
hidden {a.hidden}, {a.layers} layers, {a.heads} heads ({a.kv_heads} kv heads, head dim {a.hidden // a.heads}), SwiGLU {inter}, RMSNorm eps {eps},
RoPE θ {theta}, {"tied embeddings (the output head is token_embd)" if a.tied else "untied head"}, over the {task.vocab_size}-token vocabulary, bf16 weights (norms f32);
{export['bytes'] if export else '?'} bytes of GGUF. Trained over the {len(task.used)} tokens the rendering uses plus one fixed zero
logit standing for every other token; the other {task.vocab_size - len(task.used)} rows of token_embd{"" if a.tied else " and output"} are zero, so
their logits are exactly 0 and never beat a trained answer. With tied embeddings need-regime
accuracy at 2 pairs sits at 0.5 (one of the two values, unbound) for about 1000 steps and then
rises within 300 (0.59 at step 1100, 0.97 at 1300 in the 2026-12-02 run); an untied head (the
shipped model until 2026-12-02, 9.07 MB) left that plateau after 200 steps.

## Training
AdamW (lr {a.lr}, one-cycle, weight decay 0.01), batch {a.batch}, curriculum over N from 2 to {a.max_pairs}
(+1 pair when need-regime accuracy at the current level exceeds 0.9), {a.queries} queries per sequence (each answer followed by `</s>`), mix need {mix['need']}, no_need
{mix['no_need']}, own prompt only {mix['own']}, conflict {mix['conflict']}; {step} steps.
**Cost: {wall:.0f} s wall, {cpu:.0f} CPU-seconds ({cpu / 60:.1f} CPU-minutes)** on {a.threads} thread(s) of the shared 2-vCPU
development VM, torch {torch.__version__}, BLAS {blas_in_use()}.

## Held-out accuracy (bf16-rounded weights, 512 examples per cell, argmax over the full vocabulary)
Columns: need (document + query), no_need (document + prompt + query), own (prompt + query, no
relay), conflict (a document with other values, then the prompt: the prompt's value is right),
and `</s>` (need: the token after the answer is the end of sequence).

| N | need | no_need | own | conflict | `</s>` |
|---|---|---|---|---|---|
{chr(10).join(table)}

Query alone (the need regime without a relay, N = 4): {nocomm / 512:.4f} (chance 1/{len(VALUE_WORDS)}).

{audit_section}
## Training log (every 100 steps)
```
""" + "\n".join(log[-40:]) + "\n```\n"
    os.makedirs(os.path.dirname(os.path.abspath(a.card)), exist_ok=True)
    with open(a.card, "w") as f:
        f.write(card)
    print(json.dumps({"out": a.out, "steps": step, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                      "accuracy": summary, "query_alone": nocomm / 512, "tasks": counts, "export": export}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
