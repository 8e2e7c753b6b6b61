// SPDX-License-Identifier: MIT
// Tests of report/analyses/noise.hpp: the isotonic fit, the crossing, the tolerance σ with its
// cluster-bootstrap interval, the conservative largest σ shown non-inferior, the refusal of
// negative noise levels, and (tagged [slow]) the Monte Carlo coverage of the interval on
// simulated clustered dose-responses with a known crossing. Generators: std::mt19937_64 with the
// printed seeds; Monte Carlo tolerances are stated per check.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "latentaudit/report/analyses/noise.hpp"
#include "latentaudit/report/audit.hpp"

namespace la = latentaudit;

namespace {

// Simulated need-regime design: G items × S seeds. Item g has kv_full accuracy p_g ~ U(0.6, 1)
// and a noise sensitivity c_g ~ U(0.5, 1.5); at level σ a correct kv_full answer survives the
// noise with probability 1 − h(σ)·c_g, h(σ) = 0.1 σ². So E[noise − kv_full] = −E[p]·h(σ)·E[c] =
// −0.08 σ² exactly, clustered by item (p_g, c_g shared by the item's seeds and levels).
constexpr double kSigmas[] = {0.25, 0.5, 0.75, 1.0, 1.5, 2.0};

double true_diff(double s) { return -0.08 * s * s; }

// The first crossing of −0.05 by the piecewise-linear curve through (0, 0) and the true level
// differences: between 0.75 (−0.045) and 1 (−0.08), at 0.75 + 0.25·0.005/0.035.
constexpr double kTrueCrossing = 0.75 + 0.25 * 0.005 / 0.035;

struct simulated {
  std::vector<la::noise_level_pairs> levels;
  la::noise_reference ref;
};

simulated simulate(std::size_t items, std::size_t seeds, std::uint64_t seed, double kappa = 0.1,
                   bool heterogeneous = true) {
  std::mt19937_64 g(seed);
  auto uniform = [&] { return static_cast<double>(g() >> 11) * 0x1.0p-53; };
  simulated s;
  for (double sg : kSigmas) s.levels.push_back({.arm = "kv_noise_" + la::number_text(sg), .sigma = sg});
  std::vector<double> sums;
  for (std::size_t i = 0; i < items; ++i) {
    double p = 0.6 + 0.4 * uniform(), c = 0.5 + uniform();
    if (!heterogeneous) p = 0.8, c = 1.0;
    double correct = 0;
    for (std::size_t k = 0; k < seeds; ++k) {
      const double full = uniform() < p ? 1.0 : 0.0;
      correct += full;
      ++s.ref.n;
      s.ref.correct += static_cast<std::size_t>(full);
      for (std::size_t l = 0; l < std::size(kSigmas); ++l) {
        const double h = kappa * kSigmas[l] * kSigmas[l];
        auto& lv = s.levels[l];
        lv.item.push_back(i);
        lv.reference.push_back(full);
        lv.noise.push_back(full == 1.0 && uniform() >= h * c ? 1.0 : 0.0);
      }
    }
    s.ref.item_means.push_back(correct / static_cast<double>(seeds));
  }
  return s;
}

la::trial_record record(std::uint64_t item, std::uint64_t seed, const std::string& arm, bool correct,
                        std::optional<double> sigma = {}) {
  la::trial_record r;
  r.item = item;
  r.seed = seed;
  r.arm = arm;
  r.arm_kind = arm.rfind("kv_noise_", 0) == 0 ? "kv_policy" : arm;
  r.regime = "need";
  r.correct = correct;
  r.noise_sigma = sigma;
  return r;
}

}  // namespace

