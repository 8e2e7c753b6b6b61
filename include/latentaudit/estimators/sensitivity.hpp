// SPDX-License-Identifier: MIT
// latentaudit: sensitivity to unmeasured confounding — E-values (VanderWeele & Ding 2017) for risk
// ratios, odds ratios and standardised mean differences, and Rosenbaum bounds for matched pairs
// with the Wilcoxon signed-rank statistic (normal approximation as rbounds::psens, or exact), with
// the critical Γ at which significance is lost.
// Formulas and references: docs/estimators/sensitivity.md.
#ifndef LATENTAUDIT_ESTIMATORS_SENSITIVITY_HPP
#define LATENTAUDIT_ESTIMATORS_SENSITIVITY_HPP

#include <algorithm>
#include <boost/math/tools/roots.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/detail/check.hpp"
#include "detail/distributions.hpp"

namespace latentaudit {

/// @brief An E-value: the minimum strength of association (risk-ratio scale) that an unmeasured
/// confounder would need with both treatment and outcome to explain away the estimate (or to move
/// it to `true_value`), and the same for the confidence limit closest to the null.
struct evalue_result {
  double point = std::numeric_limits<double>::quiet_NaN();  ///< E-value of the point estimate (≥ 1)
  double ci = std::numeric_limits<double>::quiet_NaN();     ///< E-value of the CI limit closest to the null (1 if the CI covers it; NaN without a CI)
  double rr = std::numeric_limits<double>::quiet_NaN();     ///< the estimate on the risk-ratio scale
  double rr_low = std::numeric_limits<double>::quiet_NaN();   ///< lower CI limit on the risk-ratio scale
  double rr_high = std::numeric_limits<double>::quiet_NaN();  ///< upper CI limit on the risk-ratio scale
  double rr_true = 1.0;  ///< the null (true) value on the risk-ratio scale
};

/// @brief Options of the E-value functions.
struct evalue_options {
  /// The value to shift the estimate to, on the scale of the estimate (1 for ratios; for
  /// evalue_smd 0). Default: the null (NaN means "1 for ratios, 0 for the SMD").
  double true_value = std::numeric_limits<double>::quiet_NaN();
};

/// @brief E-value of a risk ratio (VanderWeele & Ding 2017): with RR* = RR/RR₀ if RR > RR₀ and
/// RR₀/RR otherwise, E = RR* + √(RR*(RR* − 1)). The CI E-value uses the limit closest to RR₀
/// (lower for RR > RR₀, upper for RR < RR₀) and is 1 when the interval contains RR₀.
/// @param rr the risk ratio (> 0, finite)
/// @param ci_low lower confidence limit (> 0, ≤ rr), or NaN for none
/// @param ci_high upper confidence limit (≥ rr), or NaN for none
/// @param options the true value (default 1)
/// @returns point and CI E-values
/// @throws invalid_argument on non-positive or non-finite values, or limits not bracketing rr
[[nodiscard]] inline evalue_result evalue_risk_ratio(double rr, double ci_low = std::numeric_limits<double>::quiet_NaN(),
                                                     double ci_high = std::numeric_limits<double>::quiet_NaN(),
                                                     const evalue_options& options = {});

/// @brief E-value of an odds ratio: converted to the risk-ratio scale first — RR ≈ OR when the
/// outcome is rare (< 15 % in every stratum), RR ≈ √OR when it is common (VanderWeele 2017) —
/// then as evalue_risk_ratio (the true value is converted the same way).
/// @param odds_ratio the odds ratio (> 0)
/// @param ci_low lower limit or NaN
/// @param ci_high upper limit or NaN
/// @param rare_outcome true: RR ≈ OR; false: RR ≈ √OR
/// @param options the true value (default 1)
/// @returns point and CI E-values, with the risk-ratio-scale values used
/// @throws invalid_argument as evalue_risk_ratio
[[nodiscard]] inline evalue_result evalue_odds_ratio(double odds_ratio, double ci_low, double ci_high,
                                                     bool rare_outcome, const evalue_options& options = {});

/// @brief E-value of a standardised mean difference d with standard error se (VanderWeele & Ding
/// 2017, as EValue::evalues.MD): RR ≈ exp(0.91 d), CI exp(0.91 d ∓ 1.78 se), true value
/// exp(0.91 d₀); then as evalue_risk_ratio.
/// @param d the standardised mean difference (finite)
/// @param se its standard error (> 0)
/// @param options the true value d₀ (default 0)
/// @returns point and CI E-values
/// @throws invalid_argument on non-finite d or non-positive se
[[nodiscard]] inline evalue_result evalue_smd(double d, double se, const evalue_options& options = {});

/// @brief Options of the Rosenbaum bounds.
struct rosenbaum_options {
  /// false: large-sample normal approximation (as rbounds::psens); true: the exact distribution
  /// of the signed-rank statistic under the bounding Bernoulli model (n ≤ exact_max_pairs).
  bool exact = false;
  std::size_t exact_max_pairs = 500;  ///< largest number of non-zero pairs for the exact method
};

/// @brief Rosenbaum bounds on the one-sided p-value of Wilcoxon's signed-rank test (H₁: treated >
/// control) when treatment odds within a pair may differ by a factor Γ.
struct rosenbaum_bound {
  double gamma = 1;               ///< Γ ≥ 1
  double statistic = 0;           ///< T⁺ = Σ rank(|dᵢ|)·[dᵢ > 0] over non-zero differences
  double expectation_upper = 0;   ///< E⁺ = p⁺ Σ qᵢ, p⁺ = Γ/(1+Γ)
  double expectation_lower = 0;   ///< E⁻ = p⁻ Σ qᵢ, p⁻ = 1/(1+Γ)
  double variance = 0;            ///< V = p⁺p⁻ Σ qᵢ² (same for both bounds)
  double p_upper = 0;             ///< upper bound on the p-value (the one that matters)
  double p_lower = 0;             ///< lower bound on the p-value
  std::size_t n_pairs = 0;        ///< non-zero differences used
  std::size_t n_zero = 0;         ///< zero differences dropped
  bool exact = false;             ///< p-values from the exact distribution
};

/// @brief Rosenbaum bounds for matched pairs with the signed-rank statistic.
///
/// dᵢ = treatedᵢ − controlᵢ; zero differences are dropped; qᵢ = average rank of |dᵢ| (ties share
/// the mean rank). Normal approximation (rbounds::psens): z± = (T⁺ − E±)/√V, p = P(Z > z) without
/// continuity correction, upper bound with E⁺ and lower bound with E⁻. At Γ = 1 this is R's
/// `wilcox.test(treated, control, paired = TRUE, alternative = "greater", exact = FALSE,
/// correct = FALSE)` (the average-rank variance equals R's tie-corrected variance). Exact: P(T ≥
/// T⁺) with T = Σ qᵢ Bᵢ, Bᵢ ~ Bernoulli(p±) independent.
/// @param treated treated outcome per pair (finite)
/// @param control control outcome per pair, same size
/// @param gamma Γ ≥ 1 (finite)
/// @param options exact or normal
/// @returns the bounds and their ingredients
/// @throws shape_mismatch if sizes differ; invalid_argument on NaN, Γ < 1, fewer than 1 non-zero
///         difference, or too many pairs for the exact method
[[nodiscard]] inline rosenbaum_bound rosenbaum_signed_rank(std::span<const double> treated,
                                                           std::span<const double> control, double gamma,
                                                           const rosenbaum_options& options = {});

/// @brief The sensitivity value: the Γ at which the upper-bound p-value reaches α.
struct rosenbaum_critical_result {
  double gamma = 1;           ///< Γ* with p_upper(Γ*) = α; 1 when not significant at Γ = 1
  double alpha = 0.05;        ///< the significance level
  bool significant_at_one = false;  ///< p_upper(1) < α (otherwise gamma = 1 and there is nothing to lose)
  double p_at_one = 0;        ///< the p-value at Γ = 1
  int iterations = 0;         ///< root-finder iterations
};

/// @brief Finds Γ* where the upper-bound p-value of rosenbaum_signed_rank equals α, by TOMS 748
/// (Boost.Math) on log Γ; p_upper is increasing in Γ.
/// @param treated treated outcome per pair
/// @param control control outcome per pair
/// @param alpha one-sided level in (0, 0.5)
/// @param options exact or normal
/// @returns Γ* (relative accuracy ~1e-14) and whether the test is significant at Γ = 1
/// @throws as rosenbaum_signed_rank; invalid_argument for α outside (0, 0.5); numerical_error if no
///         bracket is found below Γ = 1e12
[[nodiscard]] inline rosenbaum_critical_result rosenbaum_critical_gamma(std::span<const double> treated,
                                                                        std::span<const double> control,
                                                                        double alpha = 0.05,
                                                                        const rosenbaum_options& options = {});

// ---- implementation ----

namespace detail {

/// @brief E = r + √(r(r − 1)) with r = x/x₀ or x₀/x, whichever is ≥ 1.
[[nodiscard]] inline double evalue_threshold(double x, double x0) noexcept {
  const double r = x >= x0 ? x / x0 : x0 / x;
  return r + std::sqrt(r * (r - 1.0));
}

[[nodiscard]] inline evalue_result evalue_rr_scale(std::string_view fn, double rr, double lo, double hi, double rr0) {
  check_positive(fn, "estimate", rr);
  check_positive(fn, "true_value", rr0);
  const bool has_lo = !std::isnan(lo), has_hi = !std::isnan(hi);
  if (has_lo) {
    check_positive(fn, "ci_low", lo);
    if (lo > rr) throw_invalid(fn, "ci_low", "must not exceed the estimate " + number_text(rr) + ", got " + number_text(lo));
  }
  if (has_hi) {
    check_positive(fn, "ci_high", hi);
    if (hi < rr) throw_invalid(fn, "ci_high", "must not be below the estimate " + number_text(rr) + ", got " + number_text(hi));
  }
  evalue_result r;
  r.rr = rr;
  r.rr_low = lo;
  r.rr_high = hi;
  r.rr_true = rr0;
  r.point = rr == rr0 ? 1.0 : evalue_threshold(rr, rr0);
  if (rr > rr0) {
    if (has_lo) r.ci = lo <= rr0 ? 1.0 : evalue_threshold(lo, rr0);
  } else if (rr < rr0) {
    if (has_hi) r.ci = hi >= rr0 ? 1.0 : evalue_threshold(hi, rr0);
  } else if (has_lo || has_hi) {
    r.ci = 1.0;
  }
  return r;
}

/// @brief Drops zero differences and returns (average ranks of |d|, sign indicator).
inline void signed_ranks(std::span<const double> a, std::span<const double> b, std::vector<double>& q,
                         std::vector<char>& pos, std::size_t& n_zero) {
  std::vector<double> d;
  d.reserve(a.size());
  n_zero = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double v = a[i] - b[i];
    if (v == 0.0) {
      ++n_zero;
    } else {
      d.push_back(v);
    }
  }
  const std::size_t n = d.size();
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::sort(idx.begin(), idx.end(), [&](std::size_t i, std::size_t j) { return std::fabs(d[i]) < std::fabs(d[j]); });
  q.assign(n, 0.0);
  pos.assign(n, 0);
  for (std::size_t s = 0; s < n;) {
    std::size_t e = s + 1;
    while (e < n && std::fabs(d[idx[e]]) == std::fabs(d[idx[s]])) ++e;
    const double avg = 0.5 * static_cast<double>(s + 1 + e);  // mean of ranks s+1 … e
    for (std::size_t k = s; k < e; ++k) q[idx[k]] = avg;
    s = e;
  }
  for (std::size_t i = 0; i < n; ++i) pos[i] = d[i] > 0 ? 1 : 0;
}

/// @brief Exact P(Σ qᵢBᵢ ≥ t) with Bᵢ ~ Bernoulli(p), ranks doubled to integers (average ranks are
/// multiples of ½); dynamic programming over the attainable sums.
[[nodiscard]] inline double exact_signed_rank_upper(const std::vector<double>& q, double t, double p) {
  std::vector<std::size_t> r(q.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < q.size(); ++i) {
    r[i] = static_cast<std::size_t>(std::llround(2.0 * q[i]));
    total += r[i];
  }
  std::vector<double> f(total + 1, 0.0);
  f[0] = 1.0;
  std::size_t reach = 0;
  for (std::size_t ri : r) {
    for (std::size_t s = reach + 1; s-- > 0;) {
      const double v = f[s];
      f[s] = v * (1.0 - p);
      f[s + ri] += v * p;
    }
    reach += ri;
  }
  const auto t2 = static_cast<std::size_t>(std::llround(2.0 * t));
  double tail = 0;
  for (std::size_t s = total + 1; s-- > t2;) tail += f[s];  // smallest terms first
  return std::fmin(1.0, tail);
}

/// @brief Ranks prepared once for repeated evaluation at several Γ.
struct signed_rank_data {
  std::vector<double> q;
  std::vector<char> pos;
  double t = 0, sum_q = 0, sum_q2 = 0;
  std::size_t n_zero = 0;
};

[[nodiscard]] inline signed_rank_data prepare_signed_rank(std::string_view fn, std::span<const double> a,
                                                          std::span<const double> b, const rosenbaum_options& o) {
  check_same_size(fn, "treated", a.size(), "control", b.size());
  check_finite(fn, "treated", a);
  check_finite(fn, "control", b);
  signed_rank_data s;
  signed_ranks(a, b, s.q, s.pos, s.n_zero);
  if (s.q.empty()) {
    throw_invalid(fn, "treated",
                  "has no pair with a non-zero difference (" + std::to_string(s.n_zero) +
                      " zero differences), the signed-rank statistic is undefined");
  }
  if (o.exact && s.q.size() > o.exact_max_pairs) {
    throw_invalid(fn, "options.exact",
                  "is limited to " + std::to_string(o.exact_max_pairs) + " non-zero pairs, got " +
                      std::to_string(s.q.size()) + "; use the normal approximation");
  }
  for (std::size_t i = 0; i < s.q.size(); ++i) {
    s.sum_q += s.q[i];
    s.sum_q2 += s.q[i] * s.q[i];
    if (s.pos[i]) s.t += s.q[i];
  }
  return s;
}

/// @brief Both bounds at Γ (the lower one only when `with_lower`, to spare the exact DP).
[[nodiscard]] inline rosenbaum_bound evaluate_bound(const signed_rank_data& s, double gamma, bool exact,
                                                    bool with_lower = true) {
  rosenbaum_bound r;
  r.gamma = gamma;
  r.exact = exact;
  r.statistic = s.t;
  r.n_pairs = s.q.size();
  r.n_zero = s.n_zero;
  const double pp = gamma / (1.0 + gamma), pm = 1.0 / (1.0 + gamma);
  r.expectation_upper = pp * s.sum_q;
  r.expectation_lower = pm * s.sum_q;
  r.variance = pp * pm * s.sum_q2;
  if (exact) {
    r.p_upper = exact_signed_rank_upper(s.q, s.t, pp);
    r.p_lower = with_lower ? exact_signed_rank_upper(s.q, s.t, pm) : std::numeric_limits<double>::quiet_NaN();
  } else {
    const double sd = std::sqrt(r.variance);
    r.p_upper = normal_upper((s.t - r.expectation_upper) / sd);
    r.p_lower = normal_upper((s.t - r.expectation_lower) / sd);
  }
  return r;
}

}  // namespace detail

