// SPDX-License-Identifier: MIT
// Tests of the relay-failure analyses (report/analyses/stale.hpp, conflict.hpp, drift.hpp,
// relay_switch.hpp), the decision's conditions and the relay gate's refusal of stale and
// conflicting relays, on synthetic clustered records with planted truths (relay_failure_sim.hpp;
// fixed seeds). Monte Carlo validation of every new verdict rule is tagged [slow].
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "latentaudit/report/audit.hpp"
#include "latentaudit/report/cost.hpp"
#include "latentaudit/report/decision.hpp"
#include "latentaudit/report/report.hpp"
#include "report/relay_failure_sim.hpp"
#include "support/findings.hpp"

namespace la = latentaudit;
using la::test::relay_failure_design;
using la::test::simulate_relay_failure;

namespace {

using latentaudit::test::find;

using latentaudit::test::fast_options;

}  // namespace

TEST_CASE("relay failures: every planted failure is found (seed 1801)", "[report][relay_failure]") {
  const auto recs = simulate_relay_failure({}, 1801);
  const auto core = la::analyse_records(recs, fast_options());
  const auto& sw = find(core.findings, "stale.kv_worse_than_text");
  CHECK(sw.answer == la::verdict::yes);
  CHECK(sw.estimate < -0.6);
  CHECK(sw.ci_high < 0.0);
  const auto& sa = find(core.findings, "stale.kv_gives_stale_answer");
  CHECK(sa.answer == la::verdict::yes);
  CHECK(sa.estimate > 0.5);
  CHECK(core.stale.kv_answers.stale > core.stale.kv_answers.other_wrong);
  const auto& cf = find(core.findings, "conflict.kv_worse_than_no_comm");
  CHECK(cf.answer == la::verdict::yes);
  CHECK(cf.estimate < -0.5);
  REQUIRE(core.conflict.attention.available);
  CHECK(core.conflict.attention.difference_high < 0.0);  // less attention on a conflicting relay
  CHECK(cf.detail.find("mechanism") != std::string::npos);
  const auto& dr = find(core.findings, "drift.tolerance_steps");
  CHECK(dr.answer == la::verdict::yes);
  CHECK(dr.ci_low <= 50.0);  // planted crossing of -0.05 at 50 steps (before the item effects)
  CHECK(dr.ci_high >= 40.0);
  CHECK(dr.estimate > 25.0);
  CHECK(dr.estimate < 100.0);
  REQUIRE(core.drift.benefit.size() == 5);
  CHECK(core.drift.benefit.front().benefit.estimate > core.drift.benefit.back().benefit.estimate);
  // the existing findings are untouched by the new regimes
  CHECK(find(core.findings, "need.kv_beats_no_comm").answer == la::verdict::yes);
  for (const auto& f : core.findings) {
    CHECK(f.detail.find("nan") == std::string::npos);
  }
}

TEST_CASE("relay failures: absent regimes and arms are inconclusive with the reason",
          "[report][relay_failure]") {
  relay_failure_design d;
  d.items_per_regime = 40;
  d.with_stale = d.with_conflict = d.with_drift = false;
  const auto core = la::analyse_records(simulate_relay_failure(d, 1802), fast_options());
  for (const char* id : {"stale.kv_worse_than_text", "stale.kv_gives_stale_answer",
                         "conflict.kv_worse_than_no_comm", "drift.tolerance_steps"}) {
    const auto& f = find(core.findings, id);
    CHECK(f.answer == la::verdict::inconclusive);
    CHECK(f.n == 0);
    CHECK(std::isnan(f.estimate));
    CHECK(!f.detail.empty());
  }
  CHECK(find(core.findings, "stale.kv_worse_than_text").detail.find("missing") != std::string::npos);
  CHECK(find(core.findings, "drift.tolerance_steps").detail.find("drift arm") != std::string::npos);
}

TEST_CASE("relay failures: attention mass absent is 'unavailable on this engine', never zero",
          "[report][relay_failure]") {
  relay_failure_design d;
  d.items_per_regime = 60;
  d.with_attention = false;
  d.with_drift = false;
  const auto core = la::analyse_records(simulate_relay_failure(d, 1803), fast_options());
  CHECK_FALSE(core.conflict.attention.available);
  CHECK(core.conflict.attention.note.find("unavailable on this engine") != std::string::npos);
  CHECK(find(core.findings, "conflict.kv_worse_than_no_comm").detail.find("unavailable on this engine") !=
        std::string::npos);
}

