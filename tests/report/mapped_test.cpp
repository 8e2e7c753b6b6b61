// SPDX-License-Identifier: MIT
// Relay through a cache map (issue 29): the mapped.* findings on planted records, the decision's
// map path (a foreign sender relayed only through a map shown non-inferior, held in the risk
// family), and the Monte Carlo of the retention interval and the map path ([slow];
// report/mapped_mc.hpp, report/decision_mc.hpp, also benchmarks/bench_verdicts.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "latentaudit/report/report.hpp"
#include "report/decision_mc.hpp"
#include "report/mapped_mc.hpp"
#include "report/relay_failure_sim.hpp"

#include "support/findings.hpp"

namespace la = latentaudit;

namespace mapped_test {

using latentaudit::test::find;

bool map_policy_has(const la::audit_decision& d, const std::string& text) {
  return std::any_of(d.policy.begin(), d.policy.end(),
                     [&](const std::string& p) { return p.find(text) != std::string::npos; });
}

const la::checklist_item& map_checklist_item(const la::audit_decision& d, const std::string& name) {
  const auto it = std::find_if(d.checklist.begin(), d.checklist.end(),
                               [&](const la::checklist_item& c) { return c.name == name; });
  REQUIRE(it != d.checklist.end());
  return *it;
}

}  // namespace mapped_test

using namespace mapped_test;

TEST_CASE("mapped: a map as good as same-model relay is shown, named, and relays its sender (seed 2901)",
          "[report][mapped]") {
  auto d = la::test::decision_base_design();
  d.mapped_need = d.need_kv;
  const auto recs = la::test::simulate_relay_failure(d, 2901);
  const auto rep = la::build_audit_report(recs, la::test::decision_mc_options());
  const auto& beats = find(rep.findings, "mapped.beats_unmapped");
  const auto& ni = find(rep.findings, "mapped.noninferior_to_same_model");
  const auto& ret = find(rep.findings, "mapped.retention");
  INFO(beats.detail << "\n" << ni.detail << "\n" << ret.detail);
  CHECK(beats.answer == la::verdict::yes);  // +99 points over the inert unmapped cache
  CHECK(ni.answer == la::verdict::yes);
  CHECK(std::isfinite(ni.noninferiority_p));
  CHECK(ret.estimate == Approx(1.0).margin(0.05));
  CHECK(ret.ci_low <= 1.0);
  CHECK(ret.ci_high >= 1.0);
  CHECK(ret.answer == la::verdict::yes);  // at 150 need items × 3 seeds the lower limit clears 0.90
  CHECK(beats.detail.find("map m1") != std::string::npos);
  // reads: the map's findings read its arm, the unmapped arm, kv_full and no_comm in the need regime
  CHECK(std::find(beats.reads.begin(), beats.reads.end(), la::arm_cell{"need", "cross_model"}) !=
        beats.reads.end());
  CHECK(ret.reads.size() == 3u);
  // the decision: relay with conditions, and this sender's cache only through its map
  const auto& dec = rep.decision;
  INFO(la::decision_verdict_name(dec.verdict));
  CHECK(dec.relay_allowed);
  CHECK(map_checklist_item(dec, "map_kv_mapped").passed == la::verdict::yes);
  CHECK(map_policy_has(dec, "relay the cache of sender cc (arm kv_mapped) only through cache map m1"));
  CHECK(map_policy_has(dec, "a foreign sender's cache only through a cache map shown non-inferior"));
  // homogeneity ignores the mapped arm (a foreign sender by design)
  CHECK(map_checklist_item(dec, "homogeneity").passed == la::verdict::yes);
  // report.json carries the analysis
  const auto j = la::report_json(rep);
  const auto& m = j.at("mapped");
  CHECK(m.at("retention_gate").as_number() == 0.9);
  CHECK(m.at("arms").as_array().at(0).at("map").as_string() == "m1");
  CHECK(m.at("arms").as_array().at(0).at("unmapped").as_string() == "cross_model");
  CHECK(la::report_markdown(rep).find("## Relay through a cache map") != std::string::npos);
}

