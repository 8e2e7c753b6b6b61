// SPDX-License-Identifier: MIT
// Test support: a brute-force O(n²) nearest-neighbour matcher with replacement (Match's rules:
// SD-scaled Euclidean distance, all ties within the tolerance of the M-th squared distance, caliper
// in population-SD units), and the Abadie–Imbens homoskedastic variance written from the textbook
// formulas. It is the oracle for the k-d tree matcher in property tests.
#ifndef LATENTAUDIT_TESTS_SUPPORT_REFERENCE_MATCHING_HPP
#define LATENTAUDIT_TESTS_SUPPORT_REFERENCE_MATCHING_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace latentaudit::test {

/// One matched row of the reference matcher (focal orientation).
struct reference_row {
  std::size_t focal = 0;  ///< the unit being matched
  std::size_t match = 0;  ///< one of its matches
  double weight = 0;      ///< 1 / number of matches of the focal unit
};

/// Output of reference_match.
struct reference_match_result {
  std::vector<reference_row> rows;  ///< rows ordered by focal unit, then match index
  std::size_t dropped = 0;          ///< focal units without M eligible matches
  double estimate = 0;              ///< mean over matched focal units of treated − control
  double se_homoskedastic =
      0;  ///< AI (2006) population SE with σ² = ½·mean((τᵢ − τ̂)²), matched focal units only
};

/// Brute-force matching: x row-major n×k, tr 0/1, estimand 0 = ATT, 1 = ATE (ATC: flip tr and the sign).
/// caliper <= 0 means none.
inline reference_match_result reference_match(const std::vector<double>& y, const std::vector<double>& tr,
                                              const std::vector<double>& x, std::size_t k, int estimand,
                                              std::size_t m, double caliper = 0, double tol = 1e-5) {
  const std::size_t n = y.size();
  std::vector<double> sd(k), psd(k);
  for (std::size_t j = 0; j < k; ++j) {
    double mu = 0;
    for (std::size_t i = 0; i < n; ++i) mu += x[i * k + j];
    mu /= static_cast<double>(n);
    double ss = 0;
    for (std::size_t i = 0; i < n; ++i) ss += (x[i * k + j] - mu) * (x[i * k + j] - mu);
    sd[j] = std::sqrt(ss / static_cast<double>(n - 1));
    psd[j] = std::sqrt(ss / static_cast<double>(n));
  }
  reference_match_result out;
  std::vector<double> K(n, 0), KK(n, 0), tau_i(n, 0);
  std::vector<char> focal_matched(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (estimand == 0 && tr[i] != 1.0) continue;
    std::vector<std::pair<double, std::size_t>> d;
    for (std::size_t j = 0; j < n; ++j) {
      if (tr[j] == tr[i]) continue;
      bool ok = true;
      double s = 0;
      for (std::size_t c = 0; c < k; ++c) {
        if (caliper > 0 && std::fabs(x[i * k + c] - x[j * k + c]) > caliper * psd[c]) ok = false;
        const double e = (x[i * k + c] - x[j * k + c]) / sd[c];
        s += e * e;
      }
      if (ok) d.push_back({s, j});
    }
    if (d.size() < m) {
      ++out.dropped;
      continue;
    }
    std::vector<std::pair<double, std::size_t>> sorted = d;
    std::sort(sorted.begin(), sorted.end());
    const double thr = sorted[m - 1].first + tol + 1e-10;
    std::vector<std::size_t> sel;
    for (const auto& p : d)
      if (p.first <= thr) sel.push_back(p.second);
    std::sort(sel.begin(), sel.end());
    const double w = 1.0 / static_cast<double>(sel.size());
    double ym = 0;
    for (std::size_t j : sel) {
      out.rows.push_back({i, j, w});
      K[j] += w;
      KK[j] += w * w;
      ym += w * y[j];
    }
    tau_i[i] = tr[i] == 1.0 ? y[i] - ym : ym - y[i];
    focal_matched[i] = 1;
  }
  double sn = 0, est = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (focal_matched[i]) {
      sn += 1;
      est += tau_i[i];
    }
  est /= sn;
  out.estimate = est;
  // σ² = ½ mean over rows (weighted) of (τ_row − τ̂)²
  double ss = 0, sw = 0;
  for (const auto& r : out.rows) {
    const double t = tr[r.focal] == 1.0 ? y[r.focal] - y[r.match] : y[r.match] - y[r.focal];
    ss += r.weight * (t - est) * (t - est);
    sw += r.weight;
  }
  const double sigma2 = 0.5 * ss / sw;
  double v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (estimand == 1)
      v += sigma2 * (K[i] * K[i] + 2 * K[i] - KK[i]);
    else if (tr[i] == 0.0)
      v += sigma2 * (K[i] * K[i] - KK[i]);
    if (focal_matched[i]) v += (tau_i[i] - est) * (tau_i[i] - est);
  }
  out.se_homoskedastic = std::sqrt(v) / sn;
  return out;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_REFERENCE_MATCHING_HPP
