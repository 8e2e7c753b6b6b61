// SPDX-License-Identifier: MIT
// latentaudit: an always-valid sequential monitor for a mean — the mixture sequential probability
// ratio test (mSPRT) with a normal mixture over the alternative (Robbins 1970; Johari, Koomen,
// Pekelis & Walsh 2017/2022, "Always valid inference"), and its confidence sequence. A serving
// stack feeds it one observation at a time (e.g. the per-request paired difference relay − text)
// and may look at it after every observation without inflating the type-I error.
// Also the betting monitor for bounded observations (Waudby-Smith & Ramdas 2024, predictable
// plug-in bets tuned for all times): the item-level monitor of the audit's decision, fed one
// observation per item (the item's mean paired difference over its seeds), so the seeds of an item
// are never treated as independent.
// Formulas, assumptions and how to use it online: docs/estimators/sequential.md.
#ifndef LATENTAUDIT_ESTIMATORS_SEQUENTIAL_HPP
#define LATENTAUDIT_ESTIMATORS_SEQUENTIAL_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "betting.hpp"

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

/// @brief Options of the betting monitor (betting_monitor, run_betting_sequential).
struct betting_sequential_options {
  /// level: P(H₀: mean = theta0 is ever rejected) ≤ alpha, two-sided (alpha/2 per direction); and
  /// P(the confidence sequence ever misses the mean) ≤ alpha. In (0, 1).
  double alpha = 0.05;
  double lower = -1.0;  ///< known lower bound of every observation (finite, < upper)
  double upper = 1.0;   ///< known upper bound of every observation (finite, > lower)
  double theta0 = 0.0;  ///< the null mean the monitor tests online; in [lower, upper]
  /// truncation c of the bets on the [0, 1] scale: λ ≤ c/m (mean above m) or c/(1 − m) (below);
  /// in (0, 1), as betting_options::truncation
  double truncation = 0.5;
};

namespace detail {
/// @brief Checks betting_sequential_options, naming `fn` in the message.
inline void check_betting_sequential_options(std::string_view fn, const betting_sequential_options& o) {
  check_open_unit(fn, "alpha", o.alpha);
  check_open_unit(fn, "truncation", o.truncation);
  if (!(std::isfinite(o.lower) && std::isfinite(o.upper) && o.lower < o.upper))
    LATENTAUDIT_THROW(
        invalid_argument(std::string(fn) + ": lower and upper must be finite with lower < upper"));
  if (!(o.theta0 >= o.lower && o.theta0 <= o.upper))
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": theta0 must lie in [lower, upper]"));
}

/// @brief One limit of the betting confidence sequence on the [0, 1] scale from stored data y and
/// predictable bets lambda: the smallest (side > 0) or largest (side < 0) m whose capital
/// sup_{t≤n} K_t(m) stays below `stop`, by a 400-step grid from the outside in, then bisection to
/// 1e-9 (as betting_limit in betting.hpp, with the bets given). With no data: 0 or 1.
inline double betting_sequence_limit(std::span<const double> y, std::span<const double> lambda, double stop,
                                     int side, double c) {
  auto rejected = [&](double m) { return betting_sup_capital(y, lambda, m, side, c, stop) >= stop; };
  constexpr int steps = 400;
  double prev = side > 0 ? 0.0 : 1.0;
  if (y.empty() || !rejected(prev)) return prev;
  for (int i = 1; i <= steps; ++i) {
    const double m = side > 0 ? static_cast<double>(i) / steps : 1.0 - static_cast<double>(i) / steps;
    if (!rejected(m)) {
      double rej = prev, acc = m;
      while (std::fabs(acc - rej) > 1e-9) {
        const double mid = 0.5 * (rej + acc);
        (rejected(mid) ? rej : acc) = mid;
      }
      return acc;
    }
    prev = m;
  }
  return side > 0 ? 1.0 : 0.0;  // every candidate rejected in this direction (data fit no constant mean)
}
}  // namespace detail

