// SPDX-License-Identifier: MIT
// Test support: naive reference implementations (oracles) for the binary-outcome estimators of
// include/latentaudit/estimators/paired_binary.hpp. They are deliberately written differently
// from the library: long double, brute-force sums over the binomial pmf, R's binom.test rule
// applied literally, Wilson limits as the roots of the score quadratic.
#ifndef LATENTAUDIT_TESTS_SUPPORT_REFERENCE_BINARY_HPP
#define LATENTAUDIT_TESTS_SUPPORT_REFERENCE_BINARY_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace latentaudit::test {

/// log of the binomial pmf C(m, i) pⁱ (1−p)^(m−i), by lgamma in long double.
inline long double log_binomial_pmf(std::size_t i, std::size_t m, long double p) {
  const long double mm = static_cast<long double>(m), ii = static_cast<long double>(i);
  long double lp = std::lgamma(mm + 1) - std::lgamma(ii + 1) - std::lgamma(mm - ii + 1);
  if (i > 0) lp += ii * std::log(p);
  if (i < m) lp += (mm - ii) * std::log1p(-p);
  return lp;
}

/// Two-sided exact binomial p-value of x successes in m trials at p = 1/2 by R's binom.test rule
/// taken literally: the sum of d(i) over all i with d(i) <= d(x)·(1 + 1e-7).
inline double reference_binomial_p(std::size_t x, std::size_t m) {
  if (m == 0) return 1.0;
  const long double dx = std::exp(log_binomial_pmf(x, m, 0.5L));
  long double sum = 0;
  for (std::size_t i = 0; i <= m; ++i) {
    const long double di = std::exp(log_binomial_pmf(i, m, 0.5L));
    if (di <= dx * (1 + 1e-7L)) sum += di;
  }
  return static_cast<double>(std::min<long double>(1, sum));
}

/// The four cells (a, b, c, d) of paired 0/1 data, counted one pair at a time.
struct reference_table {
  std::size_t a = 0, b = 0, c = 0, d = 0;
};
inline reference_table reference_tabulate(std::span<const double> treated, std::span<const double> control) {
  reference_table t;
  for (std::size_t i = 0; i < treated.size(); ++i) {
    if (treated[i] > 0.5 && control[i] > 0.5) ++t.a;
    if (treated[i] > 0.5 && control[i] < 0.5) ++t.b;
    if (treated[i] < 0.5 && control[i] > 0.5) ++t.c;
    if (treated[i] < 0.5 && control[i] < 0.5) ++t.d;
  }
  return t;
}

/// Wilson limits as the two roots π of (x/n − π)² = z² π(1 − π)/n, i.e. of
/// (1 + z²/n) π² − (2x/n + z²/n) π + (x/n)² = 0, solved by the quadratic formula.
inline std::pair<long double, long double> reference_wilson(std::size_t x, std::size_t n, long double z) {
  const long double p = static_cast<long double>(x) / n, k = z * z / n;
  const long double qa = 1 + k, qb = -(2 * p + k), qc = p * p;
  const long double disc = std::max<long double>(0, qb * qb - 4 * qa * qc);
  return {(-qb - std::sqrt(disc)) / (2 * qa), (-qb + std::sqrt(disc)) / (2 * qa)};
}

/// Newcombe (1998c) method 10 for a paired table, long double, straight from the paper's notation
/// (l2, u2 for the first marginal, l3, u3 for the second; φ* with the n/2 correction).
inline std::pair<double, double> reference_newcombe_paired(const reference_table& t, long double z) {
  const std::size_t n = t.a + t.b + t.c + t.d;
  const long double e = t.a + t.b, f = t.c + t.d, g = t.a + t.c, h = t.b + t.d, nn = n;
  const auto [l2, u2] = reference_wilson(t.a + t.b, n, z);
  const auto [l3, u3] = reference_wilson(t.a + t.c, n, z);
  long double phi = 0;
  if (e * f * g * h != 0) {
    const long double ad = static_cast<long double>(t.a) * t.d, bc = static_cast<long double>(t.b) * t.c;
    const long double num = ad > bc ? std::max<long double>(ad - bc - nn / 2, 0) : ad - bc;
    phi = num / std::sqrt(e * f * g * h);
  }
  const long double p1 = e / nn, p2 = g / nn, theta = (static_cast<long double>(t.b) - t.c) / nn;
  const long double dl2 = p1 - l2, du2 = u2 - p1, dl3 = p2 - l3, du3 = u3 - p2;
  const long double delta = std::sqrt(std::max<long double>(0, dl2 * dl2 - 2 * phi * dl2 * du3 + du3 * du3));
  const long double eps = std::sqrt(std::max<long double>(0, du2 * du2 - 2 * phi * du2 * dl3 + dl3 * dl3));
  return {static_cast<double>(theta - delta), static_cast<double>(theta + eps)};
}

/// Newcombe (1998b) method 10 for two independent proportions, long double.
inline std::pair<double, double> reference_newcombe_unpaired(std::size_t x1, std::size_t n1, std::size_t x0,
                                                             std::size_t n0, long double z) {
  const auto [l1, u1] = reference_wilson(x1, n1, z);
  const auto [l0, u0] = reference_wilson(x0, n0, z);
  const long double p1 = static_cast<long double>(x1) / n1, p0 = static_cast<long double>(x0) / n0;
  return {static_cast<double>(p1 - p0 - std::sqrt((p1 - l1) * (p1 - l1) + (u0 - p0) * (u0 - p0))),
          static_cast<double>(p1 - p0 + std::sqrt((u1 - p1) * (u1 - p1) + (p0 - l0) * (p0 - l0)))};
}

/// Pearson chi-square of the 2x2 table of two independent samples (the uncorrected prop.test
/// statistic), from observed and expected counts of all four cells.
inline double reference_pearson_chi2(std::size_t x1, std::size_t n1, std::size_t x0, std::size_t n0) {
  const long double N = static_cast<long double>(n1) + n0, s = static_cast<long double>(x1) + x0;
  const long double obs[4] = {static_cast<long double>(x1), static_cast<long double>(n1 - x1),
                              static_cast<long double>(x0), static_cast<long double>(n0 - x0)};
  const long double exp[4] = {n1 * s / N, n1 * (N - s) / N, n0 * s / N, n0 * (N - s) / N};
  long double chi2 = 0;
  for (int i = 0; i < 4; ++i) chi2 += (obs[i] - exp[i]) * (obs[i] - exp[i]) / exp[i];
  return static_cast<double>(chi2);
}

/// Multinomial probability of the paired table t under cell probabilities (pa, pb, pc, pd).
inline long double multinomial_pmf(const reference_table& t, const long double (&p)[4]) {
  const std::size_t cells[4] = {t.a, t.b, t.c, t.d};
  const std::size_t n = t.a + t.b + t.c + t.d;
  long double lp = std::lgamma(static_cast<long double>(n) + 1);
  for (int k = 0; k < 4; ++k) {
    lp -= std::lgamma(static_cast<long double>(cells[k]) + 1);
    if (cells[k] > 0) lp += cells[k] * std::log(p[k]);
  }
  return std::exp(lp);
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_REFERENCE_BINARY_HPP
