// SPDX-License-Identifier: MIT
// latentaudit: power, required sample size and minimum detectable effect — t tests (one-sample,
// paired, two-sample with an allocation ratio) exactly as R's power.t.test (noncentral t), and
// McNemar's test for paired binary outcomes (Connor 1987 formula; exact conditional power by
// summation). Formulas, peers and tolerances: docs/estimators/power.md.
#ifndef LATENTAUDIT_ESTIMATORS_POWER_HPP
#define LATENTAUDIT_ESTIMATORS_POWER_HPP

#include <boost/math/tools/toms748_solve.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "effect_estimate.hpp"

namespace latentaudit {

/// @brief The t-test design a power calculation is for (R's power.t.test `type`).
enum class power_design {
  one_sample,  ///< one-sample t test of a mean ("one.sample"): df = n − 1, ncp = √n·δ/σ
  paired,      ///< paired t test = one-sample t on the differences ("paired"); σ is the sd of differences
  two_sample,  ///< pooled two-sample t test ("two.sample", the default); n is per arm
};

/// @brief The alternative of the planned test.
enum class power_sides {
  two_sided,  ///< reject for large |T| at level α (critical value at α/2)
  one_sided,  ///< reject for large T at level α (the alternative is δ > 0)
};

/// @brief Options of the t-test power functions.
struct t_power_options {
  power_design design = power_design::two_sample;  ///< R's default type "two.sample"
  power_sides sides = power_sides::two_sided;      ///< R's default alternative "two.sided"
  double alpha = 0.05;                             ///< significance level (R's sig.level), in (0, 1)
  double sd = 1.0;  ///< σ: sd of the outcome (two-sample, one-sample) or of the differences (paired), > 0
  /// Two-sided only: false (R's default strict = FALSE) counts the rejection region on the side of
  /// δ only; true also adds the opposite tail (R's strict = TRUE; statsmodels' "two-sided").
  bool strict = false;
  /// Two-sample only: n_control = allocation_ratio · n_treated (statsmodels' `ratio`); 1 is R's
  /// equal-allocation design. Must be 1 for the one-sample and paired designs.
  double allocation_ratio = 1.0;
};

/// @brief A required sample size: the real-valued root and the integer design that reaches it.
struct sample_size_result {
  static constexpr double nan = effect_estimate::nan;  ///< "not applicable"

