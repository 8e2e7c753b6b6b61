// SPDX-License-Identifier: MIT
// latentaudit: definitions of estimators/power.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_ESTIMATORS_IMPL_POWER_INL_HPP
#define LATENTAUDIT_ESTIMATORS_IMPL_POWER_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../power.hpp"

#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/non_central_t.hpp>
#include <boost/math/special_functions/binomial.hpp>

#include "../detail/distributions.hpp"

namespace latentaudit::detail {

LATENTAUDIT_INLINE void check_t_power_options(std::string_view fn, const t_power_options& o) {
  check_open_unit(fn, "alpha", o.alpha);
  check_positive(fn, "sd", o.sd);
  check_positive(fn, "allocation_ratio", o.allocation_ratio);
  if (o.design != power_design::two_sample && o.allocation_ratio != 1.0) {
    throw_invalid(fn, "allocation_ratio",
                  "applies to the two-sample design only and must be 1 otherwise, got " +
                      number_text(o.allocation_ratio));
  }
}

[[nodiscard]] LATENTAUDIT_INLINE double t_power_n_limit(const t_power_options& o) noexcept {
  return o.design == power_design::two_sample ? 2.0 / (1.0 + o.allocation_ratio) : 1.0;
}

LATENTAUDIT_INLINE void check_t_power_n(std::string_view fn, double n, const t_power_options& o) {
  const double limit = std::fmax(1.0, t_power_n_limit(o));
  if (!(n > limit) || !std::isfinite(n)) {
    throw_invalid(
        fn, "n",
        "must be finite and > " + number_text(limit) + " (degrees of freedom > 0), got " + number_text(n));
  }
}

[[nodiscard]] LATENTAUDIT_INLINE double t_power_raw(double n, double delta, const t_power_options& o) {
  const bool two = o.sides == power_sides::two_sided;
  if (two) delta = std::fabs(delta);
  double nu = 0, ncp = 0;
  if (o.design != power_design::two_sample) {
    nu = std::fmax(1e-7, n - 1.0);
    ncp = std::sqrt(n) * delta / o.sd;
  } else if (o.allocation_ratio == 1.0) {
    nu = std::fmax(1e-7, n - 1.0) * 2.0;
    ncp = std::sqrt(n / 2.0) * delta / o.sd;
  } else {
    const double n2 = o.allocation_ratio * n;
    nu = std::fmax(1e-7, n + n2 - 2.0);
    ncp = delta / (o.sd * std::sqrt(1.0 / n + 1.0 / n2));
  }
  const double q = t_quantile_upper(o.alpha / (two ? 2.0 : 1.0), nu);
  const boost::math::non_central_t_distribution<double, math_policy> d(nu, ncp);
  double p = boost::math::cdf(boost::math::complement(d, q));
  if (two && o.strict) p += boost::math::cdf(d, -q);
  return p;
}

[[nodiscard]] LATENTAUDIT_INLINE double z_sum(double alpha, power_sides sides, double power) {
  return normal_quantile_upper(sides == power_sides::two_sided ? alpha / 2.0 : alpha) +
         normal_quantile(power);
}

LATENTAUDIT_INLINE void check_target_power(std::string_view fn, double power, double alpha) {
  check_open_unit(fn, "power", power);
  if (!(power > alpha)) {
    throw_invalid(fn, "power", "must exceed alpha (" + number_text(alpha) + "), got " + number_text(power));
  }
}

[[nodiscard]] LATENTAUDIT_INLINE std::size_t control_arm(std::size_t c, double ratio) noexcept {
  const double x = ratio * static_cast<double>(c);
  const double r = std::round(x);
  const double v = std::fabs(x - r) <= 1e-9 * x ? r : std::ceil(x);
  return v < 2.0 ? 2 : static_cast<std::size_t>(v);
}

[[nodiscard]] LATENTAUDIT_INLINE double t_power_integer(std::size_t c, double delta,
                                                        const t_power_options& o) {
  if (o.design != power_design::two_sample || o.allocation_ratio == 1.0) {
    return t_power_raw(static_cast<double>(c), delta, o);
  }
  // Unequal integer arms: pass n₁ = c with the ratio realised by the rounded control arm.
  t_power_options oi = o;
  oi.allocation_ratio = static_cast<double>(control_arm(c, o.allocation_ratio)) / static_cast<double>(c);
  return t_power_raw(static_cast<double>(c), delta, oi);
}
}  // namespace latentaudit::detail

