// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/sensitivity.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_IMPL_SENSITIVITY_INL_HPP
#define LATENTAUDIT_ESTIMATORS_IMPL_SENSITIVITY_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../sensitivity.hpp"

#include <boost/math/tools/roots.hpp>

#include "../detail/distributions.hpp"

namespace latentaudit::detail {

[[nodiscard]] LATENTAUDIT_INLINE double evalue_threshold(double x, double x0) noexcept {
  const double r = x >= x0 ? x / x0 : x0 / x;
  return r + std::sqrt(r * (r - 1.0));
}

[[nodiscard]] LATENTAUDIT_INLINE evalue_result evalue_rr_scale(std::string_view fn, double rr, double lo,
                                                               double hi, double rr0) {
  check_positive(fn, "estimate", rr);
  check_positive(fn, "true_value", rr0);
  const bool has_lo = !std::isnan(lo), has_hi = !std::isnan(hi);
  if (has_lo) {
    check_positive(fn, "ci_low", lo);
    if (lo > rr)
      throw_invalid(fn, "ci_low",
                    "must not exceed the estimate " + number_text(rr) + ", got " + number_text(lo));
  }
  if (has_hi) {
    check_positive(fn, "ci_high", hi);
    if (hi < rr)
      throw_invalid(fn, "ci_high",
                    "must not be below the estimate " + number_text(rr) + ", got " + number_text(hi));
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

LATENTAUDIT_INLINE void signed_ranks(std::span<const double> a, std::span<const double> b,
                                     std::vector<double>& q, std::vector<char>& pos, std::size_t& n_zero) {
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
  std::sort(idx.begin(), idx.end(),
            [&](std::size_t i, std::size_t j) { return std::fabs(d[i]) < std::fabs(d[j]); });
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

[[nodiscard]] LATENTAUDIT_INLINE double exact_signed_rank_upper(const std::vector<double>& q, double t,
                                                                double p) {
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

[[nodiscard]] LATENTAUDIT_INLINE signed_rank_data prepare_signed_rank(std::string_view fn,
                                                                      std::span<const double> a,
                                                                      std::span<const double> b,
                                                                      const rosenbaum_options& o) {
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

[[nodiscard]] LATENTAUDIT_INLINE rosenbaum_bound evaluate_bound(const signed_rank_data& s, double gamma,
                                                                bool exact, bool with_lower) {
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
}  // namespace latentaudit::detail

namespace latentaudit {

LATENTAUDIT_INLINE evalue_result evalue_risk_ratio(double rr, double ci_low, double ci_high,
                                                   const evalue_options& options) {
  constexpr std::string_view fn = "evalue_risk_ratio";
  const double rr0 = std::isnan(options.true_value) ? 1.0 : options.true_value;
  return detail::evalue_rr_scale(fn, rr, ci_low, ci_high, rr0);
}

LATENTAUDIT_INLINE evalue_result evalue_odds_ratio(double odds_ratio, double ci_low, double ci_high,
                                                   bool rare_outcome, const evalue_options& options) {
  constexpr std::string_view fn = "evalue_odds_ratio";
  const double or0 = std::isnan(options.true_value) ? 1.0 : options.true_value;
  detail::check_positive(fn, "odds_ratio", odds_ratio);
  detail::check_positive(fn, "true_value", or0);
  auto conv = [&](double v) { return std::isnan(v) || rare_outcome ? v : std::sqrt(v); };
  if (!std::isnan(ci_low)) detail::check_positive(fn, "ci_low", ci_low);
  if (!std::isnan(ci_high)) detail::check_positive(fn, "ci_high", ci_high);
  return detail::evalue_rr_scale(fn, conv(odds_ratio), conv(ci_low), conv(ci_high), conv(or0));
}

LATENTAUDIT_INLINE evalue_result evalue_smd(double d, double se, const evalue_options& options) {
  constexpr std::string_view fn = "evalue_smd";
  detail::check_finite(fn, "d", d);
  detail::check_positive(fn, "se", se);
  const double d0 = std::isnan(options.true_value) ? 0.0 : options.true_value;
  detail::check_finite(fn, "true_value", d0);
  return detail::evalue_rr_scale(fn, std::exp(0.91 * d), std::exp(0.91 * d - 1.78 * se),
                                 std::exp(0.91 * d + 1.78 * se), std::exp(0.91 * d0));
}

LATENTAUDIT_INLINE rosenbaum_bound rosenbaum_signed_rank(std::span<const double> treated,
                                                         std::span<const double> control, double gamma,
                                                         const rosenbaum_options& options) {
  constexpr std::string_view fn = "rosenbaum_signed_rank";
  if (!(gamma >= 1.0) || !std::isfinite(gamma)) {
    detail::throw_invalid(fn, "gamma", "must be >= 1 and finite, got " + number_text(gamma));
  }
  const auto s = detail::prepare_signed_rank(fn, treated, control, options);
  return detail::evaluate_bound(s, gamma, options.exact);
}

LATENTAUDIT_INLINE rosenbaum_critical_result rosenbaum_critical_gamma(std::span<const double> treated,
                                                                      std::span<const double> control,
                                                                      double alpha,
                                                                      const rosenbaum_options& options) {
  constexpr std::string_view fn = "rosenbaum_critical_gamma";
  if (!(alpha > 0.0 && alpha < 0.5)) {
    detail::throw_invalid(fn, "alpha", "must lie in (0, 0.5), got " + number_text(alpha));
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
    if (hi > std::log(1e12))
      detail::throw_numerical(fn, "the upper-bound p-value stays below alpha up to gamma = 1e12");
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

#endif  // LATENTAUDIT_ESTIMATORS_IMPL_SENSITIVITY_INL_HPP
