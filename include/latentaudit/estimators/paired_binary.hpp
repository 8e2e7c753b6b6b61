// SPDX-License-Identifier: MIT
// latentaudit: binary (0/1) outcomes — McNemar's test with the exact binomial p-value and
// Newcombe's paired score interval for paired data, and the two-proportion z test with
// Newcombe's hybrid score interval for unpaired data. Effects are treated minus control.
// Formulas and references: docs/estimators/paired_binary.md. Newcombe 1998a/b/c = Statistics in
// Medicine 17:857 (single proportion), 17:873 (independent proportions), 17:2635 (paired data).
#ifndef LATENTAUDIT_ESTIMATORS_PAIRED_BINARY_HPP
#define LATENTAUDIT_ESTIMATORS_PAIRED_BINARY_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "../config.hpp"
#include "../core/detail/check.hpp"
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

  paired_binary_table table;       ///< the counts a, b, c, d
  std::size_t discordant = 0;      ///< b + c
  double exact_p_value = nan;      ///< two-sided exact binomial p, R binom.test(b, b + c, 0.5)
  double chi2_statistic = nan;     ///< (b − c)² / (b + c), R mcnemar.test(correct = FALSE)
  double chi2_p_value = nan;       ///< P(χ²₁ > chi2_statistic)
  double chi2_cc_statistic = nan;  ///< (|b − c| − 1)² / (b + c), 0 if b = c (mcnemar.test default)
  double chi2_cc_p_value = nan;    ///< P(χ²₁ > chi2_cc_statistic)
  double phi = nan;                ///< the correlation φ* used by the Newcombe interval
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
[[nodiscard]] double binomial_half_two_sided_p(std::size_t x, std::size_t m);

/// @brief Wilson score limits (no correction) for x of n at critical value z; exact 0 at x = 0
/// and 1 at x = n, clamped to [0, 1].
[[nodiscard]] proportion_interval wilson_limits(double x, double n, double z) noexcept;

/// @brief Continuity-corrected Wilson limits (Newcombe 1998a, method 4):
/// L = (2np + z² − 1 − z√(z² − 2 − 1/n + 4p(n(1−p)+1))) / (2(n+z²)), 0 at x = 0;
/// U = (2np + z² + 1 + z√(z² + 2 − 1/n + 4p(n(1−p)−1))) / (2(n+z²)), 1 at x = n.
/// Both radicands are positive for 1 ≤ x ≤ n (resp. 0 ≤ x ≤ n − 1).
[[nodiscard]] proportion_interval wilson_cc_limits(double x, double n, double z) noexcept;

/// @brief The two-sided critical value z = Φ⁻¹(1 − (1 − level)/2), by complement.
[[nodiscard]] double two_sided_z(double level);

/// @brief Checks one count against max_binary_count.
void check_count(std::string_view fn, std::string_view name, std::size_t x);

/// @brief Checks binary_counts: 1 <= trials <= 2^53 and successes <= trials.
void check_counts(std::string_view fn, std::string_view name, const binary_counts& x);

/// @brief Counts the 1s of a checked 0/1 sample.
[[nodiscard]] std::size_t count_ones(std::span<const double> x) noexcept;

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
[[nodiscard]] proportion_interval wilson_interval(binary_counts x, const wilson_options& options = {});

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
[[nodiscard]] mcnemar_result mcnemar_test(const paired_binary_table& table,
                                          const mcnemar_options& options = {});

/// @brief McNemar's test from paired 0/1 outcomes: tabulates (treated[i], control[i]) and
/// calls mcnemar_test(const paired_binary_table&, const mcnemar_options&).
/// @param treated treated outcome of each pair, each 0 or 1 (n >= 1)
/// @param control control outcome of each pair, same order and size, each 0 or 1
/// @param options level and the no-discordant-pairs policy
/// @returns as the table overload
/// @throws shape_mismatch if the sizes differ; invalid_argument on an empty sample, a value
///         other than 0 or 1 (NaN included) or a level outside (0, 1); numerical_error if no
///         pair is discordant (unless options flag it)
[[nodiscard]] mcnemar_result mcnemar_test(std::span<const double> treated, std::span<const double> control,
                                          const mcnemar_options& options = {});

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
[[nodiscard]] effect_estimate two_proportion_test(binary_counts treated, binary_counts control,
                                                  const two_proportion_options& options = {});

/// @brief Unpaired difference of two proportions from 0/1 outcomes: counts the 1s of each arm
/// and calls two_proportion_test(binary_counts, binary_counts, const two_proportion_options&).
/// @param treated outcomes of the treated arm, each 0 or 1 (n >= 1)
/// @param control outcomes of the control arm, each 0 or 1 (n >= 1)
/// @param options level, continuity correction, degenerate-data policy
/// @returns as the counts overload
/// @throws invalid_argument on an empty arm, a value other than 0 or 1 (NaN included) or a level
///         outside (0, 1); numerical_error if all outcomes are equal (unless options flag it)
[[nodiscard]] effect_estimate two_proportion_test(std::span<const double> treated,
                                                  std::span<const double> control,
                                                  const two_proportion_options& options = {});

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/paired_binary-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_PAIRED_BINARY_HPP