inline evalue_result evalue_risk_ratio(double rr, double ci_low, double ci_high, const evalue_options& options) {
  constexpr std::string_view fn = "evalue_risk_ratio";
  const double rr0 = std::isnan(options.true_value) ? 1.0 : options.true_value;
  return detail::evalue_rr_scale(fn, rr, ci_low, ci_high, rr0);
}

inline evalue_result evalue_odds_ratio(double odds_ratio, double ci_low, double ci_high, bool rare_outcome,
                                       const evalue_options& options) {
  constexpr std::string_view fn = "evalue_odds_ratio";
  const double or0 = std::isnan(options.true_value) ? 1.0 : options.true_value;
  detail::check_positive(fn, "odds_ratio", odds_ratio);
  detail::check_positive(fn, "true_value", or0);
  auto conv = [&](double v) { return std::isnan(v) || rare_outcome ? v : std::sqrt(v); };
  if (!std::isnan(ci_low)) detail::check_positive(fn, "ci_low", ci_low);
  if (!std::isnan(ci_high)) detail::check_positive(fn, "ci_high", ci_high);
  return detail::evalue_rr_scale(fn, conv(odds_ratio), conv(ci_low), conv(ci_high), conv(or0));
}

inline evalue_result evalue_smd(double d, double se, const evalue_options& options) {
  constexpr std::string_view fn = "evalue_smd";
  detail::check_finite(fn, "d", d);
  detail::check_positive(fn, "se", se);
  const double d0 = std::isnan(options.true_value) ? 0.0 : options.true_value;
  detail::check_finite(fn, "true_value", d0);
  return detail::evalue_rr_scale(fn, std::exp(0.91 * d), std::exp(0.91 * d - 1.78 * se), std::exp(0.91 * d + 1.78 * se),
                                 std::exp(0.91 * d0));
}

