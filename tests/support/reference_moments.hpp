// SPDX-License-Identifier: MIT
// Test support: naive reference implementations (oracles) of the two-sample and paired t tests and
// of the two one-sided tests (TOST), written straight from the textbook formulas in long double,
// sharing no code with the library. Used by the property tests of estimators/difference_in_means
// and estimators/equivalence. The distribution functions come from Boost.Math directly (with
// long double arguments), not from latentaudit::detail.
#ifndef LATENTAUDIT_TESTS_SUPPORT_REFERENCE_MOMENTS_HPP
#define LATENTAUDIT_TESTS_SUPPORT_REFERENCE_MOMENTS_HPP

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <cstddef>
#include <vector>

namespace latentaudit::test {

/// Naive mean: long double sum over n.
inline long double ref_mean(const std::vector<double>& x) {
  long double s = 0;
  for (double v : x) s += v;
  return s / static_cast<long double>(x.size());
}

/// Naive unbiased variance: two passes in long double.
inline long double ref_variance(const std::vector<double>& x) {
  const long double m = ref_mean(x);
  long double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return ss / static_cast<long double>(x.size() - 1);
}

/// What a t test computes, in double after long double arithmetic.
struct ref_t_result {
  double estimate, std_error, df, statistic, p_value, ci_low, ci_high;
};

/// t reference: statistic, two-sided p and the two-sided CI from estimate, SE and df.
inline ref_t_result ref_finish(long double est, long double se, long double df, double level, double mu) {
  const boost::math::students_t_distribution<long double> t(df);
  const long double stat = (est - mu) / se;
  const long double p = 2 * boost::math::cdf(boost::math::complement(t, std::fabs(stat)));
  const long double q = boost::math::quantile(t, 1.0L - (1.0L - level) / 2);
  return {static_cast<double>(est),
          static_cast<double>(se),
          static_cast<double>(df),
          static_cast<double>(stat),
          static_cast<double>(std::min(p, 1.0L)),
          static_cast<double>(est - q * se),
          static_cast<double>(est + q * se)};
}

/// Welch: SE² = s₁²/n₁ + s₀²/n₀, Satterthwaite df.
inline ref_t_result ref_welch(const std::vector<double>& a, const std::vector<double>& b, double level = 0.95,
                              double mu = 0.0) {
  const long double n1 = a.size(), n0 = b.size();
  const long double v1 = ref_variance(a) / n1, v0 = ref_variance(b) / n0;
  const long double df = (v1 + v0) * (v1 + v0) / (v1 * v1 / (n1 - 1) + v0 * v0 / (n0 - 1));
  return ref_finish(ref_mean(a) - ref_mean(b), std::sqrt(v1 + v0), df, level, mu);
}

/// Student: pooled variance, df = n₁ + n₀ − 2.
inline ref_t_result ref_student(const std::vector<double>& a, const std::vector<double>& b,
                                double level = 0.95, double mu = 0.0) {
  const long double n1 = a.size(), n0 = b.size();
  const long double s2 = ((n1 - 1) * ref_variance(a) + (n0 - 1) * ref_variance(b)) / (n1 + n0 - 2);
  return ref_finish(ref_mean(a) - ref_mean(b), std::sqrt(s2 * (1 / n1 + 1 / n0)), n1 + n0 - 2, level, mu);
}

/// Paired: one-sample t on d = a − b.
inline ref_t_result ref_paired(const std::vector<double>& a, const std::vector<double>& b,
                               double level = 0.95, double mu = 0.0) {
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  const long double n = d.size();
  return ref_finish(ref_mean(d), std::sqrt(ref_variance(d) / n), n - 1, level, mu);
}

/// TOST p-values from an oracle t result: p_lower = P(T ≥ (est − low)/se),
/// p_upper = P(T ≤ (est − high)/se).
struct ref_tost_result {
  double p_lower, p_upper;
};

/// The two one-sided p-values for bounds (low, high).
inline ref_tost_result ref_tost(const ref_t_result& r, double low, double high) {
  const boost::math::students_t_distribution<long double> t(r.df);
  const long double tl = (static_cast<long double>(r.estimate) - low) / r.std_error;
  const long double tu = (static_cast<long double>(r.estimate) - high) / r.std_error;
  return {static_cast<double>(boost::math::cdf(boost::math::complement(t, tl))),
          static_cast<double>(boost::math::cdf(t, tu))};
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_REFERENCE_MOMENTS_HPP