TEST_CASE("noise: isotonic_nonincreasing is the weighted pool-adjacent-violators fit", "[report][noise]") {
  const std::vector<double> mono = {0.0, -0.1, -0.3}, w1 = {1, 1, 1};
  CHECK(la::isotonic_nonincreasing(mono, w1) == mono);
  // One violation (−0.1 then 0.1): pooled to their weighted mean.
  const std::vector<double> y = {-0.1, 0.1, -0.5}, w = {1, 3, 2};
  const auto f = la::isotonic_nonincreasing(y, w);
  REQUIRE(f.size() == 3);
  CHECK(f[0] == Approx(0.05));
  CHECK(f[1] == Approx(0.05));
  CHECK(f[2] == Approx(-0.5));
  // A violation that cascades back: 0, −0.2, 0.4 (w 1, 1, 1) -> all pooled at 0.0667.
  const std::vector<double> y2 = {0.0, -0.2, 0.4};
  for (double v : la::isotonic_nonincreasing(y2, w1)) CHECK(v == Approx(0.2 / 3.0));
  CHECK(la::isotonic_nonincreasing(std::vector<double>{}, std::vector<double>{}).empty());
  const std::vector<double> w0 = {1, 0, 1};
  CHECK_THROWS_AS(la::isotonic_nonincreasing(y, w0), la::invalid_argument);
  CHECK_THROWS_AS(la::isotonic_nonincreasing(y, std::vector<double>{1.0}), la::shape_mismatch);
}

TEST_CASE("noise: first_crossing interpolates linearly from (0, 0)", "[report][noise]") {
  const std::vector<double> s = {0.5, 1.0, 2.0};
  CHECK(*la::first_crossing(s, std::vector<double>{-0.02, -0.08, -0.2}, -0.05) == Approx(0.75));
  CHECK(*la::first_crossing(s, std::vector<double>{-0.1, -0.2, -0.3}, -0.05) == Approx(0.25));
  CHECK(*la::first_crossing(s, std::vector<double>{-0.05, -0.2, -0.3}, -0.05) == Approx(0.5));
  CHECK_FALSE(la::first_crossing(s, std::vector<double>{0.0, -0.01, -0.049}, -0.05).has_value());
  CHECK_THROWS_AS(la::first_crossing(s, std::vector<double>{0, 0, 0}, 0.0), la::invalid_argument);
}

TEST_CASE("noise: the tolerance is located on a clear dose-response, deterministically", "[report][noise]") {
  constexpr std::uint64_t seed = 20261201;
  INFO("generator seed " << seed);
  const auto sim = simulate(150, 3, seed);
  const auto a =
      la::estimate_noise_tolerance(sim.levels, sim.ref, {.bootstrap_replicates = 999, .threads = 1});
  const auto b =
      la::estimate_noise_tolerance(sim.levels, sim.ref, {.bootstrap_replicates = 999, .threads = 3});
  REQUIRE(a.curve.size() == 7);
  CHECK(a.curve[0].sigma == 0.0);
  for (std::size_t k = 1; k < a.curve.size(); ++k) {
    const auto& p = a.curve[k];
    CHECK(p.items == 150);
    CHECK(p.n == 450);
    CHECK(p.diff_ci_low < p.diff_vs_kv_full);
    CHECK(p.diff_vs_kv_full < p.diff_ci_high);
    CHECK(p.fitted_diff <= a.curve[k - 1].fitted_diff);  // non-increasing
    CHECK(p.noninferior == (p.diff_ci_low > -0.05));
    CHECK(std::fabs(p.diff_vs_kv_full - true_diff(p.sigma)) < 0.05);  // > 4 SE
  }
  REQUIRE(a.tolerance_sigma.has_value());
  REQUIRE(a.ci_low.has_value());
  REQUIRE(a.ci_high.has_value());
  INFO("tolerance " << *a.tolerance_sigma << " [" << *a.ci_low << ", " << *a.ci_high << "]");
  CHECK(*a.ci_low <= *a.tolerance_sigma);
  CHECK(*a.tolerance_sigma <= *a.ci_high);
  CHECK(*a.ci_high <= 1.5);
  CHECK(*a.ci_low >= 0.4);  // true crossing 0.786; the test-inversion interval is ~0.3 wide here
  CHECK_FALSE(a.ci_from_betting_band);
  // Thread count changes nothing.
  CHECK(a.ci_low == b.ci_low);
  CHECK(a.ci_high == b.ci_high);
  CHECK(a.tolerance_sigma == b.tolerance_sigma);
  // The conservative quantity lies at or below the estimate (fixed sequence of betting bounds).
  if (a.sigma_noninferior) CHECK(*a.sigma_noninferior <= *a.tolerance_sigma);
  const auto f = la::noise_tolerance_finding(a);
  CHECK(f.answer == la::verdict::yes);
  CHECK(f.estimate == *a.tolerance_sigma);
  CHECK(f.n == 450);
  CHECK(f.detail.find("largest sigma shown non-inferior") != std::string::npos);
}

