// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/detail/bootstrap_intervals.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_DETAIL_IMPL_BOOTSTRAP_INTERVALS_INL_HPP
#define LATENTAUDIT_ESTIMATORS_DETAIL_IMPL_BOOTSTRAP_INTERVALS_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../bootstrap_intervals.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "../distributions.hpp"

namespace latentaudit::detail {

[[nodiscard]] LATENTAUDIT_INLINE const char* bootstrap_method_name(bootstrap_ci_method m) noexcept {
  switch (m) {
    case bootstrap_ci_method::percentile:
      return "bootstrap_percentile";
    case bootstrap_ci_method::basic:
      return "bootstrap_basic";
    case bootstrap_ci_method::normal:
      return "bootstrap_normal";
    case bootstrap_ci_method::bca:
      return "bootstrap_bca";
    case bootstrap_ci_method::studentized:
      return "bootstrap_studentized";
  }
  return "bootstrap";
}

[[nodiscard]] LATENTAUDIT_INLINE double boot_norm_inter(std::span<const double> sorted, double alpha) {
  const std::size_t r = sorted.size();
  const double rd = static_cast<double>(r);
  const double rk = (rd + 1.0) * alpha;
  if (!(rk > 0.0)) return sorted.front();
  const double kd = std::trunc(rk);
  if (kd >= rd) return sorted.back();
  const auto k = static_cast<std::size_t>(kd);  // 0 <= k < R
  if (k == 0) return sorted.front();
  if (kd == rk) return sorted[k - 1];
  const double z = normal_quantile(alpha);
  const double zk = normal_quantile(kd / (rd + 1.0));
  const double zk1 = normal_quantile((kd + 1.0) / (rd + 1.0));
  const double tk = sorted[k - 1], tk1 = sorted[k];
  return tk + (z - zk) / (zk1 - zk) * (tk1 - tk);
}

[[nodiscard]] LATENTAUDIT_INLINE double scipy_percentile(std::span<const double> sorted, double p) {
  const std::size_t b = sorted.size();
  const double q = (p * 100.0) / 100.0;
  const double h = static_cast<double>(b - 1) * q;
  if (!(h > 0.0)) return sorted.front();
  if (h >= static_cast<double>(b - 1)) return sorted.back();
  const double lo = std::floor(h);
  const auto i = static_cast<std::size_t>(lo);
  const double g = h - lo;
  const double a = sorted[i], c = sorted[i + 1];
  const double diff = c - a;
  return g >= 0.5 ? c - diff * (1.0 - g) : a + diff * g;
}

[[nodiscard]] LATENTAUDIT_INLINE double bootstrap_quantile(std::span<const double> sorted, double p,
                                                           bootstrap_convention c) {
  return c == bootstrap_convention::boot ? boot_norm_inter(sorted, p) : scipy_percentile(sorted, p);
}

[[nodiscard]] LATENTAUDIT_INLINE double bca_acceleration(std::span<const double> influence,
                                                         std::span<const std::size_t> strata,
                                                         bootstrap_convention c) {
  if (c == bootstrap_convention::boot || strata.size() <= 1) {
    long double s2 = 0, s3 = 0;
    for (double l : influence) {
      const long double ll = l;
      s2 += ll * ll;
      s3 += ll * ll * ll;
    }
    if (c == bootstrap_convention::boot) {
      return static_cast<double>(s3) / (6.0 * std::pow(static_cast<double>(s2), 1.5));
    }
    const double n = static_cast<double>(influence.size());
    return 1.0 / 6.0 * (static_cast<double>(s3) / (n * n * n)) /
           std::pow(static_cast<double>(s2) / (n * n), 1.5);
  }
  double nums = 0, dens = 0;
  std::size_t off = 0;
  for (std::size_t nj : strata) {
    long double s2 = 0, s3 = 0;
    for (std::size_t i = off; i < off + nj; ++i) {
      const long double ll = influence[i];
      s2 += ll * ll;
      s3 += ll * ll * ll;
    }
    const double n = static_cast<double>(nj);
    nums += static_cast<double>(s3) / (n * n * n);
    dens += static_cast<double>(s2) / (n * n);
    off += nj;
  }
  return 1.0 / 6.0 * nums / std::pow(dens, 1.5);
}

[[nodiscard]] LATENTAUDIT_INLINE replicate_moments replicate_moments_of(std::span<const double> t) noexcept {
  replicate_moments m;
  if (t.empty()) return m;
  long double s = 0;
  for (double v : t) s += v;
  const long double mean = s / static_cast<long double>(t.size());
  long double ss = 0;
  for (double v : t) ss += (v - mean) * (v - mean);
  m.mean = static_cast<double>(mean);
  if (t.size() > 1) m.sd = static_cast<double>(std::sqrt(ss / static_cast<long double>(t.size() - 1)));
  return m;
}

[[nodiscard]] LATENTAUDIT_INLINE bool replicates_all_equal(std::span<const double> t) noexcept {
  const auto [lo, hi] = std::minmax_element(t.begin(), t.end());
  const double scale = std::fmax(std::fabs(*lo), std::fabs(*hi));
  return *hi - *lo <= 8.0 * std::numeric_limits<double>::epsilon() * scale;
}

[[nodiscard]] LATENTAUDIT_INLINE bootstrap_interval_output compute_interval(
    const bootstrap_interval_input& in, bootstrap_ci_method method, double level, bootstrap_convention conv) {
  bootstrap_interval_output out;
  const auto mom = replicate_moments_of(in.t);
  out.std_error = mom.sd;
  out.used = in.t.size();
  auto fail = [&](std::string why) {
    out.degenerate = true;
    out.reason = std::move(why);
    out.low = out.high = bootstrap_nan;
    return out;
  };
  if (replicates_all_equal(in.t))
    return fail("all bootstrap replicates are equal; the interval is undefined");
  const bool boot = conv == bootstrap_convention::boot;
  // The two tail probabilities exactly as each peer computes them.
  const double a_lo = boot ? (1.0 - level) / 2.0 : (1.0 - level) / 2.0;
  const double a_hi = boot ? (1.0 + level) / 2.0 : 1.0 - (1.0 - level) / 2.0;
  std::vector<double> sorted;
  auto sort_t = [&] {
    sorted.assign(in.t.begin(), in.t.end());
    std::sort(sorted.begin(), sorted.end());
  };
  switch (method) {
    case bootstrap_ci_method::percentile: {
      sort_t();
      out.alpha_low = a_lo;
      out.alpha_high = a_hi;
      out.low = bootstrap_quantile(sorted, a_lo, conv);
      out.high = bootstrap_quantile(sorted, a_hi, conv);
      break;
    }
    case bootstrap_ci_method::basic: {
      sort_t();
      out.alpha_low = a_hi;
      out.alpha_high = a_lo;
      out.low = 2.0 * in.t0 - bootstrap_quantile(sorted, a_hi, conv);
      out.high = 2.0 * in.t0 - bootstrap_quantile(sorted, a_lo, conv);
      break;
    }
    case bootstrap_ci_method::normal: {
      const double bias = mom.mean - in.t0;
      const double merr = mom.sd * normal_quantile((1.0 + level) / 2.0);
      out.low = in.t0 - bias - merr;
      out.high = in.t0 - bias + merr;
      break;
    }
    case bootstrap_ci_method::bca: {
      std::size_t below = 0, at_or_below = 0;
      for (double v : in.t) {
        below += v < in.t0;
        at_or_below += v <= in.t0;
      }
      const double b = static_cast<double>(in.t.size());
      const double z0 = boot ? normal_quantile(static_cast<double>(below) / b)
                             : normal_quantile(static_cast<double>(below + at_or_below) / (2.0 * b));
      out.z0 = z0;
      if (!std::isfinite(z0)) {
        return fail("t0 lies outside the bootstrap distribution; the BCa bias correction z0 is infinite");
      }
      const double acc = bca_acceleration(in.influence, in.strata, conv);
      out.acceleration = acc;
      if (!std::isfinite(acc)) {
        return fail("the influence values are all zero; the BCa acceleration is undefined");
      }
      double z_lo, z_hi;
      if (boot) {
        z_lo = normal_quantile(a_lo);
        z_hi = normal_quantile(a_hi);
      } else {
        z_lo = normal_quantile(a_lo);
        z_hi = -z_lo;
      }
      const double n1 = z0 + z_lo, n2 = z0 + z_hi;
      out.alpha_low = normal_cdf(z0 + n1 / (1.0 - acc * n1));
      out.alpha_high = normal_cdf(z0 + n2 / (1.0 - acc * n2));
      if (!std::isfinite(out.alpha_low) || !std::isfinite(out.alpha_high)) {
        return fail("the BCa adjusted levels are undefined");
      }
      sort_t();
      out.low = bootstrap_quantile(sorted, out.alpha_low, conv);
      out.high = bootstrap_quantile(sorted, out.alpha_high, conv);
      break;
    }
    case bootstrap_ci_method::studentized: {
      sorted.clear();
      sorted.reserve(in.t.size());
      for (std::size_t r = 0; r < in.t.size(); ++r) {
        const double z = (in.t[r] - in.t0) / std::sqrt(in.v[r]);
        if (std::isfinite(z)) sorted.push_back(z);
      }
      out.used = sorted.size();
      if (sorted.size() < 2 || (static_cast<double>(sorted.size()) + 1.0) * a_lo < 1.0) {
        return fail("too few replicates with a positive finite variance for the studentized interval");
      }
      if (!(in.v0 > 0.0) || !std::isfinite(in.v0)) {
        return fail("the variance estimate at t0 is not positive; the studentized interval is undefined");
      }
      std::sort(sorted.begin(), sorted.end());
      out.alpha_low = a_hi;
      out.alpha_high = a_lo;
      const double s0 = std::sqrt(in.v0);
      out.low = in.t0 - s0 * bootstrap_quantile(sorted, a_hi, conv);
      out.high = in.t0 - s0 * bootstrap_quantile(sorted, a_lo, conv);
      break;
    }
  }
  if (!std::isfinite(out.low) || !std::isfinite(out.high)) return fail("the interval limits are not finite");
  return out;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_ESTIMATORS_DETAIL_IMPL_BOOTSTRAP_INTERVALS_INL_HPP