namespace latentaudit {

[[nodiscard]] LATENTAUDIT_INLINE double t_test_power(double n, double delta, const t_power_options& options) {
  constexpr std::string_view fn = "t_test_power";
  detail::check_t_power_options(fn, options);
  detail::check_finite(fn, "delta", delta);
  detail::check_t_power_n(fn, n, options);
  return detail::guarded_math(fn, [&] { return detail::t_power_raw(n, delta, options); });
}

[[nodiscard]] LATENTAUDIT_INLINE sample_size_result t_test_sample_size(double delta, double power,
                                                                       const t_power_options& options) {
  constexpr std::string_view fn = "t_test_sample_size";
  detail::check_t_power_options(fn, options);
  detail::check_finite(fn, "delta", delta);
  detail::check_target_power(fn, power, options.alpha);
  if (options.sides == power_sides::one_sided ? !(delta > 0.0) : delta == 0.0) {
    detail::throw_invalid(
        fn, "delta",
        options.sides == power_sides::one_sided
            ? "must be > 0 for a one-sided test (the alternative is delta > 0), got " + number_text(delta)
            : std::string("must be non-zero, got 0"));
  }
  return detail::guarded_math(fn, [&] {
    const auto f = [&](double n) { return detail::t_power_raw(n, delta, options) - power; };
    const double limit = detail::t_power_n_limit(options);
    // Normal-approximation start: n ≈ (1 + 1/ratio)·(z_{α′} + z_β)²σ²/δ² (two-sample), (…)² σ²/δ² otherwise.
    const double k = options.design == power_design::two_sample ? 1.0 + 1.0 / options.allocation_ratio : 1.0;
    const double z = detail::z_sum(options.alpha, options.sides, power) * options.sd / std::fabs(delta);
    const double guess = std::fmax(limit + 1.0, k * z * z + 1.0);
    sample_size_result r;
    r.target_power = power;
    r.n = detail::solve_increasing(fn, f, guess, limit, limit + 1e-7);
    // Integer design: smallest c ≥ 2 with power(c) ≥ target, searched around ceil(n).
    std::size_t c = static_cast<std::size_t>(std::fmax(2.0, std::ceil(r.n)));
    while (c > 2 && detail::t_power_integer(c - 1, delta, options) >= power) --c;
    double pc = detail::t_power_integer(c, delta, options);
    while (pc < power) pc = detail::t_power_integer(++c, delta, options);
    r.n_required = c;
    r.power_at_required = pc;
    if (options.design == power_design::two_sample) {
      r.n_required_control =
          options.allocation_ratio == 1.0 ? c : detail::control_arm(c, options.allocation_ratio);
    }
    r.n_total = r.n_required + r.n_required_control;
    return r;
  });
}

[[nodiscard]] LATENTAUDIT_INLINE double t_test_mde(double n, double power, const t_power_options& options) {
  constexpr std::string_view fn = "t_test_mde";
  detail::check_t_power_options(fn, options);
  detail::check_t_power_n(fn, n, options);
  detail::check_target_power(fn, power, options.alpha);
  return detail::guarded_math(fn, [&] {
    const auto f = [&](double delta) { return detail::t_power_raw(n, delta, options) - power; };
    const double neff = options.design == power_design::two_sample
                            ? 1.0 / (1.0 / n + 1.0 / (options.allocation_ratio * n))
                            : n;
    const double guess = detail::z_sum(options.alpha, options.sides, power) * options.sd / std::sqrt(neff);
    return detail::solve_increasing(fn, f, std::fmax(guess, 1e-300), 0.0, 0.0);
  });
}
}  // namespace latentaudit

