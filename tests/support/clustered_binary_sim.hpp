// SPDX-License-Identifier: MIT
// Test support: a generator of clustered paired binary outcomes with an EXACT known truth, for the
// Monte Carlo validation of the betting verdicts (tests/estimators/betting_test.cpp,
// benchmarks/bench_verdicts.cpp, docs/estimators/betting.md).
//
// Two arms (treated T, control C) on K items × S seeds. Each item draws its own success
// probabilities p_T,i ~ Beta(mean_T, a + b = concentration_T) and p_C,i ~ Beta(mean_C, ...)
// independently (a point mass at the mean when the concentration is 0 or infinite: no item
// heterogeneity); each (item, seed) unit then draws a Bernoulli outcome per arm. The items are
// i.i.d., so the item mean paired differences are i.i.d. with mean exactly mean_T − mean_C (the
// truth), whatever the concentrations and the number of seeds. Outcomes use either one uniform per
// (item, seed) shared by both arms (common random numbers: the arms disagree only when the uniform
// falls between p_T,i and p_C,i — discordances rare) or one uniform per arm (discordances both ways
// and plentiful).
//
// The multi-arm null (simulate_exchangeable_arms) draws A + 1 arms whose item probabilities are
// exchangeable: p_j,i = w·d_i + (1 − w)·e_j,i with d_i (shared item difficulty) and e_j,i (the
// item × arm effect) i.i.d. Beta(mean, concentration); every contrast arm j vs arm 0 then has
// item effects p_j,i − p_0,i of mean exactly zero over items, while each item has its own effect.
//
// run_verdict_cell and run_fwer_cell apply the audit's verdict rules (below) to replicates of a
// design and count the verdicts.
//
// Draws use std::mt19937_64 and std:: distributions (gamma, uniform): reproducible for a fixed seed
// on one standard library (libstdc++), not necessarily across standard libraries.
#ifndef LATENTAUDIT_TESTS_SUPPORT_CLUSTERED_BINARY_SIM_HPP
#define LATENTAUDIT_TESTS_SUPPORT_CLUSTERED_BINARY_SIM_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <latentaudit/estimators/betting.hpp>
#include <latentaudit/estimators/multiplicity.hpp>

