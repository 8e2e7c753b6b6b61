// SPDX-License-Identifier: MIT
// Naive reference implementations (oracles) for the bootstrap tests: replicates drawn one index at
// a time with make_stream + uniform_index into materialised resamples, R boot's norm.inter and
// numpy's linear percentile written from their definitions, jackknife influence values and the
// BCa interval straight from the formulas in docs/estimators/bootstrap.md. Slow and simple.
#ifndef LATENTAUDIT_TESTS_SUPPORT_REFERENCE_BOOTSTRAP_HPP
#define LATENTAUDIT_TESTS_SUPPORT_REFERENCE_BOOTSTRAP_HPP

#include <latentaudit/core/rng.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <boost/math/distributions/normal.hpp>

namespace latentaudit::test {

inline double ref_qnorm(double p) { return boost::math::quantile(boost::math::normal_distribution<>(), p); }
inline double ref_pnorm(double x) { return boost::math::cdf(boost::math::normal_distribution<>(), x); }

/// Resample of x for replicate r of stream arm `arm`: x[uniform_index(make_stream(...), n)], n times.
inline std::vector<double> ref_resample(const std::vector<double>& x, std::uint64_t seed, std::uint32_t arm,
                                        std::uint32_t r) {
  auto g = make_stream({.seed = seed, .item = 0, .arm = arm, .replicate = r});
  std::vector<double> out;
  for (std::size_t j = 0; j < x.size(); ++j)
    out.push_back(x[uniform_index(g, static_cast<std::uint32_t>(x.size()))]);
  return out;
}

/// Plain left-to-right mean.
inline double ref_plain_mean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

/// Two-sample replicates of a statistic of (treated, control): treated uses arm 1, control arm 0.
inline std::vector<double> ref_two_sample_replicates(
    const std::vector<double>& t, const std::vector<double>& c, std::uint64_t seed, std::uint32_t b,
    const std::function<double(const std::vector<double>&, const std::vector<double>&)>& stat) {
  std::vector<double> out;
  for (std::uint32_t r = 0; r < b; ++r)
    out.push_back(stat(ref_resample(t, seed, 1, r), ref_resample(c, seed, 0, r)));
  return out;
}

/// R boot's norm.inter, transcribed with R's 1-based indexing.
inline double ref_norm_inter(std::vector<double> t, double alpha) {
  std::sort(t.begin(), t.end());
  const double R = static_cast<double>(t.size());
  const double rk = (R + 1) * alpha;
  const double k = std::trunc(rk);
  auto at = [&](double one_based) { return t[static_cast<std::size_t>(one_based) - 1]; };
  if (k == 0) return at(1);
  if (k >= R) return at(R);
  if (k == rk) return at(k);
  const double t1 = ref_qnorm(alpha), t2 = ref_qnorm(k / (R + 1)), t3 = ref_qnorm((k + 1) / (R + 1));
  return at(k) + (t1 - t2) / (t3 - t2) * (at(k + 1) - at(k));
}

/// numpy percentile, linear method (Hyndman & Fan type 7): h = (B - 1) p.
inline double ref_percentile(std::vector<double> t, double p) {
  std::sort(t.begin(), t.end());
  const double h = (static_cast<double>(t.size()) - 1) * p;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= t.size()) return t.back();
  return t[lo] + (h - std::floor(h)) * (t[lo + 1] - t[lo]);
}

/// Jackknife influence of a one-sample statistic: L_i = (n - 1)(t0 - t_(-i)).
inline std::vector<double> ref_jackknife(const std::vector<double>& x,
                                         const std::function<double(const std::vector<double>&)>& stat) {
  const double t0 = stat(x);
  std::vector<double> l;
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::vector<double> y = x;
    y.erase(y.begin() + static_cast<std::ptrdiff_t>(i));
    l.push_back(static_cast<double>(x.size() - 1) * (t0 - stat(y)));
  }
  return l;
}

/// BCa limits under boot's rules: w = qnorm(#{t < t0}/B), a = sum L^3 / (6 (sum L^2)^1.5).
inline std::pair<double, double> ref_bca_boot(const std::vector<double>& t, double t0,
                                              const std::vector<double>& l, double level) {
  double below = 0;
  for (double v : t) below += v < t0;
  const double w = ref_qnorm(below / static_cast<double>(t.size()));
  double s2 = 0, s3 = 0;
  for (double v : l) {
    s2 += v * v;
    s3 += v * v * v;
  }
  const double a = s3 / (6 * std::pow(s2, 1.5));
  auto adj = [&](double alpha) {
    const double z = ref_qnorm(alpha);
    return ref_pnorm(w + (w + z) / (1 - a * (w + z)));
  };
  return {ref_norm_inter(t, adj((1 - level) / 2)), ref_norm_inter(t, adj((1 + level) / 2))};
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_REFERENCE_BOOTSTRAP_HPP
