# SPDX-License-Identifier: MIT
# Records and the report from Python: RecordWriter validates and writes what the C++ journal
# writes, read_records reads it back, report() equals `latentaudit report` on the same records.
import json
import os
import sys

import numpy as np
import pytest

import latentaudit as la

ARMS = ("no_comm", "text_full", "kv_full", "kv_deranged", "kv_zeroed")


def synthetic_records(items=24, seeds=2):
    rng = np.random.default_rng(17)
    p = {"no_comm": 0.2, "text_full": 0.85, "kv_full": 0.9, "kv_deranged": 0.25, "kv_zeroed": 0.2}
    out = []
    for item in range(items):
        regime = "need" if item % 3 else "no_need"
        for seed in range(seeds):
            for arm in ARMS:
                q = 0.9 if regime == "no_need" else p[arm]
                out.append({
                    "item": item, "seed": seed, "arm": arm, "regime": regime, "correct": bool(rng.random() < q),
                    "bytes": 0 if arm == "no_comm" else (2000 if arm == "text_full" else 90000),
                    "b_prefill_s": 0.01 + 0.001 * rng.random(), "b_decode_s": 0.02,
                    "sender_fingerprint": "m1" if arm.startswith("kv") else "",
                    "receiver_fingerprint": "m1",
                })
    return out


def test_writer_round_trip(tmp_path):
    path = tmp_path / "records.jsonl"
    recs = synthetic_records(4, 1)
    with la.RecordWriter(path) as w:
        for r in recs:
            written = w.write(r)
            assert written["item"] == r["item"] and written["arm"] == r["arm"]
            # defaults filled in by the C++ parser: an absent arm_kind is the kind the label names
            # ("" for a label that names no arm, e.g. kv_deranged: the arm is `deranged`)
            assert written["arm_kind"] == (r["arm"] if r["arm"] in ("no_comm", "text_full", "kv_full") else
                                           written["arm_kind"])
            assert "arm_kind" in written
    back = la.read_records(path)
    assert len(back) == len(recs)
    for r, b in zip(recs, back):
        for k, v in r.items():
            assert b[k] == v, k
    # the file is in the C++ journal's canonical form: read and re-written, it is unchanged
    with la.RecordWriter(tmp_path / "again.jsonl") as w:
        for b in back:
            w.write(b)
    assert (tmp_path / "again.jsonl").read_text() == path.read_text()


def test_writer_validates_and_refuses(tmp_path):
    path = tmp_path / "new" / "records.jsonl"  # the directory is created
    with la.RecordWriter(path) as w:
        w.write({"item": 0, "seed": 0, "arm": "kv_full", "correct": True})
        with pytest.raises(la.CorruptData, match="field 'correct' is required"):
            w.write({"item": 1, "seed": 0, "arm": "kv_full"})
        with pytest.raises(ValueError, match="field 'item'"):
            w.write({"item": -1, "seed": 0, "arm": "kv_full", "correct": True})
        with pytest.raises(la.InvalidArgument, match="already written"):
            w.write({"item": 0, "seed": 0, "arm": "kv_full", "correct": False})
        with pytest.raises(ValueError):  # NaN is not JSON
            w.write({"item": 2, "seed": 0, "arm": "kv_full", "correct": True, "answer_logprob": float("nan")})
    with pytest.raises(la.InvalidArgument, match="already holds records"):
        la.RecordWriter(path)
    with la.RecordWriter(path, append=True) as w:
        with pytest.raises(la.InvalidArgument, match="already written"):
            w.write({"item": 0, "seed": 0, "arm": "kv_full", "correct": True})
        w.write({"item": 1, "seed": 0, "arm": "kv_full", "correct": False})
    assert [r["item"] for r in la.read_records(path)] == [0, 1]
    with pytest.raises(la.InvalidArgument, match="closed"):
        w.write({"item": 3, "seed": 0, "arm": "kv_full", "correct": True})


