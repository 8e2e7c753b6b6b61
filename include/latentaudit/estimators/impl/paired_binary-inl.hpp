// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/paired_binary.hpp (header-only mode includes this file; compiled
// mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_IMPL_PAIRED_BINARY_INL_HPP
#define LATENTAUDIT_ESTIMATORS_IMPL_PAIRED_BINARY_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../paired_binary.hpp"

#include <boost/math/distributions/binomial.hpp>

#include "../detail/distributions.hpp"

namespace latentaudit::detail {

[[nodiscard]] LATENTAUDIT_INLINE double binomial_half_two_sided_p(std::size_t x, std::size_t m) {
  if (m == 0) return 1.0;
  const std::size_t k = x < m - x ? x : m - x;
  if (2 * k == m) return 1.0;  // x is the mode: every outcome is as likely or less
  const boost::math::binomial_distribution<double, math_policy> dist(static_cast<double>(m), 0.5);
  // The lower tail of the smaller count is the small tail: no cancellation.
  const double p = 2.0 * boost::math::cdf(dist, static_cast<double>(k));
  return p > 1.0 ? 1.0 : p;
}

[[nodiscard]] LATENTAUDIT_INLINE proportion_interval wilson_limits(double x, double n, double z) noexcept {
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

[[nodiscard]] LATENTAUDIT_INLINE proportion_interval wilson_cc_limits(double x, double n, double z) noexcept {
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

[[nodiscard]] LATENTAUDIT_INLINE double two_sided_z(double level) {
  return normal_quantile_upper((1.0 - level) / 2.0);
}

LATENTAUDIT_INLINE void check_count(std::string_view fn, std::string_view name, std::size_t x) {
  if (x > max_binary_count) {
    throw_invalid(fn, name, "must be at most 2^53, got " + std::to_string(x));
  }
}

LATENTAUDIT_INLINE void check_counts(std::string_view fn, std::string_view name, const binary_counts& x) {
  check_count(fn, name, x.trials);
  if (x.trials == 0) throw_invalid(fn, name, "has 0 trials, expected at least 1");
  if (x.successes > x.trials) {
    throw_invalid(fn, name,
                  "has " + std::to_string(x.successes) + " successes in " + std::to_string(x.trials) +
                      " trials, expected successes <= trials");
  }
}

[[nodiscard]] LATENTAUDIT_INLINE std::size_t count_ones(std::span<const double> x) noexcept {
  std::size_t k = 0;
  for (double v : x) k += v == 1.0 ? 1 : 0;
  return k;
}
}  // namespace latentaudit::detail

namespace latentaudit {

[[nodiscard]] LATENTAUDIT_INLINE proportion_interval wilson_interval(binary_counts x,
                                                                     const wilson_options& options) {
  constexpr std::string_view fn = "wilson_interval";
  detail::check_open_unit(fn, "level", options.level);
  detail::check_counts(fn, "x", x);
  const double z = detail::two_sided_z(options.level);
  const double s = static_cast<double>(x.successes), n = static_cast<double>(x.trials);
  auto r = options.continuity_correction ? detail::wilson_cc_limits(s, n, z) : detail::wilson_limits(s, n, z);
  r.level = options.level;
  return r;
}

[[nodiscard]] LATENTAUDIT_INLINE mcnemar_result mcnemar_test(const paired_binary_table& table,
                                                             const mcnemar_options& options) {
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
    detail::throw_numerical(fn,
                            "no discordant pairs (b + c = 0); the McNemar chi-square statistic is undefined");
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

[[nodiscard]] LATENTAUDIT_INLINE mcnemar_result mcnemar_test(std::span<const double> treated,
                                                             std::span<const double> control,
                                                             const mcnemar_options& options) {
  constexpr std::string_view fn = "mcnemar_test";
  detail::check_open_unit(fn, "level", options.level);
  detail::check_same_size(fn, "treated", treated.size(), "control", control.size());
  detail::check_min_size(fn, "treated", treated.size(), 1);
  detail::check_binary(fn, "treated", treated);
  detail::check_binary(fn, "control", control);
  paired_binary_table t;
  for (std::size_t i = 0; i < treated.size(); ++i) {
    const bool y1 = treated[i] == 1.0, y0 = control[i] == 1.0;
    if (y1 && y0)
      ++t.both;
    else if (y1)
      ++t.treated_only;
    else if (y0)
      ++t.control_only;
    else
      ++t.neither;
  }
  return mcnemar_test(t, options);
}

[[nodiscard]] LATENTAUDIT_INLINE effect_estimate two_proportion_test(binary_counts treated,
                                                                     binary_counts control,
                                                                     const two_proportion_options& options) {
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
    detail::throw_numerical(fn, "all outcomes are equal (pooled proportion " + number_text(pooled) +
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

[[nodiscard]] LATENTAUDIT_INLINE effect_estimate two_proportion_test(std::span<const double> treated,
                                                                     std::span<const double> control,
                                                                     const two_proportion_options& options) {
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

#endif  // LATENTAUDIT_ESTIMATORS_IMPL_PAIRED_BINARY_INL_HPP