TEST_CASE("mapped: an inferior map sends its sender's text, and a map undecided keeps the decision open",
          "[report][mapped]") {
  auto d = la::test::decision_base_design();
  d.mapped_need = 0.60;  // the stranger's map: most of the benefit, far from all of it
  const auto rep =
      la::build_audit_report(la::test::simulate_relay_failure(d, 2902), la::test::decision_mc_options());
  const auto& ni = find(rep.findings, "mapped.noninferior_to_same_model");
  CHECK(ni.answer == la::verdict::no);
  CHECK(find(rep.findings, "mapped.retention").answer == la::verdict::no);
  CHECK(find(rep.findings, "mapped.beats_unmapped").answer == la::verdict::yes);
  const auto& dec = rep.decision;
  CHECK(dec.relay_allowed);
  CHECK(map_checklist_item(dec, "map_kv_mapped").passed == la::verdict::no);
  CHECK(map_policy_has(dec,
                       "send text from sender cc (arm kv_mapped): cache map m1 is not shown non-inferior"));
  CHECK(!map_policy_has(dec, "only through cache map"));
  CHECK(la::decision_settled(dec));
  // a map check left open: a relay verdict is not settled (audit --until-decided runs on)
  auto open = dec;
  for (auto& c : open.checklist)
    if (c.name == "map_kv_mapped") c.passed = la::verdict::inconclusive;
  CHECK(!la::decision_settled(open));
}

TEST_CASE("mapped: a record set without kv_mapped has no mapped findings, section or map check",
          "[report][mapped]") {
  auto d = la::test::decision_base_design();
  d.regime_items = {60, 20, 10, 10};
  const auto rep =
      la::build_audit_report(la::test::simulate_relay_failure(d, 2903), la::test::decision_mc_options());
  for (const auto& f : rep.findings) CHECK(f.id.rfind("mapped.", 0) != 0);
  for (const auto& c : rep.decision.checklist) CHECK(c.name.rfind("map_", 0) != 0);
  CHECK(la::report_json(rep).find("mapped") == nullptr);
}

TEST_CASE("mapped: missing kv_mapped records leave retention undecided and bound the others (seed 2905)",
          "[report][mapped]") {
  auto d = la::test::decision_base_design();
  d.mapped_need = d.need_kv;
  d.drop_wrong_kv = 1.0;  // every wrong kv_mapped record lost, and one right one below
  d.drop_arm = "kv_mapped";
  auto recs = la::test::simulate_relay_failure(d, 2905);
  for (auto it = recs.begin(); it != recs.end(); ++it)
    if (it->arm == "kv_mapped" && it->regime == "need") {
      recs.erase(it);
      break;
    }
  const auto core = la::analyse_records(recs, la::test::decision_mc_options());
  const auto& ret = find(core.findings, "mapped.retention");
  CHECK(ret.answer == la::verdict::inconclusive);
  CHECK(ret.detail.find("lack a record") != std::string::npos);
  REQUIRE(core.mapped.arms.size() == 1u);
  CHECK(core.mapped.arms[0].retention_missing >= 1u);
  CHECK(core.mapped.arms[0].vs_same_model.missing.units >= 1u);  // the non-inferiority reads the bounds
}

