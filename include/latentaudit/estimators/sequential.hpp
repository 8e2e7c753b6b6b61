// SPDX-License-Identifier: MIT
// latentaudit: an always-valid sequential monitor for a mean — the mixture sequential probability
// ratio test (mSPRT) with a normal mixture over the alternative (Robbins 1970; Johari, Koomen,
// Pekelis & Walsh 2017/2022, "Always valid inference"), and its confidence sequence. A serving
// stack feeds it one observation at a time (e.g. the per-request paired difference relay − text)
// and may look at it after every observation without inflating the type-I error.
// Formulas, assumptions and how to use it online: docs/estimators/sequential.md.
#ifndef LATENTAUDIT_ESTIMATORS_SEQUENTIAL_HPP
#define LATENTAUDIT_ESTIMATORS_SEQUENTIAL_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "../core/detail/check.hpp"

namespace latentaudit {

/// @brief Options of the mSPRT monitor.
struct sequential_options {
  double alpha = 0.05;  ///< level: P(H₀ ever rejected) ≤ alpha; in (0, 1)
  double tau = 0.1;  ///< sd of the normal mixture N(θ₀, τ²) over the alternative; > 0, in outcome units
  /// known sd σ of one observation (> 0), or 0 = estimate it by the running sample sd (plug-in;
  /// validity is then asymptotic, see docs/estimators/sequential.md)
  double sigma = 0.0;
  /// with estimated σ: observations before the monitor tests anything (values < 2 act as 2)
  std::size_t burn_in = 10;
  /// with estimated σ: the plug-in is max(running sd, sigma_floor); a plug-in of 0 (all
  /// observations so far equal, no floor) leaves the monitor not ready. ≥ 0, finite.
  double sigma_floor = 0.0;
};

namespace detail {
/// @brief Checks sequential_options, naming `fn` in the message.
inline void check_sequential_options(std::string_view fn, const sequential_options& o) {
  check_open_unit(fn, "alpha", o.alpha);
  check_positive(fn, "tau", o.tau);
  check_nonnegative(fn, "sigma", o.sigma);
  check_nonnegative(fn, "sigma_floor", o.sigma_floor);
}
}  // namespace detail

/// @brief The mixture SPRT for the mean θ of i.i.d. observations, run online.
///
/// With σ known and the mixture θ ~ N(θ₀, τ²), after n observations with mean x̄
/// \f[ \Lambda_n(\theta_0) = \sqrt{\frac{\sigma^2}{\sigma^2 + n\tau^2}}
///     \exp\Big(\frac{n^2\tau^2(\bar x - \theta_0)^2}{2\sigma^2(\sigma^2 + n\tau^2)}\Big). \f]
/// Under H₀: θ = θ₀, Λ_n is a non-negative martingale with Λ₀ = 1, so by Ville's inequality
/// P(∃n: Λ_n ≥ 1/α) ≤ α: H₀ may be rejected the first time Λ_n ≥ 1/α, at any data-dependent
/// time. The same holds for any data whose centred sum is σ-sub-Gaussian (e.g. σ = 1 for paired
/// differences in [−1, 1], by Hoeffding's lemma). Inverting the test at every θ₀ gives the
/// confidence sequence {θ : Λ_n(θ) < 1/α}, which covers θ at all n simultaneously with
/// probability ≥ 1 − α.
///
/// With σ estimated (options.sigma == 0) the running sample sd (n − 1 denominator, floored at
/// options.sigma_floor) is plugged into the formula at each n, and nothing is tested before
/// max(burn_in, 2) observations: the guarantee then holds only asymptotically.
class msprt_monitor {
 public:
  /// @brief A monitor with no observations.
  /// @param options level, mixture sd, σ (or 0 to estimate), burn-in, sd floor
  /// @throws invalid_argument if alpha ∉ (0, 1), tau ≤ 0 or not finite, sigma or sigma_floor < 0
  /// or not finite.
  explicit msprt_monitor(const sequential_options& options = {}) : o_(options) {
    detail::check_sequential_options("msprt_monitor", o_);
  }