/// @brief An always-valid sequential test and confidence sequence for the mean of independent
/// observations with a common mean, each known to lie in [lower, upper], by betting
/// (Waudby-Smith & Ramdas 2024, JRSS-B 86:1, §4–5: the predictable plug-in bets for confidence
/// sequences, eq. 26–27), run online.
///
/// On the [0, 1] scale y = (x − lower)/(upper − lower), two bettors bet against the candidate
/// mean m: K⁺_t(m) = Π_{i≤t} (1 + λ_i(m)(y_i − m)) (wins when the mean exceeds m) and
/// K⁻_t(m) = Π_{i≤t} (1 − λ_i(m)(y_i − m)), with the predictable bets
/// λ_t = sqrt(2 log(2/α) / (σ̂²_{t−1} · t · log(1 + t))), truncated at c/m (K⁺) or c/(1 − m) (K⁻),
/// where σ̂²_t is the regularised running variance of betting_plugin_bets (σ̂²_0 = 1/4). Under a
/// true mean m each capital is a non-negative martingale with K_0 = 1, so by Ville's inequality
/// P(∃t: K±_t(m) ≥ 2/α) ≤ α/2 for each side, at every t at once. The monitor rejects H₀: mean =
/// theta0 at the first t at which max(K⁺_t, K⁻_t)(theta0) ≥ 2/α, so P(H₀ ever rejected) ≤ α for
/// every distribution on the bounds; the confidence sequence at n is {m : sup_{t≤n} K±_t(m) < 2/α
/// on both sides} (the running intersection), which covers the mean at all n with probability
/// ≥ 1 − α and excludes theta0 exactly when H₀ has been rejected (up to the 1e-9 search tolerance).
/// No variance is assumed or estimated for validity (it only tunes the bets), and nothing waits for
/// a burn-in.
///
/// The test is O(1) per update; the monitor also keeps every observation (8 bytes each, plus its
/// bet) so that confidence_sequence and rejects(θ) can evaluate other candidate means, O(n) each.
class betting_monitor {
 public:
  /// @brief A monitor with no observations.
  /// @param options level, bounds, the null mean, truncation
  /// @throws invalid_argument if alpha or truncation ∉ (0, 1), the bounds are not finite with
  /// lower < upper, or theta0 is outside them.
  explicit betting_monitor(const betting_sequential_options& options = {}) : o_(options) {
    detail::check_betting_sequential_options("betting_monitor", o_);
    m0_ = (o_.theta0 - o_.lower) / (o_.upper - o_.lower);
    log_stop_ = std::log(2.0 / o_.alpha);
  }

  /// @brief Adds one observation and records the first rejection of H₀: mean = theta0.
  /// @param x the observation, in [lower, upper]
  /// @throws invalid_argument if x is outside the bounds or not finite (the monitor is unchanged).
  void update(double x) {
    if (!(x >= o_.lower && x <= o_.upper))
      LATENTAUDIT_THROW(invalid_argument("betting_monitor::update: x = " + std::to_string(x) +
                                         " is outside [lower, upper] or not finite"));
    const double y = (x - o_.lower) / (o_.upper - o_.lower);
    const double t = static_cast<double>(y_.size() + 1);
    const double lambda = std::sqrt(2.0 * std::log(2.0 / o_.alpha) / (var_prev_ * t * std::log1p(t)));
    y_.push_back(y);
    lambda_.push_back(lambda);
    sum_x_ += x;
    // the capitals at theta0, exactly as detail::betting_sup_capital computes them
    const double up = m0_ > 0.0 ? std::min(lambda, o_.truncation / m0_) : lambda;
    const double down = m0_ < 1.0 ? std::min(lambda, o_.truncation / (1.0 - m0_)) : lambda;
    log_up_ += std::log1p(up * (y - m0_));
    log_down_ += std::log1p(-down * (y - m0_));
    best_ = std::max({best_, log_up_, log_down_});
    if (!first_rejection_ && best_ >= log_stop_) first_rejection_ = y_.size();
    // the regularised running mean and variance that tune the next bet
    sum_y_ += y;
    const double mu = (0.5 + sum_y_) / (t + 1.0);
    ss_ += (y - mu) * (y - mu);
    var_prev_ = (0.25 + ss_) / (t + 1.0);
  }

  /// @brief Number of observations so far.
  [[nodiscard]] std::size_t n() const noexcept { return y_.size(); }

  /// @brief Mean of the observations so far (0 before the first).
  [[nodiscard]] double mean() const noexcept {
    return y_.empty() ? 0.0 : sum_x_ / static_cast<double>(y_.size());
  }

  /// @brief log of sup_{t≤n} max(K⁺_t, K⁻_t) at theta0 (0 before the first observation); H₀ is
  /// rejected once it reaches log(2/α).
  [[nodiscard]] double log_capital() const noexcept { return best_; }

  /// @brief The always-valid p-value of H₀: mean = theta0 at n: min(1, 2 / sup_{t≤n} max(K⁺_t,
  /// K⁻_t)(theta0)). Non-increasing in n; under H₀, P(∃n: p_n ≤ u) ≤ u for every u (Ville, per
  /// side at u/2). p_n ≤ α exactly when first_rejection() is set.
  [[nodiscard]] double p_value() const noexcept { return std::min(1.0, 2.0 * std::exp(-best_)); }

  /// @brief Whether H₀: mean = theta0 has been rejected at some t ≤ n.
  [[nodiscard]] bool rejected() const noexcept { return first_rejection_.has_value(); }