  /// Real-valued solution of power(n) = target, as R's power.t.test reports it: pairs (paired),
  /// observations (one-sample), or the treated arm (two-sample).
  double n = nan;
  /// Smallest integer n (≥ 2 for t tests, ≥ 1 for McNemar) whose power reaches the target.
  std::size_t n_required = 0;
  /// Two-sample t only: the control arm, the integer nearest allocation_ratio·n_required if within
  /// 1e-9 relative, else its ceiling (and ≥ 2); 0 for other designs.
  std::size_t n_required_control = 0;
  std::size_t n_total = 0;         ///< n_required + n_required_control
  double power_at_required = nan;  ///< power at the integer design
  double target_power = nan;       ///< the requested power
};

/// @brief Which power calculation to use for McNemar's test.
enum class mcnemar_power_method {
  /// Connor (1987): n = (z_{α′}√ψ + z_β√(ψ − δ²))²/δ², the normal approximation for the
  /// uncorrected McNemar (chi-square / z) test; α′ = α/2 two-sided, α one-sided.
  connor,
  /// Exact unconditional power of the exact conditional McNemar test (binomial test of b given
  /// b + c at 1/2, R's binom.test rule), summed over the binomial number of discordant pairs.
  exact,
};

/// @brief Options of the McNemar power functions.
struct mcnemar_power_options {
  double alpha = 0.05;                                         ///< significance level, in (0, 1)
  power_sides sides = power_sides::two_sided;                  ///< one-sided: in the direction of p10 − p01
  mcnemar_power_method method = mcnemar_power_method::connor;  ///< the calculation
  /// Exact method: largest n accepted by mcnemar_power (invalid_argument beyond), and where
  /// mcnemar_sample_size gives up (numerical_error). Memory and time grow linearly in n.
  std::size_t max_n = 1000000;
};

namespace detail {

/// @brief Runs f and converts any non-latentaudit exception (Boost.Math evaluation errors) into
/// numerical_error naming the function.
template <class F>
[[nodiscard]] auto guarded_math(std::string_view fn, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const latentaudit::error&) {
    throw;
  } catch (const std::exception& ex) {
    throw_numerical(fn, std::string("numerical evaluation failed: ") + ex.what());
  }
}

/// @brief Validates the common t-power options.
void check_t_power_options(std::string_view fn, const t_power_options& o);

/// @brief Smallest n for which the t power is defined (df > 0): 1, or 2/(1 + ratio) for two arms.
[[nodiscard]] double t_power_n_limit(const t_power_options& o) noexcept;

/// @brief Checks n: finite, > 1 and large enough for df > 0 (n > 2/(1 + ratio) with unequal arms).
void check_t_power_n(std::string_view fn, double n, const t_power_options& o);

/// @brief Power of the t test at (real) size n and effect delta; R's power.t.test p.body:
///   nu = max(1e-7, n − 1)·s (s = 2 two-sample, 1 otherwise), ncp = √(n/s)·δ/σ,
///   q = qt(α/sides, nu, upper), power = P(T′ > q) [+ P(T′ < −q) if strict two-sided],
/// with T′ noncentral t(nu, ncp). Unequal arms: nu = n₁ + n₂ − 2, ncp = δ/(σ√(1/n₁ + 1/n₂)).
[[nodiscard]] double t_power_raw(double n, double delta, const t_power_options& o);

/// @brief Root of an increasing f on (limit, ∞) starting from a guess: brackets by doubling the
/// distance to the limit upwards / halving it downwards, then TOMS 748 to ~4 ulp relative.
/// @throws numerical_error if no sign change is found.
template <class F>
[[nodiscard]] double solve_increasing(std::string_view fn, F f, double guess, double limit, double lowest) {
  double hi = guess, fhi = f(hi);
  double lo = guess, flo = fhi;
  int it = 0;
  if (fhi < 0) {
    while (fhi < 0) {
      lo = hi;
      flo = fhi;
      hi = limit + 2.0 * (hi - limit);
      if (++it > 1000 || !std::isfinite(hi))
        throw_numerical(fn, "could not bracket the solution (target unreachable)");
      fhi = f(hi);
    }
  } else {
    while (flo >= 0) {
      hi = lo;
      fhi = flo;
      lo = limit + 0.5 * (lo - limit);
      if (++it > 1000 || lo <= lowest)
        throw_numerical(fn, "could not bracket the solution (target unreachable)");
      flo = f(lo);
    }
  }
  if (flo == 0) return lo;
  if (fhi == 0) return hi;
  boost::uintmax_t max_iter = 200;
  const auto r = boost::math::tools::toms748_solve(f, lo, hi, flo, fhi,
                                                   boost::math::tools::eps_tolerance<double>(53), max_iter);
  if (max_iter >= 200) throw_numerical(fn, "root finding did not converge");
  return 0.5 * (r.first + r.second);
}

/// @brief Normal-approximation quantiles z_{α′} + z_β used for starting values.
[[nodiscard]] double z_sum(double alpha, power_sides sides, double power);

/// @brief Validates a target power: in (0, 1) and above alpha.
void check_target_power(std::string_view fn, double power, double alpha);

/// @brief Control-arm size for a treated-arm size c: allocation_ratio·c rounded to the nearest
/// integer if within 1e-9 relative (so 0.1·30 is 3, not 4), else its ceiling; at least 2.
[[nodiscard]] std::size_t control_arm(std::size_t c, double ratio) noexcept;

/// @brief Power of the integer design (c treated, control_arm(c) control for two arms).
[[nodiscard]] double t_power_integer(std::size_t c, double delta, const t_power_options& o);

}  // namespace detail

/// @brief Power of a t test with n observations (pairs; per treated arm for two-sample) to detect
/// a true effect delta, exactly as R's `power.t.test(n, delta, sd, sig.level, type, alternative,
/// strict)$power`.
///
/// power = P(T′ > t_{1−α′, ν}) [+ P(T′ < −t_{1−α′, ν}) when strict and two-sided], T′ ~ noncentral
/// t(ν, λ): one-sample/paired ν = n − 1, λ = √n·δ/σ; two-sample ν = n₁ + n₂ − 2,
/// λ = δ/(σ√(1/n₁ + 1/n₂)), n₁ = n, n₂ = ratio·n. α′ = α/2 two-sided (|δ| is used), α one-sided
/// (δ < 0 gives power below α, as R).
/// @param n sample size (real, > 1; two-sample also needs ν > 0)
/// @param delta true effect in outcome units (finite)
/// @param options design, sides, alpha, sd, strict, allocation ratio
/// @returns the power in [0, 1]
/// @throws invalid_argument for n ≤ 1 (or df ≤ 0), non-finite delta, alpha outside (0, 1), sd ≤ 0, a bad
/// ratio;
///         numerical_error if the noncentral t evaluation fails
[[nodiscard]] double t_test_power(double n, double delta, const t_power_options& options = {});

/// @brief Sample size a t test needs to detect delta with the given power (R's
/// `power.t.test(delta, sd, sig.level, power, type, alternative, strict)$n`, solved to ~1e-15
/// relative with TOMS 748 rather than R's uniroot default tol = eps^0.25).
/// @param delta effect to detect (≠ 0; > 0 for a one-sided test)
/// @param power target power in (alpha, 1)
/// @param options design, sides, alpha, sd, strict, allocation ratio
/// @returns the real root n and the smallest integer design reaching the power
/// @throws invalid_argument for delta = 0 (or ≤ 0 one-sided), power ∉ (alpha, 1), bad options;
///         numerical_error if the root cannot be bracketed or the evaluation fails
[[nodiscard]] sample_size_result t_test_sample_size(double delta, double power,
                                                    const t_power_options& options = {});