namespace latentaudit::test {

/// A Beta distribution by its mean and concentration a + b; concentration ≤ 0 or infinite, or a
/// mean of exactly 0 or 1, is a point mass at the mean (no item heterogeneity).
struct beta_spec {
  double mean = 0.5;
  double concentration = 0.0;
};

/// One draw from `b` (Beta as G_a / (G_a + G_b) with gamma variates).
inline double draw_beta(std::mt19937_64& g, const beta_spec& b) {
  if (!(b.concentration > 0.0) || std::isinf(b.concentration) || b.mean <= 0.0 || b.mean >= 1.0)
    return b.mean;
  std::gamma_distribution<double> ga(b.mean * b.concentration, 1.0);
  std::gamma_distribution<double> gb((1.0 - b.mean) * b.concentration, 1.0);
  const double x = ga(g), y = gb(g);
  if (x + y == 0.0) return b.mean;  // both underflowed (tiny shapes): a measure-zero event
  return x / (x + y);
}

/// How the arms' outcomes of one (item, seed) unit are drawn.
enum class unit_uniforms {
  common,      ///< one uniform per unit shared by the arms (discordances rare)
  independent  ///< one uniform per arm (discordances both ways)
};

/// A two-arm design: K items, S seeds, the arms' item-probability distributions.
struct paired_binary_design {
  std::size_t items = 20;
  std::size_t seeds = 1;
  beta_spec treated{};
  beta_spec control{};
  unit_uniforms uniforms = unit_uniforms::independent;
  /// The exact mean of the item mean paired difference T − C.
  [[nodiscard]] double truth() const { return treated.mean - control.mean; }
};

/// Paired outcomes in the layout of clustered_paired_difference: unit u = (item i, seed s).
struct paired_binary_sample {
  std::vector<std::uint64_t> item;
  std::vector<double> treated, control;
};

/// One replicate of `d`, appended unit by unit (item-major, seed-minor).
inline paired_binary_sample simulate_paired(const paired_binary_design& d, std::mt19937_64& g) {
  std::uniform_real_distribution<double> unif(0.0, 1.0);
  paired_binary_sample r;
  r.item.reserve(d.items * d.seeds);
  r.treated.reserve(d.items * d.seeds);
  r.control.reserve(d.items * d.seeds);
  for (std::size_t i = 0; i < d.items; ++i) {
    const double pt = draw_beta(g, d.treated), pc = draw_beta(g, d.control);
    for (std::size_t s = 0; s < d.seeds; ++s) {
      const double ut = unif(g);
      const double uc = d.uniforms == unit_uniforms::common ? ut : unif(g);
      r.item.push_back(i);
      r.treated.push_back(ut < pt ? 1.0 : 0.0);
      r.control.push_back(uc < pc ? 1.0 : 0.0);
    }
  }
  return r;
}

/// The item mean paired differences of one replicate of `d` directly (item order; same draws as
/// simulate_paired followed by item_mean_differences, without the sort).
inline std::vector<double> simulate_item_differences(const paired_binary_design& d, std::mt19937_64& g) {
  std::uniform_real_distribution<double> unif(0.0, 1.0);
  std::vector<double> x(d.items);
  for (std::size_t i = 0; i < d.items; ++i) {
    const double pt = draw_beta(g, d.treated), pc = draw_beta(g, d.control);
    double s = 0.0;
    for (std::size_t k = 0; k < d.seeds; ++k) {
      const double ut = unif(g);
      const double uc = d.uniforms == unit_uniforms::common ? ut : unif(g);
      s += (ut < pt ? 1.0 : 0.0) - (uc < pc ? 1.0 : 0.0);
    }
    x[i] = s / static_cast<double>(d.seeds);
  }
  return x;
}

/// A multi-arm null: arms 0..arms (arm 0 the shared control), exchangeable item probabilities.
struct exchangeable_arms_design {
  std::size_t items = 20;
  std::size_t seeds = 3;
  std::size_t arms = 10;  ///< contrasts: arms 1..arms, each against arm 0
  beta_spec item{0.8, 2.0};
  double shared = 0.5;  ///< weight w of the shared item difficulty, in [0, 1]
  unit_uniforms uniforms = unit_uniforms::common;
};

/// Item mean paired differences of each contrast j = 1..arms vs arm 0: out[j − 1][i]. Truth: 0.
inline std::vector<std::vector<double>> simulate_exchangeable_arms(const exchangeable_arms_design& d,
                                                                   std::mt19937_64& g) {
  std::uniform_real_distribution<double> unif(0.0, 1.0);
  std::vector<std::vector<double>> out(d.arms, std::vector<double>(d.items));
  std::vector<double> p(d.arms + 1), y(d.arms + 1);
  for (std::size_t i = 0; i < d.items; ++i) {
    const double di = draw_beta(g, d.item);
    for (auto& pj : p) pj = d.shared * di + (1.0 - d.shared) * draw_beta(g, d.item);
    std::vector<double> sum(d.arms, 0.0);
    for (std::size_t s = 0; s < d.seeds; ++s) {
      const double u = unif(g);
      for (std::size_t j = 0; j <= d.arms; ++j)
        y[j] = (d.uniforms == unit_uniforms::common ? u : unif(g)) < p[j] ? 1.0 : 0.0;
      for (std::size_t j = 1; j <= d.arms; ++j) sum[j - 1] += y[j] - y[0];
    }
    for (std::size_t j = 0; j < d.arms; ++j) out[j][i] = sum[j] / static_cast<double>(d.seeds);
  }
  return out;
}

/// The Monte Carlo tolerance of a rate bounded by `nominal` at `replicates` replicates: three
/// binomial standard errors, sqrt(nominal (1 − nominal) / replicates) each.
inline double mc_tolerance(double nominal, std::size_t replicates) {
  return 3.0 * std::sqrt(nominal * (1.0 - nominal) / static_cast<double>(replicates));
}

// ---- The verdict rules of the audit on the item mean differences x (T − C, in [−1, 1]) ----
// iv90 = bounded_mean_interval(x, −1, 1, {0.05, 0.05}), iv95 = the same with {0.025, 0.025}:
//   non-inferiority "yes": iv90.low > −δ          equivalence (TOST) "yes": −δ < iv90.low, iv90.high < δ
//   absence ("no") shown:  iv90.high < δ          superiority: Holm-adjusted bounded_mean_p_value(x, 0) <
//   0.05
//                                                 with a positive estimate

/// Counts of the margin verdicts over the replicates of one design.
struct verdict_counts {
  std::size_t replicates = 0;
  std::size_t noninferior = 0;  ///< iv90.low > −δ
  std::size_t equivalent = 0;   ///< −δ < iv90.low and iv90.high < δ
  std::size_t absent = 0;       ///< iv90.high < δ ("no")
  std::size_t covered = 0;      ///< iv95.low ≤ truth ≤ iv95.high
  std::size_t superior = 0;    ///< bounded_mean_p_value(x, 0, alpha 0.05) < 0.05, estimate > 0 (one contrast)
  std::size_t zero_width = 0;  ///< an interval (90 % or 95 %) with high ≤ low
  double min_width = std::numeric_limits<double>::infinity();  ///< narrowest interval seen
  double mean_half_width90 = 0.0;                              ///< mean of (high − low)/2, 90 %
};

/// `replicates` replicates of `d` from std::mt19937_64(seed), verdicts at margin `delta`.
inline verdict_counts run_verdict_cell(const paired_binary_design& d, std::size_t replicates,
                                       std::uint64_t seed, double delta = 0.05) {
  std::mt19937_64 g(seed);
  verdict_counts c;
  c.replicates = replicates;
  const double truth = d.truth();
  for (std::size_t r = 0; r < replicates; ++r) {
    const auto x = simulate_item_differences(d, g);
    const auto iv90 = bounded_mean_interval(x, -1.0, 1.0, {.alpha_lower = 0.05, .alpha_upper = 0.05});
    const auto iv95 = bounded_mean_interval(x, -1.0, 1.0, {.alpha_lower = 0.025, .alpha_upper = 0.025});
    c.noninferior += iv90.low > -delta;
    c.equivalent += iv90.low > -delta && iv90.high < delta;
    c.absent += iv90.high < delta;
    c.covered += iv95.low <= truth && truth <= iv95.high;
    c.superior += iv90.estimate > 0.0 && bounded_mean_p_value(x, -1.0, 1.0, 0.0, 0.05) < 0.05;
    c.zero_width += !(iv90.high > iv90.low) || !(iv95.high > iv95.low);
    c.min_width = std::min({c.min_width, iv90.high - iv90.low, iv95.high - iv95.low});
    c.mean_half_width90 += 0.5 * (iv90.high - iv90.low) / static_cast<double>(replicates);
  }
  return c;
}

/// Counts of Holm's familywise errors over the replicates of a multi-arm null.
struct fwer_counts {
  std::size_t replicates = 0;
  std::size_t any = 0;         ///< some contrast with Holm-adjusted p < alpha (either sign)
  std::size_t positive = 0;    ///< some contrast called superior: adjusted p < alpha, estimate > 0
  std::size_t unadjusted = 0;  ///< contrasts (of replicates × arms) with unadjusted p < alpha
};

/// `replicates` replicates of `d` from std::mt19937_64(seed): per contrast the two-sided
/// bounded_mean_p_value at 0 (bets tuned for alpha), Holm over the d.arms contrasts.
inline fwer_counts run_fwer_cell(const exchangeable_arms_design& d, std::size_t replicates,
                                 std::uint64_t seed, double alpha = 0.05) {
  std::mt19937_64 g(seed);
  fwer_counts c;
  c.replicates = replicates;
  std::vector<double> p(d.arms), est(d.arms);
  for (std::size_t r = 0; r < replicates; ++r) {
    const auto x = simulate_exchangeable_arms(d, g);
    for (std::size_t j = 0; j < d.arms; ++j) {
      p[j] = bounded_mean_p_value(x[j], -1.0, 1.0, 0.0, alpha);
      double s = 0.0;
      for (double v : x[j]) s += v;
      est[j] = s / static_cast<double>(x[j].size());
    }
    for (double pj : p) c.unadjusted += pj < alpha;
    const auto adj = p_adjust(p, p_adjust_method::holm);
    bool any = false, pos = false;
    for (std::size_t j = 0; j < d.arms; ++j) {
      if (adj[j] < alpha) {
        any = true;
        pos = pos || est[j] > 0.0;
      }
    }
    c.any += any;
    c.positive += pos;
  }
  return c;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_CLUSTERED_BINARY_SIM_HPP
