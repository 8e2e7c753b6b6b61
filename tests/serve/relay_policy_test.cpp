// SPDX-License-Identifier: MIT
// Tests of the policy as data (serve/relay_policy.hpp, report.json decision.rules; issue 54 item 1):
// every prose line of the decision has its rule on each verdict's path; the rules written to
// report.json and read back by the one evaluator are the decision's; the rules replayed on the
// audit's own requests — here by code of the test's own, independent of replay_relay_policy —
// reproduce the accuracy and relay share report.json states (clustered synthetic records with a
// cache map, seeds 5401/5402, and a real audit's records on the organisms, design seed 5403); the
// evaluator's semantics (first match, other-feature and contains conditions) and its strictness.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "latentaudit/core/error.hpp"
#include "latentaudit/report/report.hpp"
#include "latentaudit/serve/relay_policy.hpp"
#include "report/decision_mc.hpp"
#include "report/relay_failure_sim.hpp"
#include "support/organism_records.hpp"

namespace la = latentaudit;

namespace relay_policy_test {

// Every line of d.policy has a rule naming it, every rule's text is its line, and the rules
// written to report.json read back (relay_policy::from_json) equal the decision's.
void check_lines_and_rules(const la::audit_report& r) {
  const auto& d = r.decision;
  INFO("verdict " << la::decision_verdict_name(d.verdict));
  for (std::size_t i = 0; i < d.policy.size(); ++i) {
    bool has = false;
    for (const auto& rule : d.rules) has = has || rule.line == i;
    INFO("line " << i << ": " << d.policy[i]);
    CHECK(has);
  }
  for (const auto& rule : d.rules) {
    REQUIRE(rule.line < d.policy.size());
    CHECK(rule.text == d.policy[rule.line]);
    CHECK_FALSE(rule.check.empty());
    // the interval is the finding's own
    for (const auto& f : r.findings)
      if (f.id == rule.finding && std::isfinite(f.estimate)) {
        CHECK(rule.estimate == f.estimate);
        CHECK(rule.lo == f.ci_low);
        CHECK(rule.hi == f.ci_high);
        CHECK(rule.verdict == la::verdict_name(f.answer));
      }
  }
  const auto js = la::report_json(r);
  const auto p = la::relay_policy::from_json(js);
  REQUIRE(p.rules().size() == d.rules.size());
  CHECK(p.verdict() == la::decision_verdict_name(d.verdict));
  CHECK(p.relay_allowed() == d.relay_allowed);
  for (std::size_t i = 0; i < d.rules.size(); ++i) {
    const auto &a = p.rules()[i], &b = d.rules[i];
    CHECK(a.line == b.line);
    CHECK(a.text == b.text);
    CHECK(a.action == b.action);
    CHECK(a.map == b.map);
    CHECK(a.check == b.check);
    REQUIRE(a.when.size() == b.when.size());
    for (std::size_t k = 0; k < a.when.size(); ++k) {
      CHECK(a.when[k].feature == b.when[k].feature);
      CHECK(a.when[k].op == b.when[k].op);
      CHECK(a.when[k].value == b.when[k].value);
      CHECK(a.when[k].other == b.when[k].other);
    }
  }
}

struct tally {
  std::size_t requests = 0, resolved = 0, relayed = 0, correct = 0;
};

// The audit's own requests evaluated by `p`, written here without replay_relay_policy: per (item,
// seed), each record of kind kv_full, drifted or cross_model is a request from its sender; its
// features are read from the record's covariates and regime; the chosen arm's record answers it.
tally replay_by_hand(const la::relay_policy& p, const std::vector<la::trial_record>& recs) {
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<const la::trial_record*>> unit;
  for (const auto& r : recs) unit[{r.item, r.seed}].push_back(&r);
  tally t;
  for (const auto& u : unit) {
    for (const auto* s : u.second) {
      if (s->arm_kind != "kv_full" && s->arm_kind != "drifted" && s->arm_kind != "cross_model") continue;
      la::relay_request q;
      q.sender_fingerprint = s->sender_fingerprint;
      q.receiver_fingerprint = s->receiver_fingerprint;
      for (const auto& c : s->covariates) {
        if (c.name == "cache_age_versions") q.cache_age_versions = c.value;
        if (c.name == "prompt_overlap") q.prompt_overlap = c.value;
        if (c.name == "doc_tokens") q.doc_tokens = c.value;
        if (c.name == "own_tokens") q.own_tokens = c.value;
      }
      q.needs_document = s->regime == "need" || s->regime == "stale";
      q.link = s->link;
      q.maps.emplace();
      for (const auto* m : u.second)
        if (m->arm_kind == "kv_mapped" && m->sender_fingerprint == s->sender_fingerprint)
          q.maps->push_back(m->map);
      const auto c = p.decide(q);
      ++t.requests;
      std::string want;
      if (c.action == la::relay_action::relay) want = s->arm;
      if (c.action == la::relay_action::text) want = "text_full";
      if (c.action == la::relay_action::no_communication) want = "no_comm";
      const la::trial_record* answer = nullptr;
      for (const auto* r : u.second) {
        if (c.action == la::relay_action::relay_through_map) {
          if (r->arm_kind == "kv_mapped" && r->map == c.map && r->sender_fingerprint == s->sender_fingerprint)
            answer = r;
        } else if (r->arm == want) {
          answer = r;
        }
      }
      if (c.action == la::relay_action::relay || c.action == la::relay_action::relay_through_map) ++t.relayed;
      if (answer == nullptr) continue;
      ++t.resolved;
      t.correct += answer->correct ? 1 : 0;
    }
  }
  return t;
}

// The replay report.json states equals the replay by hand on the same records.
void check_replay(const la::audit_report& r, const std::vector<la::trial_record>& recs) {
  const auto js = la::report_json(r);
  const auto& rep = js.at("decision").at("policy_replay");
  INFO("verdict " << la::decision_verdict_name(r.decision.verdict) << "; replay " << la::write_json(rep));
  REQUIRE(rep.at("note").is_null());
  const auto p = la::relay_policy::from_json(js);
  const tally t = replay_by_hand(p, recs);
  CHECK(t.requests > 0);
  CHECK(rep.at("requests").as_number() == static_cast<double>(t.requests));
  CHECK(rep.at("resolved").as_number() == static_cast<double>(t.resolved));
  CHECK(rep.at("relayed").as_number() == static_cast<double>(t.relayed));
  CHECK(rep.at("correct").as_number() == static_cast<double>(t.correct));
  CHECK(rep.at("accuracy").as_number() ==
        Approx(static_cast<double>(t.correct) / static_cast<double>(t.resolved)).epsilon(1e-12));
  CHECK(rep.at("relay_share").as_number() ==
        Approx(static_cast<double>(t.relayed) / static_cast<double>(t.requests)).epsilon(1e-12));
}

la::json_value parse(const std::string& s) { return la::parse_json(s); }

// A report.json holding `rules` (an array's JSON text).
la::json_value report_with(const std::string& rules) {
  return parse(R"({"decision": {"verdict": "relay", "relay_allowed": true, "rules": )" + rules + "}}");
}

std::string rule_text(const std::string& when, const std::string& action, const std::string& map = "null",
                      int index = 0) {
  return R"({"index": )" + std::to_string(index) + R"(, "line": 0, "text": "t", "when": )" + when +
         R"(, "action": ")" + action + R"(", "map": )" + map +
         R"(, "rests_on": {"check": "value", "finding": null, "estimate": null, "lo": null, "hi": null, "verdict": null}})";
}

void expect_error(const std::function<void()>& f, const std::string& names) {
  try {
    f();
    FAIL("no error; expected one naming " << names);
  } catch (const la::invalid_argument& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(names) != std::string::npos);
  }
}

}  // namespace relay_policy_test