inline rosenbaum_bound rosenbaum_signed_rank(std::span<const double> treated, std::span<const double> control,
                                             double gamma, const rosenbaum_options& options) {
  constexpr std::string_view fn = "rosenbaum_signed_rank";
  if (!(gamma >= 1.0) || !std::isfinite(gamma)) {
    detail::throw_invalid(fn, "gamma", "must be >= 1 and finite, got " + detail::number_text(gamma));
  }
  const auto s = detail::prepare_signed_rank(fn, treated, control, options);
  return detail::evaluate_bound(s, gamma, options.exact);
}

inline rosenbaum_critical_result rosenbaum_critical_gamma(std::span<const double> treated,
                                                          std::span<const double> control, double alpha,
                                                          const rosenbaum_options& options) {
  constexpr std::string_view fn = "rosenbaum_critical_gamma";
  if (!(alpha > 0.0 && alpha < 0.5)) {
    detail::throw_invalid(fn, "alpha", "must lie in (0, 0.5), got " + detail::number_text(alpha));
  }
  const auto s = detail::prepare_signed_rank(fn, treated, control, options);
  rosenbaum_critical_result r;
  r.alpha = alpha;
  auto f = [&](double log_gamma) {
    return detail::evaluate_bound(s, std::exp(log_gamma), options.exact, false).p_upper - alpha;
  };
  const double f0 = f(0.0);
  r.p_at_one = f0 + alpha;
  r.significant_at_one = f0 < 0.0;
  if (!r.significant_at_one) return r;
  // Bracket: double log Γ until the p-value exceeds α.
  double lo = 0.0, hi = 1.0, fhi = f(hi);
  double flo = f0;
  while (fhi < 0.0) {
    lo = hi;
    flo = fhi;
    hi *= 2.0;
    if (hi > std::log(1e12)) detail::throw_numerical(fn, "the upper-bound p-value stays below alpha up to gamma = 1e12");
    fhi = f(hi);
  }
  std::uintmax_t iters = 200;
  const auto root = boost::math::tools::toms748_solve(f, lo, hi, flo, fhi,
                                                      boost::math::tools::eps_tolerance<double>(50), iters);
  r.gamma = std::exp(0.5 * (root.first + root.second));
  r.iterations = static_cast<int>(iters);
  return r;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_SENSITIVITY_HPP
