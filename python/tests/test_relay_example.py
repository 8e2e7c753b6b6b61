# SPDX-License-Identifier: MIT
# examples/python/relay_audit.py: the relay protocol end to end in PyTorch on models/organism-a.
# Needs Debian's python3-torch (scripts/install-deps.sh). Without torch the tests skip, except under
# LATENTAUDIT_REQUIRE_TORCH=1 (set by the CTest registration), where they fail: CI cannot pass them
# silently.
import importlib
import json
import os
import sys

import pytest

import latentaudit as la
from conftest import SOURCE_DIR

EXAMPLE_DIR = os.path.join(SOURCE_DIR, "examples", "python")
MODEL = os.path.join(SOURCE_DIR, "models", "organism-a")
TASKS = os.path.join(EXAMPLE_DIR, "organism-a-tasks.jsonl")
ITEMS = 16


def example():
    """The example module (imports torch)."""
    try:
        importlib.import_module("torch")
    except ImportError as e:
        if os.environ.get("LATENTAUDIT_REQUIRE_TORCH") == "1":
            pytest.fail("torch is required (LATENTAUDIT_REQUIRE_TORCH=1) but cannot be imported: %s; "
                        "scripts/install-deps.sh installs python3-torch" % e)
        pytest.skip("torch is not installed (Debian: python3-torch)")
    if EXAMPLE_DIR not in sys.path:
        sys.path.insert(0, EXAMPLE_DIR)
    return importlib.import_module("relay_audit")


@pytest.fixture(scope="session")
def relay_records(tmp_path_factory):
    """records.jsonl of the example on the first ITEMS items, one seed."""
    out = tmp_path_factory.mktemp("relay")
    return example().run(TASKS, ITEMS, 1, str(out), MODEL, design_seed=1, sigma=0.5)


def test_cached_forward_equals_reference_forward():
    ex = example()
    import torch
    import reference

    torch.set_grad_enabled(False)
    agent = ex.Agent(MODEL)
    tokens = [0, 19, 61, 18, 43, 30, 57, 1, 18]
    whole, k, v = agent.prefill(tokens, list(range(len(tokens))))
    ref = reference.forward(agent.cfg, agent.w, tokens)
    assert torch.allclose(whole, ref, atol=1e-4)
    assert k.shape == (2, len(tokens), 2, 16) and v.shape == k.shape
    # A's cache of the first 7 tokens imported at positions 0..6, then B's tokens: the same logits
    _, ka, va = agent.prefill(tokens[:7], list(range(7)))
    tail, kb, _ = agent.prefill(tokens[7:], [7, 8], (ka, va))
    assert torch.allclose(tail, whole[7:], atol=1e-4)
    assert kb.shape[1] == len(tokens)


def test_policy_seed_is_the_drivers():
    # trial/record_builder.hpp policy_seed(design, s) = mix64(seed ^ golden * (s + 1)), mix64 = SplitMix64's finalizer
    ex = example()
    z = (1 ^ 0x9E3779B97F4A7C15) & ex.MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & ex.MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & ex.MASK64
    assert ex.policy_seed(1, 0) == z ^ (z >> 31)
    assert ex.policy_seed(1, 1) != ex.policy_seed(1, 0)


def test_records_are_valid_and_kv_beats_no_comm(relay_records, tmp_path):
    recs = la.read_records(relay_records)  # the C++ reader accepts every line
    arms = ("no_comm", "text_full", "kv_full", "deranged", "zeroed", "random", "kv_noise_0.5")
    assert sorted((r["item"], r["arm"]) for r in recs) == sorted((i, a) for i in range(ITEMS) for a in arms)
    for r in recs:
        assert r["seed"] == 0 and r["regime"] in ("need", "no_need", "stale", "conflict")
        assert r["answer_logprob"] is not None and r["answer_logprob"] <= 0
        assert r["generated_tokens"] == 1
        assert (r["bytes"] == 0) == (r["arm"] == "no_comm")
        if r["arm"] not in ("no_comm", "text_full"):
            assert r["relay_tokens"] == r["covariates"]["doc_tokens"]
        if r["regime"] != "stale":
            assert r["stale_answer"] is None
    kinds = {r["arm"]: r["arm_kind"] for r in recs}
    assert kinds["kv_noise_0.5"] == "kv_policy" and kinds["deranged"] == "deranged"
    acc = {a: sum(r["correct"] for r in recs if r["arm"] == a) / ITEMS for a in arms}
    assert acc["kv_full"] > acc["no_comm"], acc
    assert acc["text_full"] > acc["no_comm"], acc
    # the audit of the records: the report files and a decision
    rep = la.report(relay_records, out=str(tmp_path / "report"), bootstrap=200)
    assert rep["decision"]["verdict"]
    assert (tmp_path / "report" / "report.md").exists()
    ids = {f["id"]: f["verdict"] for f in rep["findings"]}
    assert ids["need.kv_beats_no_comm"] in ("yes", "inconclusive")


def test_task_file_restricted_to_one_query(relay_records):
    out = os.path.dirname(relay_records)
    with open(os.path.join(out, "tasks.jsonl")) as f:
        lines = [json.loads(line) for line in f]
    assert lines[0]["latentaudit_tasks"] == 1
    tasks = lines[1:]
    assert len(tasks) == ITEMS
    assert all("queries" not in t and len(t["query_tokens"]) == 2 for t in tasks)
