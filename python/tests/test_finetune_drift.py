# SPDX-License-Identifier: MIT
# tools/real/finetune_drift.py (docs/real-models.md, "Drift and maps"): the drifted siblings of
# TinyStories-656K are a function of the options (byte-identical overlays and manifest from two
# runs), their overlays carry the checkpoint's own tensor names, its BPE matches the C++ reader,
# and `latentaudit audit --drift` accepts the manifest. Needs Debian's python3-torch and the real
# models folder (../shared/models or LATENTAUDIT_MODELS): each skips by name without them; the
# audit part needs the CLI (LATENTAUDIT_CLI, set by CTest). A few seconds: 2 steps, 16 stories.
import importlib
import json
import os
import subprocess
import sys

import pytest

SOURCE_DIR = os.environ.get("LATENTAUDIT_SOURCE_DIR",
                            os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
MODELS = os.environ.get("LATENTAUDIT_MODELS", os.path.join(SOURCE_DIR, "..", "shared", "models"))
BASE = os.path.join(MODELS, "tinystories-656k")


@pytest.fixture(scope="module")
def finetune():
    """The script's module; skips by name without torch or without the models."""
    try:
        importlib.import_module("torch")
    except ImportError as e:
        if os.environ.get("LATENTAUDIT_REQUIRE_TORCH") == "1":
            pytest.fail("torch is required (LATENTAUDIT_REQUIRE_TORCH=1) but cannot be imported: %s" % e)
        pytest.skip("SKIPPED(torch): torch is not installed (Debian: python3-torch)")
    if not os.path.exists(os.path.join(BASE, "model.safetensors")):
        pytest.skip("SKIPPED(real-models): no models folder at '%s' (set LATENTAUDIT_MODELS)" % MODELS)
    sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "real"))
    return importlib.import_module("finetune_drift")


def run(finetune, out):
    assert finetune.main(["--base", BASE, "--out", str(out), "--levels", "1,2", "--stories", "16",
                          "--eval", "2", "--batch", "2", "--seed", "3"]) == 0
    with open(os.path.join(out, "drift.json")) as f:
        manifest = json.load(f)
    blobs = {lv["overlay"]: open(os.path.join(out, lv["overlay"]), "rb").read() for lv in manifest["levels"]}
    return manifest, blobs


@pytest.fixture(scope="module")
def two_runs(finetune, tmp_path_factory):
    """Two runs with the same options: (directory, manifest, overlays) each."""
    out = []
    for name in ("a", "b"):
        d = tmp_path_factory.mktemp(name)
        out.append((d, *run(finetune, d)))
    return out


def test_deterministic_overlays_and_manifest(two_runs):
    (a, m1, b1), (_, m2, b2) = two_runs
    assert sorted(b1) == ["steps-1.safetensors", "steps-2.safetensors"]
    assert b1 == b2  # byte-identical overlays
    for m in (m1, m2):
        for lv in m["levels"]:
            lv.pop("seconds")
    assert m1 == m2
    # the manifest's base is the checkpoint, relative to the output directory
    assert os.path.samefile(os.path.join(a, m1["base"]), BASE)
    # the checkpoint's own names (the tied embedding as lm_head.weight only); the model moved
    assert "lm_head.weight" in m1["trained_tensors"]
    assert "model.embed_tokens.weight" not in m1["trained_tensors"]
    assert b1["steps-1.safetensors"] != b1["steps-2.safetensors"]
    assert m1["levels"][1]["key_rel_rms_diff"] > 0


def test_bpe_matches_the_cli_tokenizer(finetune):
    cli = os.environ.get("LATENTAUDIT_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("the latentaudit CLI is not built here (LATENTAUDIT_CLI unset)")
    tok = finetune.BpeTokenizer(os.path.join(BASE, "tokenizer.json"))
    for doc, rest in finetune.story_texts(5, 3, set()):
        for text in (doc, doc + rest):
            out = subprocess.run([cli, "tokenize", "--model", BASE, "--text", text], check=True,
                                 capture_output=True, text=True)
            assert tok.encode(text) == json.loads(out.stdout)


def test_the_audit_accepts_the_manifest(two_runs, tmp_path):
    cli = os.environ.get("LATENTAUDIT_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("the latentaudit CLI is not built here (LATENTAUDIT_CLI unset)")
    drift = two_runs[0][0]
    tasks = tmp_path / "tasks.jsonl"
    subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "tools", "tasks", "story_tasks.py"), str(tasks),
                    "--tasks", "3", "--seed", "4", "--no-need-share", "0", "--stale-share", "0",
                    "--conflict-share", "0"], check=True)
    out = subprocess.run([cli, "audit", "--model", BASE, "--tasks", str(tasks), "--seeds", "1", "--drift", str(drift),
                          "--arms", "no_comm,kv_full,kv_drift_1,kv_drift_2", "--partner", "none", "--map", "none",
                          "--timing-repeats", "0", "--bootstrap", "200", "--quiet", "--out", str(tmp_path / "audit")],
                         check=True, capture_output=True, text=True)
    summary = json.loads(out.stdout)
    assert summary["trials_run"] == 12
    with open(tmp_path / "audit" / "records.jsonl") as f:
        records = [json.loads(line) for line in f if line.strip()]
    senders = {r["arm"]: r.get("sender_fingerprint") for r in records}
    assert senders["kv_drift_1"] != senders["kv_drift_2"]  # each level is its own sender
