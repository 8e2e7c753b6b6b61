# SPDX-License-Identifier: MIT
# read_records against pandas.read_json(lines=True) on the main job's record count (44 550), in the
# same run: prints both times and their ratio; asserts only that both read the same records (a
# timing assertion would flake on a shared machine). Run as a script for the numbers alone:
#   PYTHONPATH=build/release/python /usr/bin/python3 python/tests/test_read_records_speed.py [N]
import json
import sys
import time

import latentaudit as la

RECORDS = 44550  # the main job's records (run-main.sh's design)


def write_records(path, n):
    """n canonical records shaped as the main job's (every field, covariates, fingerprints)."""
    arms = ("no_comm", "text_full", "kv_full", "deranged", "zeroed", "random", "kv_noise_0.5")
    with open(path, "w") as f:
        for i in range(n):
            item, arm = divmod(i, len(arms))
            f.write(json.dumps({
                "item": item, "seed": 1, "arm": arms[arm], "regime": ("need", "no_need", "stale", "conflict")[item % 4],
                "correct": (i * 7919) % 10 < 7, "answer_logprob": -0.001 * (i % 997), "generated_tokens": 1,
                "bytes": 0 if arm == 0 else 100 + 37 * (i % 50), "relay_tokens": 9, "a_prefill_s": 0.000319977,
                "export_s": 0, "policy_s": 0, "encode_s": 9.0653e-05, "transfer_s": 1.0004e-05, "decode_s": 6.308e-05,
                "import_s": 0, "b_prefill_s": 0.000860715, "b_decode_s": 8.12e-07, "link": "pcie4",
                "attention_mass": 0.627508132329188, "hidden_cosine": 1, "next_token_kl": 0,
                "covariates": {"doc_tokens": 9, "pairs": 4, "own_tokens": 8, "cache_age_versions": 0,
                               "prompt_overlap": 1, "needed_position": 0},
                "task_id": "organism-%d" % item, "query_index": 0,
                "sender_fingerprint": "LlamaForCausalLM:2x2x16:1c440c140eb22d9d",
                "receiver_fingerprint": "LlamaForCausalLM:2x2x16:1c440c140eb22d9d"}) + "\n")


def measure(path):
    import pandas
    t0 = time.perf_counter()
    frame = la.read_records(path, as_frame=True)
    t1 = time.perf_counter()
    rows = la.read_records(path)
    t2 = time.perf_counter()
    pd_frame = pandas.read_json(path, lines=True)
    t3 = time.perf_counter()
    return frame, rows, pd_frame, t1 - t0, t2 - t1, t3 - t2


def report_line(n, as_frame, as_dicts, pandas_s):
    return ("read_records of %d records: as_frame %.2f s, dicts %.2f s; pandas.read_json(lines=True) %.2f s; "
            "ratio read_records(as_frame)/pandas = %.2f" % (n, as_frame, as_dicts, pandas_s, as_frame / pandas_s))


def test_read_records_against_pandas(tmp_path, capsys):
    pytest = __import__("pytest")
    pytest.importorskip("pandas")
    path = tmp_path / "records.jsonl"
    write_records(path, RECORDS)
    frame, rows, pd_frame, a, b, c = measure(path)
    assert len(frame) == len(rows) == len(pd_frame) == RECORDS
    assert list(frame["item"][:3]) == list(pd_frame["item"][:3])
    with capsys.disabled():
        print("\n" + report_line(RECORDS, a, b, c))


if __name__ == "__main__":
    import tempfile, os
    n = int(sys.argv[1]) if len(sys.argv) > 1 else RECORDS
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "records.jsonl")
        write_records(p, n)
        _, _, _, a, b, c = measure(p)
        print(report_line(n, a, b, c))