TEST_CASE(
    "relay_policy: every prose line of the decision has its rule, on each verdict's path (seeds 5401, 5402)",
    "[serve][relay_policy]") {
  using namespace relay_policy_test;
  // relay with conditions: stale, conflict and drift shown, a cache map that passes and a foreign sender
  auto d = la::test::decision_base_design();
  d.mapped_need = 0.99;
  const auto recs = la::test::simulate_relay_failure(d, 5401);
  const auto r = la::build_audit_report(recs, la::test::decision_mc_options());
  CHECK(r.decision.verdict == la::decision_verdict::relay_with_conditions);
  check_lines_and_rules(r);
  check_replay(r, recs);
  // its rules in evaluation order: freshness, conflict, the map, fingerprints, relay
  const auto p = la::relay_policy::from_json(la::report_json(r));
  la::relay_request q{.sender_fingerprint = "aa",
                      .receiver_fingerprint = "aa",
                      .cache_age_versions = 0,
                      .prompt_overlap = 0,
                      .needs_document = true,
                      .maps = std::vector<std::string>{}};
  CHECK(p.decide(q).action == la::relay_action::relay);
  q.cache_age_versions = 1;
  CHECK(p.decide(q).action == la::relay_action::text);
  CHECK(p.decide(q).check == "freshness");
  q.cache_age_versions = 0;
  q.prompt_overlap = 1;
  CHECK(p.decide(q).action == la::relay_action::no_communication);
  q.prompt_overlap = 0;
  q.sender_fingerprint = "cc";
  CHECK(p.decide(q).action == la::relay_action::text);  // the stack lacks the map
  q.maps = std::vector<std::string>{"m1"};
  const auto via = p.decide(q);
  CHECK(via.action == la::relay_action::relay_through_map);
  CHECK(via.map == "m1");
  CHECK(via.check == "map_kv_mapped");
  q.sender_fingerprint = "dd";  // a sender with neither its fingerprint nor a map
  CHECK(p.decide(q).action == la::relay_action::text);
  // the receiver scope: two copies of a model the audit never measured get text, not the last
  // rule's relay (the value, risk and cost checks say nothing about that receiver)
  q.maps = std::vector<std::string>{};
  q.sender_fingerprint = q.receiver_fingerprint = "zz";
  const auto unaudited = p.decide(q);
  CHECK(unaudited.action == la::relay_action::text);
  CHECK(unaudited.check == "homogeneity");
  CHECK(r.decision.policy.front().find(
            "only into the receiver the audit measured (receiver_fingerprint aa)") != std::string::npos);
  // records without receiver fingerprints cannot show homogeneity, so no relay policy (and no
  // unscoped relay rule) is written from them
  auto bare = recs;
  for (auto& rec : bare) rec.receiver_fingerprint.clear();
  const auto br = la::build_audit_report(bare, la::test::decision_mc_options());
  check_lines_and_rules(br);
  CHECK_FALSE(br.decision.relay_allowed);
  for (const auto& rule : br.decision.rules) CHECK(rule.action != la::relay_action::relay);

  // relay (unverified): no failure regimes; its "do not gate" rule comes first and sends text
  auto u = la::test::decision_base_design();
  u.with_stale = u.with_conflict = u.with_drift = false;
  const auto urecs = la::test::simulate_relay_failure(u, 5402);
  const auto ur = la::build_audit_report(urecs, la::test::decision_mc_options());
  CHECK(ur.decision.verdict == la::decision_verdict::relay_unverified);
  check_lines_and_rules(ur);
  check_replay(ur, urecs);
  REQUIRE_FALSE(ur.decision.rules.empty());
  CHECK(ur.decision.rules.front().when.empty());
  CHECK(ur.decision.rules.front().action == la::relay_action::text);
  CHECK(ur.decision.replay.relayed == 0);

  // text (value shown worse) and inconclusive (no lines, no rules: decide says text, no rule)
  auto t = la::test::decision_base_design();
  t.need_kv = 0.70;
  t.with_cross_model = false;
  const auto trecs = la::test::simulate_relay_failure(t, 5402);
  const auto tr = la::build_audit_report(trecs, la::test::decision_mc_options());
  CHECK(tr.decision.verdict == la::decision_verdict::text);
  check_lines_and_rules(tr);
  REQUIRE(tr.decision.rules.size() == 1);
  CHECK(tr.decision.rules.front().check == "value");
  std::vector<la::finding> none;
  const auto inc = la::decide(none, trecs);
  CHECK(inc.verdict == la::decision_verdict::inconclusive);
  CHECK(inc.policy.empty());
  CHECK(inc.rules.empty());
  const auto c =
      la::relay_policy(inc.rules, la::decision_verdict_name(inc.verdict)).decide(la::relay_request{});
  CHECK_FALSE(c.rule.has_value());
  CHECK(c.action == la::relay_action::text);
}