TEST_CASE("noise: a flat curve lies beyond the tested range, 'no' is never given", "[report][noise]") {
  auto sim = simulate(150, 3, 20261202);
  for (auto& l : sim.levels) l.noise = l.reference;  // noise changes nothing
  const auto nt = la::estimate_noise_tolerance(sim.levels, sim.ref, {.bootstrap_replicates = 499});
  CHECK_FALSE(nt.tolerance_sigma.has_value());
  CHECK_FALSE(nt.ci_high.has_value());
  CHECK(nt.unbounded_fraction == 1.0);
  CHECK(nt.sigma_noninferior == 2.0);  // 150 items, every difference 0: the betting bound is > −0.05
  const auto f = la::noise_tolerance_finding(nt);
  CHECK(f.answer == la::verdict::inconclusive);
  CHECK(std::isinf(f.estimate));
  CHECK(f.detail.find("beyond the tested range") != std::string::npos);
  CHECK(f.detail.find("'no' does not apply") != std::string::npos);
}

TEST_CASE("noise: a point-mass bootstrap or a single item gives the betting band", "[report][noise]") {
  // 5 items whose noise arm is always wrong at 0.5: every replicate crosses at 0.025.
  std::vector<la::noise_level_pairs> levels{{.arm = "kv_noise_0.5", .sigma = 0.5}};
  la::noise_reference ref;
  for (std::uint64_t i = 0; i < 5; ++i) {
    levels[0].item.push_back(i);
    levels[0].noise.push_back(0.0);
    levels[0].reference.push_back(1.0);
    ++ref.n;
    ++ref.correct;
    ref.item_means.push_back(1.0);
  }
  const auto nt = la::estimate_noise_tolerance(levels, ref, {.bootstrap_replicates = 199});
  REQUIRE(nt.tolerance_sigma.has_value());
  CHECK(*nt.tolerance_sigma == Approx(0.025));
  CHECK(nt.ci_from_betting_band);
  REQUIRE(nt.ci_low.has_value());
  CHECK(*nt.ci_low <= *nt.tolerance_sigma);
  // 5 items cannot bound the upper side: the betting upper limit of the difference stays above −0.05.
  CHECK_FALSE(nt.ci_high.has_value());
  CHECK(la::noise_tolerance_finding(nt).answer == la::verdict::inconclusive);
  levels[0].item.assign(5, 7);  // one item
  const auto one = la::estimate_noise_tolerance(levels, ref, {.bootstrap_replicates = 199});
  CHECK(one.ci_from_betting_band);
  CHECK(one.method.find("fewer than 2 items") != std::string::npos);
}

TEST_CASE("noise: negative or non-finite sigma is refused, naming the arm and the field", "[report][noise]") {
  std::vector<la::noise_level_pairs> levels{
      {.arm = "kv_noise_x", .sigma = -0.5, .item = {0}, .noise = {1}, .reference = {1}}};
  CHECK_THROWS_AS(la::estimate_noise_tolerance(levels, {}), la::invalid_argument);
  CHECK_THROWS_WITH(la::estimate_noise_tolerance(levels, {}),
                    Catch::Contains("arm 'kv_noise_x'") && Catch::Contains("noise_sigma"));
  levels[0].sigma = std::nan("");
  CHECK_THROWS_AS(la::estimate_noise_tolerance(levels, {}), la::invalid_argument);

  std::vector<la::trial_record> records;
  for (std::uint64_t i = 0; i < 4; ++i) {
    records.push_back(record(i, 0, "kv_full", true));
    records.push_back(record(i, 0, "kv_noise_0.5", true, i == 2 ? -0.5 : 0.5));
  }
  CHECK_THROWS_AS(la::analyse_records(records, {.bootstrap_replicates = 199}), la::invalid_argument);
  CHECK_THROWS_WITH(
      la::analyse_records(records, {.bootstrap_replicates = 199}),
      Catch::Contains("arm 'kv_noise_0.5'") && Catch::Contains("noise_sigma") && Catch::Contains("-0.5"));
  // A negative level in a label (no noise_sigma recorded, no arm_kind) is no arm name (parse_arm):
  // the arm is on no dose-response, and a warning names it and the forms parse_arm accepts.
  for (auto& r : records) {
    r.noise_sigma.reset();
    if (r.arm == "kv_noise_0.5") {
      r.arm = "kv_noise_-1";
      r.arm_kind.clear();
    }
  }
  const auto core = la::analyse_records(records, {.bootstrap_replicates = 199});
  CHECK(core.noise.curve.size() <= 1);  // kv_full alone, at most
  std::size_t named = 0;
  for (const auto& w : core.warnings)
    named +=
        w.find("arm 'kv_noise_-1'") != std::string::npos && w.find("kv_noise_<sigma>") != std::string::npos;
  CHECK(named == 1);
}