/// @brief Minimum detectable effect: the delta a t test with n observations detects with the
/// given power (R's `power.t.test(n, sd, sig.level, power, ...)$delta`, solved to ~1e-15 relative).
/// @param n sample size (pairs; per treated arm for two-sample), real, > 1
/// @param power target power in (alpha, 1)
/// @param options design, sides, alpha, sd, strict, allocation ratio
/// @returns the positive effect, in the units of sd
/// @throws invalid_argument for n ≤ 1, power ∉ (alpha, 1), bad options;
///         numerical_error if the root cannot be bracketed or the evaluation fails
[[nodiscard]] double t_test_mde(double n, double power, const t_power_options& options = {});

namespace detail {

/// @brief Validates discordant-cell probabilities: p10, p01 ≥ 0, p10 + p01 ≤ 1, and
/// ψ − δ² > 0 (otherwise every pair is discordant in one direction or none is: no variance).
void check_discordant(std::string_view fn, double p10, double p01);

/// @brief Connor (1987) power: Φ((√n·|δ| − z_{α′}√ψ)/√(ψ − δ²)).
[[nodiscard]] double connor_power(double n, double p10, double p01, double alpha, power_sides sides);

/// @brief Precomputed rejection probabilities of the exact conditional McNemar test given m
/// discordant pairs: r(m) = P(reject | m) with b | m ~ Bin(m, π), π = p10/ψ.
///
/// Two-sided (binom.test rule at 1/2): reject iff min(b, m − b) ≤ k(m), k(m) the largest k with
/// 2·P(Bin(m, ½) ≤ k) ≤ α; one-sided (towards the larger cell): reject iff the larger cell's count
/// is ≥ m − k(m) with P(Bin(m, ½) ≤ k) ≤ α. k(m) is non-decreasing in m and found incrementally.
class exact_mcnemar_rejection {
 public:
  exact_mcnemar_rejection(double p10, double p01, double alpha, power_sides sides)
      : pi_(std::fmax(p10, p01) / (p10 + p01)), alpha_(alpha), two_(sides == power_sides::two_sided) {
    r_.push_back(0.0);  // m = 0: never reject
  }
  /// P(reject | m), extending the table as needed.
  double operator()(std::size_t m) {
    while (r_.size() <= m) extend();
    return r_[m];
  }

 private:
  void extend();
  double pi_;
  double alpha_;
  bool two_;
  std::size_t k_ = 0;
  std::vector<double> r_;
};

/// @brief Exact power at n pairs: Σₘ P(M = m)·r(m), M ~ Bin(n, ψ); the sum runs outwards from the
/// mode until the terms fall below 1e-18 of the mode's (the neglected mass is < 1e-15).
[[nodiscard]] double exact_mcnemar_power(std::size_t n, double psi, exact_mcnemar_rejection& rej);

void check_mcnemar_options(std::string_view fn, const mcnemar_power_options& o);

}  // namespace detail

/// @brief Power of McNemar's test with n pairs when the discordant cells have probabilities
/// p10 = P(treated 1, control 0) and p01 = P(treated 0, control 1).
///
/// connor: Φ((√n·|δ| − z_{α′}√ψ)/√(ψ − δ²)), ψ = p10 + p01, δ = p10 − p01 (Connor 1987 inverted).
/// exact: Σₘ Bin(m; n, ψ)·P(exact conditional test rejects | m) (n must be a whole number).
/// @param n number of pairs (> 0; a whole number in [1, max_n] for the exact method)
/// @param p10 probability of a (treated 1, control 0) pair, in [0, 1]
/// @param p01 probability of a (treated 0, control 1) pair, in [0, 1], p10 + p01 ≤ 1
/// @param options alpha, sides, method
/// @returns the power in [0, 1]
/// @throws invalid_argument for bad n, probabilities, alpha; numerical_error if Boost.Math fails
[[nodiscard]] double mcnemar_power(double n, double p10, double p01,
                                   const mcnemar_power_options& options = {});

/// @brief Number of pairs McNemar's test needs to reach the given power.
///
/// connor: n = (z_{α′}√ψ + z_β√(ψ − δ²))²/δ² (Connor 1987, eq. 3), n_required its smallest
/// integer reaching the power. exact: the exact power is not monotone in n (a saw-tooth from the
/// discrete test); n_required is the smallest n ≥ 1 with exact power ≥ target, found by scanning
/// n = 1, 2, … (cost O(n^1.5)); `n` is set to n_required.
/// @param p10 probability of a (treated 1, control 0) pair
/// @param p01 probability of a (treated 0, control 1) pair, p01 ≠ p10
/// @param power target power in (alpha, 1)
/// @param options alpha, sides, method, max_n (exact scan limit)
/// @returns n (real, Connor) and the integer number of pairs with its power
/// @throws invalid_argument for bad probabilities (incl. p10 = p01), power, alpha;
///         numerical_error if the exact scan passes max_n
[[nodiscard]] sample_size_result mcnemar_sample_size(double p10, double p01, double power,
                                                     const mcnemar_power_options& options = {});

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/power-inl.hpp"
#endif

#endif  // LATENTAUDIT_ESTIMATORS_POWER_HPP