def test_read_records_errors_and_frame(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item": 0, "seed": 0, "arm": "a", "correct": true}\n{"item": 1}\n')
    with pytest.raises(la.CorruptData):
        la.read_records(bad)
    with pytest.raises(ValueError):
        la.read_records(tmp_path / "missing.jsonl")
    good = tmp_path / "good.jsonl"
    with la.RecordWriter(good) as w:
        for r in synthetic_records(2, 1):
            w.write(r)
    # without pandas (optional to users): an ImportError naming the package
    real = sys.modules.get("pandas")
    sys.modules["pandas"] = None  # makes `import pandas` raise ImportError
    try:
        with pytest.raises(ImportError, match="python3-pandas"):
            la.read_records(good, as_frame=True)
    finally:
        if real is None:
            del sys.modules["pandas"]
        else:
            sys.modules["pandas"] = real
    # with pandas (install-deps.sh installs it): one row per record, one column per field, the values
    # the list of dicts holds
    import pandas

    rows = la.read_records(good)
    df = la.read_records(good, as_frame=True)
    assert isinstance(df, pandas.DataFrame)
    assert len(df) == len(rows) == 10 and set(ARMS) == set(df["arm"])
    assert list(df.columns) == list(rows[0].keys())
    for i, r in enumerate(rows):
        for k in ("item", "seed", "arm", "correct", "regime"):
            assert df.iloc[i][k] == r[k]
    assert df["correct"].dtype == bool


def test_report_from_dicts_and_path_agree(tmp_path):
    recs = synthetic_records()
    path = tmp_path / "records.jsonl"
    with la.RecordWriter(path) as w:
        for r in recs:
            w.write(r)
    out = tmp_path / "report"
    rep = la.report(path, out=out, bootstrap=200)
    for name in ("report.md", "report.json"):
        assert (out / name).exists()
    assert json.loads((out / "report.json").read_text()) == rep
    assert rep["findings"] and rep["decision"]
    assert la.report(recs, bootstrap=200) == rep  # no files without out
    assert la.report(path, bootstrap=200, threads=1) == rep  # results do not depend on threads
    with pytest.raises(ValueError, match="margin"):
        la.report(path, margin=2)
    with pytest.raises(ValueError, match="no records"):
        la.report([])


def test_report_equals_cli(cli, tmp_path):
    recs = synthetic_records()
    path = tmp_path / "records.jsonl"
    with la.RecordWriter(path) as w:
        for r in recs:
            w.write(r)
    (tmp_path / "py").mkdir()
    rep = la.report(path, out=tmp_path / "py", margin=0.1, alpha=0.05, bootstrap=300, seed=3)
    summary = cli("report", "--records", path, "--out", tmp_path / "cli", "--margin", 0.1, "--alpha", 0.05,
                  "--bootstrap", 300, "--seed", 3, "--quiet")
    cli_json = json.loads((tmp_path / "cli" / "report.json").read_text())
    assert rep == cli_json
    assert {f["id"]: f["verdict"] for f in rep["findings"]} == summary["findings"]
    names = sorted(n for n in os.listdir(tmp_path / "cli") if not n.startswith("."))
    assert names == sorted(n for n in os.listdir(tmp_path / "py") if not n.startswith("."))
    for name in names:  # the same files, byte for byte
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name


def test_report_of_a_stopped_audit_equals_the_cli(cli, tmp_path):
    # `audit --until-decided` stops arms one by one: report(DIR) reads the rule and schedule.json as
    # `latentaudit report --records DIR` does (confidence sequences, trials never scheduled left out
    # of the missing-record bounds), so the two give the same report
    models = os.path.join(os.path.dirname(__file__), "..", "..", "models", "organism-a")
    out = tmp_path / "audit"
    cli("audit", "--model", models, "--partner", "none", "--drift", "none", "--items", 40, "--seeds", 1,
        "--arms", "no_comm,text_full,kv_full", "--until-decided", "--batch-items", 20, "--out", out, "--quiet")
    assert (out / "schedule.json").exists()
    rep = la.report(out)
    cli("report", "--records", out, "--out", tmp_path / "cli", "--quiet")
    cli_json = json.loads((tmp_path / "cli" / "report.json").read_text())
    assert rep == cli_json
    assert rep["options"]["schedule"]["batches"] == 2
    assert all(c["missing"] == 0 for c in rep["completeness"]["arms"])
    assert any(c["not_scheduled"] > 0 for c in rep["completeness"]["arms"])


def test_report_of_a_directory_counts_the_design_as_the_cli_does(cli, tmp_path):
    # The design is the denominator: units a stack lost in every arm are missing and bounded when the
    # report knows the design (design.json beside the records). report(DIR) reads it through the same
    # library path as `latentaudit report --records DIR` (read_report_input), so both count the lost
    # units and give the same report; records outside the design are a UserWarning each.
    models = os.path.join(os.path.dirname(__file__), "..", "..", "models", "organism-a")
    out = tmp_path / "audit"
    cli("audit", "--model", models, "--partner", "none", "--drift", "none", "--items", 12, "--seeds", 2,
        "--arms", "no_comm,text_full,kv_full", "--out", out, "--quiet")
    path = out / "records.jsonl"
    lines = path.read_text().splitlines()
    kept = [ln for ln in lines if (json.loads(ln)["item"], json.loads(ln)["seed"]) not in {(3, 0), (5, 1)}]
    assert len(kept) == len(lines) - 6
    path.write_text("\n".join(kept) + "\n")
    rep = la.report(out)
    assert rep["completeness"]["design_units_absent"] == 2
    cli("report", "--records", out, "--out", tmp_path / "cli", "--quiet")
    assert rep == json.loads((tmp_path / "cli" / "report.json").read_text())
    # a record outside the design beside it: the CLI's warning, as a Python warning
    outside = json.loads(kept[0])
    outside["item"] = 99
    path.write_text("\n".join(kept + [json.dumps(outside)]) + "\n")
    with pytest.warns(UserWarning, match="outside the design"):
        la.report(out)
