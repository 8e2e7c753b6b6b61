// SPDX-License-Identifier: MIT
// Test support: naive O(m²) multiplicity procedures written from their textbook definitions
// (step-down / step-up rejection rules and adjusted p-values as max/min over ranks), used as
// oracles for estimators/multiplicity.hpp in property tests.
#ifndef LATENTAUDIT_TESTS_SUPPORT_REFERENCE_MULTIPLICITY_HPP
#define LATENTAUDIT_TESTS_SUPPORT_REFERENCE_MULTIPLICITY_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

namespace latentaudit::test {

/// Ranks 0..m-1 of p in ascending order (ties broken by index).
inline std::vector<std::size_t> ascending_order(const std::vector<double>& p) {
  std::vector<std::size_t> o(p.size());
  std::iota(o.begin(), o.end(), std::size_t{0});
  std::stable_sort(o.begin(), o.end(), [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  return o;
}

/// Adjusted p-values by definition: with sorted p₍₁₎..p₍ₘ₎,
/// holm: min(1, max_{j≤i} (m−j+1)p₍ⱼ₎); hochberg: min(1, min_{j≥i} (m−j+1)p₍ⱼ₎);
/// bh: min(1, min_{j≥i} m p₍ⱼ₎/j); by: bh times Σ 1/k; bonferroni: min(1, m p).
inline std::vector<double> naive_adjust(const std::vector<double>& p, const std::string& method) {
  const std::size_t m = p.size();
  const auto o = ascending_order(p);
  double q = 0;
  for (std::size_t k = 1; k <= m; ++k) q += 1.0 / static_cast<double>(k);
  std::vector<double> out(m);
  for (std::size_t i = 0; i < m; ++i) {  // i: 0-based rank
    double v = method == "holm" ? 0.0 : INFINITY;
    for (std::size_t j = 0; j < m; ++j) {
      const double pj = p[o[j]];
      const double r = static_cast<double>(j + 1), md = static_cast<double>(m);
      if (method == "holm" && j <= i) v = std::max(v, (md - r + 1) * pj);
      if (method == "hochberg" && j >= i) v = std::min(v, (md - r + 1) * pj);
      if (method == "BH" && j >= i) v = std::min(v, md * pj / r);
      if (method == "BY" && j >= i) v = std::min(v, q * md * pj / r);
      if (method == "bonferroni" && j == i) v = md * pj;
    }
    out[o[i]] = std::min(1.0, v);
  }
  return out;
}

/// Rejections by the procedures' step rules at level alpha:
/// holm: reject p₍₁₎..p₍ᵣ₎ while p₍ⱼ₎ ≤ α/(m−j+1) (step-down);
/// hochberg: largest r with p₍ᵣ₎ ≤ α/(m−r+1), reject 1..r (step-up);
/// BH: largest r with p₍ᵣ₎ ≤ rα/m; BY: largest r with p₍ᵣ₎ ≤ rα/(m q); bonferroni: p ≤ α/m.
inline std::vector<bool> naive_reject(const std::vector<double>& p, const std::string& method, double alpha) {
  const std::size_t m = p.size();
  const double md = static_cast<double>(m);
  const auto o = ascending_order(p);
  double q = 0;
  for (std::size_t k = 1; k <= m; ++k) q += 1.0 / static_cast<double>(k);
  std::size_t r = 0;  // number rejected (the r smallest)
  if (method == "holm") {
    while (r < m && p[o[r]] <= alpha / (md - static_cast<double>(r))) ++r;
  } else if (method == "bonferroni") {
    while (r < m && p[o[r]] <= alpha / md) ++r;
  } else {
    for (std::size_t j = m; j >= 1; --j) {
      const double jd = static_cast<double>(j);
      const double crit = method == "hochberg" ? alpha / (md - jd + 1)
                          : method == "BH"     ? jd * alpha / md
                                               : jd * alpha / (md * q);
      if (p[o[j - 1]] <= crit) {
        r = j;
        break;
      }
    }
  }
  std::vector<bool> rej(m, false);
  for (std::size_t j = 0; j < r; ++j) rej[o[j]] = true;
  return rej;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_REFERENCE_MULTIPLICITY_HPP
