# SPDX-License-Identifier: MIT
# la.RelayPolicy (issue 54 item 1): report.json decision.rules evaluated per request by the C++
# library's evaluator (bound, not re-implemented): first match, conditions on another feature and on
# the maps held, strict requests and rules naming the field, and the same answers as
# `latentaudit policy --requests` on 200 seeded random requests (seed 5404).
import json
import os
import random
import subprocess

import pytest

import latentaudit as la


def rest(check="value"):
    return {"check": check, "finding": None, "estimate": None, "lo": None, "hi": None, "verdict": None}


def rule(i, when, action, line=0, map_id=None, check="value"):
    return {"index": i, "line": line, "text": "line %d" % line, "when": when, "action": action, "map": map_id,
            "rests_on": rest(check)}


REPORT = {"decision": {"verdict": "relay with conditions", "relay_allowed": True, "policy": ["a", "b", "c", "d"],
                       "rules": [
                           rule(0, [{"feature": "cache_age_versions", "op": ">=", "value": 1}], "text", 1,
                                check="freshness"),
                           rule(1, [{"feature": "prompt_overlap", "op": ">", "value": 0}], "no_communication", 2,
                                check="conflict"),
                           rule(2, [{"feature": "sender_fingerprint", "op": "==", "value": "drift"},
                                    {"feature": "maps", "op": "contains", "value": "m300"}],
                                "relay_through_map", 3, "m300", check="map_kv_mapped_drift_300"),
                           rule(3, [{"feature": "sender_fingerprint", "op": "!=", "other": "receiver_fingerprint"}],
                                "text", 0, check="homogeneity"),
                           rule(4, [], "relay", 0),
                       ]}}


def request(sender="a", age=0, overlap=0.0, maps=()):
    return {"sender_fingerprint": sender, "receiver_fingerprint": "a", "cache_age_versions": age,
            "prompt_overlap": overlap, "needs_document": True, "maps": list(maps)}


def test_first_rule_that_holds_fires_and_is_named():
    p = la.RelayPolicy(REPORT)
    assert len(p) == 5 and p.relay_allowed and p.verdict == "relay with conditions"
    assert p.decide(request(age=1))["check"] == "freshness"
    assert p.decide(request(overlap=0.5))["action"] == "no_communication"
    via = p.decide(request(sender="drift", maps=["x", "m300"]))
    assert (via["action"], via["map"], via["rule"], via["line"]) == ("relay_through_map", "m300", 2, 3)
    assert p.decide(request(sender="drift"))["action"] == "text"  # the stack lacks the map
    assert p.decide(request(sender="b"))["rule"] == 3
    fresh = p.decide(request())
    assert (fresh["action"], fresh["rule"], fresh["text"]) == ("relay", 4, "line 0")
    assert p.rules[2]["map"] == "m300"
    none = la.RelayPolicy({"decision": {"rules": []}}).decide({})
    assert none["action"] == "text" and none["rule"] is None


def test_report_file_and_directory(tmp_path):
    (tmp_path / "report.json").write_text(json.dumps(REPORT))
    assert la.RelayPolicy(tmp_path).decide(request(age=2))["rule"] == 0
    assert la.RelayPolicy(str(tmp_path / "report.json")).decide(request())["rule"] == 4


@pytest.mark.parametrize("bad, names", [
    ({"cache_age_version": 1}, "did you mean 'cache_age_versions'"),
    ({"cache_age_versions": -1}, "request.cache_age_versions"),
    ({"prompt_overlap": 1.5}, "request.prompt_overlap"),
    ({"needs_document": 1}, "request.needs_document"),
    ({"sender_fingerprint": "a"}, "request.cache_age_versions"),  # read by rule 0, absent
])
def test_bad_requests_name_the_field(bad, names):
    with pytest.raises(la.InvalidArgument, match=names.replace("(", r"\(").replace(".", r"\.")):
        la.RelayPolicy(REPORT).decide(bad)


def test_bad_rules_name_the_field(tmp_path):
    bad = json.loads(json.dumps(REPORT))
    bad["decision"]["rules"][1]["action"] = "teleport"
    with pytest.raises(la.InvalidArgument, match=r"decision\.rules\[1\]\.action"):
        la.RelayPolicy(bad)
    bad = json.loads(json.dumps(REPORT))
    bad["decision"]["rules"][0]["when"][0]["feature"] = "colour"
    with pytest.raises(la.InvalidArgument, match=r"decision\.rules\[0\]\.when\[0\]\.feature"):
        la.RelayPolicy(bad)
    with pytest.raises(la.InvalidArgument, match=r"decision\.rules"):
        la.RelayPolicy({"decision": {}})
    with pytest.raises(TypeError, match="report"):
        la.RelayPolicy(3)
    with pytest.raises(TypeError, match="request"):
        la.RelayPolicy(REPORT).decide("{}")
    with pytest.raises(la.InvalidArgument, match="missing.json"):
        la.RelayPolicy(tmp_path / "missing.json")


