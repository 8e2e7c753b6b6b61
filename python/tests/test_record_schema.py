# SPDX-License-Identifier: MIT
# docs/record.schema.json (draft 2020-12) against the C++ reader (record_from_json, through
# latentaudit.RecordWriter and read_records): the records the PyTorch example writes and
# hand-written bad records are accepted, or refused, by both. The schema is checked with a small
# validator written here (the keywords the schema uses), so the test needs no jsonschema package.
import json
import math
import os
import re

import pytest

import latentaudit as la
from conftest import SOURCE_DIR
from test_relay_example import relay_records  # noqa: F401  (the fixture: the example's records)

with open(os.path.join(SOURCE_DIR, "docs", "record.schema.json")) as f:
    SCHEMA = json.load(f)

KNOWN = {"$schema", "$id", "$ref", "$defs", "title", "description", "type", "required", "properties",
         "additionalProperties", "allOf", "anyOf", "if", "then", "items", "enum", "const", "minimum",
         "maximum", "minLength", "pattern"}


def _is_type(x, t):
    if t == "null":
        return x is None
    if t == "boolean":
        return isinstance(x, bool)
    if t == "integer":
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x == int(x)
    if t == "number":
        return isinstance(x, (int, float)) and not isinstance(x, bool)
    if t == "string":
        return isinstance(x, str)
    if t == "array":
        return isinstance(x, list)
    if t == "object":
        return isinstance(x, dict)
    raise AssertionError("unknown type " + t)


def _equal(a, b):  # JSON equality: 1 == 1.0, but true is not 1
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def errors(x, s=SCHEMA, path="$"):
    """The schema violations of instance x, as 'path: keyword' strings (empty when valid)."""
    unknown = set(s) - KNOWN
    assert not unknown, "the test's validator does not implement %s" % unknown
    if "$ref" in s:
        assert s["$ref"].startswith("#/$defs/")
        return errors(x, {**SCHEMA["$defs"][s["$ref"][8:]], **{k: v for k, v in s.items() if k != "$ref"}}, path)
    out = []
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(_is_type(x, t) for t in types):
            return [path + ": type"]
    if "enum" in s and not any(_equal(x, e) for e in s["enum"]):
        out.append(path + ": enum")
    if "const" in s and not _equal(x, s["const"]):
        out.append(path + ": const")
    if _is_type(x, "number"):
        if "minimum" in s and x < s["minimum"]:
            out.append(path + ": minimum")
        if "maximum" in s and x > s["maximum"]:
            out.append(path + ": maximum")
    if isinstance(x, str):
        if "minLength" in s and len(x) < s["minLength"]:
            out.append(path + ": minLength")
        if "pattern" in s and not re.search(s["pattern"], x):
            out.append(path + ": pattern")
    if isinstance(x, list) and "items" in s:
        for i, e in enumerate(x):
            out += errors(e, s["items"], "%s[%d]" % (path, i))
    if isinstance(x, dict):
        out += [path + "." + k + ": required" for k in s.get("required", []) if k not in x]
        props = s.get("properties", {})
        for k, v in x.items():
            if k in props:
                out += errors(v, props[k], path + "." + k)
            elif s.get("additionalProperties", True) is not True:
                ap = s["additionalProperties"]
                out += [path + "." + k + ": additionalProperties"] if ap is False else errors(v, ap, path + "." + k)
    for sub in s.get("allOf", []):
        out += errors(x, sub, path)
    if "anyOf" in s and all(errors(x, sub, path) for sub in s["anyOf"]):
        out.append(path + ": anyOf")
    if "if" in s and not errors(x, s["if"], path) and "then" in s:
        out += errors(x, s["then"], path)
    return out


def cpp_accepts(rec, tmp_path):
    """Whether the C++ reader accepts rec, through RecordWriter (record_from_json before writing)
    and read_records of the written line; the written record must also satisfy the schema."""
    path = tmp_path / ("r%d.jsonl" % len(list(tmp_path.iterdir())))
    try:
        with la.RecordWriter(path) as w:
            canonical = w.write(rec)
    except la.CorruptData:
        return False
    assert errors(canonical) == [], "the canonical form of %r violates the schema" % rec
    assert la.read_records(path)[0] == canonical
    return True


def test_schema_is_draft_2020_12_and_referenced():
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["required"] == ["item", "seed", "arm", "correct"]
    with open(os.path.join(SOURCE_DIR, "docs", "records.md")) as f:
        assert "record.schema.json" in f.read()
    # every field docs/records.md lists has a property in the schema
    with open(os.path.join(SOURCE_DIR, "docs", "records.md")) as f:
        documented = set(re.findall(r"^\| `([a-z_]+)` \| ", f.read(), re.M))
    assert documented - set(SCHEMA["properties"]) == set()