  /// @brief Adds one observation (Welford update of mean and variance) and records the first
  /// rejection of H₀: θ = 0.
  /// @param x the observation, finite
  /// @throws invalid_argument if x is not finite, numerical_error if the running sum of squares
  /// overflows (|x| near DBL_MAX): the monitor is then left unchanged. numerical_error from the
  /// rejection check (see log_likelihood_ratio) comes after the observation is recorded.
  void update(double x) {
    detail::check_finite("msprt_monitor::update", "x", x);
    const std::size_t n = n_ + 1;
    const double d = x - mean_;
    const double mean = mean_ + d / static_cast<double>(n);
    const double m2 = m2_ + d * (x - mean);
    if (!std::isfinite(mean) || !std::isfinite(m2)) {
      detail::throw_numerical("msprt_monitor::update", "running mean or sum of squares overflowed");
    }
    n_ = n;
    mean_ = mean;
    m2_ = m2;
    if (!first_rejection_ && rejects(0.0)) first_rejection_ = n_;
  }

  /// @brief Number of observations so far.
  [[nodiscard]] std::size_t n() const noexcept { return n_; }

  /// @brief Mean of the observations so far (0 before the first).
  [[nodiscard]] double mean() const noexcept { return mean_; }

  /// @brief The σ used at the current n: options.sigma if given, else max(running sample sd,
  /// sigma_floor) (0 before two observations).
  [[nodiscard]] double sigma() const noexcept {
    if (o_.sigma > 0.0) return o_.sigma;
    if (n_ < 2) return 0.0;
    return std::max(std::sqrt(m2_ / static_cast<double>(n_ - 1)), o_.sigma_floor);
  }

  /// @brief Whether the monitor tests anything yet: n ≥ 1 with σ known; with σ estimated,
  /// n ≥ max(burn_in, 2) and a positive plug-in σ. While not ready, Λ = 1, nothing is rejected
  /// and the confidence sequence is the whole line (see confidence_sequence).
  [[nodiscard]] bool ready() const noexcept {
    if (o_.sigma > 0.0) return n_ >= 1;
    return n_ >= std::max<std::size_t>(o_.burn_in, 2) && sigma() > 0.0;
  }

  /// @brief log Λ_n(θ₀) (0 while not ready); exact where likelihood_ratio saturates.
  /// @param theta0 the null value, finite
  /// @throws invalid_argument if theta0 is not finite; numerical_error if the ratio is undefined
  /// in floating point (σ, τ or the data tens of orders of magnitude apart).
  [[nodiscard]] double log_likelihood_ratio(double theta0 = 0.0) const {
    detail::check_finite("msprt_monitor::log_likelihood_ratio", "theta0", theta0);
    if (!ready()) return 0.0;
    const double sd = sigma();
    const double nn = static_cast<double>(n_);
    const double q = o_.tau / sd;
    const double r = nn * q * q;  // nτ²/σ²
    const double z = (mean_ - theta0) / sd;
    // log Λ = −½ log(1 + r) + (n z² / 2) · r / (1 + r),  z = (x̄ − θ₀)/σ
    const double l = -0.5 * std::log1p(r) + 0.5 * nn * z * z * (1.0 / (1.0 + 1.0 / r));
    if (std::isnan(l)) [[unlikely]] {
      detail::throw_numerical(
          "msprt_monitor::log_likelihood_ratio",
          "log likelihood ratio is undefined (sigma, tau or data out of floating-point range)");
    }
    return l;
  }

  /// @brief The mixture likelihood ratio Λ_n(θ₀) (1 while not ready); saturates at the largest
  /// finite double instead of overflowing to infinity.
  /// @param theta0 the null value, finite
  /// @returns Λ_n(θ₀) ∈ [0, DBL_MAX]
  /// @throws invalid_argument if theta0 is not finite; numerical_error as log_likelihood_ratio.
  [[nodiscard]] double likelihood_ratio(double theta0 = 0.0) const {
    const double l = log_likelihood_ratio(theta0);
    constexpr double big = std::numeric_limits<double>::max();
    return l >= std::log(big) ? big : std::exp(l);
  }

  /// @brief Whether H₀: θ = θ₀ is rejected at the current n: Λ_n(θ₀) ≥ 1/α (never while not ready).
  /// @param theta0 the null value, finite
  /// @throws invalid_argument if theta0 is not finite; numerical_error as log_likelihood_ratio.
  [[nodiscard]] bool rejects(double theta0 = 0.0) const {
    detail::check_finite("msprt_monitor::rejects", "theta0", theta0);
    return ready() && log_likelihood_ratio(theta0) >= -std::log(o_.alpha);
  }

