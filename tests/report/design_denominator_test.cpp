// SPDX-License-Identifier: MIT
// Issue 52, items 1 and 4: the design is the denominator (units a stack lost in every arm are
// missing and bounded when the design lists them; without a design the report says it cannot see
// them and names the items with unequal seeds), and the estimand a deployment needs (the value and
// risk checks decide the mean over requests too when seeds per item are unequal). Monte Carlo on
// clustered records: tests/report/design_denominator_mc.hpp; the numbers are in
// docs/audit-report.md ("The design is the denominator", "Whose mean a check decides").
#include <catch2/catch.hpp>

#include <latentaudit/report/report.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "report/design_denominator_mc.hpp"

namespace la = latentaudit;

namespace {

bool any_contains(const std::vector<std::string>& v, const std::string& s) {
  return std::any_of(v.begin(), v.end(),
                     [&](const std::string& x) { return x.find(s) != std::string::npos; });
}

std::size_t missing_of(const la::audit_core& c, const std::string& arm, const std::string& regime) {
  for (const auto& x : c.completeness)
    if (x.arm == arm && x.regime == regime) return x.missing;
  return 0;
}

}  // namespace

TEST_CASE(
    "design denominator: units lost in every arm are missing and counted when the design is given (seed "
    "5201)",
    "[report][design]") {
  auto s = la::test::vanished_units_scenario(150, 5201);
  const auto recs = la::test::simulate_relay_failure(s.design, s.seed);
  auto o = la::test::decision_mc_options();
  const auto without = la::build_audit_report(recs, o);
  la::test::give_design(s.design, o);
  const auto with = la::build_audit_report(recs, o);
  // every arm of the need regime misses the lost units; without the design nothing is missing
  REQUIRE(with.core.design_given);
  REQUIRE(with.core.design_units_absent > 0);
  CHECK(missing_of(with.core, "text_full", "need") == with.core.design_units_absent);
  CHECK(missing_of(with.core, "kv_full", "need") == with.core.design_units_absent);
  CHECK(missing_of(without.core, "kv_full", "need") == 0);
  CHECK(any_contains(with.core.input_warnings, "hold no record in any arm"));
  CHECK(any_contains(with.core.headline, "hold no record in any arm"));
  // without a design: the unequal seeds are named, and the headline says what cannot be seen
  CHECK_FALSE(without.core.design_given);
  CHECK(any_contains(without.core.input_warnings, "seeds per item are unequal"));
  CHECK(any_contains(without.core.input_warnings, "fewer records than the regime's mode"));
  CHECK(any_contains(without.core.headline, "cannot be seen"));
  // the value finding reads the bounds: the lost units are imputed
  for (const auto& e : with.core.effects)
    if (e.id == "need:kv_full-text_full") CHECK(e.missing.units == with.core.design_units_absent);
}

TEST_CASE("design denominator: a complete design changes nothing (seed 5202)", "[report][design]") {
  auto s = la::test::vanished_units_scenario(60, 5202);
  s.design.drop_wrong_kv = 0.0;
  const auto recs = la::test::simulate_relay_failure(s.design, s.seed);
  auto o = la::test::decision_mc_options();
  const auto without = la::build_audit_report(recs, o);
  la::test::give_design(s.design, o);
  const auto with = la::build_audit_report(recs, o);
  CHECK(with.core.design_units_absent == 0);
  CHECK(with.core.headline.empty());
  CHECK(with.decision.verdict == without.decision.verdict);
  REQUIRE(with.findings.size() == without.findings.size());
  for (std::size_t i = 0; i < with.findings.size(); ++i) {
    CHECK(with.findings[i].answer == without.findings[i].answer);
    const double a = with.findings[i].ci_low, b = without.findings[i].ci_low;
    CHECK(((std::isnan(a) && std::isnan(b)) || a == b));
  }
  CHECK_FALSE(any_contains(without.core.input_warnings, "seeds per item are unequal"));
}

TEST_CASE("design denominator: a whole item lost takes its regime from the design, else need",
          "[report][design]") {
  auto s = la::test::vanished_units_scenario(60, 5203);
  s.design.drop_wrong_kv = 0.0;
  auto recs = la::test::simulate_relay_failure(s.design, s.seed);
  std::erase_if(recs,
                [](const la::trial_record& r) { return r.item == 3 || r.item == 70; });  // need, no_need
  auto o = la::test::decision_mc_options();
  la::test::give_design(s.design, o);
  const auto a = la::build_audit_report(recs, o);
  CHECK(a.core.design_units_absent == 6);
  CHECK(missing_of(a.core, "kv_full", "need") == 3);
  CHECK(missing_of(a.core, "kv_full", "no_need") == 3);
  o.design_item_regime.clear();  // no regimes: both items count as need items
  const auto b = la::build_audit_report(recs, o);
  CHECK(missing_of(b.core, "kv_full", "need") == 6);
  CHECK(any_contains(b.core.input_warnings, "counted as need items"));
  o.design_seeds = 0;  // half a design is refused
  CHECK_THROWS_AS(la::build_audit_report(recs, o), la::invalid_argument);
}

namespace {

void vanished_mc(std::size_t need_items, std::uint64_t seed, std::size_t reps, bool with_design) {
  const auto s = la::test::vanished_units_scenario(need_items, seed);
  const auto m = la::test::run_design_mc(s, reps, with_design);
  const double r = m.rate(m.allowed_unhandled);
  std::printf("%s, design %s: %s (MC se %.4f)\n", s.name.c_str(), with_design ? "given" : "not given",
              la::test::decision_mc_line(s, m).c_str(), la::test::mc_se(r, reps));
  if (with_design) CHECK(r <= 0.05 + 3.0 * la::test::mc_se(0.05, reps));
}

}  // namespace

TEST_CASE("design denominator: Monte Carlo, units lost with their failed relay, design given (short)",
          "[report][design][mc]") {
  // 20 replicates at 150 need items (seed 52010000 + r): relay allowed at most 0.05 + 3 MC se (0.148)
  vanished_mc(150, 52010000, 20, true);
}

TEST_CASE("design denominator: Monte Carlo, units lost with their failed relay at 150 and 300 need items",
          "[report][design][mc][slow]") {
  // 100 replicates each (seeds 52010000 + r and 52020000 + r): with the design, relay allowed at
  // most 0.05 + 3 MC se (0.115); without it the rate is printed (issue 52: 41 % and 95 %)
  for (const std::size_t k : {150u, 300u}) {
    const std::uint64_t seed = k == 150 ? 52010000 : 52020000;
    vanished_mc(k, seed, 100, true);
    vanished_mc(k, seed, 100, false);
  }
  // power (printed): kv_full as good as text_full, the same losses, the design given
  for (const std::size_t k : {150u, 300u}) {
    const auto s = la::test::vanished_units_power_scenario(k, k == 150 ? 52030000 : 52040000);
    const auto m = la::test::run_design_mc(s, 100, true);
    std::printf("%s: %s\n", s.name.c_str(), la::test::decision_mc_line(s, m).c_str());
  }
}