  /// @brief Whether the confidence sequence at n excludes theta, i.e. H₀: mean = theta would have
  /// been rejected at some t ≤ n. O(n).
  /// @param theta a candidate mean, in [lower, upper]
  /// @throws invalid_argument if theta is outside the bounds or not finite.
  [[nodiscard]] bool rejects(double theta) const {
    if (!(theta >= o_.lower && theta <= o_.upper))
      LATENTAUDIT_THROW(
          invalid_argument("betting_monitor::rejects: theta outside [lower, upper] or not finite"));
    const double m = (theta - o_.lower) / (o_.upper - o_.lower), stop = 2.0 / o_.alpha;
    return detail::betting_sup_capital(y_, lambda_, m, +1, o_.truncation, stop) >= stop ||
           detail::betting_sup_capital(y_, lambda_, m, -1, o_.truncation, stop) >= stop;
  }

  /// @brief The always-valid confidence interval at n, {m : sup_{t≤n} K±_t(m) < 2/α on both sides}
  /// on the original scale: the bounds [lower, upper] before the first observation, never wider.
  /// It is the running intersection over t ≤ n, so it only shrinks, and it may (rarely, when the
  /// data drift) fail to contain the current mean; low > high would mean that no constant mean
  /// fits the data. O(n · 440) capital evaluations.
  /// @returns {low, high}
  [[nodiscard]] std::pair<double, double> confidence_sequence() const {
    const double stop = 2.0 / o_.alpha, w = o_.upper - o_.lower;
    return {o_.lower + w * detail::betting_sequence_limit(y_, lambda_, stop, +1, o_.truncation),
            o_.lower + w * detail::betting_sequence_limit(y_, lambda_, stop, -1, o_.truncation)};
  }

  /// @brief The first n at which H₀: mean = theta0 was rejected (the stopping time), if any.
  [[nodiscard]] std::optional<std::size_t> first_rejection() const noexcept { return first_rejection_; }

  /// @brief The options the monitor was built with.
  [[nodiscard]] const betting_sequential_options& options() const noexcept { return o_; }

 private:
  betting_sequential_options o_;
  double m0_ = 0.5;        // theta0 on the [0, 1] scale
  double log_stop_ = 0.0;  // log(2/α)
  std::vector<double> y_, lambda_;
  double sum_x_ = 0.0, sum_y_ = 0.0, ss_ = 0.0, var_prev_ = 0.25;
  double log_up_ = 0.0, log_down_ = 0.0, best_ = 0.0;
  std::optional<std::size_t> first_rejection_;
};

/// @brief The state of a betting monitor run over a whole sample (see run_betting_sequential).
struct [[nodiscard]] betting_sequential_result {
  std::size_t n = 0;                           ///< observations
  double mean = 0.0;                           ///< their mean
  double ci_low = 0.0;                         ///< always-valid CI at n, low (lower bound if n = 0)
  double ci_high = 0.0;                        ///< always-valid CI at n, high (upper bound if n = 0)
  double p_value = 1.0;                        ///< always-valid p-value of H₀: mean = theta0 at n
  bool rejected = false;                       ///< H₀ rejected at some t ≤ n (p_value ≤ alpha)
  std::optional<std::size_t> first_rejection;  ///< first t with H₀ rejected (the stopping time)
  bool ready = false;                          ///< n ≥ 1 (the interval is informative)
};

/// @brief Feeds x in order into a betting_monitor and reports its final state.
/// @param x the observations in an order fixed independently of their values, each in the bounds
/// @param options as for betting_monitor
/// @returns n, mean, the always-valid CI at n, the always-valid p-value, whether and when H₀:
/// mean = theta0 was first rejected.
/// @throws invalid_argument for bad options or an x outside the bounds (naming its index).
[[nodiscard]] inline betting_sequential_result run_betting_sequential(
    std::span<const double> x, const betting_sequential_options& options = {}) {
  detail::check_betting_sequential_options("run_betting_sequential", options);
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!(x[i] >= options.lower && x[i] <= options.upper))
      LATENTAUDIT_THROW(invalid_argument("run_betting_sequential: x[" + std::to_string(i) +
                                         "] is outside [lower, upper] or not finite"));
  betting_monitor m(options);
  for (double v : x) m.update(v);
  const auto [lo, hi] = m.confidence_sequence();
  return {.n = m.n(),
          .mean = m.mean(),
          .ci_low = lo,
          .ci_high = hi,
          .p_value = m.p_value(),
          .rejected = m.rejected(),
          .first_rejection = m.first_rejection(),
          .ready = m.n() > 0};
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_SEQUENTIAL_HPP
