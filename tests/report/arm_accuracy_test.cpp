// SPDX-License-Identifier: MIT
// The per-arm (and frontier) accuracy intervals of the audit are clustered by item: the betting
// interval over the item mean accuracies (detail::item_accuracy_interval). Monte Carlo coverage on
// clustered binary outcomes with item heterogeneity (fixed, printed seeds; MC tolerance three
// binomial SEs), against the Wilson interval on the records that it replaced, and the
// no-zero-width property. Measured numbers: docs/audit-report.md, "Per-arm accuracy".
#include <latentaudit/report/audit.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <vector>

#include "support/catch.hpp"
#include "support/clustered_binary_sim.hpp"
#include "support/synthetic_records.hpp"

using namespace latentaudit;

namespace {

struct coverage_cell {
  std::size_t items;
  std::size_t seeds;
  double mean;
  double concentration;  // Beta a + b of the item accuracies; ICC = 1 / (1 + concentration)
  std::uint64_t seed;
};

struct coverage_result {
  double clustered = 0.0, wilson = 0.0;              // coverage of the true mean accuracy
  double width_clustered = 0.0, width_wilson = 0.0;  // mean widths
  std::size_t zero_width = 0;                        // clustered intervals with high <= low
};

// `reps` replicates: K items with accuracy p_i ~ Beta(mean, concentration), S Bernoulli(p_i)
// records each (tests/support/clustered_binary_sim.hpp, treated arm); 95 % intervals of the mean.
coverage_result run_cell(const coverage_cell& c, std::size_t reps) {
  test::paired_binary_design d{
      .items = c.items, .seeds = c.seeds, .treated = {c.mean, c.concentration}, .control = {0.5, 0.0}};
  std::mt19937_64 g(c.seed);
  coverage_result r;
  std::vector<double> item_means(c.items);
  for (std::size_t k = 0; k < reps; ++k) {
    const auto s = test::simulate_paired(d, g);
    std::size_t x = 0;
    for (std::size_t i = 0; i < c.items; ++i) {
      double sum = 0.0;
      for (std::size_t j = 0; j < c.seeds; ++j) sum += s.treated[i * c.seeds + j];
      item_means[i] = sum / static_cast<double>(c.seeds);
      x += static_cast<std::size_t>(sum);
    }
    const std::size_t n = c.items * c.seeds;
    const auto b =
        detail::item_accuracy_interval(item_means, static_cast<double>(x) / static_cast<double>(n), 0.95);
    const auto w = wilson_interval({.successes = x, .trials = n}, {.level = 0.95});
    r.clustered += (b.low <= c.mean && c.mean <= b.high) ? 1.0 : 0.0;
    r.wilson += (w.low <= c.mean && c.mean <= w.high) ? 1.0 : 0.0;
    r.width_clustered += b.high - b.low;
    r.width_wilson += w.high - w.low;
    r.zero_width += !(b.high > b.low);
  }
  const double R = static_cast<double>(reps);
  r.clustered /= R;
  r.wilson /= R;
  r.width_clustered /= R;
  r.width_wilson /= R;
  return r;
}

}  // namespace

TEST_CASE("arm accuracy: the item-clustered interval covers under item heterogeneity, Wilson does not",
          "[report][arm_accuracy][slow]") {
  constexpr std::size_t reps = 1000;
  const double tol = test::mc_tolerance(0.95, reps);  // 3 binomial SEs: 0.0207
  // ICC 0.3 (concentration 7/3) with 3 seeds: design effect 1 + 2·0.3 = 1.6; ICC 0 as control.
  const coverage_cell cells[] = {
      {40, 3, 0.7, 7.0 / 3.0, 9101}, {150, 3, 0.5, 7.0 / 3.0, 9102}, {150, 3, 0.9, 7.0 / 3.0, 9103},
      {10, 3, 0.7, 7.0 / 3.0, 9104}, {150, 3, 0.7, 0.0, 9105},
  };
  for (const auto& c : cells) {
    const auto r = run_cell(c, reps);
    std::cout << "arm_accuracy MC: seed " << c.seed << ", " << c.items << " items x " << c.seeds
              << " seeds, mean " << c.mean << ", ICC "
              << (c.concentration > 0 ? 1.0 / (1.0 + c.concentration) : 0.0) << ": coverage clustered "
              << r.clustered << " (mean width " << r.width_clustered << "), Wilson " << r.wilson
              << " (mean width " << r.width_wilson << "), " << reps << " replicates\n";
    INFO("seed " << c.seed << " items " << c.items << " mean " << c.mean << " clustered " << r.clustered
                 << " wilson " << r.wilson);
    CHECK(r.clustered >= 0.95 - tol);
    CHECK(r.zero_width == 0);
    if (c.concentration > 0 && c.items >= 40 && c.mean <= 0.7) CHECK(r.wilson < 0.95 - tol);
  }
}

TEST_CASE("arm accuracy: never a zero-width interval from a non-empty sample", "[report][arm_accuracy]") {
  for (double v : {0.0, 1.0}) {
    for (std::size_t k : {1u, 5u, 150u}) {
      const std::vector<double> items(k, v);
      const auto b = detail::item_accuracy_interval(items, v, 0.95);
      INFO("all items at " << v << ", " << k << " items");
      CHECK(b.high > b.low);
      CHECK(b.low <= v);
      CHECK(b.high >= v);
    }
  }
  // Unbalanced items: the interval always holds the pooled accuracy it is reported with.
  const std::vector<double> items = {1.0, 0.0, 0.5};
  const auto b = detail::item_accuracy_interval(items, 0.9, 0.95);
  CHECK(b.estimate == 0.9);
  CHECK(b.high >= 0.9);
}

TEST_CASE("arm accuracy: the audit's arm and frontier intervals are clustered by item",
          "[report][arm_accuracy]") {
  const std::uint64_t gen_seed = 17;
  INFO("generator seed " << gen_seed << ", 40 items x 3 seeds");
  const auto records = test::synthetic_records({.items = 40, .seeds = 3, .seed = gen_seed});
  const auto c = analyse_records(records, {.bootstrap_replicates = 200});
  REQUIRE_FALSE(c.arms.empty());
  for (const auto& s : c.arms) {
    INFO(s.arm << " " << s.regime << " acc " << s.accuracy << " [" << s.ci_low << ", " << s.ci_high << "]");
    CHECK(s.n_items == (s.regime == "all" ? 40u : 20u));
    CHECK(s.ci_high > s.ci_low);
    CHECK(s.ci_low <= s.accuracy);
    CHECK(s.ci_high >= s.accuracy);
  }
  REQUIRE_FALSE(c.frontier.empty());
  for (const auto& p : c.frontier) {
    INFO(p.arm);
    const auto it = std::find_if(c.arms.begin(), c.arms.end(),
                                 [&](const arm_summary& s) { return s.arm == p.arm && s.regime == "need"; });
    REQUIRE(it != c.arms.end());
    CHECK(p.ci_low == it->ci_low);
    CHECK(p.ci_high == it->ci_high);
  }
}