TEST_CASE("relay failures: no loss planted gives 'no' (absence shown) at 300 items",
          "[report][relay_failure]") {
  relay_failure_design d;
  d.items_per_regime = 300;
  d.stale_kv = d.stale_text = 0.92;           // a stale cache that is as good as the text
  d.conflict_kv = d.conflict_no_comm = 0.95;  // a conflict B ignores
  d.stale_share_of_wrong = 0.1;
  d.with_drift = false;
  const auto core = la::analyse_records(simulate_relay_failure(d, 1804), fast_options());
  CHECK(find(core.findings, "stale.kv_worse_than_text").answer == la::verdict::no);
  CHECK(find(core.findings, "conflict.kv_worse_than_no_comm").answer == la::verdict::no);
  CHECK(find(core.findings, "stale.kv_gives_stale_answer").answer == la::verdict::no);
}

TEST_CASE("relay failures: the positive control gates the new findings", "[report][relay_failure]") {
  relay_failure_design d;
  d.items_per_regime = 60;
  d.need_text = d.need_no_comm = 0.05;  // text does not help: the need regime tests nothing
  d.with_drift = false;
  const auto core = la::analyse_records(simulate_relay_failure(d, 1805), fast_options());
  for (const char* id : {"stale.kv_worse_than_text", "conflict.kv_worse_than_no_comm"}) {
    const auto& f = find(core.findings, id);
    CHECK(f.answer == la::verdict::inconclusive);
    CHECK(f.detail.rfind(std::string(la::positive_control_reason), 0) == 0);
  }
}

TEST_CASE("decision: relay with conditions, a policy per shown failure, no nan", "[report][relay_failure]") {
  // every risk tested: an inert cross_model placebo, and no-need items where relay is shown to
  // change nothing (a risk not shown gives "relay (unverified)": tests/report/decision_test.cpp)
  la::test::relay_failure_design design;
  design.seeds = 3;
  design.with_cross_model = true;
  design.need_no_comm = 0.0;  // no_comm and the foreign cache never answer a need request
  design.need_kv = design.need_text = 0.99;
  design.no_need_kv = design.no_need_text = design.no_need_no_comm = 0.99;
  const auto recs = simulate_relay_failure(design, 1801);
  auto o = fast_options();
  const auto r = la::build_audit_report(recs, o);
  INFO(r.decision.summary);
  CHECK(r.decision.verdict == la::decision_verdict::relay_with_conditions);
  std::string policy;
  for (const auto& p : r.decision.policy) policy += p + "\n";
  INFO(policy);
  CHECK(policy.find("fresh caches") != std::string::npos);
  CHECK(policy.find("prompt_overlap") != std::string::npos);
  CHECK(policy.find("identical model fingerprints") != std::string::npos);
  std::string all = r.decision.summary;
  for (const auto& c : r.decision.checklist) all += c.reason;
  CHECK(all.find("nan") == std::string::npos);
  // homogeneity is not failed by the planted drift arms
  for (const auto& c : r.decision.checklist)
    if (c.name == "homogeneity") CHECK(c.passed == la::verdict::yes);
  // the switch replay turns relay off after the change point
  const auto& sw = r.decision.relay_switch;
  REQUIRE(sw.available);
  REQUIRE(sw.off_at.has_value());
  CHECK(*sw.off_at > sw.change_point);
  CHECK(sw.guarantee.find("always valid") != std::string::npos);
  // report.json and report.md carry the policy and the switch
  const auto md = la::report_markdown(r);
  CHECK(md.find("relay with conditions") != std::string::npos);
  CHECK(md.find("Relay switch") != std::string::npos);
  CHECK(md.find("When relay does not pay") != std::string::npos);
  const auto js = la::report_json(r);
  REQUIRE(js.find("relay_failures") != nullptr);
  CHECK(js.find("decision")->find("policy")->as_array().size() == r.decision.policy.size());
  // the SVGs: forest rows for the new regimes and the drift dose-response
  bool drift_svg = false, forest_rows = false;
  for (const auto& [name, svg] : la::report_svgs(r)) {
    drift_svg |= name == "drift_response.svg" && svg.find("<svg") != std::string::npos;
    forest_rows |= name == "forest.svg" && svg.find("stale: kv_full") != std::string::npos &&
                   svg.find("conflict: kv_full") != std::string::npos &&
                   svg.find("drift 200 steps") != std::string::npos;
  }
  CHECK(drift_svg);
  CHECK(forest_rows);
}