GOOD = [
    {"item": 0, "seed": 0, "arm": "kv_full", "correct": True},
    {"item": 3, "seed": 1, "arm": "no_comm", "correct": 0},
    {"item": 3.0, "seed": 1, "arm": "no_comm", "correct": 1.0},
    {"item": 1, "seed": 0, "arm": "x", "correct": False, "answer_logprob": None, "regime": None, "bytes": None},
    {"item": 1, "seed": 0, "arm": "kv_noise_0.5", "correct": True, "answer_logprob": -0.25, "noise_sigma": 0.5,
     "bytes": 4096, "export_s": 1e-6, "covariates": {"doc_tokens": 19}, "policy": {"policy": "kv_noise_0.5"},
     "an_unknown_field": [1, 2]},
    {"item": 2, "seed": 0, "arm": "text_full", "correct": True, "regime": "stale", "stale_answer": False},
    {"item": 2, "seed": 0, "arm": "kv_message", "correct": True, "message_length": 2, "message_tokens": [4, 36],
     "message": None, "budget": 32},
    {"item": 2, "seed": 0, "arm": "m", "correct": True, "message_tokens": "ignored without message_length"},
    {"item": 5, "seed": 2, "arm": "kv_drift_300", "correct": False, "drift_steps": 300, "latency_repeats_s": [0.1],
     "covariate_labels": {"domain": "biology"}, "unavailable": {"attention_mass": "no capture"}},
]

BAD = [
    {"seed": 0, "arm": "a", "correct": True},                       # item missing
    {"item": 0, "arm": "a", "correct": True},                       # seed missing
    {"item": 0, "seed": 0, "correct": True},                        # arm missing
    {"item": 0, "seed": 0, "arm": "a"},                             # correct missing
    {"item": None, "seed": 0, "arm": "a", "correct": True},         # a required field null
    {"item": -1, "seed": 0, "arm": "a", "correct": True},
    {"item": 1.5, "seed": 0, "arm": "a", "correct": True},
    {"item": "1", "seed": 0, "arm": "a", "correct": True},
    {"item": True, "seed": 0, "arm": "a", "correct": True},
    {"item": 2.0 ** 60, "seed": 0, "arm": "a", "correct": True},
    {"item": 0, "seed": 0, "arm": "", "correct": True},
    {"item": 0, "seed": 0, "arm": "a\nb", "correct": True},
    {"item": 0, "seed": 0, "arm": 7, "correct": True},
    {"item": 0, "seed": 0, "arm": "a", "correct": 2},
    {"item": 0, "seed": 0, "arm": "a", "correct": "yes"},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "regime": "ne\x00ed"},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "answer_logprob": 0.5},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "answer_logprob": "-1"},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "bytes": -4},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "generated_tokens": 1.5},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "b_prefill_s": -0.1},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "latency_repeats_s": [-1.0]},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "noise_sigma": -0.5},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "transfer_measured_s": -1},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "drift_steps": 2.5},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "regime": "need", "stale_answer": True},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "stale_answer": "no"},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "covariates": {"doc_tokens": "19"}},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "covariates": [1]},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "covariate_labels": {"domain": 1}},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "policy": "kv_full"},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "unavailable": {"attention_mass": 0}},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "message_length": 1},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "message_length": 1, "message_tokens": [-3]},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "message_length": 1, "message_tokens": [4], "message": 5},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "task_fields": [1]},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "sender_fingerprint": 12},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "query_index": -1},
    {"item": 0, "seed": 0, "arm": "a", "correct": True, "relay_error": False},
]


@pytest.mark.parametrize("rec", GOOD, ids=[str(i) for i in range(len(GOOD))])
def test_good_records_pass_schema_and_reader(rec, tmp_path):
    assert errors(rec) == []
    assert cpp_accepts(rec, tmp_path)


@pytest.mark.parametrize("rec", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_records_fail_schema_and_reader(rec, tmp_path):
    assert errors(rec) != []
    assert not cpp_accepts(rec, tmp_path)


def test_message_length_mismatch_is_the_readers_only(tmp_path):
    # documented in the schema's description: a count the schema cannot compare
    rec = {"item": 0, "seed": 0, "arm": "a", "correct": True, "message_length": 2, "message_tokens": [4]}
    assert errors(rec) == []
    assert not cpp_accepts(rec, tmp_path)


def test_example_records_satisfy_the_schema(relay_records):
    recs = [json.loads(line) for line in open(relay_records)]
    assert recs
    for r in recs:
        assert errors(r) == [], (r["item"], r["arm"], errors(r))
    assert la.read_records(relay_records) == recs
