# SPDX-License-Identifier: MIT
# RecordWriter and report() as a numpy/pandas user calls them: numpy scalars, NaN named by field,
# typo'd fields refused with "did you mean" (the C++ record_field_names), the record's number in
# errors, report() of a DataFrame; read_records' objects equal json.loads of the canonical lines.
import json

import numpy as np
import pytest

import latentaudit as la


def rec(item, arm="kv_full", **kw):
    r = {"item": item, "seed": 0, "arm": arm, "regime": "need", "correct": True}
    r.update(kw)
    return r


def test_numpy_scalars_are_written(tmp_path):
    with la.RecordWriter(tmp_path / "r.jsonl") as w:
        out = w.write({"item": np.int64(3), "seed": np.int32(0), "arm": "kv_full", "correct": np.bool_(False),
                       "regime": "need", "bytes": np.uint64(4096), "answer_logprob": np.float32(-0.5),
                       "covariates": {"doc_tokens": np.int64(12)}})
    assert out["item"] == 3 and out["correct"] is False and out["bytes"] == 4096
    assert out["answer_logprob"] == -0.5
    assert la.read_records(tmp_path / "r.jsonl")[0] == out


def test_nan_is_refused_naming_the_field_and_record(tmp_path):
    with la.RecordWriter(tmp_path / "r.jsonl") as w:
        w.write(rec(0))
        w.write(rec(1))
        with pytest.raises(la.CorruptData) as e:
            w.write(rec(2, answer_logprob=float("nan")))
        assert "record 3" in str(e.value) and "answer_logprob" in str(e.value)
        with pytest.raises(la.CorruptData, match="record 4: field 'bytes'"):
            w.write(rec(3, bytes=np.float64("inf")))


def test_typo_fields_are_refused_with_did_you_mean(tmp_path):
    with la.RecordWriter(tmp_path / "r.jsonl") as w:
        with pytest.raises(la.CorruptData) as e:
            w.write({"item": 0, "seed": 0, "arm": "kv_full", "correct": True, "regmie": "need"})
        assert "record 1" in str(e.value) and "'regmie'" in str(e.value) and "did you mean 'regime'" in str(e.value)
        with pytest.raises(la.CorruptData, match="did you mean 'bytes'"):
            w.write(rec(0, bytse=10))
        with pytest.warns(UserWarning, match="my_own_tag"):
            out = w.write(rec(0, my_own_tag="x"))
        assert "my_own_tag" not in out
    assert w.written == 1


def test_parser_errors_carry_the_record_number(tmp_path):
    with la.RecordWriter(tmp_path / "r.jsonl") as w:
        for i in range(4):
            w.write(rec(i))
        with pytest.raises(la.CorruptData, match="record 5"):
            w.write({"item": 9, "seed": 0, "arm": "kv_full", "correct": "yes"})
        with pytest.raises(la.InvalidArgument, match="record 6: key"):
            w.write(rec(0))


def test_report_accepts_a_dataframe(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    rows = [rec(i, arm, correct=bool(rng.random() < (0.2 if arm == "no_comm" else 0.9)),
                bytes=0 if arm == "no_comm" else 1000)
            for i in range(30) for arm in ("no_comm", "text_full", "kv_full")]
    with la.RecordWriter(tmp_path / "r.jsonl") as w:
        for r in rows:
            w.write(r)
    from_path = la.report(tmp_path / "r.jsonl", bootstrap=200)
    frame = la.read_records(tmp_path / "r.jsonl", as_frame=True)
    assert len(frame) == 90
    from_frame = la.report(frame, bootstrap=200)
    assert from_frame["decision"] == from_path["decision"]
    assert from_frame["findings"] == from_path["findings"]
    assert la.report(pd.DataFrame(rows), bootstrap=200)["decision"] == from_path["decision"]
    bad = pd.DataFrame(rows).rename(columns={"regime": "regmie"})
    with pytest.raises(la.CorruptData, match="records row 0: unknown field 'regmie' .did you mean 'regime'"):
        la.report(bad)


def test_read_records_equals_json_of_the_canonical_lines(tmp_path):
    p = tmp_path / "r.jsonl"
    with la.RecordWriter(p) as w:
        w.write(rec(0, answer_logprob=-1e-300, bytes=2 ** 40, task_id='a "quoted" \u00e9\U0001F600 \\ x'))
        w.write(rec(1, arm="text_full", covariates={"doc_tokens": 3.5, "pairs": 2}))
    lines = la._latentaudit._read_record_lines(str(p))
    assert la.read_records(p) == [json.loads(line) for line in lines]
    cols = la._latentaudit._read_records(str(p), True)
    assert cols["item"] == [0, 1] and cols["arm"] == ["kv_full", "text_full"]