TEST_CASE("decision: verdict vocabulary text / no communication", "[report][relay_failure]") {
  auto f = [](std::string id, la::verdict v, double est, double lo, double hi) {
    return la::finding{
        .id = std::move(id), .answer = v, .estimate = est, .ci_low = lo, .ci_high = hi, .n = 100};
  };
  const std::vector<la::trial_record> none;
  std::vector<la::finding> fs = {f("need.text_beats_no_comm", la::verdict::no, 0.0, -0.02, 0.02),
                                 f("need.kv_beats_no_comm", la::verdict::inconclusive, 0.0, -0.02, 0.02)};
  // B answers alone: no communication; nothing answers (a broken task): inconclusive
  std::vector<la::trial_record> alone;
  for (std::uint64_t i = 0; i < 100; ++i)
    alone.push_back(
        {.item = i, .seed = 0, .arm = "no_comm", .arm_kind = "no_comm", .regime = "need", .correct = true});
  const auto d = la::decide(fs, alone);
  CHECK(d.verdict == la::decision_verdict::no_communication);
  CHECK_FALSE(d.policy.empty());
  CHECK(d.summary.find("nan") == std::string::npos);
  for (auto& r : alone) r.correct = false;
  CHECK(la::decide(fs, alone).verdict == la::decision_verdict::inconclusive);
  CHECK(la::decide(fs, none).verdict == la::decision_verdict::inconclusive);
  fs = {f("need.text_beats_no_comm", la::verdict::yes, 0.9, 0.85, 0.95),
        f("need.kv_beats_no_comm", la::verdict::no, 0.0, -0.02, 0.02)};
  CHECK(la::decide(fs, none).verdict == la::decision_verdict::text);
}

TEST_CASE("relay switch: stays on under a null stream, turns off after a change (seed 1806)",
          "[report][relay_failure]") {
  std::mt19937_64 g(1806);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  la::relay_switch on;
  for (int i = 0; i < 2000; ++i) {  // relay exactly as good as the fallbacks on average
    const double a = u(g) < 0.5 ? 1.0 : 0.0, b = u(g) < 0.5 ? 1.0 : 0.0;
    on.update(a - b, b - a);
  }
  CHECK(on.on());
  la::relay_switch sw;
  for (int i = 0; i < 200; ++i) sw.update(0.0, 1.0);  // relay helps
  CHECK(sw.on());
  for (int i = 0; i < 100; ++i) sw.update(-1.0, 0.0);  // stale: text is right, relay is not
  REQUIRE(sw.off_at().has_value());
  CHECK(*sw.off_at() > 200);
  CHECK(*sw.off_at() <= 215);
  CHECK(sw.reason() == "text");
}

TEST_CASE("relay gate: learns to refuse stale and conflicting relays from pre-transfer features",
          "[report][relay_failure][gate]") {
  relay_failure_design d;
  d.with_drift = false;
  d.items_per_regime = 80;
  const auto recs = simulate_relay_failure(d, 1807);
  la::relay_gate_options go;
  go.bootstrap_replicates = 199;
  // The gate relays when the predicted gain over its fallback (no_comm) exceeds the cost. A stale
  // cache here is right 10 % of the time against no_comm's 5 %: a gain of about +0.05 over no
  // communication, so at cost 0 relaying it is the right call. At a cost of 5 points a relay must
  // gain more than that: the stale and conflicting relays are refused, the fresh one relayed.
  go.cost = 0.05;
  const auto g = la::fit_relay_gate(recs, go);
  REQUIRE(g.missing.empty());
  bool has_age = false, has_overlap = false;
  for (const auto& name : g.model.features) {
    has_age |= name == "cache_age_versions";
    has_overlap |= name == "prompt_overlap";
  }
  CHECK((has_age || has_overlap));
  // the deployable gate: refuses a stale cache and a conflicting one, relays a fresh need request
  auto x = [&](double age, double overlap) {
    std::vector<double> v;
    for (const auto& name : g.model.features) {
      v.push_back(name == "cache_age_versions" ? age
                  : name == "prompt_overlap"   ? overlap
                  : name == "doc_tokens"       ? 20.0
                  : name == "own_tokens"       ? (overlap > 0 ? 20.0 : 4.0)
                  : name == "cache_bytes"      ? 80000.0
                                               : 1.0);
    }
    return v;
  };
  CHECK(g.model.relays(x(0, 0)));
  CHECK_FALSE(g.model.relays(x(1, 0)));
  CHECK_FALSE(g.model.relays(x(0, 1)));
  const auto& gate = g.policies[0];
  const auto& always = g.policies[1];
  CHECK(gate.accuracy.estimate > always.accuracy.estimate);
}

