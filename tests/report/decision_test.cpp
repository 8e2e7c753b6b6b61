// SPDX-License-Identifier: MIT
// The decision a pipeline gates on (issue 25): "relay" only when every risk is shown, honest under
// missing relays, one estimand per finding, loud about missing fields; the Monte Carlo of the
// decision's error rates ([slow]; report/decision_mc.hpp, also benchmarks/bench_verdicts.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "latentaudit/estimators/betting.hpp"
#include "latentaudit/report/report.hpp"
#include "latentaudit/report/until_decided.hpp"
#include "report/decision_mc.hpp"
#include "report/relay_failure_sim.hpp"

#include "support/findings.hpp"

namespace la = latentaudit;
using la::test::decision_base_design;
using la::test::simulate_relay_failure;

namespace {

using latentaudit::test::find;

using latentaudit::test::effect;

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

TEST_CASE("decision: every risk shown gives a relay verdict with a condition per shown risk (seed 2510)",
          "[report][decision]") {
  const auto recs = simulate_relay_failure(decision_base_design(), 2510);
  const auto r = la::build_audit_report(recs, la::test::decision_mc_options());
  INFO(r.decision.summary);
  for (const auto& c : r.decision.checklist)
    INFO(c.name << ": " << la::verdict_name(c.passed) << " " << c.reason);
  CHECK(r.decision.verdict == la::decision_verdict::relay_with_conditions);
  CHECK(r.decision.relay_allowed);
  CHECK(r.decision.unverified.empty());
  std::string policy;
  for (const auto& p : r.decision.policy) policy += p + "\n";
  CHECK(policy.find("fresh caches") != std::string::npos);
  CHECK(policy.find("prompt_overlap") != std::string::npos);
  CHECK(policy.find("identical model fingerprints") != std::string::npos);
  // the summary counts the risks shown present, not the policy's lines (the fingerprint rule is a
  // line of every relay policy; here, with drift shown, one of the conditions)
  CHECK(r.decision.summary.find("condition(s) (the policy)") == std::string::npos);
  CHECK(r.decision.summary.find(
            "3 risk(s) shown present became conditions of the policy (the fingerprint rule") !=
        std::string::npos);
  const auto js = la::report_json(r);
  CHECK(js.find("decision")->find("relay_allowed")->as_bool());
  CHECK(js.find("decision")->find("unverified")->as_array().empty());
}

TEST_CASE(
    "decision: records without failure regimes get 'relay (unverified)' naming freshness, conflict, drift",
    "[report][decision]") {
  auto d = decision_base_design();
  d.with_stale = d.with_conflict = d.with_drift = false;
  const auto recs = simulate_relay_failure(d, 2511);
  const auto r = la::build_audit_report(recs, la::test::decision_mc_options());
  INFO(r.decision.summary);
  CHECK(r.decision.verdict == la::decision_verdict::relay_unverified);
  CHECK_FALSE(r.decision.relay_allowed);
  CHECK(r.decision.unverified == std::vector<std::string>{"freshness", "conflict", "drift"});
  CHECK(r.decision.summary.find("freshness, conflict, drift") != std::string::npos);
  const auto md = la::report_markdown(r);
  CHECK(md.find("## Decision: **relay (unverified)**") != std::string::npos);
  CHECK(md.find("**Not a relay verdict:** the risk check(s) freshness, conflict, drift") !=
        std::string::npos);
  const auto js = la::report_json(r);
  const auto* dec = js.find("decision");
  REQUIRE(dec != nullptr);
  CHECK_FALSE(dec->find("relay_allowed")->as_bool());
  REQUIRE(dec->find("unverified")->as_array().size() == 3);
  CHECK(dec->find("unverified")->as_array()[0].as_string() == "freshness");
  const auto sum = la::decision_summary(r);
  CHECK_FALSE(sum.find("relay_allowed")->as_bool());
}

TEST_CASE("decision: missing failed relays are bounded, counted and named (seed 2512)",
          "[report][decision]") {
  auto d = decision_base_design();
  d.regime_items = {300, 60, 40, 40};
  d.need_kv = 0.90;
  d.need_text = 0.95;
  d.drop_wrong_kv = 0.5;
  d.drop_regime = "need";
  const auto recs = simulate_relay_failure(d, 2512);
  const auto r = la::build_audit_report(recs, la::test::decision_mc_options());
  const auto& e = effect(r.core.effects, "need:kv_full-text_full");
  REQUIRE(e.missing.any());
  CHECK(e.missing.units > 0);
  // the bounds bracket the observed estimate, and the low bound is the one with every missing
  // kv_full outcome wrong: here exactly the truth of the dropped records
  CHECK(e.missing.low.estimate <= e.estimate);
  CHECK(e.missing.high.estimate >= e.estimate);
  CHECK(e.p_value >= std::max(e.missing.low.p_value, e.missing.high.p_value));
  const auto& f = find(r.findings, "need.kv_noninferior_to_text");
  INFO(f.detail);
  CHECK(f.detail.find("worst-case bounds") != std::string::npos);
  CHECK(f.ci_low <= e.missing.low.verdict_low);
  CHECK(f.ci_high >= e.missing.high.verdict_high);
  CHECK(f.ci_low <= f.estimate);
  CHECK(f.estimate <= f.ci_high);
  // the lower bound is what decides non-inferiority: with every dropped (wrong) record restored as
  // wrong, kv_full is 5 points below text; "yes" would need the bound's lower limit above -5 points
  if (f.answer == la::verdict::yes) CHECK(e.missing.low.verdict_low > -0.05);
  // completeness per arm and regime, in report.json and the input warnings
  std::size_t missing = 0;
  for (const auto& c : r.core.completeness)
    if (c.arm == "kv_full" && c.regime == "need") missing = c.missing;
  CHECK(missing == e.missing.units);
  bool warned = false;
  for (const auto& w : r.core.input_warnings) warned |= w.find("arm 'kv_full'") != std::string::npos;
  CHECK(warned);
  const auto js = la::report_json(r);
  REQUIRE(js.find("completeness") != nullptr);
  CHECK_FALSE(js.find("completeness")->find("arms")->as_array().empty());
  // every other arm is complete
  for (const auto& c : r.core.completeness)
    if (c.arm != "kv_full") CHECK(c.missing == 0);
  // the same data without drops: no bounds
  d.drop_wrong_kv = 0.0;
  const auto full = la::build_audit_report(simulate_relay_failure(d, 2512), la::test::decision_mc_options());
  CHECK_FALSE(effect(full.core.effects, "need:kv_full-text_full").missing.any());
  CHECK(full.core.input_warnings.empty());
}

TEST_CASE("decision: design arms absent from the records count as missing", "[report][decision]") {
  auto d = decision_base_design();
  d.regime_items = {40, 20, 10, 10};
  auto recs = simulate_relay_failure(d, 2513);
  auto o = la::test::decision_mc_options();
  o.design_arms = {"no_comm", "text_full", "kv_full", "deranged"};
  const auto core = la::analyse_records(recs, o);
  std::size_t deranged_missing = 0, units = 0;
  for (const auto& c : core.completeness)
    if (c.arm == "deranged") {
      deranged_missing += c.missing;
      units += c.units;
      CHECK(c.records == 0);
    }
  CHECK(units > 0);
  CHECK(deranged_missing == units);
  bool warned = false;
  for (const auto& w : core.input_warnings) warned |= w.find("arm 'deranged'") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("decision: failed relays (relay_error) are counted per arm and regime as outcomes",
          "[report][decision]") {
  auto d = decision_base_design();
  d.regime_items = {40, 20, 10, 10};
  auto recs = simulate_relay_failure(d, 2514);
  std::size_t failed = 0;
  for (auto& r : recs)
    if (r.arm == "kv_full" && r.regime == "need" && r.item % 7 == 0) {
      r.relay_error = "HMAC failure";
      r.correct = false;
      ++failed;
    }
  const auto core = la::analyse_records(recs, la::test::decision_mc_options());
  std::size_t counted = 0;
  for (const auto& c : core.completeness)
    if (c.arm == "kv_full" && c.regime == "need") {
      counted = c.relay_errors;
      CHECK(c.missing == 0);  // intention to treat: a failed relay is the arm's outcome, not missing
    }
  CHECK(counted == failed);
}

TEST_CASE("findings: the estimate is the quantity the interval covers (1 or 5 seeds per item)",
          "[report][decision]") {
  auto d = decision_base_design();
  d.seeds = 1;
  d.odd_item_seeds = 5;
  d.regime_items = {120, 60, 40, 40};
  d.need_kv = 0.80;  // a loss against text on every item; the 5-seed items would weigh 5x per pair
  const auto recs = simulate_relay_failure(d, 2515);
  const auto r = la::build_audit_report(recs, la::test::decision_mc_options());
  for (const auto& f : r.findings) {
    if (!std::isfinite(f.estimate) || !std::isfinite(f.ci_low) || !std::isfinite(f.ci_high)) continue;
    if (f.id.rfind("noise.", 0) == 0 || f.id.rfind("drift.", 0) == 0) continue;  // a location, not a mean
    INFO(f.id << " " << f.estimate << " [" << f.ci_low << ", " << f.ci_high << "] " << f.method);
    CHECK(f.ci_low <= f.estimate);
    CHECK(f.estimate <= f.ci_high);
  }
  // need.kv_noninferior_to_text's estimate is the mean over items of the item mean differences
  std::vector<double> sum(1000, 0.0), n(1000, 0.0);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (const auto& a : recs) {
    if (a.regime != "need" || a.arm != "kv_full") continue;
    for (const auto& b : recs)
      if (b.item == a.item && b.seed == a.seed && b.arm == "text_full") {
        sum[a.item] += (a.correct ? 1.0 : 0.0) - (b.correct ? 1.0 : 0.0);
        n[a.item] += 1.0;
      }
  }
  double m = 0, k = 0;
  for (std::size_t i = 0; i < sum.size(); ++i)
    if (n[i] > 0) m += sum[i] / n[i], k += 1;
  CHECK(find(r.findings, "need.kv_noninferior_to_text").estimate == Approx(m / k).margin(1e-12));
  CHECK(effect(r.core.effects, "need:kv_full-text_full").method.find("mean over items") != std::string::npos);
}

TEST_CASE("decision: records with only item, seed, arm and correct name the missing fields",
          "[report][decision]") {
  std::vector<la::trial_record> recs;
  for (std::uint64_t i = 0; i < 30; ++i)
    for (const char* arm : {"no_comm", "text_full", "kv_full"})
      recs.push_back({.item = i, .seed = 0, .arm = arm, .correct = std::string(arm) != "no_comm"});
  const auto r = la::build_audit_report(recs, la::test::decision_mc_options());
  CHECK(contains(r.core.missing_fields, "regime"));
  CHECK(contains(r.core.missing_fields, "timings"));
  CHECK(contains(r.core.missing_fields, "sender_fingerprint"));
  bool regime_line = false;
  for (const auto& w : r.core.input_warnings)
    regime_line |= w.rfind("records lack 'regime' (90 of 90)", 0) == 0;
  CHECK(regime_line);
  CHECK(r.decision.verdict == la::decision_verdict::inconclusive);
  INFO(r.decision.summary);
  CHECK(r.decision.summary.rfind("The records lack the field(s) 'regime'", 0) == 0);
  const auto md = la::report_markdown(r);
  CHECK(md.find("records lack 'regime'") < md.find("## Findings"));
}

TEST_CASE("findings: the noise tolerance is gated by the positive control", "[report][decision]") {
  // the catalog gates by kind (finding_kind_info::gated)
  std::vector<la::finding> fs = {
      la::make_finding({la::finding_kind::need_text_beats_no_comm}),
      la::make_finding({la::finding_kind::noise_tolerance_sigma}, la::verdict::yes),
      la::make_finding({la::finding_kind::drift_tolerance_steps}, la::verdict::no)};
  for (auto& f : fs) f.n = 10;
  fs[1].estimate = 0.5;
  fs[2].estimate = 1;
  la::apply_positive_control(fs, &fs[0]);
  CHECK(fs[1].answer == la::verdict::inconclusive);
  CHECK(fs[1].detail.rfind(la::positive_control_reason, 0) == 0);
  CHECK(fs[2].answer == la::verdict::inconclusive);
}

TEST_CASE("drift: 'no' when every tested step is shown non-inferior (seed 2516)", "[report][decision]") {
  auto d = decision_base_design();
  d.regime_items = {200, 20, 10, 10};
  d.drift_slope = 0.0;  // drifted senders as good as the same model
  d.need_kv = d.need_text = 0.99;
  const auto core = la::analyse_records(simulate_relay_failure(d, 2516), la::test::decision_mc_options());
  const auto& f = find(core.findings, "drift.tolerance_steps");
  INFO(f.detail);
  CHECK(f.answer == la::verdict::no);
  CHECK(f.detail.find("absence shown within the tested range") != std::string::npos);
}

TEST_CASE("decision: the risk family's absence claims are adjusted by Holm (issue 28)",
          "[report][decision]") {
  // Hand-made findings: the gating checks shown, drift and cross_model shown absent, and the three
  // risks of the family (no_need_harm, freshness, conflict) each "no" (absence shown at alpha alone)
  // or "yes" (shown present) with a one-sided p of "relay loses the margin".
  auto fnd = [](std::string id, la::verdict v, double est, double lo, double hi, double p = std::nan("")) {
    la::finding f{.id = std::move(id), .answer = v, .estimate = est, .ci_low = lo, .ci_high = hi, .n = 100};
    f.noninferiority_p = p;
    return f;
  };
  la::trial_record kv;
  kv.arm = kv.arm_kind = "kv_full";
  kv.sender_fingerprint = kv.receiver_fingerprint = "m:1";
  const std::vector<la::trial_record> same{kv};
  auto decide_with = [&](double p_nn, double p_stale, double p_conflict, bool stale_present) {
    std::vector<la::finding> fs = {
        fnd("need.text_beats_no_comm", la::verdict::yes, 0.5, 0.4, 0.6),
        fnd("need.kv_beats_no_comm", la::verdict::yes, 0.5, 0.4, 0.6),
        fnd("need.kv_noninferior_to_text", la::verdict::yes, 0, -0.01, 0.01),
        fnd("cost.relay_pays_on_pcie4", la::verdict::yes, 1e-4, 5e-5, 2e-4),
        fnd("drift.tolerance_steps", la::verdict::no, 0, 0, 0),
        fnd("need.cross_model_beats_no_comm", la::verdict::no, 0, -0.02, 0.02),
        fnd("no_need.kv_changes_accuracy", la::verdict::no, 0, -0.03, 0.03, p_nn),
        stale_present ? fnd("stale.kv_worse_than_text", la::verdict::yes, -0.5, -0.6, -0.4, p_stale)
                      : fnd("stale.kv_worse_than_text", la::verdict::no, 0, -0.03, 0.03, p_stale),
        fnd("conflict.kv_worse_than_no_comm", la::verdict::no, 0, -0.03, 0.03, p_conflict)};
    return la::decide(fs, same);
  };
  auto check_of = [](const la::audit_decision& d, const std::string& name) {
    for (const auto& c : d.checklist)
      if (c.name == name) return c;
    FAIL("no check " << name);
    return d.checklist.front();
  };
  // Holm at 0.05: 0.001 x 3, 0.02 x 2, 0.04 x 1 all <= 0.05: every absence stands, plain relay
  auto d = decide_with(0.001, 0.02, 0.04, false);
  CHECK(d.verdict == la::decision_verdict::relay);
  CHECK(d.relay_allowed);
  CHECK(d.policy.at(1).find("identical model fingerprints") != std::string::npos);
  // each shown at alpha alone (p < 0.05) but the smallest times 3 exceeds it: none stands
  d = decide_with(0.02, 0.03, 0.04, false);
  CHECK(d.verdict == la::decision_verdict::relay_unverified);
  CHECK_FALSE(d.relay_allowed);
  CHECK(d.unverified == std::vector<std::string>{"no_need_harm", "freshness", "conflict"});
  CHECK(check_of(d, "no_need_harm").reason.find("absence is not shown after Holm over the 3 claims") !=
        std::string::npos);
  // a risk shown present (its p near 1) still counts in the family: 0.001 x 3 stands, then
  // 0.03 x 2 > 0.05 fails
  d = decide_with(0.03, 0.9, 0.001, true);
  CHECK(d.verdict == la::decision_verdict::relay_unverified);
  CHECK(d.unverified == std::vector<std::string>{"no_need_harm"});
  CHECK(check_of(d, "freshness").passed == la::verdict::no);
  CHECK(check_of(d, "conflict").passed == la::verdict::yes);
  // 0.001 x 3 and 0.01 x 2 stand; the present one adds its condition
  d = decide_with(0.01, 0.9, 0.001, true);
  CHECK(d.verdict == la::decision_verdict::relay_with_conditions);
  CHECK(d.relay_allowed);
  CHECK(d.policy.front().find("identical model fingerprints") != std::string::npos);
  CHECK(d.policy.at(1).find("fresh caches") != std::string::npos);
  // a finding without its p-value (a stack that builds findings itself) cannot pass the family
  d = decide_with(std::nan(""), 0.001, 0.001, false);
  CHECK(d.unverified == std::vector<std::string>{"no_need_harm"});
  CHECK_FALSE(d.relay_allowed);
  // alpha is checked
  std::vector<la::finding> none;
  CHECK_THROWS_AS(la::decide(none, same, {.alpha = 0.7}), la::invalid_argument);
}

TEST_CASE("risk family: noninferiority_p reads the observed items and the least favourable imputation",
          "[report][decision]") {
  // no-need kv_full records dropped when wrong (a stack losing failed relays): the no-need finding's
  // p of "relay loses the margin" is the larger of the observed items' and the low imputation's
  auto d = decision_base_design();
  d.no_need_kv = 0.9;
  d.drop_wrong_kv = 0.5;
  d.drop_regime = "no_need";
  const auto recs = simulate_relay_failure(d, 2817);
  const auto r = la::build_audit_report(recs, la::test::decision_mc_options());
  const auto& e = effect(r.core.effects, "no_need:kv_full-no_comm");
  REQUIRE(e.missing.any());
  REQUIRE_FALSE(e.missing.low_items.empty());
  const double p_obs = la::bounded_mean_p_value_above(e.item_diffs, -1.0, 1.0, -0.05, 0.05);
  const double p_low = la::bounded_mean_p_value_above(e.missing.low_items, -1.0, 1.0, -0.05, 0.05);
  const auto& f = find(r.findings, "no_need.kv_changes_accuracy");
  CHECK(f.noninferiority_p == std::max(p_obs, p_low));
  CHECK(p_low >= p_obs);  // the imputation that counts every missing relay as wrong is the worst case
  // the stale and conflict findings carry theirs; a finding outside the family carries none
  CHECK(std::isfinite(find(r.findings, "stale.kv_worse_than_text").noninferiority_p));
  CHECK(std::isfinite(find(r.findings, "conflict.kv_worse_than_no_comm").noninferiority_p));
  CHECK(std::isnan(find(r.findings, "need.kv_beats_no_comm").noninferiority_p));
  // and report.json writes it (null outside the family)
  const auto js = la::report_json(r);
  bool saw_null = false, saw_number = false;
  for (const auto& x : js.find("findings")->as_array()) {
    const auto* p = x.find("noninferiority_p");
    REQUIRE(p != nullptr);
    saw_null |= p->is_null();
    saw_number |= p->is_number();
  }
  CHECK(saw_null);
  CHECK(saw_number);
}

TEST_CASE("decision: Monte Carlo of a relay verdict under a present, unshown risk (issue 25 scenarios)",
          "[report][decision][slow]") {
  // 60 replicates per scenario: the claim alpha = 0.05 plus 3 Monte Carlo standard errors of a rate
  // at alpha (3 sqrt(0.05 * 0.95 / 60) = 0.084); the benchmark runs 400 (docs/audit-report.md).
  constexpr std::size_t reps = 60;
  const double bound = 0.05 + 3.0 * std::sqrt(0.05 * 0.95 / reps);
  auto scenarios = la::test::decision_scenarios();
  for (auto& s : la::test::decision_sequence_scenarios()) scenarios.push_back(std::move(s));
  // the risk family (issue 28): three risks at the margin at once, relay without any condition is the error
  scenarios.push_back(la::test::decision_risk_family_scenario(320, 28040000));
  for (const auto& s : scenarios) {
    const auto m = la::test::run_decision_mc(s, reps);
    std::cout << "decision MC: " << la::test::decision_mc_line(s, m) << "\n";
    INFO(s.name);
    CHECK(m.rate(m.allowed_unhandled) <= bound);
    if (s.condition.empty()) {
      CHECK(m.rate(m.finding_errors) <= bound);
      CHECK(m.rate(m.relay_family) <= bound);
    }
  }
  // Power: with every risk easy to show, the decision lets relay through with its conditions.
  const auto s = la::test::decision_power_scenario();
  const auto m = la::test::run_decision_mc(s, 20);
  std::cout << "decision MC: " << la::test::decision_mc_line(s, m) << "\n";
  CHECK(m.allowed_unhandled == 0);
  CHECK(m.rate(m.allowed_handled) >= 0.8);
  // Power at a small design (issue 28): +30 points on 30 need items × 2 seeds. The benchmark's 400
  // replicates give the rate in docs/audit-report.md; at 60 replicates the check is its lower
  // 3-se bound (a rate of 0.75 gives 0.75 - 3 sqrt(0.75 * 0.25 / 60) = 0.58); before issue 28
  // (Holm over 14 contrasts, truncation 1/2) it was 0.015 (3 of 200 replicates, same seeds).
  const auto small = la::test::decision_small_power_scenario();
  const auto ms = la::test::run_decision_mc(small, reps);
  std::cout << "decision MC: " << la::test::decision_mc_line(small, ms) << "\n";
  CHECK(ms.rate(ms.finding_errors) >= 0.58);
}

TEST_CASE("decision: Monte Carlo of the decision stopped when decided (audit --until-decided with 5 looks)",
          "[report][decision][slow]") {
  // Every verdict the stopping rule acts on reads confidence sequences tuned for the design's items
  // (and the cost bootstrap at alpha/5), so the error of the decision at the data-chosen stop keeps
  // the fixed design's claim: relay allowed without the planted risk's condition at most alpha.
  // 30 replicates per scenario: the claim plus 3 Monte Carlo standard errors of a rate at alpha
  // (0.169); the benchmark verdicts/stopped_decision_table runs 200 (docs/audit-report.md).
  constexpr std::size_t reps = 30;
  const double bound = 0.05 + 3.0 * std::sqrt(0.05 * 0.95 / reps);
  auto scenarios = la::test::decision_scenarios();
  for (auto& s : la::test::decision_sequence_scenarios()) scenarios.push_back(std::move(s));
  for (const auto& s : scenarios) {
    const auto m = la::test::run_stopped_decision_mc(s, reps, 5);
    const auto& d = m.decision;
    std::cout << "stopped decision MC: " << s.name << ": relay allowed without the condition "
              << d.rate(d.allowed_unhandled) << ", any relay verdict " << d.rate(d.relay_family)
              << ", items run " << m.share_of_items() << ", trials run " << m.share_of_trials() << "\n";
    INFO(s.name);
    CHECK(d.rate(d.allowed_unhandled) <= bound);
    if (s.condition.empty()) CHECK(d.rate(d.relay_family) <= bound);
  }
  // Power and cost: every risk easy to show; the rule stops early and reaches the full design's
  // verdict ("relay with conditions") on fewer items.
  const auto p = la::test::run_stopped_decision_mc(la::test::decision_power_scenario(), 10, 5);
  std::cout << "stopped decision MC: power scenario: relay with conditions "
            << p.decision.rate(p.decision.allowed_handled) << ", items run " << p.share_of_items()
            << ", trials run " << p.share_of_trials() << ", same verdict " << p.decision.rate(p.same_as_fixed)
            << "\n";
  CHECK(p.decision.allowed_unhandled == 0);
  CHECK(p.decision.rate(p.decision.allowed_handled) >= 0.8);
  CHECK(p.share_of_items() < 0.8);
  CHECK(p.share_of_trials() < p.share_of_items());  // arms whose findings are decided stop before the rest
}

TEST_CASE("findings: the minimum detectable effect of each finding on item means (seed 2530)",
          "[report][decision]") {
  auto d = decision_base_design();
  d.need_kv = d.need_text = 0.7;
  d.need_no_comm = 0.4;
  const auto r = la::build_audit_report(simulate_relay_failure(d, 2530), la::test::decision_mc_options());
  const auto& e = effect(r.core.effects, "need:kv_full-no_comm");
  const auto& f = find(r.findings, "need.kv_beats_no_comm");
  REQUIRE_FALSE(e.missing.any());
  // the finding's own interval and items, through betting_detectable_difference
  const double h = std::max(f.estimate - f.ci_low, f.ci_high - f.estimate);
  CHECK(f.minimum_detectable_effect == la::betting_detectable_difference(e.item_diffs, h, 0.8));
  CHECK(f.minimum_detectable_effect > h);
  CHECK(f.minimum_detectable_effect < 0.3);  // 150 items x 3 seeds: a 30-point effect is well inside
  // the risk findings carry theirs; a finding not on item means (the cost, the tolerances) none
  CHECK(std::isfinite(find(r.findings, "stale.kv_worse_than_text").minimum_detectable_effect));
  CHECK(std::isfinite(find(r.findings, "conflict.kv_worse_than_no_comm").minimum_detectable_effect));
  CHECK(std::isnan(find(r.findings, "drift.tolerance_steps").minimum_detectable_effect));
  // more items: smaller
  auto big = d;
  big.regime_items = {600, 150, 60, 60};  // four times the need items: about half the difference
  const auto rb = la::build_audit_report(simulate_relay_failure(big, 2530), la::test::decision_mc_options());
  CHECK(find(rb.findings, "need.kv_beats_no_comm").minimum_detectable_effect <
        0.6 * f.minimum_detectable_effect);
  // report.json: a number or null on every finding; report.md: the column
  bool saw_null = false, saw_number = false;
  const auto js = la::report_json(r);
  for (const auto& x : js.find("findings")->as_array()) {
    const auto* p = x.find("minimum_detectable_effect");
    REQUIRE(p != nullptr);
    saw_null |= p->is_null();
    saw_number |= p->is_number();
  }
  CHECK(saw_null);
  CHECK(saw_number);
  CHECK(la::report_markdown(r).find("| interval is | detectable | n |") != std::string::npos);
}

TEST_CASE("decision: the relay gate option changes nothing the decision reads (seed 2531)",
          "[report][decision]") {
  // the decision's Monte Carlo builds its reports with relay_gate = false (decision_mc_options);
  // with and without the gate, the decision and every non-gate finding are the same
  const auto recs = simulate_relay_failure(decision_base_design(), 2531);
  auto with = la::test::decision_mc_options();
  with.relay_gate = true;
  const auto a = la::build_audit_report(recs, with);
  const auto b = la::build_audit_report(recs, la::test::decision_mc_options());
  CHECK(a.gate.missing.empty());
  CHECK_FALSE(a.gate.findings.empty());
  CHECK(b.gate.missing == "skipped: audit_options.relay_gate is false");
  CHECK(b.gate.findings.empty());
  CHECK(a.decision.verdict == b.decision.verdict);
  CHECK(a.decision.relay_allowed == b.decision.relay_allowed);
  CHECK(a.decision.policy == b.decision.policy);
  CHECK(a.decision.summary == b.decision.summary);
  REQUIRE(a.decision.checklist.size() == b.decision.checklist.size());
  for (std::size_t i = 0; i < a.decision.checklist.size(); ++i) {
    CHECK(a.decision.checklist[i].name == b.decision.checklist[i].name);
    CHECK(a.decision.checklist[i].passed == b.decision.checklist[i].passed);
    CHECK(a.decision.checklist[i].reason == b.decision.checklist[i].reason);
  }
  std::size_t same = 0;
  for (const auto& f : a.findings)
    if (f.id.rfind("gate.", 0) != 0) {
      const auto& g = find(b.findings, f.id);
      CHECK(g.answer == f.answer);
      CHECK(g.detail == f.detail);
      ++same;
    }
  CHECK(same == b.findings.size());
}

TEST_CASE("decision: a trial the schedule never ran is no missing record (audit --until-decided, seed 2512)",
          "[report][decision][until_decided]") {
  // need items 0-149 in batches of 75: cross_model stopped on the need items of batch 1
  const auto all = simulate_relay_failure(decision_base_design(), 2512);
  std::uint64_t n = 0;
  for (const auto& r : all) n = std::max<std::uint64_t>(n, r.item + 1);
  la::arm_schedule s{.batch_items = 75};
  const la::arm_cell cross{"need", "cross_model"};
  for (std::uint64_t b = 0; b * 75 < n; ++b)
    s.add_batch(b == 1 ? std::set<la::arm_cell>{cross} : std::set<la::arm_cell>{});
  std::vector<la::trial_record> recs;
  for (const auto& r : all)
    if (s.runs(r.item, la::arm_cell{r.regime, r.arm})) recs.push_back(r);
  REQUIRE(recs.size() == all.size() - 75 * 3);
  auto o = la::test::decision_mc_options();
  o.horizon = n;
  o.looks = 1;
  auto comp = [](const la::audit_report& r, const std::string& regime) {
    for (const auto& c : r.core.completeness)
      if (c.arm == "cross_model" && c.regime == regime) return c;
    return la::arm_completeness{};
  };
  // without the schedule the 75 units read as missing records: worst-case bounds, a warning
  const auto unscheduled = la::build_audit_report(recs, o);
  CHECK(comp(unscheduled, "need").missing == 75 * 3);
  CHECK(find(unscheduled.findings, "need.cross_model_beats_no_comm").detail.find("lack a record") !=
        std::string::npos);
  // with it they are trials never run: no bound, no warning, counted as not scheduled
  o.schedule = s;
  const auto r = la::build_audit_report(recs, o);
  const auto c = comp(r, "need");
  CHECK(c.missing == 0);
  CHECK(c.not_scheduled == 75 * 3);
  CHECK(c.units == 75 * 3);
  const auto& f = find(r.findings, "need.cross_model_beats_no_comm");
  CHECK(f.detail.find("lack a record") == std::string::npos);
  CHECK(f.n == 75 * 3);
  CHECK(f.reads == std::vector<la::arm_cell>{{"need", "cross_model"}, {"need", "no_comm"}});
  for (const auto& w : r.core.input_warnings) CHECK(w.find("cross_model") == std::string::npos);
  // a record of a trial the schedule left out is corrupt
  auto bad = recs;
  for (const auto& x : all)
    if (x.arm == "cross_model" && x.item == 80) {
      bad.push_back(x);
      break;
    }
  CHECK_THROWS_WITH(la::build_audit_report(bad, o), Catch::Contains("is a trial the schedule left out"));
  // the cells to run: none once settled; else every inconclusive finding's and open check's cells
  CHECK(la::arm_cells_to_run(r.findings, r.decision).empty() == la::decision_settled(r.decision));
  const auto half =
      la::build_audit_report(std::vector<la::trial_record>(
                                 recs.begin(), recs.begin() + static_cast<std::ptrdiff_t>(recs.size() / 8)),
                             o);
  const auto run = la::arm_cells_to_run(half.findings, half.decision);
  if (!la::decision_settled(half.decision)) {
    for (const auto& x : half.findings)
      if (x.answer == la::verdict::inconclusive)
        for (const auto& cell : x.reads) CHECK(run.count(cell) == 1);
  }
  for (const auto& x : r.findings)
    if (x.id.rfind("gate.", 0) != 0 && x.n > 0) {  // every finding with data says what it reads
      INFO(x.id);
      CHECK_FALSE(x.reads.empty());
    }
}

TEST_CASE("run_until_decided: a plan without items or whose looks do not cover them is refused",
          "[report][decision][until_decided]") {
  auto never = [](std::size_t, const la::arm_schedule&) -> const std::vector<la::trial_record>& {
    static const std::vector<la::trial_record> none;
    return none;
  };
  auto quiet = [](const la::arm_schedule&, const std::set<la::arm_cell>&) {};
  auto look = [](std::size_t, const la::audit_report&, std::size_t) {};
  la::until_decided_plan p{.batch_items = 10,
                           .looks = 2,
                           .item_regime = std::vector<std::string>(20, "need"),
                           .seeds = 1,
                           .arms = {"kv_full", "no_comm"}};
  auto bad = p;
  bad.item_regime.clear();
  CHECK_THROWS_WITH(la::run_until_decided(bad, la::audit_options{}, never, quiet, look),
                    Catch::Contains("must hold items, arms and seeds"));
  bad = p;
  bad.looks = 3;
  CHECK_THROWS_WITH(la::run_until_decided(bad, la::audit_options{}, never, quiet, look),
                    Catch::Contains("plan.looks"));
  bad = p;
  bad.batch_items = 0;
  CHECK_THROWS_AS(la::run_until_decided(bad, la::audit_options{}, never, quiet, look), la::invalid_argument);
  bad = p;
  bad.item_regime[3] = "unknown";  // schedule.json names the four regimes only
  CHECK_THROWS_WITH(la::run_until_decided(bad, la::audit_options{}, never, quiet, look),
                    Catch::Contains("plan.item_regime"));
}

TEST_CASE(
    "decision: the answer probability shows the relay's effect and accuracy does not - the decision "
    "never says the relay carries none of A's information (issue 52 item 2)",
    "[report][decision][likelihood]") {
  // 200 items: kv_full and no_comm right on the same items (accuracy difference exactly 0: a benefit
  // of the margin is excluded), text_full always right; the probability of the reference answer
  // rises from about 0.2 to about 0.6 with the relay.
  std::vector<la::trial_record> rs;
  for (std::uint64_t i = 0; i < 200; ++i) {
    const double jitter = 0.001 * static_cast<double>(i % 50);
    for (const char* arm : {"no_comm", "text_full", "kv_full"}) {
      la::trial_record r;
      r.item = i;
      r.arm = r.arm_kind = arm;
      r.regime = "need";
      const std::string a = arm;
      r.correct = a == "text_full" || i % 2 == 0;
      r.answer_logprob = std::log(a == "no_comm" ? 0.2 + jitter : a == "kv_full" ? 0.6 + jitter : 0.95);
      r.receiver_fingerprint = "aa";
      if (a != "no_comm") r.sender_fingerprint = "aa";
      rs.push_back(std::move(r));
    }
  }
  const auto rep = la::build_audit_report(rs, la::test::decision_mc_options());
  for (const auto& c : rep.decision.checklist)
    INFO(c.name << ": " << la::verdict_name(c.passed) << " " << c.reason);
  INFO(rep.decision.summary);
  CHECK(find(rep.findings, "need.kv_beats_no_comm").answer == la::verdict::no);  // accuracy: absence shown
  CHECK(find(rep.findings, "need.kv_raises_answer_probability").answer == la::verdict::yes);
  const auto& carries = find(rep.findings, "need.kv_carries_information");
  CHECK(carries.answer == la::verdict::yes);
  CHECK(carries.method.find("answer probability at 0.025") != std::string::npos);
  const auto dep = std::find_if(rep.decision.checklist.begin(), rep.decision.checklist.end(),
                                [](const la::checklist_item& c) { return c.name == "dependency"; });
  REQUIRE(dep != rep.decision.checklist.end());
  CHECK(dep->passed == la::verdict::yes);
  CHECK(contains(dep->findings, "need.kv_raises_answer_probability"));
  CHECK(rep.decision.summary.find("no benefit over no communication") == std::string::npos);
  CHECK(rep.decision.verdict != la::decision_verdict::no_communication);
  // relay does carry information, but loses 50 accuracy points to text: text, for that reason
  CHECK(rep.decision.verdict == la::decision_verdict::text);
  CHECK(rep.decision.summary.find("less accurate than text") != std::string::npos);

  // decide() on findings without need.kv_carries_information (an older report's): accuracy's "no"
  // beside a likelihood "yes" leaves the dependency check open, never "no"
  std::vector<la::finding> older;
  for (const auto& f : rep.findings)
    if (f.id != "need.kv_carries_information") older.push_back(f);
  const auto d = la::decide(older, rs, {});
  const auto dep2 = std::find_if(d.checklist.begin(), d.checklist.end(),
                                 [](const la::checklist_item& c) { return c.name == "dependency"; });
  REQUIRE(dep2 != d.checklist.end());
  CHECK(dep2->passed == la::verdict::inconclusive);
  CHECK(dep2->reason.find("likelihood finding") != std::string::npos);
  CHECK(d.summary.find("no benefit over no communication") == std::string::npos);
}