  /// @brief The always-valid confidence interval at the current n, {θ : Λ_n(θ) < 1/α}:
  /// x̄ ± √( (σ² + nτ²)/(n²τ²) · 2σ² · (log(1/α) + ½ log((σ² + nτ²)/σ²)) ).
  /// @returns {low, high}; while not ready (see ready()) the whole line, written as the widest
  /// finite bounds {−DBL_MAX, +DBL_MAX}, never infinity or NaN.
  /// @throws numerical_error only if σ and τ are so far apart that the width is undefined.
  [[nodiscard]] std::pair<double, double> confidence_sequence() const {
    constexpr double big = std::numeric_limits<double>::max();
    if (!ready()) return {-big, big};
    const double h = half_width();
    return {std::max(mean_ - h, -big), std::min(mean_ + h, big)};
  }

  /// @brief The first n at which H₀: θ = 0 was rejected (the stopping time), if any.
  [[nodiscard]] std::optional<std::size_t> first_rejection() const noexcept { return first_rejection_; }

  /// @brief The options the monitor was built with.
  [[nodiscard]] const sequential_options& options() const noexcept { return o_; }

 private:
  [[nodiscard]] double half_width() const {
    const double sd = sigma();
    const double nn = static_cast<double>(n_);
    const double q = o_.tau / sd;
    const double r = nn * q * q;  // nτ²/σ²
    // (σ² + nτ²)/(n²τ²) · 2σ² · (log(1/α) + ½ log(1 + r)) = σ² · 2/n · (1 + 1/r) · (...)
    const double h = sd * std::sqrt(2.0 / nn * (1.0 + 1.0 / r) * (-std::log(o_.alpha) + 0.5 * std::log1p(r)));
    if (std::isnan(h)) [[unlikely]] {
      detail::throw_numerical("msprt_monitor::confidence_sequence",
                              "half-width is undefined (sigma or tau out of floating-point range)");
    }
    return h;
  }

  sequential_options o_;
  std::size_t n_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;  // Σ (x − x̄)², Welford
  std::optional<std::size_t> first_rejection_;
};

/// @brief The state of an mSPRT run over a whole sample (see run_sequential).
struct [[nodiscard]] sequential_result {
  std::size_t n = 0;                           ///< observations
  double mean = 0.0;                           ///< their mean
  double ci_low = 0.0;                         ///< always-valid CI at n, low (−DBL_MAX while not ready)
  double ci_high = 0.0;                        ///< always-valid CI at n, high (+DBL_MAX while not ready)
  double likelihood_ratio = 1.0;               ///< Λ_n(0), saturating at DBL_MAX
  bool rejected = false;                       ///< Λ_n(0) ≥ 1/α at the last observation
  std::optional<std::size_t> first_rejection;  ///< first n with Λ_n(0) ≥ 1/α (the stopping time)
  bool ready = false;  ///< whether the monitor was testing at n (see msprt_monitor::ready)
};

/// @brief Feeds x in order into an msprt_monitor and reports its final state.
/// @param x the observations in arrival order (finite; may be empty)
/// @param options as for msprt_monitor
/// @returns n, mean, the always-valid CI at n, Λ_n(0), whether H₀: θ = 0 is rejected at n, the
/// first rejection, and whether the monitor was ready.
/// @throws invalid_argument for bad options or a non-finite x (naming its index); numerical_error
/// if the running sum of squares overflows.
[[nodiscard]] inline sequential_result run_sequential(std::span<const double> x,
                                                      const sequential_options& options = {}) {
  detail::check_sequential_options("run_sequential", options);
  detail::check_finite("run_sequential", "x", x);
  msprt_monitor m(options);
  for (double v : x) m.update(v);
  const auto [lo, hi] = m.confidence_sequence();
  return {.n = m.n(),
          .mean = m.mean(),
          .ci_low = lo,
          .ci_high = hi,
          .likelihood_ratio = m.likelihood_ratio(0.0),
          .rejected = m.rejects(0.0),
          .first_rejection = m.first_rejection(),
          .ready = m.ready()};
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_SEQUENTIAL_HPP
