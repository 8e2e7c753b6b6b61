// SPDX-License-Identifier: MIT
// latentaudit: difference in means — Welch (Satterthwaite df), pooled Student, paired t.
// Formulas and references: docs/estimators/difference_in_means.md.
#ifndef LATENTAUDIT_ESTIMATORS_DIFFERENCE_IN_MEANS_HPP
#define LATENTAUDIT_ESTIMATORS_DIFFERENCE_IN_MEANS_HPP

#include <cmath>
#include <limits>
#include <span>
#include <string_view>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "detail/distributions.hpp"
#include "effect_estimate.hpp"

namespace latentaudit {

/// @brief Options of the t tests.
struct t_test_options {
  double level = 0.95;      ///< confidence level of the two-sided interval, in (0, 1)
  double null_value = 0.0;  ///< the difference under the null hypothesis (R's `mu`)
  /// zero-variance data (or an overflowed SE): throw numerical_error, or flag the result
  on_degenerate if_degenerate = on_degenerate::throw_error;
};

namespace detail {

/// @brief Mean and unbiased variance by two passes (accurate for large offsets).
struct sample_moments {
  double mean = 0;      ///< arithmetic mean
  double variance = 0;  ///< unbiased variance (n - 1 denominator)
  std::size_t n = 0;    ///< size
};

/// @brief Two-pass mean and variance, with the compensated correction term of Chan, Golub &
/// LeVeque (1983): var = (Σ(x-m)² - (Σ(x-m))²/n)/(n-1). The mean is refined by the same term,
/// mean = m + Σ(x-m)/n (as R's mean()), so that means of data with a large common offset
/// (1e6 + noise) are accurate to a few ulps and their difference keeps its relative accuracy.
[[nodiscard]] inline sample_moments moments(std::span<const double> x) noexcept {
  sample_moments m;
  m.n = x.size();
  if (x.empty()) return m;
  double s = 0;
  for (double v : x) s += v;
  m.mean = s / static_cast<double>(x.size());
  double ss = 0, sd = 0;
  for (double v : x) {
    const double d = v - m.mean;
    ss += d * d;
    sd += d;
  }
  m.mean += sd / static_cast<double>(x.size());
  if (x.size() > 1) {
    m.variance = (ss - sd * sd / static_cast<double>(x.size())) / static_cast<double>(x.size() - 1);
    if (m.variance < 0) m.variance = 0;
  }
  return m;
}

/// @brief Fills statistic, p-value and CI of `e` from estimate, std_error and df (t reference).
/// Degenerate (SE numerically zero, as R's "data are essentially constant") per options; an
/// overflowed SE or df (|data| beyond ~1e150) is a numerical failure, thrown or flagged `failed`.
inline void finish_t(effect_estimate& e, double scale, const t_test_options& o, std::string_view fn) {
  if (!std::isfinite(e.std_error) || !std::isfinite(e.estimate)) {
    if (o.if_degenerate == on_degenerate::throw_error) {
      throw_numerical(fn, "the standard error overflowed (data too large in magnitude)");
    }
    e.status = estimate_status::failed;
    e.estimate = e.std_error = e.df = e.statistic = e.p_value = e.ci_low = e.ci_high = effect_estimate::nan;
    return;
  }
  if (!(e.std_error > 10.0 * std::numeric_limits<double>::epsilon() * scale)) {
    if (o.if_degenerate == on_degenerate::throw_error) {
      throw_numerical(fn,
                      "the data are essentially constant (standard error 0); the t statistic is undefined");
    }
    const double est = e.estimate;
    e.status = estimate_status::degenerate;
    e.std_error = e.statistic = e.p_value = e.ci_low = e.ci_high = effect_estimate::nan;
    e.estimate = est;
    return;
  }
  e.statistic = (e.estimate - o.null_value) / e.std_error;
  e.p_value = t_two_sided_p(e.statistic, e.df);
  const double q = t_quantile_upper((1.0 - o.level) / 2.0, e.df);
  e.ci_low = e.estimate - q * e.std_error;
  e.ci_high = e.estimate + q * e.std_error;
}

inline void check_two_samples(std::string_view fn, std::span<const double> treated,
                              std::span<const double> control, const t_test_options& o) {
  check_open_unit(fn, "level", o.level);
  check_finite(fn, "null_value", o.null_value);
  check_min_size(fn, "treated", treated.size(), 2);
  check_min_size(fn, "control", control.size(), 2);
  check_finite(fn, "treated", treated);
  check_finite(fn, "control", control);
}

}  // namespace detail

/// @brief Welch's two-sample t test of mean(treated) − mean(control), unequal variances, with
/// the Welch–Satterthwaite degrees of freedom (R's `t.test(treated, control)`).
///
/// SE = √(s₁²/n₁ + s₀²/n₀); df = (v₁+v₀)² / (v₁²/(n₁−1) + v₀²/(n₀−1)), vⱼ = sⱼ²/nⱼ, evaluated
/// as df = 1 / (w₁²/(n₁−1) + w₀²/(n₀−1)) with wⱼ = vⱼ/(v₁+v₀) so that it cannot overflow.
/// @param treated outcomes of the treated arm (n ≥ 2, finite)
/// @param control outcomes of the control arm (n ≥ 2, finite)
/// @param options level, null value, degenerate-data policy
/// @returns method "welch", estimand "difference_in_means"
/// @throws invalid_argument on too few or non-finite observations or a level outside (0, 1);
///         numerical_error if both arms are constant or the SE overflows (unless options flag
///         it: status degenerate, or failed for an overflow)
[[nodiscard]] inline effect_estimate welch_t_test(std::span<const double> treated,
                                                  std::span<const double> control,
                                                  const t_test_options& options = {}) {
  constexpr std::string_view fn = "welch_t_test";
  detail::check_two_samples(fn, treated, control, options);
  const auto a = detail::moments(treated), b = detail::moments(control);
  const double n1 = static_cast<double>(a.n), n0 = static_cast<double>(b.n);
  const double v1 = a.variance / n1, v0 = b.variance / n0;
  effect_estimate e{.method = "welch", .estimand = "difference_in_means"};
  e.estimate = a.mean - b.mean;
  e.std_error = std::sqrt(v1 + v0);
  // Satterthwaite df in terms of the variance shares: (v1+v0)^2 and v^2 would overflow for
  // |data| ~ 1e80 and underflow for |data| ~ 1e-80 (NaN df); the shares are in [0, 1].
  const double w1 = v1 / (v1 + v0), w0 = v0 / (v1 + v0);
  e.df = 1.0 / (w1 * w1 / (n1 - 1.0) + w0 * w0 / (n0 - 1.0));
  e.level = options.level;
  e.n_treated = a.n;
  e.n_control = b.n;
  detail::finish_t(e, std::fmax(std::fabs(a.mean), std::fabs(b.mean)), options, fn);
  return e;
}

/// @brief Student's two-sample t test with a pooled variance (R's `t.test(..., var.equal = TRUE)`,
/// scipy's `ttest_ind` default).
///
/// s² = ((n₁−1)s₁² + (n₀−1)s₀²)/(n₁+n₀−2); SE = s·√(1/n₁ + 1/n₀); df = n₁+n₀−2.
/// @param treated outcomes of the treated arm (n ≥ 2, finite)
/// @param control outcomes of the control arm (n ≥ 2, finite)
/// @param options level, null value, degenerate-data policy
/// @returns method "student", estimand "difference_in_means"
/// @throws invalid_argument, numerical_error as welch_t_test
[[nodiscard]] inline effect_estimate student_t_test(std::span<const double> treated,
                                                    std::span<const double> control,
                                                    const t_test_options& options = {}) {
  constexpr std::string_view fn = "student_t_test";
  detail::check_two_samples(fn, treated, control, options);
  const auto a = detail::moments(treated), b = detail::moments(control);
  const double n1 = static_cast<double>(a.n), n0 = static_cast<double>(b.n);
  const double pooled = ((n1 - 1.0) * a.variance + (n0 - 1.0) * b.variance) / (n1 + n0 - 2.0);
  effect_estimate e{.method = "student", .estimand = "difference_in_means"};
  e.estimate = a.mean - b.mean;
  e.std_error = std::sqrt(pooled * (1.0 / n1 + 1.0 / n0));
  e.df = n1 + n0 - 2.0;
  e.level = options.level;
  e.n_treated = a.n;
  e.n_control = b.n;
  detail::finish_t(e, std::fmax(std::fabs(a.mean), std::fabs(b.mean)), options, fn);
  return e;
}

/// @brief Paired t test on the within-pair differences dᵢ = treatedᵢ − controlᵢ
/// (R's `t.test(treated, control, paired = TRUE)`).
///
/// estimate = mean(d); SE = sd(d)/√n; df = n − 1.
/// @param treated treated outcome of each pair (finite)
/// @param control control outcome of each pair, same order and size (n ≥ 2)
/// @param options level, null value, degenerate-data policy
/// @returns method "paired_t", estimand "mean_paired_difference", n_pairs set
/// @throws shape_mismatch if the sizes differ; invalid_argument, numerical_error as welch_t_test
[[nodiscard]] inline effect_estimate paired_t_test(std::span<const double> treated,
                                                   std::span<const double> control,
                                                   const t_test_options& options = {}) {
  constexpr std::string_view fn = "paired_t_test";
  detail::check_open_unit(fn, "level", options.level);
  detail::check_finite(fn, "null_value", options.null_value);
  detail::check_same_size(fn, "treated", treated.size(), "control", control.size());
  detail::check_min_size(fn, "treated", treated.size(), 2);
  detail::check_finite(fn, "treated", treated);
  detail::check_finite(fn, "control", control);
  const std::size_t n = treated.size();
  // Two passes over the differences without materialising them.
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += treated[i] - control[i];
  const double nn = static_cast<double>(n);
  const double mean0 = s / nn;
  double ss = 0, sd = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = (treated[i] - control[i]) - mean0;
    ss += d * d;
    sd += d;
  }
  const double mean = mean0 + sd / nn;  // refined as in detail::moments
  const double var = std::fmax(0.0, (ss - sd * sd / nn) / (nn - 1.0));
  effect_estimate e{.method = "paired_t", .estimand = "mean_paired_difference"};
  e.estimate = mean;
  e.std_error = std::sqrt(var / nn);
  e.df = nn - 1.0;
  e.level = options.level;
  e.n_pairs = n;
  detail::finish_t(e, std::fabs(mean), options, fn);
  return e;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_DIFFERENCE_IN_MEANS_HPP