TEST_CASE("noise: Monte Carlo coverage of the tolerance interval on clustered dose-responses",
          "[report][noise][slow]") {
  // Four scenarios × 300 simulated designs (× 3 seeds, six levels 0.25..2, δ(σ) = −0.8 κ σ²),
  // generator seeds 20261300 + r, bootstrap B = 99 (it only gives unbounded_fraction), seed r + 1.
  // MC standard error of a coverage of 0.95 over 300 sets: 0.0126; each check allows 0.95 − 3 SE
  // = 0.912.
  struct scenario {
    const char* name;
    std::size_t items;
    double kappa;
    bool heterogeneous;
    double truth;  // first crossing of −0.05 by the interpolated true curve
  };
  const scenario scenarios[] = {
      {"just above 0.75, 150 items, heterogeneous", 150, 0.1, true, kTrueCrossing},
      {"just above 0.75, 60 items, heterogeneous", 60, 0.1, true, kTrueCrossing},
      {"exactly at level 1, 60 items, heterogeneous", 60, 0.0625, true, 1.0},
      {"between 1 and 1.5 (1.25), 60 items, homogeneous", 60, 0.05 / 1.625 / 0.8, false, 1.25},
      {"exactly at level 1, 150 items, homogeneous", 150, 0.0625, false, 1.0},
  };
  constexpr std::size_t reps = 300;
  constexpr std::uint64_t base = 20261300;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& sc : scenarios) {
    std::size_t covered = 0, located = 0, below = 0, above = 0, ni_error = 0;
    double width = 0, bias = 0;
    for (std::size_t r = 0; r < reps; ++r) {
      const auto sim = simulate(sc.items, 3, base + r, sc.kappa, sc.heterogeneous);
      const auto nt =
          la::estimate_noise_tolerance(sim.levels, sim.ref, {.bootstrap_replicates = 99, .seed = r + 1});
      const double inf = std::numeric_limits<double>::infinity();
      const double lo = nt.ci_low.value_or(inf), hi = nt.ci_high.value_or(inf);
      covered += lo <= sc.truth && sc.truth <= hi ? 1 : 0;
      below += hi < sc.truth ? 1 : 0;
      above += lo > sc.truth ? 1 : 0;
      if (la::noise_tolerance_finding(nt).answer == la::verdict::yes) {
        ++located;
        width += hi - lo;
      }
      if (nt.tolerance_sigma) bias += *nt.tolerance_sigma - sc.truth;
      // The conservative claim "non-inferior up to sigma_noninferior" is wrong where δ < −0.05.
      ni_error += nt.sigma_noninferior && *nt.sigma_noninferior > sc.truth ? 1 : 0;
    }
    const double cov = static_cast<double>(covered) / reps;
    std::cout << "noise_test MC [" << sc.name << ", truth " << sc.truth << "]: seeds " << base << ".."
              << base + reps - 1 << ", coverage " << covered << "/" << reps << " = " << cov
              << " (misses below " << below << ", above " << above << "), located " << located << "/" << reps
              << ", mean width " << (located ? width / static_cast<double>(located) : 0)
              << ", mean bias of the estimate " << bias / reps << ", conservative claim wrong " << ni_error
              << "/" << reps << "\n";
    CHECK(cov >= 0.95 - 3 * 0.0126);
    CHECK(static_cast<double>(ni_error) / reps <= 0.05 + 3 * 0.0126);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "noise_test MC: " << secs << " s\n";
}
