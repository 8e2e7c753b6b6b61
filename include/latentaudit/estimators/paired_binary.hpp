// SPDX-License-Identifier: MIT
// latentaudit: binary (0/1) outcomes — McNemar's test with the exact binomial p-value and
// Newcombe's paired score interval for paired data, and the two-proportion z test with
// Newcombe's hybrid score interval for unpaired data. Effects are treated minus control.
// Formulas and references: docs/estimators/paired_binary.md. Newcombe 1998a/b/c = Statistics in
// Medicine 17:857 (single proportion), 17:873 (independent proportions), 17:2635 (paired data).
#ifndef LATENTAUDIT_ESTIMATORS_PAIRED_BINARY_HPP
#define LATENTAUDIT_ESTIMATORS_PAIRED_BINARY_HPP

#include <boost/math/distributions/binomial.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "../core/detail/check.hpp"
#include "detail/distributions.hpp"
#include "effect_estimate.hpp"

namespace latentaudit {

/// @brief Successes out of trials for one arm (an unpaired binary sample).
struct binary_counts {
  std::size_t successes = 0;  ///< number of outcomes equal to 1
  std::size_t trials = 0;     ///< number of outcomes (>= 1 where used)
};

/// @brief The paired 2x2 table of (treated, control) outcomes.
///
/// In Newcombe's (1998c) notation a = both, b = treated_only, c = control_only, d = neither;
/// b and c are the discordant pairs.
struct paired_binary_table {
  std::size_t both = 0;          ///< a: treated 1, control 1
  std::size_t treated_only = 0;  ///< b: treated 1, control 0 (discordant, favours treated)
  std::size_t control_only = 0;  ///< c: treated 0, control 1 (discordant, favours control)
  std::size_t neither = 0;       ///< d: treated 0, control 0
};

/// @brief A confidence interval for one binomial proportion.
struct proportion_interval {
  double estimate = effect_estimate::nan;  ///< successes / trials
  double low = effect_estimate::nan;       ///< lower confidence limit, in [0, 1]
  double high = effect_estimate::nan;      ///< upper confidence limit, in [0, 1]
  double level = effect_estimate::nan;     ///< confidence level
};

/// @brief Options of wilson_interval.
struct wilson_options {
  double level = 0.95;                 ///< confidence level, in (0, 1)
  bool continuity_correction = false;  ///< Newcombe (1998a) method 4 instead of method 3
};

/// @brief Options of mcnemar_test.
struct mcnemar_options {
  double level = 0.95;  ///< confidence level of the Newcombe interval, in (0, 1)
  /// No discordant pairs (the chi-square statistic is 0/0): throw, or flag the result.
  on_degenerate if_degenerate = on_degenerate::throw_error;
};

/// @brief Everything McNemar's test and the paired risk difference report, in one aggregate.
///
/// The three p-values test "no effect" (p_treated = p_control, i.e. b and c equally likely).
/// With no discordant pairs and on_degenerate::flag, `status` is degenerate and the four
/// chi-square fields are NaN; the exact p-value (1) and `effect` stay defined.
struct mcnemar_result {
  static constexpr double nan = effect_estimate::nan;  ///< "undefined"

