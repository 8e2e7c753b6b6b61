// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/detail/distributions.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_DETAIL_IMPL_DISTRIBUTIONS_INL_HPP
#define LATENTAUDIT_ESTIMATORS_DETAIL_IMPL_DISTRIBUTIONS_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../distributions.hpp"

#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>

namespace latentaudit::detail {

[[nodiscard]] LATENTAUDIT_INLINE double normal_cdf(double x) {
  return boost::math::cdf(boost::math::normal_distribution<double, math_policy>(), x);
}

[[nodiscard]] LATENTAUDIT_INLINE double normal_upper(double x) {
  return boost::math::cdf(
      boost::math::complement(boost::math::normal_distribution<double, math_policy>(), x));
}

[[nodiscard]] LATENTAUDIT_INLINE double normal_quantile(double p) {
  if (p <= 0.0) return -std::numeric_limits<double>::infinity();
  if (p >= 1.0) return std::numeric_limits<double>::infinity();
  return boost::math::quantile(boost::math::normal_distribution<double, math_policy>(), p);
}

[[nodiscard]] LATENTAUDIT_INLINE double normal_quantile_upper(double q) {
  if (q <= 0.0) return std::numeric_limits<double>::infinity();
  if (q >= 1.0) return -std::numeric_limits<double>::infinity();
  return boost::math::quantile(
      boost::math::complement(boost::math::normal_distribution<double, math_policy>(), q));
}

[[nodiscard]] LATENTAUDIT_INLINE double t_cdf(double x, double df) {
  if (std::isinf(df)) return normal_cdf(x);
  return boost::math::cdf(boost::math::students_t_distribution<double, math_policy>(df), x);
}

[[nodiscard]] LATENTAUDIT_INLINE double t_upper(double x, double df) {
  if (std::isinf(df)) return normal_upper(x);
  return boost::math::cdf(
      boost::math::complement(boost::math::students_t_distribution<double, math_policy>(df), x));
}

[[nodiscard]] LATENTAUDIT_INLINE double t_two_sided_p(double t, double df) {
  const double p = 2.0 * t_upper(std::fabs(t), df);
  return p > 1.0 ? 1.0 : p;
}

[[nodiscard]] LATENTAUDIT_INLINE double t_quantile_upper(double q, double df) {
  if (std::isinf(df)) return normal_quantile_upper(q);
  return boost::math::quantile(
      boost::math::complement(boost::math::students_t_distribution<double, math_policy>(df), q));
}

[[nodiscard]] LATENTAUDIT_INLINE double chi2_upper(double x, double df) {
  if (x <= 0.0) return 1.0;
  return boost::math::cdf(
      boost::math::complement(boost::math::chi_squared_distribution<double, math_policy>(df), x));
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_ESTIMATORS_DETAIL_IMPL_DISTRIBUTIONS_INL_HPP