TEST_CASE("mapped: the screen correlates the records' attention-output cosine with the per-item benefit",
          "[report][mapped]") {
  auto d = la::test::decision_base_design();
  d.regime_items = {80, 20, 10, 10};
  d.mapped_need = 0.6;
  auto recs = la::test::simulate_relay_failure(d, 2904);
  // a screen that sees the map's failures: a higher cosine where the mapped cache answers
  for (auto& r : recs)
    if (r.arm == "kv_mapped") r.map_cosine = r.correct ? 0.9 : 0.6;
  const auto core = la::analyse_records(recs, la::test::decision_mc_options());
  REQUIRE(core.mapped.arms.size() == 1u);
  const auto& sc = core.mapped.arms[0].screen;
  CHECK(sc.items == 80u);
  CHECK(sc.mean_cosine > 0.6);
  CHECK(sc.mean_cosine < 0.9);
  CHECK(sc.r > 0.5);
  CHECK(sc.ci_low <= sc.r);
  CHECK(sc.ci_high >= sc.r);
  CHECK(sc.ci_low > 0.0);
  // the record field round-trips, and the reader refuses a cosine outside [-1, 1]
  for (auto& r : recs)
    if (r.arm == "kv_mapped") {
      const auto back = la::record_from_json(la::parse_json(la::record_to_line(r)));
      CHECK(back.map_cosine == r.map_cosine);
      CHECK(back.map == "m1");
      auto j = la::parse_json(la::record_to_line(r));
      j.set("map_cosine", 1.5);
      CHECK_THROWS_WITH(la::record_from_json(j), Catch::Contains("map_cosine"));
      break;
    }
}

TEST_CASE("mapped: Monte Carlo of the retention interval and of the decision's map path",
          "[report][mapped][slow]") {
  // Retention: 60 replicates per scenario; coverage claim 0.90 less 3 Monte Carlo standard errors
  // (3 sqrt(0.9 * 0.1 / 60) = 0.116), each one-sided miss and the size of "yes" at the gate at most
  // 0.05 plus 3 standard errors (0.084); the benchmark runs 400 (docs/audit-report.md).
  constexpr std::size_t reps = 60;
  const double miss_bound = 0.05 + 3.0 * std::sqrt(0.05 * 0.95 / reps);
  for (const auto& s : la::test::retention_scenarios()) {
    const auto m = la::test::run_retention_mc(s, reps);
    std::cout << "retention MC: " << s.name << " (seed " << s.seed << "): covered " << m.rate(m.covered)
              << ", low above " << m.rate(m.miss_low) << ", high below " << m.rate(m.miss_high) << ", yes "
              << m.rate(m.yes) << "\n";
    INFO(s.name);
    CHECK(m.rate(m.covered) >= 0.9 - 3.0 * std::sqrt(0.9 * 0.1 / reps));
    CHECK(m.rate(m.miss_low) <= miss_bound);
    CHECK(m.rate(m.miss_high) <= miss_bound);
    if (s.rho <= 0.9) CHECK(m.rate(m.yes) <= miss_bound);  // "yes" claims ρ ≥ 0.90
  }
  // The map path: a map at the margin, alone and with the three risks at the margin at once
  // (relay through the map, or without a risk's condition, is the error: at most α).
  for (const bool with_risks : {false, true}) {
    const auto s = la::test::decision_map_scenario(with_risks, with_risks ? 29030000 : 29010000);
    const auto m = la::test::run_decision_mc(s, reps);
    std::cout << "decision MC: " << la::test::decision_mc_line(s, m) << "\n";
    INFO(s.name);
    CHECK(m.rate(m.allowed_unhandled) <= miss_bound);
    CHECK(m.rate(m.forbidden_lines) <= miss_bound);
  }
  // Missing records: the map's failed relays dropped; decided on the worst-case bounds.
  {
    const auto s = la::test::decision_map_missing_scenario();
    const auto m = la::test::run_decision_mc(s, reps);
    std::cout << "decision MC: " << la::test::decision_mc_line(s, m) << "\n";
    CHECK(m.rate(m.allowed_unhandled) <= miss_bound);
    CHECK(m.rate(m.forbidden_lines) <= miss_bound);
    CHECK(m.rate(m.finding_errors) <= miss_bound);
  }
  // Power: a map as good as same-model relay relays its sender in most replicates.
  const auto p = la::test::decision_map_power_scenario();
  const auto mp = la::test::run_decision_mc(p, 20);
  std::cout << "decision MC: " << la::test::decision_mc_line(p, mp) << "; relayed through the map "
            << mp.rate(mp.forbidden_lines) << "\n";
  CHECK(mp.rate(mp.forbidden_lines) >= 0.8);
}