namespace latentaudit::detail {

LATENTAUDIT_INLINE void check_discordant(std::string_view fn, double p10, double p01) {
  check_closed_unit(fn, "p10", p10);
  check_closed_unit(fn, "p01", p01);
  if (!(p10 + p01 <= 1.0)) {
    throw_invalid(fn, "p01", "must satisfy p10 + p01 <= 1, got p10 + p01 = " + number_text(p10 + p01));
  }
  const double psi = p10 + p01, d = p10 - p01;
  if (!(psi - d * d > 0.0)) {
    throw_invalid(
        fn, "p10",
        "and p01 must leave discordance variance psi - delta^2 > 0 (psi = p10 + p01 in (0, 1) or both "
        "cells non-zero), got p10 = " +
            number_text(p10) + ", p01 = " + number_text(p01));
  }
}

[[nodiscard]] LATENTAUDIT_INLINE double connor_power(double n, double p10, double p01, double alpha,
                                                     power_sides sides) {
  const double psi = p10 + p01, d = std::fabs(p10 - p01);
  const double za = normal_quantile_upper(sides == power_sides::two_sided ? alpha / 2.0 : alpha);
  return normal_cdf((std::sqrt(n) * d - za * std::sqrt(psi)) / std::sqrt(psi - d * d));
}

LATENTAUDIT_INLINE void exact_mcnemar_rejection::extend() {
  const std::size_t m = r_.size();
  const double md = static_cast<double>(m);
  const double mult = two_ ? 2.0 : 1.0;
  const boost::math::binomial_distribution<double, math_policy> half(md, 0.5);
  // k_ holds k(m-1) + 1 (0 means "no rejection region"); k(m) ≥ k(m-1).
  while (k_ <= m && mult * boost::math::cdf(half, static_cast<double>(k_)) <= alpha_) ++k_;
  double r = 0.0;
  if (k_ > 0) {
    const double k = static_cast<double>(k_ - 1);
    const boost::math::binomial_distribution<double, math_policy> alt(md, pi_);
    // larger cell ≥ m − k: P(B ≥ m − k) = P(B > m − k − 1)
    r = boost::math::cdf(boost::math::complement(alt, md - k - 1.0));
    if (two_) r += boost::math::cdf(alt, k);  // larger cell ≤ k
  }
  r_.push_back(r);
}

[[nodiscard]] LATENTAUDIT_INLINE double exact_mcnemar_power(std::size_t n, double psi,
                                                            exact_mcnemar_rejection& rej) {
  if (psi >= 1.0) return rej(n);
  const double nd = static_cast<double>(n);
  const auto mode = static_cast<std::size_t>(std::fmin(nd, std::floor((nd + 1.0) * psi)));
  const boost::math::binomial_distribution<double, math_policy> dist(nd, psi);
  const double p0 = boost::math::pdf(dist, static_cast<double>(mode));
  const double odds = psi / (1.0 - psi);
  double sum = p0 * rej(mode);
  double t = p0;  // upwards: pmf(m+1) = pmf(m)·(n − m)/(m + 1)·odds
  for (std::size_t m = mode; m < n; ++m) {
    t *= static_cast<double>(n - m) / static_cast<double>(m + 1) * odds;
    if (t < 1e-18 * p0) break;
    sum += t * rej(m + 1);
  }
  t = p0;  // downwards: pmf(m−1) = pmf(m)·m/(n − m + 1)/odds
  for (std::size_t m = mode; m > 0; --m) {
    t *= static_cast<double>(m) / static_cast<double>(n - m + 1) / odds;
    if (t < 1e-18 * p0) break;
    sum += t * rej(m - 1);
  }
  return std::fmin(1.0, sum);
}

LATENTAUDIT_INLINE void check_mcnemar_options(std::string_view fn, const mcnemar_power_options& o) {
  check_open_unit(fn, "alpha", o.alpha);
  if (o.max_n < 1) throw_invalid(fn, "max_n", "must be at least 1, got 0");
}
}  // namespace latentaudit::detail