TEST_CASE(
    "relay_policy: the rules replayed on a real audit's organism requests reproduce report.json's "
    "accuracy and relay share (design seed 5403)",
    "[serve][relay_policy]") {
  using namespace relay_policy_test;
  const auto recs = la::testing::run_organism_records(5403, 40, 1);
  auto o = la::test::decision_mc_options();
  const auto r = la::build_audit_report(recs, o);
  check_lines_and_rules(r);
  check_replay(r, recs);
  // the library's replay on the same records agrees with report.json
  const auto js = la::report_json(r);
  const auto again = la::replay_relay_policy(la::relay_policy::from_json(js), recs);
  CHECK(again.requests == r.decision.replay.requests);
  CHECK(again.correct == r.decision.replay.correct);
}

TEST_CASE("relay_policy: first match, conditions on another feature and on the maps held",
          "[serve][relay_policy]") {
  using namespace relay_policy_test;
  const auto p = la::relay_policy::from_json(report_with(
      "[" + rule_text(R"([{"feature": "cache_age_versions", "op": ">=", "value": 1}])", "text") + "," +
      rule_text(R"([{"feature": "sender_fingerprint", "op": "==", "value": "s"},
                    {"feature": "maps", "op": "contains", "value": "m"}])",
                "relay_through_map", R"("m")", 1) +
      "," +
      rule_text(R"([{"feature": "sender_fingerprint", "op": "!=", "other": "receiver_fingerprint"}])", "text",
                "null", 2) +
      "," + rule_text("[]", "relay", "null", 3) + "]"));
  // JSON requests, strictly parsed
  auto decide = [&](const std::string& req) { return p.decide(parse(req)); };
  CHECK(decide(R"({"cache_age_versions": 2})").rule == 0u);
  const auto m = decide(R"({"cache_age_versions": 0, "sender_fingerprint": "s", "maps": ["x", "m"]})");
  CHECK(m.rule == 1u);
  CHECK(m.map == "m");
  CHECK(
      decide(
          R"({"cache_age_versions": 0, "sender_fingerprint": "s", "maps": [], "receiver_fingerprint": "r"})")
          .rule == 2u);
  CHECK(
      decide(
          R"({"cache_age_versions": 0, "sender_fingerprint": "r", "maps": [], "receiver_fingerprint": "r"})")
          .action == la::relay_action::relay);
  // a feature a reached rule reads is missing: the error names it and the rule
  expect_error([&] { (void)decide(R"({"sender_fingerprint": "s"})"); }, "request.cache_age_versions");
  expect_error([&] { (void)decide(R"({"cache_age_versions": 0, "sender_fingerprint": "s"})"); },
               "request.maps");
  // strict requests
  expect_error([&] { (void)decide(R"({"cache_age_version": 0})"); }, "did you mean 'cache_age_versions'");
  expect_error([&] { (void)decide(R"({"cache_age_versions": 0.5})"); }, "request.cache_age_versions");
  expect_error([&] { (void)decide(R"({"prompt_overlap": 2})"); }, "request.prompt_overlap");
  expect_error([&] { (void)decide(R"({"needs_document": "yes"})"); }, "request.needs_document");
  expect_error([&] { (void)decide(R"({"maps": [1]})"); }, "request.maps");
  expect_error([&] { (void)decide("[]"); }, "request");
}

