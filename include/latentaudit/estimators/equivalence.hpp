// SPDX-License-Identifier: MIT
// latentaudit: equivalence by two one-sided t tests (TOST, Schuirmann 1987) and non-inferiority
// with a declared margin, for Welch, pooled (Student) and paired designs.
// Formulas and references: docs/estimators/equivalence.md.
#ifndef LATENTAUDIT_ESTIMATORS_EQUIVALENCE_HPP
#define LATENTAUDIT_ESTIMATORS_EQUIVALENCE_HPP

#include <cmath>
#include <limits>
#include <span>
#include <string_view>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "detail/distributions.hpp"
#include "difference_in_means.hpp"
#include "effect_estimate.hpp"

namespace latentaudit {

/// @brief Which t test underlies an equivalence or non-inferiority test.
enum class t_test_design {
  welch,    ///< unequal variances, Welch–Satterthwaite df (welch_t_test; R's t.test default)
  student,  ///< pooled variance, df = n₁ + n₀ − 2 (student_t_test; statsmodels' usevar='pooled')
  paired,   ///< within-pair differences, df = n − 1 (paired_t_test)
};

/// @brief Text name of a design ("welch", "student", "paired"): to label a result with the t test
/// its options selected (equivalence_options::design, non_inferiority_options::design).
///
/// @code
/// static_assert(design_name(t_test_design::paired) == "paired");
/// @endcode
[[nodiscard]] constexpr std::string_view design_name(t_test_design d) noexcept {
  switch (d) {
    case t_test_design::welch:
      return "welch";
    case t_test_design::student:
      return "student";
    case t_test_design::paired:
      return "paired";
  }
  return "unknown";
}

/// @brief The equivalence region low < δ < high for δ = mean(treated) − mean(control).
///
/// Asymmetric bounds are set directly (`{.low = -0.3, .high = 0.9}`); a symmetric margin ±m with
/// `equivalence_bounds::symmetric(m)`. The region need not contain 0.
struct equivalence_bounds {
  double low = std::numeric_limits<double>::quiet_NaN();   ///< lower equivalence bound (finite)
  double high = std::numeric_limits<double>::quiet_NaN();  ///< upper equivalence bound (> low, finite)

  /// @brief The symmetric region (−margin, +margin).
  /// @param margin the equivalence margin, > 0 (checked by the tests that use the bounds)
  /// @returns {.low = −margin, .high = +margin}
  [[nodiscard]] static constexpr equivalence_bounds symmetric(double margin) noexcept {
    return {.low = -margin, .high = margin};
  }
};

/// @brief Options of equivalence_test.
struct equivalence_options {
  t_test_design design = t_test_design::welch;  ///< the underlying t test
  double alpha = 0.05;  ///< level of each one-sided test, in (0, 0.5); the interval has level 1 − 2α
  /// zero-variance data (or an overflowed SE): throw numerical_error, or flag the result
  on_degenerate if_degenerate = on_degenerate::throw_error;
};

/// @brief Result of a TOST equivalence test.
///
/// The null hypothesis is non-equivalence, δ ≤ low or δ ≥ high; equivalence is declared when both
/// one-sided tests reject at α, i.e. p_value = max(p_lower, p_upper) < α, which is (up to rounding
/// at the boundary) the same as the (1 − 2α) interval lying inside (low, high).
struct [[nodiscard]] equivalence_result {
  static constexpr double nan = std::numeric_limits<double>::quiet_NaN();  ///< "not available"

  /// The difference in means from the design's t test at level 1 − 2α: estimate, std_error, df,
  /// ci_low/ci_high (the (1 − 2α) interval), level = 1 − 2α. Its statistic and p_value are the
  /// ordinary two-sided test of δ = 0, not the TOST (see p_value below). Its status says whether
  /// the fields here are defined.
  effect_estimate effect;
  double margin_low = nan;       ///< the lower equivalence bound
  double margin_high = nan;      ///< the upper equivalence bound
  double alpha = nan;            ///< the level of each one-sided test
  double statistic_lower = nan;  ///< (estimate − low) / SE, the t of the test of H₀: δ ≤ low
  double statistic_upper = nan;  ///< (estimate − high) / SE, the t of the test of H₀: δ ≥ high
  double p_lower = nan;          ///< P(T ≥ statistic_lower): one-sided p of H₀: δ ≤ low
  double p_upper = nan;          ///< P(T ≤ statistic_upper): one-sided p of H₀: δ ≥ high
  double p_value = nan;          ///< the TOST p-value max(p_lower, p_upper)
  bool equivalent = false;       ///< p_value < alpha (false when the data are degenerate)
};

/// @brief Which direction of the outcome is better, for non-inferiority.
enum class better_direction {
  higher,  ///< higher outcomes are better: H₀ δ ≤ −m against H₁ δ > −m (accuracy, pass rate)
  lower,   ///< lower outcomes are better: H₀ δ ≥ +m against H₁ δ < +m (latency, error rate, bytes)
};

/// @brief Options of non_inferiority_test.
struct non_inferiority_options {
  t_test_design design = t_test_design::welch;         ///< the underlying t test
  double alpha = 0.05;                                 ///< one-sided level, in (0, 0.5)
  better_direction better = better_direction::higher;  ///< which direction of δ is better
  /// zero-variance data (or an overflowed SE): throw numerical_error, or flag the result
  on_degenerate if_degenerate = on_degenerate::throw_error;
};

/// @brief Result of a non-inferiority test of treated against control with margin m.
///
/// Treated is non-inferior when the one-sided test rejects at α: p_value < α, which is (up to
/// rounding) the same as ci_low > −m (higher better) or ci_high < +m (lower better) for the
/// (1 − 2α) interval of `effect`, i.e. the one-sided (1 − α) confidence bound.
struct [[nodiscard]] non_inferiority_result {
  static constexpr double nan = std::numeric_limits<double>::quiet_NaN();  ///< "not available"