def test_same_answers_as_the_cli(tmp_path):
    cli = os.environ.get("LATENTAUDIT_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("the latentaudit CLI is not built here (LATENTAUDIT_CLI unset)")
    rng = random.Random(5404)
    reqs = [request(sender=rng.choice(["a", "b", "drift"]), age=rng.choice([0, 0, 1]),
                    overlap=rng.choice([0.0, 0.0, 0.5, 1.0]), maps=rng.choice([(), ("m300",), ("x",)]))
            for _ in range(200)]
    (tmp_path / "report.json").write_text(json.dumps(REPORT))
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reqs))
    out = subprocess.run([cli, "policy", "--report", str(tmp_path / "report.json"), "--requests",
                          str(tmp_path / "requests.jsonl"), "--json"], check=True, capture_output=True, text=True)
    got = json.loads(out.stdout)["decisions"]
    p = la.RelayPolicy(tmp_path / "report.json")
    assert len(got) == len(reqs)
    for q, c in zip(reqs, got):
        py = p.decide(q)
        assert (py["action"], py["map"], py["rule"], py["line"], py["check"]) == \
            (c["action"], c["map"], c["rule"], c["line"], c["check"])
    assert {c["action"] for c in got} == {"text", "no_communication", "relay_through_map", "relay"}


# docs/policy.schema.json, checked with a small validator of the keywords it uses (no jsonschema
# package needed) on the rules and the replay of a real audit (the reduced main-job design of
# tests/cli/policy_cli_test.cpp: 200 items x 1 seed, the drift-300 sender and organism-b with maps).
with open(os.path.join(os.environ.get("LATENTAUDIT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                       "docs", "policy.schema.json")) as _f:
    SCHEMA = json.load(_f)


def schema_errors(x, s=SCHEMA, path="$"):
    known = {"$schema", "$id", "$ref", "$defs", "title", "description", "type", "required", "properties",
             "additionalProperties", "items", "enum", "minimum", "maximum", "maxLength", "maxItems", "oneOf"}
    assert not set(s) - known, set(s) - known
    if "$ref" in s:
        return schema_errors(x, {**SCHEMA["$defs"][s["$ref"][8:]], **{k: v for k, v in s.items() if k != "$ref"}},
                             path)
    kinds = {"null": lambda v: v is None, "boolean": lambda v: isinstance(v, bool),
             "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
             "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
             "string": lambda v: isinstance(v, str), "array": lambda v: isinstance(v, list),
             "object": lambda v: isinstance(v, dict)}
    if "type" in s and not any(kinds[t](x) for t in (s["type"] if isinstance(s["type"], list) else [s["type"]])):
        return [path + ": type"]
    out = []
    if "enum" in s and not any(x == e and type(x) is type(e) or (x is None and e is None) for e in s["enum"]):
        out.append(path + ": enum")
    if kinds["number"](x) and ("minimum" in s and x < s["minimum"] or "maximum" in s and x > s["maximum"]):
        out.append(path + ": range")
    if isinstance(x, str) and len(x) > s.get("maxLength", len(x)):
        out.append(path + ": maxLength")
    if isinstance(x, list):
        if len(x) > s.get("maxItems", len(x)):
            out.append(path + ": maxItems")
        for i, e in enumerate(x):
            out += schema_errors(e, s.get("items", {}), "%s[%d]" % (path, i))
    if isinstance(x, dict):
        out += [path + "." + k + ": required" for k in s.get("required", []) if k not in x]
        for k, v in x.items():
            if k in s.get("properties", {}):
                out += schema_errors(v, s["properties"][k], path + "." + k)
            elif s.get("additionalProperties", True) is False:
                out.append(path + "." + k + ": additionalProperties")
    if "oneOf" in s and sum(not schema_errors(x, sub, path) for sub in s["oneOf"]) != 1:
        out.append(path + ": oneOf")
    return out


def test_schema_and_a_real_audit(tmp_path):
    cli = os.environ.get("LATENTAUDIT_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("the latentaudit CLI is not built here (LATENTAUDIT_CLI unset)")
    assert schema_errors(REPORT["decision"]["rules"]) == []
    bad = json.loads(json.dumps(REPORT["decision"]["rules"]))
    bad[0]["action"] = "teleport"
    bad[1]["when"][0]["feature"] = "colour"
    assert schema_errors(bad) == ["$[0].action: enum", "$[1].when[0].feature: enum"]
    models = os.path.join(os.environ.get("LATENTAUDIT_SOURCE_DIR", ""), "models")
    subprocess.run([cli, "audit", "--model", os.path.join(models, "organism-a"), "--partner",
                    os.path.join(models, "organism-b"), "--items", "200", "--seeds", "1", "--margin", "0.1",
                    "--bootstrap", "200", "--arms",
                    "no_comm,text_full,kv_full,cross_model,kv_drift_300,kv_mapped,kv_mapped_drift_300",
                    "--no-need-fraction", "0.25", "--stale-fraction", "0.15", "--conflict-fraction", "0.15",
                    "--out", str(tmp_path / "audit"), "--quiet"], check=True, capture_output=True)
    report = json.loads((tmp_path / "audit" / "report.json").read_text())
    d = report["decision"]
    assert d["verdict"] == "relay with conditions"
    assert schema_errors(d["rules"]) == []
    assert schema_errors(d["policy_replay"], {"$ref": "#/$defs/replay"}) == []
    assert {r["line"] for r in d["rules"]} == set(range(len(d["policy"])))  # every line has its rule
    p = la.RelayPolicy(tmp_path / "audit")
    assert p.rules == d["rules"]
    actions = {r["action"] for r in d["rules"]}
    assert actions == {"text", "no_communication", "relay_through_map", "relay"}