namespace latentaudit {

[[nodiscard]] LATENTAUDIT_INLINE double mcnemar_power(double n, double p10, double p01,
                                                      const mcnemar_power_options& options) {
  constexpr std::string_view fn = "mcnemar_power";
  detail::check_mcnemar_options(fn, options);
  detail::check_discordant(fn, p10, p01);
  if (options.method == mcnemar_power_method::exact) {
    if (!(n >= 1.0 && n <= 9007199254740992.0) || n != std::floor(n)) {
      detail::throw_invalid(
          fn, "n", "must be a whole number of pairs >= 1 for the exact method, got " + number_text(n));
    }
    if (n > static_cast<double>(options.max_n)) {  // the rejection table holds one double per m <= n
      detail::throw_invalid(fn, "n",
                            "must not exceed options.max_n = " + std::to_string(options.max_n) +
                                " for the exact method, got " + number_text(n));
    }
  } else {
    detail::check_positive(fn, "n", n);
  }
  return detail::guarded_math(fn, [&] {
    if (options.method == mcnemar_power_method::connor) {
      return detail::connor_power(n, p10, p01, options.alpha, options.sides);
    }
    detail::exact_mcnemar_rejection rej(p10, p01, options.alpha, options.sides);
    return detail::exact_mcnemar_power(static_cast<std::size_t>(n), p10 + p01, rej);
  });
}

[[nodiscard]] LATENTAUDIT_INLINE sample_size_result
mcnemar_sample_size(double p10, double p01, double power, const mcnemar_power_options& options) {
  constexpr std::string_view fn = "mcnemar_sample_size";
  detail::check_mcnemar_options(fn, options);
  detail::check_discordant(fn, p10, p01);
  detail::check_target_power(fn, power, options.alpha);
  if (p10 == p01)
    detail::throw_invalid(fn, "p10",
                          "must differ from p01 (no effect to detect), both are " + number_text(p10));
  return detail::guarded_math(fn, [&] {
    sample_size_result r;
    r.target_power = power;
    const double psi = p10 + p01, d = p10 - p01;
    if (options.method == mcnemar_power_method::connor) {
      const double za = detail::normal_quantile_upper(
          options.sides == power_sides::two_sided ? options.alpha / 2.0 : options.alpha);
      const double zb = detail::normal_quantile(power);
      const double s = za * std::sqrt(psi) + zb * std::sqrt(psi - d * d);
      r.n = s * s / (d * d);
      auto c = static_cast<std::size_t>(std::fmax(1.0, std::ceil(r.n)));
      while (c > 1 && detail::connor_power(static_cast<double>(c - 1), p10, p01, options.alpha,
                                           options.sides) >= power)
        --c;
      double pc = detail::connor_power(static_cast<double>(c), p10, p01, options.alpha, options.sides);
      while (pc < power)
        pc = detail::connor_power(static_cast<double>(++c), p10, p01, options.alpha, options.sides);
      r.n_required = c;
      r.power_at_required = pc;
    } else {
      detail::exact_mcnemar_rejection rej(p10, p01, options.alpha, options.sides);
      for (std::size_t c = 1;; ++c) {
        if (c > options.max_n) {
          detail::throw_numerical(fn, "the exact power does not reach the target within max_n = " +
                                          std::to_string(options.max_n) + " pairs");
        }
        const double pc = detail::exact_mcnemar_power(c, psi, rej);
        if (pc >= power) {
          r.n_required = c;
          r.power_at_required = pc;
          r.n = static_cast<double>(c);
          break;
        }
      }
    }
    r.n_total = r.n_required;
    return r;
  });
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_IMPL_POWER_INL_HPP
