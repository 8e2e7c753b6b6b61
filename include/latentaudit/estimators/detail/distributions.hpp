// SPDX-License-Identifier: MIT
// latentaudit: Student t and normal distribution helpers over Boost.Math, with tails computed by
// complement() (never 1 - cdf) and quantiles at full double precision.
#ifndef LATENTAUDIT_ESTIMATORS_DETAIL_DISTRIBUTIONS_HPP
#define LATENTAUDIT_ESTIMATORS_DETAIL_DISTRIBUTIONS_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <boost/math/policies/policy.hpp>
#include <cmath>
#include <limits>

#include "../../config.hpp"

namespace latentaudit::detail {

/// @brief Boost.Math policy: errors throw (the library checks arguments before calling), and
/// double is evaluated in long double internally (max rel. error 2.2e-16 on our grid).
using math_policy = boost::math::policies::policy<>;

/// @brief Standard normal cdf Φ(x).
[[nodiscard]] double normal_cdf(double x);
/// @brief Upper tail 1 - Φ(x), accurate for large x.
[[nodiscard]] double normal_upper(double x);
/// @brief Standard normal quantile Φ⁻¹(p), 0 < p < 1; ±inf at p = 0 or 1.
[[nodiscard]] double normal_quantile(double p);
/// @brief Upper-tail quantile: x with 1 - Φ(x) = q, computed by complement.
[[nodiscard]] double normal_quantile_upper(double q);
/// @brief Student t cdf with df > 0 (df = inf gives the normal).
[[nodiscard]] double t_cdf(double x, double df);
/// @brief Student t upper tail P(T > x).
[[nodiscard]] double t_upper(double x, double df);
/// @brief Two-sided p-value 2 P(T > |t|), capped at 1.
[[nodiscard]] double t_two_sided_p(double t, double df);
/// @brief Student t upper-tail quantile: x with P(T > x) = q.
[[nodiscard]] double t_quantile_upper(double q, double df);
/// @brief Chi-square upper tail P(X > x) with df degrees of freedom.
[[nodiscard]] double chi2_upper(double x, double df);

}  // namespace latentaudit::detail

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/distributions-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_DETAIL_DISTRIBUTIONS_HPP