TEST_CASE("relay_policy: a malformed policy is refused naming the field", "[serve][relay_policy]") {
  using namespace relay_policy_test;
  auto load = [](const std::string& rules) { (void)la::relay_policy::from_json(report_with(rules)); };
  expect_error([&] { load("[" + rule_text("[]", "teleport") + "]"); }, "decision.rules[0].action");
  expect_error(
      [&] { load("[" + rule_text(R"([{"feature": "colour", "op": "==", "value": 1}])", "text") + "]"); },
      "decision.rules[0].when[0].feature");
  expect_error(
      [&] { load("[" + rule_text(R"([{"feature": "link", "op": ">", "value": "x"}])", "text") + "]"); },
      "decision.rules[0].when[0].op");
  expect_error(
      [&] {
        load("[" + rule_text(R"([{"feature": "cache_age_versions", "op": "=~", "value": 1}])", "text") + "]");
      },
      "decision.rules[0].when[0].op");
  expect_error(
      [&] {
        load("[" + rule_text(R"([{"feature": "cache_age_versions", "op": ">=", "value": "1"}])", "text") +
             "]");
      },
      "decision.rules[0].when[0].value");
  expect_error([&] { load("[" + rule_text("[]", "relay_through_map") + "]"); }, "decision.rules[0].map");
  expect_error([&] { load("{}"); }, "decision.rules");
  expect_error([&] { (void)la::relay_policy::from_json(parse(R"({"decision": {}})")); }, "decision.rules");
  auto extra = report_with("[" + rule_text("[]", "text") + "]");
  expect_error(
      [&] {
        auto j = extra;
        auto& rules = const_cast<la::json_value&>(j.at("decision").at("rules"));
        rules.as_array()[0].set("priority", 1);
        (void)la::relay_policy::from_json(j);
      },
      "decision.rules[0].priority");
}
