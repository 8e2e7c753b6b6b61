// SPDX-License-Identifier: MIT
// The report's one table (issue 27): build_audit_report groups every arm's records by (item, seed)
// once and cost, the gate, the observational demonstrations and the decision read their arms'
// columns (detail::select_units) — which must be exactly what grouping the records again gives.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
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

TEST_CASE(
    "unit table: the observational demonstrations' item cap reads its own subsample, not the table (seed "
    "2909)",
    "[report][unit_table]") {
  // Issue 51: with more items than observational_options::max_items the demonstrations kept the
  // first items' records but indexed the report's table, built over all records, reading past the
  // subsample (SIGSEGV from ~800 items of the CLI's default cap 450). A cap of 6 items on the
  // simulated design reproduces the shape: the shared table must give what grouping the kept
  // records alone gives.
  auto d = la::test::decision_base_design();
  const auto recs = la::test::simulate_relay_failure(d, 2909);
  la::detail::unit_records table;
  std::vector<std::string> warnings;
  const auto roles = la::detail::resolve_arm_roles(recs, warnings);
  (void)la::detail::analyse_records_with_roles(recs, la::test::decision_mc_options(), roles, warnings,
                                               &table);
  REQUIRE(table.record_count == recs.size());
  la::observational_options own{.bootstrap_replicates = 100, .max_items = 6};
  la::observational_options shared = own;
  shared.units = &table;
  const auto a = la::observational_analysis(recs, own);
  const auto b = la::observational_analysis(recs, shared);
  REQUIRE(a.log.units > 0u);
  CHECK(a.log.units == b.log.units);
  REQUIRE(a.findings.size() == b.findings.size());
  std::size_t estimated = 0;
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    INFO(a.findings[i].id);
    CHECK(a.findings[i].id == b.findings[i].id);
    CHECK(a.findings[i].answer == b.findings[i].answer);
    const double x = a.findings[i].estimate, y = b.findings[i].estimate;
    CHECK(((std::isnan(x) && std::isnan(y)) || x == y));
    CHECK(a.findings[i].n == b.findings[i].n);
    estimated += std::isnan(x) ? 0 : 1;
  }
  CHECK(estimated > 0u);  // the production log's findings are estimated on the 6 items
  // a table read over records it was not built from is refused, never indexed
  const std::vector<la::trial_record> fewer(recs.begin(),
                                            recs.begin() + static_cast<std::ptrdiff_t>(recs.size() / 2));
  la::cost_options co;
  co.units = &table;
  CHECK_THROWS_AS(la::cost_benefit_analysis(fewer, co), la::invalid_argument);
}

TEST_CASE(
    "clustered_mean: bit for bit bootstrap_clustered's mean, without expanding each replicate "
    "(seed 5101)",
    "[report][unit_table][clustered_mean]") {
  // Clusters of unequal size (1 to 5 members) in shuffled order and non-integer values: the
  // cluster-ordered sums must reproduce gather_sum's four-accumulator order exactly.
  auto g = la::make_stream({.seed = 5101, .item = 0, .arm = 0, .replicate = 0});
  std::vector<double> values;
  std::vector<std::size_t> clusters;
  for (std::size_t c = 0; c < 300; ++c) {
    const std::size_t m = 1 + la::uniform_index(g, 5u);
    for (std::size_t k = 0; k < m; ++k) {
      values.push_back(la::uniform01(g) * 3.7 - 1.1);
      clusters.push_back(7 * c + 3);
    }
  }
  for (std::size_t i = values.size(); i > 1; --i) {  // shuffle: members of a cluster far apart
    const std::size_t j = la::uniform_index(g, static_cast<std::uint32_t>(i));
    std::swap(values[i - 1], values[j]);
    std::swap(clusters[i - 1], clusters[j]);
  }
  const la::detail::clustered_mean_options o{.level = 0.9, .replicates = 400, .seed = 17};
  auto same_as_reference = [&](const std::vector<double>& x) {
    const auto fast = la::detail::clustered_mean(x, clusters, o);
    const auto ref = la::bootstrap_clustered(
        x, clusters, [](const la::resample_view& v) { return v.mean(); },
        la::bootstrap_options{.replicates = o.replicates,
                              .level = o.level,
                              .method = la::bootstrap_ci_method::percentile,
                              .seed = o.seed,
                              .if_degenerate = la::on_degenerate::flag});
    CHECK(fast.std_error == ref.effect.std_error);
    CHECK(fast.ci_low == ref.effect.ci_low);
    CHECK(fast.ci_high == ref.effect.ci_high);
    CHECK(fast.status == ref.effect.status);
    CHECK(fast.ci_low < fast.estimate);
    CHECK(fast.estimate < fast.ci_high);
  };
  same_as_reference(values);                 // fractions: the per-draw accumulation order
  std::vector<double> whole(values.size());  // 0/1 and byte counts: the clusters' exact sums
  for (std::size_t i = 0; i < values.size(); ++i) whole[i] = values[i] > 0.4 ? 1.0 : 0.0;
  same_as_reference(whole);
  for (std::size_t i = 0; i < values.size(); ++i) whole[i] = std::floor(values[i] * 40000.0);
  same_as_reference(whole);
}