  /// The difference in means at level 1 − 2α, as in equivalence_result::effect.
  effect_estimate effect;
  double margin = nan;  ///< the declared margin m > 0
  double bound = nan;   ///< the null boundary: −m (higher is better) or +m (lower is better)
  better_direction better = better_direction::higher;  ///< the direction tested
  double alpha = nan;                                  ///< the one-sided level
  double statistic = nan;                              ///< (estimate − bound) / SE
  double p_value = nan;       ///< P(T ≥ statistic) (higher better) or P(T ≤ statistic) (lower better)
  bool non_inferior = false;  ///< p_value < alpha (false when the data are degenerate)
};

namespace detail {

/// @brief Checks α ∈ (0, 0.5) with 1 − 2α < 1 in double (α ≳ 5.6e-17).
inline void check_tost_alpha(std::string_view fn, double alpha) {
  if (!(alpha > 0.0 && alpha < 0.5 && 1.0 - 2.0 * alpha < 1.0)) {
    throw_invalid(fn, "alpha", "must lie in (0, 0.5) (and exceed 5.6e-17), got " + number_text(alpha));
  }
}

/// @brief Checks the samples of a design, naming `fn`.
inline void check_design_samples(std::string_view fn, t_test_design design, std::span<const double> treated,
                                 std::span<const double> control) {
  if (design != t_test_design::welch && design != t_test_design::student && design != t_test_design::paired) {
    throw_invalid(fn, "design", "must be welch, student or paired");
  }
  if (design == t_test_design::paired) {
    check_same_size(fn, "treated", treated.size(), "control", control.size());
  }
  check_min_size(fn, "treated", treated.size(), 2);
  check_min_size(fn, "control", control.size(), 2);
  check_finite(fn, "treated", treated);
  check_finite(fn, "control", control);
}

/// @brief The design's t test at level 1 − 2α, with degenerate data flagged (never thrown here);
/// then, per `policy`, a degenerate or failed result is thrown as numerical_error naming `fn`.
[[nodiscard]] inline effect_estimate design_effect(std::string_view fn, t_test_design design,
                                                   std::span<const double> treated,
                                                   std::span<const double> control, double alpha,
                                                   on_degenerate policy) {
  const t_test_options o{.level = 1.0 - 2.0 * alpha, .null_value = 0.0, .if_degenerate = on_degenerate::flag};
  effect_estimate e = design == t_test_design::welch     ? welch_t_test(treated, control, o)
                      : design == t_test_design::student ? student_t_test(treated, control, o)
                                                         : paired_t_test(treated, control, o);
  if (e.status != estimate_status::ok && policy == on_degenerate::throw_error) {
    throw_numerical(
        fn, e.status == estimate_status::degenerate
                ? "the data are essentially constant (standard error 0); the t statistics are undefined"
                : "the standard error overflowed (data too large in magnitude)");
  }
  return e;
}

}  // namespace detail

/// @brief TOST equivalence test of δ = mean(treated) − mean(control) for the region
/// low < δ < high (Schuirmann's two one-sided tests).
///
/// With estimate d, standard error SE and df from the design's t test:
/// t_L = (d − low)/SE, p_L = P(T_df ≥ t_L); t_U = (d − high)/SE, p_U = P(T_df ≤ t_U);
/// p = max(p_L, p_U); equivalent iff p < α. Reproduces statsmodels'
/// `ttost_ind(treated, control, low, high, usevar='unequal'|'pooled')` and
/// `ttost_paired(treated, control, low, high)`, and R's `t.test(..., alternative = "greater",
/// mu = low)` / `t.test(..., alternative = "less", mu = high)`.
/// @param treated outcomes of the treated arm (n ≥ 2, finite)
/// @param control outcomes of the control arm (n ≥ 2, finite; same size and order if paired)
/// @param bounds the equivalence region, finite, low < high
/// @param options design (Welch by default), α, degenerate-data policy
/// @returns the difference with its (1 − 2α) interval, both one-sided p-values, the TOST p-value
///          and the verdict; with on_degenerate::flag and constant data, effect.status is
///          degenerate, the statistics and p-values are NaN and `equivalent` is false
/// @throws invalid_argument on too few or non-finite observations, non-finite or unordered
///         bounds, or α outside (0, 0.5); shape_mismatch for paired samples of different sizes;
///         numerical_error for constant data or an overflowed SE (unless options flag it)
[[nodiscard]] inline equivalence_result equivalence_test(std::span<const double> treated,
                                                         std::span<const double> control,
                                                         const equivalence_bounds& bounds,
                                                         const equivalence_options& options = {}) {
  constexpr std::string_view fn = "equivalence_test";
  detail::check_tost_alpha(fn, options.alpha);
  detail::check_finite(fn, "bounds.low", bounds.low);
  detail::check_finite(fn, "bounds.high", bounds.high);
  if (!(bounds.low < bounds.high)) {
    detail::throw_invalid(fn, "bounds",
                          "must satisfy low < high, got low " + number_text(bounds.low) + " and high " +
                              number_text(bounds.high));
  }
  detail::check_design_samples(fn, options.design, treated, control);
  equivalence_result r;
  r.effect =
      detail::design_effect(fn, options.design, treated, control, options.alpha, options.if_degenerate);
  r.margin_low = bounds.low;
  r.margin_high = bounds.high;
  r.alpha = options.alpha;
  if (r.effect.status != estimate_status::ok) return r;  // flagged: statistics stay NaN
  const double d = r.effect.estimate, se = r.effect.std_error, df = r.effect.df;
  r.statistic_lower = (d - bounds.low) / se;
  r.statistic_upper = (d - bounds.high) / se;
  r.p_lower = detail::t_upper(r.statistic_lower, df);  // H1: δ > low
  r.p_upper = detail::t_cdf(r.statistic_upper, df);    // H1: δ < high
  r.p_value = std::fmax(r.p_lower, r.p_upper);
  r.equivalent = r.p_value < options.alpha;
  return r;
}

/// @brief Non-inferiority test of treated against control with margin m > 0: one-sided t test
/// that treated is not worse than control by m or more.
///
/// Higher is better (default): H₀ δ ≤ −m vs H₁ δ > −m, t = (d + m)/SE, p = P(T_df ≥ t).
/// Lower is better: H₀ δ ≥ +m vs H₁ δ < +m, t = (d − m)/SE, p = P(T_df ≤ t).
/// Non-inferior iff p < α. Reproduces R's `t.test(..., alternative = "greater", mu = -m)` /
/// `t.test(..., alternative = "less", mu = m)` and statsmodels' `ttest_ind(alternative='larger',
/// value=-m)` / `(alternative='smaller', value=m)`.
/// @param treated outcomes of the treated arm (n ≥ 2, finite)
/// @param control outcomes of the control arm (n ≥ 2, finite; same size and order if paired)
/// @param margin the non-inferiority margin m, positive and finite, in outcome units
/// @param options design (Welch by default), α, better direction, degenerate-data policy
/// @returns the difference with its (1 − 2α) interval, the one-sided statistic, p-value and the
///          verdict; flagged degenerate data give NaN statistics and `non_inferior` false
/// @throws invalid_argument on too few or non-finite observations, a margin that is not positive
///         and finite, or α outside (0, 0.5); shape_mismatch for paired samples of different
///         sizes; numerical_error for constant data or an overflowed SE (unless options flag it)
[[nodiscard]] inline non_inferiority_result non_inferiority_test(
    std::span<const double> treated, std::span<const double> control, double margin,
    const non_inferiority_options& options = {}) {
  constexpr std::string_view fn = "non_inferiority_test";
  detail::check_tost_alpha(fn, options.alpha);
  detail::check_positive(fn, "margin", margin);
  if (options.better != better_direction::higher && options.better != better_direction::lower) {
    detail::throw_invalid(fn, "better", "must be higher or lower");
  }
  detail::check_design_samples(fn, options.design, treated, control);
  non_inferiority_result r;
  r.effect =
      detail::design_effect(fn, options.design, treated, control, options.alpha, options.if_degenerate);
  r.margin = margin;
  r.better = options.better;
  r.bound = options.better == better_direction::higher ? -margin : margin;
  r.alpha = options.alpha;
  if (r.effect.status != estimate_status::ok) return r;  // flagged: statistics stay NaN
  r.statistic = (r.effect.estimate - r.bound) / r.effect.std_error;
  r.p_value = options.better == better_direction::higher ? detail::t_upper(r.statistic, r.effect.df)
                                                         : detail::t_cdf(r.statistic, r.effect.df);
  r.non_inferior = r.p_value < options.alpha;
  return r;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_EQUIVALENCE_HPP