// ---- Monte Carlo validation of the new verdict rules (clustered data, exact truths) ----------
#include "report/relay_failure_mc.hpp"

#include "support/findings.hpp"

namespace {
constexpr double mc_alpha = 0.05;
double mc_tolerance(std::size_t reps) {  // nominal + 3 binomial SE
  return mc_alpha + 3.0 * std::sqrt(mc_alpha * (1.0 - mc_alpha) / static_cast<double>(reps));
}
}  // namespace

TEST_CASE("relay failures: size and power of the 'worse' and stale-answer rules (Monte Carlo)",
          "[report][relay_failure][slow]") {
  using la::test::failure_cell;
  constexpr std::size_t R = 1000;
  const double tol = mc_tolerance(R);
  struct cell {
    const char* name;
    failure_cell c;
    std::uint64_t seed;
  };
  const cell cells[] = {
      {"stale null (kv = text = 0.85, conc 5)",
       {.regime = "stale", .kv = {0.85, 5}, .control = {0.85, 5}},
       20261801},
      {"stale margin (kv 0.80, text 0.85)",
       {.regime = "stale", .kv = {0.80, 5}, .control = {0.85, 5}},
       20261802},
      {"stale planted (kv 0.10, text 0.92)",
       {.regime = "stale", .kv = {0.10, 5}, .control = {0.92, 5}},
       20261803},
      {"conflict null at ceiling (0.95 = 0.95, no heterogeneity)",
       {.regime = "conflict", .kv = {0.95, 0}, .control = {0.95, 0}},
       20261804},
      {"conflict margin (kv 0.90, no_comm 0.95)",
       {.regime = "conflict", .kv = {0.90, 5}, .control = {0.95, 5}},
       20261805},
      {"conflict planted (kv 0.20, no_comm 0.95)",
       {.regime = "conflict", .kv = {0.20, 5}, .control = {0.95, 5}},
       20261806},
      {"stale answer null (kv 0.5, P(stale | wrong) 0.5)",
       {.regime = "stale", .kv = {0.5, 5}, .control = {0.9, 5}, .stale_share = 0.5},
       20261807},
      {"stale answer margin (kv 0.5, P(stale | wrong) 0.55: stale - other = +0.05)",
       {.regime = "stale", .kv = {0.5, 5}, .control = {0.9, 5}, .stale_share = 0.55},
       20261808},
      {"stale answer planted (kv 0.1, P(stale | wrong) 0.9)",
       {.regime = "stale", .kv = {0.1, 5}, .control = {0.9, 5}, .stale_share = 0.9},
       20261809},
  };
  std::vector<std::pair<la::test::mc_counts, la::test::mc_counts>> res;
  for (const auto& c : cells) {
    res.push_back(la::test::run_failure_cell(c.c, R, c.seed));
    const auto& [w, a] = res.back();
    std::cout << "relay_failure MC (" << R << " reps, 150 items x 3 seeds, seed " << c.seed << ") " << c.name
              << ": worse yes " << w.rate(w.yes) << " no " << w.rate(w.no) << "; stale_answer yes "
              << a.rate(a.yes) << " no " << a.rate(a.no) << " (tolerance " << tol << ")\n";
  }
  CHECK(res[0].first.rate(res[0].first.yes) <= tol);  // a loss claimed where there is none
  CHECK(res[1].first.rate(res[1].first.no) <= tol);   // absence claimed at the margin
  CHECK(res[2].first.rate(res[2].first.yes) >= 0.99);
  CHECK(res[3].first.rate(res[3].first.yes) <= tol);
  CHECK(res[4].first.rate(res[4].first.no) <= tol);
  CHECK(res[5].first.rate(res[5].first.yes) >= 0.99);
  CHECK(res[6].second.rate(res[6].second.yes) <= tol);
  CHECK(res[7].second.rate(res[7].second.no) <= tol);
  CHECK(res[8].second.rate(res[8].second.yes) >= 0.99);
}