  paired_binary_table table;          ///< the counts a, b, c, d
  std::size_t discordant = 0;         ///< b + c
  double exact_p_value = nan;         ///< two-sided exact binomial p, R binom.test(b, b + c, 0.5)
  double chi2_statistic = nan;        ///< (b − c)² / (b + c), R mcnemar.test(correct = FALSE)
  double chi2_p_value = nan;          ///< P(χ²₁ > chi2_statistic)
  double chi2_cc_statistic = nan;     ///< (|b − c| − 1)² / (b + c), 0 if b = c (mcnemar.test default)
  double chi2_cc_p_value = nan;       ///< P(χ²₁ > chi2_cc_statistic)
  double phi = nan;                   ///< the correlation φ* used by the Newcombe interval
  /// Paired risk difference (b − c)/n: Wald SE, Newcombe (1998c) method 10 interval,
  /// p_value = exact_p_value, statistic = b (binom.test's "number of successes").
  effect_estimate effect;
  estimate_status status = estimate_status::ok;  ///< degenerate: no discordant pairs (flagged)
};

/// @brief Options of two_proportion_test.
struct two_proportion_options {
  double level = 0.95;  ///< confidence level of the Newcombe interval, in (0, 1)
  /// false: Newcombe (1998b) method 10 and the uncorrected z test (prop.test(correct = FALSE));
  /// true: method 11 (continuity-corrected Wilson limits) and Yates' correction (correct = TRUE).
  bool continuity_correction = false;
  /// All outcomes 0 or all 1 (pooled variance 0, z undefined): throw, or flag the result.
  on_degenerate if_degenerate = on_degenerate::throw_error;
};

namespace detail {

/// Largest count accepted: counts and their sums stay exact in a double.
inline constexpr std::size_t max_binary_count = std::size_t{1} << 53;

/// @brief Two-sided exact binomial p-value of x successes in m trials at p = 1/2, with R's
/// binom.test rule (sum of the probabilities not above d(x)); by symmetry
/// min(1, 2·P(X ≤ min(x, m − x))). m = 0 gives 1.
[[nodiscard]] inline double binomial_half_two_sided_p(std::size_t x, std::size_t m) {
  if (m == 0) return 1.0;
  const std::size_t k = x < m - x ? x : m - x;
  if (2 * k == m) return 1.0;  // x is the mode: every outcome is as likely or less
  const boost::math::binomial_distribution<double, math_policy> dist(static_cast<double>(m), 0.5);
  // The lower tail of the smaller count is the small tail: no cancellation.
  const double p = 2.0 * boost::math::cdf(dist, static_cast<double>(k));
  return p > 1.0 ? 1.0 : p;
}

/// @brief Wilson score limits (no correction) for x of n at critical value z; exact 0 at x = 0
/// and 1 at x = n, clamped to [0, 1].
[[nodiscard]] inline proportion_interval wilson_limits(double x, double n, double z) noexcept {
  const double p = x / n;
  const double z2 = z * z;
  const double denom = 1.0 + z2 / n;
  const double centre = (p + z2 / (2.0 * n)) / denom;
  const double half = z * std::sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom;
  proportion_interval r{.estimate = p};
  r.low = x == 0.0 ? 0.0 : std::fmax(0.0, centre - half);
  r.high = x == n ? 1.0 : std::fmin(1.0, centre + half);
  return r;
}

/// @brief Continuity-corrected Wilson limits (Newcombe 1998a, method 4):
/// L = (2np + z² − 1 − z√(z² − 2 − 1/n + 4p(n(1−p)+1))) / (2(n+z²)), 0 at x = 0;
/// U = (2np + z² + 1 + z√(z² + 2 − 1/n + 4p(n(1−p)−1))) / (2(n+z²)), 1 at x = n.
/// Both radicands are positive for 1 ≤ x ≤ n (resp. 0 ≤ x ≤ n − 1).
[[nodiscard]] inline proportion_interval wilson_cc_limits(double x, double n, double z) noexcept {
  const double p = x / n;
  const double z2 = z * z;
  const double denom = 2.0 * (n + z2);
  proportion_interval r{.estimate = p};
  r.low = x == 0.0 ? 0.0
                   : std::fmax(0.0, (2.0 * x + z2 - 1.0 -
                                     z * std::sqrt(z2 - 2.0 - 1.0 / n + 4.0 * p * (n * (1.0 - p) + 1.0))) /
                                        denom);
  r.high = x == n ? 1.0
                  : std::fmin(1.0, (2.0 * x + z2 + 1.0 +
                                    z * std::sqrt(z2 + 2.0 - 1.0 / n + 4.0 * p * (n * (1.0 - p) - 1.0))) /
                                       denom);
  return r;
}

/// @brief The two-sided critical value z = Φ⁻¹(1 − (1 − level)/2), by complement.
[[nodiscard]] inline double two_sided_z(double level) { return normal_quantile_upper((1.0 - level) / 2.0); }

/// @brief Checks one count against max_binary_count.
inline void check_count(std::string_view fn, std::string_view name, std::size_t x) {
  if (x > max_binary_count) {
    throw_invalid(fn, name, "must be at most 2^53, got " + std::to_string(x));
  }
}

/// @brief Checks binary_counts: 1 <= trials <= 2^53 and successes <= trials.
inline void check_counts(std::string_view fn, std::string_view name, const binary_counts& x) {
  check_count(fn, name, x.trials);
  if (x.trials == 0) throw_invalid(fn, name, "has 0 trials, expected at least 1");
  if (x.successes > x.trials) {
    throw_invalid(fn, name,
                  "has " + std::to_string(x.successes) + " successes in " + std::to_string(x.trials) +
                      " trials, expected successes <= trials");
  }
}

/// @brief Counts the 1s of a checked 0/1 sample.
[[nodiscard]] inline std::size_t count_ones(std::span<const double> x) noexcept {
  std::size_t k = 0;
  for (double v : x) k += v == 1.0 ? 1 : 0;
  return k;
}

}  // namespace detail

/// @brief Wilson score interval for one binomial proportion (Wilson 1927), optionally with
/// Newcombe's continuity correction (Newcombe 1998a, methods 3 and 4).
///
/// Without correction: (p + z²/2n ± z√(p(1−p)/n + z²/4n²)) / (1 + z²/n), as R
/// `prop.test(x, n, correct = FALSE)$conf.int` and statsmodels
/// `proportion_confint(x, n, method = "wilson")`.
/// @param x successes and trials (1 <= trials <= 2^53, successes <= trials)
/// @param options level and continuity correction
/// @returns estimate x/n and the limits, with low = 0 at x = 0 and high = 1 at x = n
/// @throws invalid_argument on bad counts or a level outside (0, 1)
[[nodiscard]] inline proportion_interval wilson_interval(binary_counts x, const wilson_options& options = {}) {
  constexpr std::string_view fn = "wilson_interval";
  detail::check_open_unit(fn, "level", options.level);
  detail::check_counts(fn, "x", x);
  const double z = detail::two_sided_z(options.level);
  const double s = static_cast<double>(x.successes), n = static_cast<double>(x.trials);
  auto r = options.continuity_correction ? detail::wilson_cc_limits(s, n, z) : detail::wilson_limits(s, n, z);
  r.level = options.level;
  return r;
}

/// @brief McNemar's test for paired binary outcomes from the 2x2 table, with the exact
/// binomial p-value, both chi-square versions and the paired risk difference.
///
/// With n = a + b + c + d pairs:
/// - exact p: min(1, 2·P(X ≤ min(b, c))), X ~ Binomial(b + c, 1/2) (R `binom.test(b, b + c)`);
/// - χ² = (b − c)²/(b + c); χ²_cc = (|b − c| − 1)²/(b + c), and 0 when b = c (R
///   `mcnemar.test`, which drops the correction when b = c); p-values from χ²₁ upper tails;
/// - effect: θ = (b − c)/n, Wald SE √((b + c) − (b − c)²/n)/n, and Newcombe's (1998c) method 10
///   interval [θ − δ, θ + ε] from Wilson limits (l₂, u₂) of p₁ = (a + b)/n and (l₃, u₃) of
///   p₂ = (a + c)/n: δ = √((p₁−l₂)² − 2φ(p₁−l₂)(u₃−p₂) + (u₃−p₂)²),
///   ε = √((u₂−p₁)² − 2φ(u₂−p₁)(p₂−l₃) + (p₂−l₃)²), with φ = max(ad − bc − n/2, 0)/√(efgh)
///   if ad > bc, (ad − bc)/√(efgh) otherwise, and φ = 0 if a margin e, f, g, h is zero.
/// @param table the counts (each <= 2^53, total >= 1)
/// @param options level and the no-discordant-pairs policy
/// @returns the result; effect.method "mcnemar_exact_newcombe", estimand "risk_difference"
/// @throws invalid_argument on an empty table, a count above 2^53 or a level outside (0, 1);
///         numerical_error if b + c = 0 (unless options flag it)
[[nodiscard]] inline mcnemar_result mcnemar_test(const paired_binary_table& table,
                                                 const mcnemar_options& options = {}) {
  constexpr std::string_view fn = "mcnemar_test";
  detail::check_open_unit(fn, "level", options.level);
  detail::check_count(fn, "table.both", table.both);
  detail::check_count(fn, "table.treated_only", table.treated_only);
  detail::check_count(fn, "table.control_only", table.control_only);
  detail::check_count(fn, "table.neither", table.neither);
  const std::size_t total = table.both + table.treated_only + table.control_only + table.neither;
  if (total == 0) detail::throw_invalid(fn, "table", "has 0 pairs, expected at least 1");
  if (total > detail::max_binary_count) {
    detail::throw_invalid(fn, "table", "has " + std::to_string(total) + " pairs, expected at most 2^53");
  }
  const std::size_t m = table.treated_only + table.control_only;
  if (m == 0 && options.if_degenerate != on_degenerate::flag) {
    detail::throw_numerical(fn, "no discordant pairs (b + c = 0); the McNemar chi-square statistic is undefined");
  }
  const double a = static_cast<double>(table.both), b = static_cast<double>(table.treated_only);
  const double c = static_cast<double>(table.control_only), d = static_cast<double>(table.neither);
  const double n = static_cast<double>(total);

  mcnemar_result r;
  r.table = table;
  r.discordant = m;
  r.exact_p_value = detail::binomial_half_two_sided_p(table.treated_only, m);
  if (m == 0) {
    r.status = estimate_status::degenerate;  // chi-square fields stay NaN
  } else {
    const double diff = std::fabs(b - c);
    r.chi2_statistic = diff * diff / (b + c);
    r.chi2_p_value = detail::chi2_upper(r.chi2_statistic, 1.0);
    const double corrected = diff == 0.0 ? 0.0 : diff - 1.0;  // R drops the correction when b = c
    r.chi2_cc_statistic = corrected * corrected / (b + c);
    r.chi2_cc_p_value = detail::chi2_upper(r.chi2_cc_statistic, 1.0);
  }

  // Newcombe (1998c) method 10: Wilson limits of both marginals, combined with φ*.
  const double z = detail::two_sided_z(options.level);
  const double e = a + b, f = c + d, g = a + c, h = b + d;  // margins
  const auto w1 = detail::wilson_limits(e, n, z);           // treated: p₁ = (a + b)/n
  const auto w2 = detail::wilson_limits(g, n, z);           // control: p₂ = (a + c)/n
  double phi = 0.0;
  if (e > 0.0 && f > 0.0 && g > 0.0 && h > 0.0) {
    const double cross = a * d - b * c;
    const double numerator = cross > 0.0 ? std::fmax(cross - n / 2.0, 0.0) : cross;
    phi = numerator / (std::sqrt(e * f) * std::sqrt(g * h));
  }
  r.phi = phi;
  const double dl1 = w1.estimate - w1.low, du1 = w1.high - w1.estimate;
  const double dl2 = w2.estimate - w2.low, du2 = w2.high - w2.estimate;
  // |φ| <= 1 makes both radicands >= 0 up to rounding; fmax guards the rounding.
  const double delta = std::sqrt(std::fmax(0.0, dl1 * dl1 - 2.0 * phi * dl1 * du2 + du2 * du2));
  const double eps = std::sqrt(std::fmax(0.0, du1 * du1 - 2.0 * phi * du1 * dl2 + dl2 * dl2));

  effect_estimate& ef = r.effect;
  ef.method = "mcnemar_exact_newcombe";
  ef.estimand = "risk_difference";
  ef.estimate = (b - c) / n;
  ef.std_error = std::sqrt(std::fmax(0.0, (b + c) - (b - c) * (b - c) / n)) / n;
  ef.ci_low = std::fmax(-1.0, ef.estimate - delta);
  ef.ci_high = std::fmin(1.0, ef.estimate + eps);
  ef.level = options.level;
  ef.statistic = b;
  ef.p_value = r.exact_p_value;
  ef.n_pairs = total;
  return r;
}

/// @brief McNemar's test from paired 0/1 outcomes: tabulates (treated[i], control[i]) and
/// calls mcnemar_test(const paired_binary_table&, const mcnemar_options&).
/// @param treated treated outcome of each pair, each 0 or 1 (n >= 1)
/// @param control control outcome of each pair, same order and size, each 0 or 1
/// @param options level and the no-discordant-pairs policy
/// @returns as the table overload
/// @throws shape_mismatch if the sizes differ; invalid_argument on an empty sample, a value
///         other than 0 or 1 (NaN included) or a level outside (0, 1); numerical_error if no
///         pair is discordant (unless options flag it)
[[nodiscard]] inline mcnemar_result mcnemar_test(std::span<const double> treated, std::span<const double> control,
                                                 const mcnemar_options& options = {}) {
  constexpr std::string_view fn = "mcnemar_test";
  detail::check_open_unit(fn, "level", options.level);
  detail::check_same_size(fn, "treated", treated.size(), "control", control.size());
  detail::check_min_size(fn, "treated", treated.size(), 1);
  detail::check_binary(fn, "treated", treated);
  detail::check_binary(fn, "control", control);
  paired_binary_table t;
  for (std::size_t i = 0; i < treated.size(); ++i) {
    const bool y1 = treated[i] == 1.0, y0 = control[i] == 1.0;
    if (y1 && y0) ++t.both;
    else if (y1) ++t.treated_only;
    else if (y0) ++t.control_only;
    else ++t.neither;
  }
  return mcnemar_test(t, options);
}

/// @brief Unpaired difference of two proportions p₁ − p₀ with Newcombe's hybrid score interval
/// and the pooled two-proportion z test.
///
/// θ = x₁/n₁ − x₀/n₀; Wald SE √(p₁(1−p₁)/n₁ + p₀(1−p₀)/n₀). Interval (Newcombe 1998b, method
/// 10; method 11 with continuity_correction, using continuity-corrected Wilson limits):
/// [θ − √((p₁−l₁)² + (u₀−p₀)²), θ + √((u₁−p₁)² + (p₀−l₀)²)]. Test: pooled p̄ = (x₁+x₀)/(n₁+n₀),
/// s = 1/n₁ + 1/n₀, z = θ/√(p̄(1−p̄)s); with the correction z = sign(θ)·max(0, |θ| − s/2)/√(p̄(1−p̄)s);
/// p = 2(1 − Φ(|z|)), equal to R `prop.test(c(x₁, x₀), c(n₁, n₀), correct = …)` (its χ² is z²).
/// @param treated successes and trials of the treated arm (trials >= 1)
/// @param control successes and trials of the control arm (trials >= 1)
/// @param options level, continuity correction, degenerate-data policy
/// @returns method "two_proportion_newcombe" (or "two_proportion_newcombe_cc"), estimand
///          "risk_difference", statistic z, p_value from z; with flagged degenerate data the
///          status is degenerate, statistic and p_value are NaN and the other fields are kept
/// @throws invalid_argument on bad counts or a level outside (0, 1); numerical_error if all
///         outcomes are 0 or all are 1 (unless options flag it)
[[nodiscard]] inline effect_estimate two_proportion_test(binary_counts treated, binary_counts control,
                                                         const two_proportion_options& options = {}) {
  constexpr std::string_view fn = "two_proportion_test";
  detail::check_open_unit(fn, "level", options.level);
  detail::check_counts(fn, "treated", treated);
  detail::check_counts(fn, "control", control);
  const double x1 = static_cast<double>(treated.successes), n1 = static_cast<double>(treated.trials);
  const double x0 = static_cast<double>(control.successes), n0 = static_cast<double>(control.trials);
  const double pooled = (x1 + x0) / (n1 + n0);
  const bool degenerate = treated.successes + control.successes == 0 ||
                          treated.successes + control.successes == treated.trials + control.trials;
  if (degenerate && options.if_degenerate != on_degenerate::flag) {
    detail::throw_numerical(fn, "all outcomes are equal (pooled proportion " + detail::number_text(pooled) +
                                    "); the z statistic is undefined");
  }
  const double z = detail::two_sided_z(options.level);
  const bool cc = options.continuity_correction;
  const auto w1 = cc ? detail::wilson_cc_limits(x1, n1, z) : detail::wilson_limits(x1, n1, z);
  const auto w0 = cc ? detail::wilson_cc_limits(x0, n0, z) : detail::wilson_limits(x0, n0, z);
  const double p1 = w1.estimate, p0 = w0.estimate;

  effect_estimate e{.method = cc ? "two_proportion_newcombe_cc" : "two_proportion_newcombe",
                    .estimand = "risk_difference"};
  e.estimate = p1 - p0;
  e.std_error = std::sqrt(p1 * (1.0 - p1) / n1 + p0 * (1.0 - p0) / n0);
  const double dl1 = p1 - w1.low, du1 = w1.high - p1, dl0 = p0 - w0.low, du0 = w0.high - p0;
  e.ci_low = std::fmax(-1.0, e.estimate - std::sqrt(dl1 * dl1 + du0 * du0));
  e.ci_high = std::fmin(1.0, e.estimate + std::sqrt(du1 * du1 + dl0 * dl0));
  e.level = options.level;
  e.n_treated = treated.trials;
  e.n_control = control.trials;
  if (degenerate) {
    e.status = estimate_status::degenerate;  // statistic and p_value stay NaN
    return e;
  }
  const double s = 1.0 / n1 + 1.0 / n0;
  const double scale = std::sqrt(pooled * (1.0 - pooled) * s);
  double numerator = e.estimate;
  if (cc) numerator = std::copysign(std::fmax(0.0, std::fabs(e.estimate) - s / 2.0), e.estimate);
  e.statistic = numerator / scale;
  e.p_value = std::fmin(1.0, 2.0 * detail::normal_upper(std::fabs(e.statistic)));
  return e;
}

/// @brief Unpaired difference of two proportions from 0/1 outcomes: counts the 1s of each arm
/// and calls two_proportion_test(binary_counts, binary_counts, const two_proportion_options&).
/// @param treated outcomes of the treated arm, each 0 or 1 (n >= 1)
/// @param control outcomes of the control arm, each 0 or 1 (n >= 1)
/// @param options level, continuity correction, degenerate-data policy
/// @returns as the counts overload
/// @throws invalid_argument on an empty arm, a value other than 0 or 1 (NaN included) or a level
///         outside (0, 1); numerical_error if all outcomes are equal (unless options flag it)
[[nodiscard]] inline effect_estimate two_proportion_test(std::span<const double> treated,
                                                         std::span<const double> control,
                                                         const two_proportion_options& options = {}) {
  constexpr std::string_view fn = "two_proportion_test";
  detail::check_open_unit(fn, "level", options.level);
  detail::check_min_size(fn, "treated", treated.size(), 1);
  detail::check_min_size(fn, "control", control.size(), 1);
  detail::check_binary(fn, "treated", treated);
  detail::check_binary(fn, "control", control);
  return two_proportion_test(binary_counts{detail::count_ones(treated), treated.size()},
                             binary_counts{detail::count_ones(control), control.size()}, options);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_PAIRED_BINARY_HPP
