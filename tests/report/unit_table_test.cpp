// SPDX-License-Identifier: MIT
// The report's one table (issue 27): build_audit_report groups every arm's records by (item, seed)
// once and cost, the gate, the observational demonstrations and the decision read their arms'
// columns (detail::select_units) — which must be exactly what grouping the records again gives.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "latentaudit/report/report.hpp"
#include "report/decision_mc.hpp"
#include "report/relay_failure_sim.hpp"

namespace la = latentaudit;

namespace unit_table_test {

void check_same_units(const la::detail::unit_records& a, const la::detail::unit_records& b) {
  CHECK(a.arm_label == b.arm_label);
  CHECK(a.unit_item == b.unit_item);
  CHECK(a.unit_seed == b.unit_seed);
  CHECK(a.rec == b.rec);
}

}  // namespace unit_table_test

TEST_CASE("unit table: the columns of the one table equal the records grouped again (seed 2907)",
          "[report][unit_table]") {
  auto d = la::test::decision_base_design();
  d.drop_wrong_kv = 0.5;  // units lacking a kv_full record: a column with holes
  auto recs = la::test::simulate_relay_failure(d, 2907);
  std::vector<std::string> labels;
  for (const auto& r : recs)
    if (std::find(labels.begin(), labels.end(), r.arm) == labels.end()) labels.push_back(r.arm);
  REQUIRE(labels.size() >= 3u);
  const auto table =
      la::detail::group_records("test", recs, labels, la::detail::duplicate_error::invalid_argument);
  const std::vector<std::vector<std::string>> asks = {
      {"kv_full", "no_comm"},          {"text_full"},   {"kv_full", "kv_full", "no_comm"},
      {"no_such_arm", "kv_full"},      {"no_such_arm"}, {},
      {labels.back(), labels.front()},
  };
  for (const auto& arms : asks) {
    INFO("arms: " << arms.size());
    unit_table_test::check_same_units(
        la::detail::select_units(table, arms),
        la::detail::group_records("test", recs, arms, la::detail::duplicate_error::invalid_argument));
  }
  // the kv_full column has holes: units holding only other arms are left out of {kv_full}
  const std::vector<std::string> kv = {"kv_full"};
  CHECK(la::detail::select_units(table, kv).units() < table.units());
}

TEST_CASE("unit table: analyses reading the report's table equal the same analyses grouping on their own",
          "[report][unit_table]") {
  auto d = la::test::decision_base_design();
  const auto recs = la::test::simulate_relay_failure(d, 2908);
  la::detail::unit_records table;
  std::vector<std::string> warnings;
  const auto roles = la::detail::resolve_arm_roles(recs, warnings);
  const auto core =
      la::detail::analyse_records_with_roles(recs, la::test::decision_mc_options(), roles, warnings, &table);
  REQUIRE(table.units() > 0u);
  la::decision_options own;
  la::decision_options shared = own;
  shared.units = &table;
  const auto a = la::decide(core.findings, recs, own);
  const auto b = la::decide(core.findings, recs, shared);
  CHECK(a.verdict == b.verdict);
  CHECK(a.policy == b.policy);
  REQUIRE(a.monitors.size() == b.monitors.size());
  for (std::size_t i = 0; i < a.monitors.size(); ++i) {
    CHECK(a.monitors[i].contrast == b.monitors[i].contrast);
    CHECK(a.monitors[i].pairs == b.monitors[i].pairs);
    CHECK(a.monitors[i].stop_at == b.monitors[i].stop_at);
  }
  CHECK(a.relay_switch.items == b.relay_switch.items);
  CHECK(a.relay_switch.log_capital_text == b.relay_switch.log_capital_text);
  CHECK(a.relay_switch.off_at == b.relay_switch.off_at);
  la::cost_options co;
  co.bootstrap_replicates = 200;
  const auto c1 = la::cost_benefit_analysis(recs, co);
  co.units = &table;
  const auto c2 = la::cost_benefit_analysis(recs, co);
  REQUIRE(c1.findings.size() == c2.findings.size());
  for (std::size_t i = 0; i < c1.findings.size(); ++i) {
    CHECK(c1.findings[i].id == c2.findings[i].id);
    CHECK(c1.findings[i].estimate == c2.findings[i].estimate);
    CHECK(c1.findings[i].n == c2.findings[i].n);
  }
}