TEST_CASE("relay failures: coverage of the drift.tolerance_steps interval (Monte Carlo)",
          "[report][relay_failure][slow]") {
  constexpr std::size_t R = 200;
  const double floor = 0.95 - 3.0 * std::sqrt(0.05 * 0.95 / R);
  struct cell {
    const char* name;
    la::test::drift_cell c;
    std::uint64_t seed;
  };
  const cell cells[] = {
      {"crossing at the 50-step level, 150 items", {.slope = 0.001}, 20261810},
      {"crossing between levels (75 steps), 150 items", {.slope = 0.05 / 75.0}, 20261811},
      {"crossing at the 50-step level, 60 items", {.items = 60, .slope = 0.001}, 20261812},
  };
  for (const auto& c : cells) {
    const auto r = la::test::run_drift_cell(c.c, R, c.seed);
    const double cov = static_cast<double>(r.covered) / static_cast<double>(r.reps);
    std::cout << "relay_failure drift MC (" << R << " reps, seed " << c.seed << ", B = 99) " << c.name
              << ": truth " << c.c.truth() << ", coverage " << cov << " (missed below " << r.below
              << ", above " << r.above << "), located " << r.located << ", mean width "
              << (r.located ? r.width_sum / static_cast<double>(r.located) : 0.0) << " (floor " << floor
              << ")\n";
    CHECK(cov >= floor);
  }
}

TEST_CASE("relay switch: never switched off under the null, switched off after the change (Monte Carlo)",
          "[report][relay_failure][slow]") {
  constexpr std::size_t R = 1000;
  const double tol = mc_tolerance(R);
  const auto n = la::test::run_switch_cell({.items = 400, .null = true}, R, 20261813);
  const double size = static_cast<double>(n.off) / static_cast<double>(n.reps);
  const auto p = la::test::run_switch_cell({.items = 400, .null = false, .good = 150}, R, 20261814);
  const double det = static_cast<double>(p.off) / static_cast<double>(p.reps);
  const double early = static_cast<double>(p.off_before_change) / static_cast<double>(p.reps);
  const double delay =
      p.off > p.off_before_change ? p.delay_sum / static_cast<double>(p.off - p.off_before_change) : 0.0;
  std::cout << "relay_switch MC (" << R << " reps, 400 items x 3 seeds; seeds 20261813/4): P(off | null) "
            << size << " (tolerance " << tol << "); planted change after item 150: P(off) " << det
            << ", P(off before the change) " << early << ", mean delay " << delay << " items\n";
  CHECK(size <= tol);
  CHECK(early <= tol);
  CHECK(det >= 0.99);
}

TEST_CASE("relay gate: drifted senders as extra requests vary fingerprint_match and drift_steps",
          "[report][relay_failure][gate]") {
  relay_failure_design d;
  d.items_per_regime = 40;
  d.drift_slope = 0.004;  // at 200 steps the drifted relay is no better than no communication
  const auto recs = simulate_relay_failure(d, 1809);
  la::relay_gate_options go;
  go.bootstrap_replicates = 199;
  go.extra_relay_arms = {"kv_drift_25", "kv_drift_50", "kv_drift_100", "kv_drift_200", "absent_arm"};
  const auto g = la::fit_relay_gate(recs, go);
  REQUIRE(g.missing.empty());
  CHECK(g.held_out_units == 4 * 40 * 2 * 5);  // 4 regimes x 40 items x 2 seeds x (kv_full + 4 drift)
  for (const auto& why : g.dropped_features) {
    INFO(why);
    CHECK(why.rfind("drift_steps: constant", 0) != 0);
    CHECK(why.rfind("fingerprint_match: constant", 0) != 0);
  }
}

TEST_CASE("relay failures: a stack that records no stale_answer gets an inconclusive stale-answer finding",
          "[report][relay_failure]") {
  relay_failure_design d;
  d.items_per_regime = 60;
  d.with_drift = false;
  auto recs = simulate_relay_failure(d, 1810);
  for (auto& r : recs) r.stale_answer.reset();
  const auto core = la::analyse_records(recs, fast_options());
  const auto& f = find(core.findings, "stale.kv_gives_stale_answer");
  CHECK(f.answer == la::verdict::inconclusive);
  CHECK(f.n == 0);
  CHECK(f.detail.find("stale_answer") != std::string::npos);
  CHECK(find(core.findings, "stale.kv_worse_than_text").answer == la::verdict::yes);  // unaffected
  bool warned = false;
  for (const auto& w : core.warnings) warned |= w.find("carry no stale_answer") != std::string::npos;
  CHECK(warned);
}
