// SPDX-License-Identifier: MIT
// latentaudit: confidence intervals and p-values for the mean of bounded i.i.d. observations by
// betting (Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by
// betting", JRSS-B 86:1; the hedged capital process with the predictable plug-in bets of their
// §5), and the clustered paired-binary difference built on it: one observation per item, the
// mean paired difference of its seeds, so the seeds of an item are never treated as independent.
// Valid at every sample size and for every distribution on the bounds (no normal approximation),
// never of zero width. Formulas, validation by simulation and references: docs/estimators/betting.md.
#ifndef LATENTAUDIT_ESTIMATORS_BETTING_HPP
#define LATENTAUDIT_ESTIMATORS_BETTING_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "effect_estimate.hpp"

namespace latentaudit {

/// @brief Options of the betting interval.
struct betting_options {
  /// one-sided error of the lower limit: P(mean < lower limit) ≤ alpha_lower; in (0, 1)
  double alpha_lower = 0.025;
  /// one-sided error of the upper limit: P(mean > upper limit) ≤ alpha_upper; in (0, 1)
  double alpha_upper = 0.025;
  /// truncation c of the bets: λ ≤ c / m (lower side) and λ ≤ c / (1 − m) (upper side) on the
  /// [0, 1] scale; in (0, 1). Any c in (0, 1) gives a valid interval (the capital stays
  /// non-negative); c only moves power. Waudby-Smith & Ramdas use 1/2; the default 0.9 was chosen
  /// by the Monte Carlo of docs/estimators/betting.md "Choice of the truncation" (all-concordant
  /// items: non-inferiority at a 0.05 margin from 68 items instead of 117; no size above α).
  double truncation = 0.9;
  /// the number of observations the bets are tuned for: 0 = the sample's size (the fixed-sample
  /// interval); N ≥ the sample's size = the planned most observations of a sample that is looked at
  /// while it grows (`audit --until-decided`). Because N is fixed before any observation, the bets
  /// stay predictable and the interval on the first n ≤ N observations is a confidence sequence:
  /// it covers the mean at every n at once, so it stays valid at a data-dependent stopping time
  /// (Waudby-Smith & Ramdas 2024, §3). At n = N it equals the fixed-sample interval.
  std::size_t horizon = 0;
};

/// @brief A betting confidence interval for a bounded mean.
struct betting_interval {
  double estimate = std::numeric_limits<double>::quiet_NaN();  ///< sample mean
  double low = std::numeric_limits<double>::quiet_NaN();       ///< lower limit (error ≤ alpha_lower)
  double high = std::numeric_limits<double>::quiet_NaN();      ///< upper limit (error ≤ alpha_upper)
  std::size_t n = 0;                                           ///< observations
};

namespace detail {

/// @brief Checks betting_options, naming `fn`.
inline void check_betting_options(std::string_view fn, const betting_options& o) {
  check_open_unit(fn, "alpha_lower", o.alpha_lower);
  check_open_unit(fn, "alpha_upper", o.alpha_upper);
  check_open_unit(fn, "truncation", o.truncation);
}

/// @brief The n the bets are tuned for: `horizon`, or the sample size `n` when it is 0.
/// @throws invalid_argument naming `fn` if 0 < horizon < n (the bets would look past their plan)
inline std::size_t betting_tuned_n(std::string_view fn, std::size_t n, std::size_t horizon) {
  if (horizon == 0) return n;
  if (horizon < n)
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": horizon " + std::to_string(horizon) +
                                       " is below the sample size " + std::to_string(n) +
                                       " (0 = the sample size, or the planned most observations)"));
  return horizon;
}

/// @brief Maps `x` from [lo, hi] to [0, 1], checking every value.
inline std::vector<double> betting_unit_scale(std::string_view fn, std::span<const double> x, double lo,
                                              double hi) {
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi))
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": bounds must be finite with lower < upper"));
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] >= lo && x[i] <= hi))
      LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": x[" + std::to_string(i) +
                                         "] is outside the bounds [" + std::to_string(lo) + ", " +
                                         std::to_string(hi) + "] or not finite"));
    y[i] = (x[i] - lo) / (hi - lo);
  }
  return y;
}

/// @brief The predictable plug-in bets of Waudby-Smith & Ramdas (2024, eq. 26 with the fixed-n
/// tuning of their §5.1): λ_t = sqrt(2 log(1/α) / (n σ̂²_{t−1})), n = `tuned_n` (0: y's size), with the
/// regularised running mean μ̂_t = (1/2 + Σ_{i≤t} y_i)/(t + 1) and variance σ̂²_t = (1/4 + Σ_{i≤t} (y_i −
/// μ̂_i)²)/(t + 1), σ̂²_0 = 1/4. λ_t uses only y_1..y_{t−1}: the bets are predictable. Before truncation.
inline std::vector<double> betting_plugin_bets(std::span<const double> y, double alpha,
                                               std::size_t tuned_n = 0) {
  const double n = static_cast<double>(tuned_n == 0 ? y.size() : tuned_n);
  const double k = 2.0 * std::log(1.0 / alpha);
  std::vector<double> lambda(y.size());
  double sum = 0.0, ss = 0.0, var_prev = 0.25;
  for (std::size_t t = 0; t < y.size(); ++t) {
    lambda[t] = std::sqrt(k / (n * var_prev));
    sum += y[t];
    const double mu = (0.5 + sum) / (static_cast<double>(t) + 2.0);
    ss += (y[t] - mu) * (y[t] - mu);
    var_prev = (0.25 + ss) / (static_cast<double>(t) + 2.0);
  }
  return lambda;
}

/// @brief sup_t of the capital K_t(m) = Π_{i≤t} (1 + s λ_i(m) (y_i − m)), s = +1 (evidence that
/// the mean exceeds m) or −1 (that it is below m), with λ_i(m) = min(λ_i, c/m) or min(λ_i,
/// c/(1 − m)). Under a mean of m (or beyond it, in the tested direction) K is a non-negative
/// (super)martingale with K_0 = 1, so by Ville's inequality P(sup_t K_t ≥ 1/α) ≤ α. Stops early
/// once the capital reaches `stop` (returns a value ≥ stop).
inline double betting_sup_capital(std::span<const double> y, std::span<const double> lambda, double m,
                                  int side, double c, double stop) {
  const double cap = side > 0 ? (m > 0.0 ? c / m : std::numeric_limits<double>::infinity())
                              : (m < 1.0 ? c / (1.0 - m) : std::numeric_limits<double>::infinity());
  double log_k = 0.0, best = 0.0;
  const double log_stop = std::log(stop);
  for (std::size_t t = 0; t < y.size(); ++t) {
    const double l = std::min(lambda[t], cap);
    log_k += std::log1p(static_cast<double>(side) * l * (y[t] - m));
    best = std::max(best, log_k);
    if (best >= log_stop) break;
  }
  return std::exp(best);
}

/// @brief One confidence limit on the [0, 1] scale: the smallest (side > 0) or largest (side < 0)
/// m that the capital does not reject at level alpha, by a grid of 400 steps then bisection to
/// 1e-9 between the last rejected and the first accepted grid point (the accepted set is searched
/// from the outside in, so a limit is never inside a rejected stretch it skipped).
inline double betting_limit(std::span<const double> y, double alpha, int side, double c,
                            std::size_t tuned_n = 0) {
  const auto lambda = betting_plugin_bets(y, alpha, tuned_n);
  const double stop = 1.0 / alpha;
  auto rejected = [&](double m) { return betting_sup_capital(y, lambda, m, side, c, stop) >= stop; };
  constexpr int steps = 400;
  double prev = side > 0 ? 0.0 : 1.0;
  if (!rejected(prev)) return prev;
  for (int i = 1; i <= steps; ++i) {
    const double m = side > 0 ? static_cast<double>(i) / steps : 1.0 - static_cast<double>(i) / steps;
    if (!rejected(m)) {
      double rej = prev, acc = m;  // rejected at `rej`, accepted at `acc`
      while (std::fabs(acc - rej) > 1e-9) {
        const double mid = 0.5 * (rej + acc);
        (rejected(mid) ? rej : acc) = mid;
      }
      return acc;
    }
    prev = m;
  }
  return side > 0 ? 1.0 : 0.0;  // unreachable: the capital cannot reject the far bound's mean
}

}  // namespace detail

/// @brief Confidence interval for the mean of i.i.d. observations known to lie in [lo, hi], by
/// betting: the lower limit is the smallest m whose "mean > m" capital never reaches
/// 1/alpha_lower, the upper limit the largest m whose "mean < m" capital never reaches
/// 1/alpha_upper (Waudby-Smith & Ramdas 2024, hedged capital with predictable plug-in bets tuned
/// for n, or for o.horizon: then a confidence sequence). P(lower > mean) ≤ alpha_lower and
/// P(upper < mean) ≤ alpha_upper for every n and every distribution on [lo, hi]; the observations'
/// order must not depend on their values.
/// The interval always contains the sample mean and has positive width for n ≥ 1.
/// @param x observations, each in [lo, hi]
/// @param lo,hi the known bounds (finite, lo < hi)
/// @throws invalid_argument for an empty sample, a value outside [lo, hi], bad options or a horizon
///         below the sample size
[[nodiscard]] inline betting_interval bounded_mean_interval(std::span<const double> x, double lo, double hi,
                                                            const betting_options& o = {}) {
  constexpr std::string_view fn = "bounded_mean_interval";
  detail::check_betting_options(fn, o);
  if (x.empty()) LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": x is empty"));
  const auto y = detail::betting_unit_scale(fn, x, lo, hi);
  const std::size_t tuned = detail::betting_tuned_n(fn, x.size(), o.horizon);
  betting_interval r;
  r.n = x.size();
  double s = 0.0;
  for (double v : x) s += v;
  r.estimate = s / static_cast<double>(x.size());
  const double w = hi - lo;
  r.low = std::min(lo + w * detail::betting_limit(y, o.alpha_lower, +1, o.truncation, tuned), r.estimate);
  r.high = std::max(lo + w * detail::betting_limit(y, o.alpha_upper, -1, o.truncation, tuned), r.estimate);
  return r;
}

/// @brief Two-sided p-value for "the mean is m0" from the same capital processes as
/// bounded_mean_interval with alpha_lower = alpha_upper = alpha/2: p = min(1, 2 min over the two
/// sides of 1/sup_t K_t(m0)), with the bets tuned for level `alpha`. So p < alpha exactly when m0
/// lies outside that (1 − alpha) interval, and P(p ≤ u) ≤ u under the null for every u.
/// @param alpha the level the bets are tuned for (in (0, 1)); the p-value is valid at any level
/// @param horizon the n the bets are tuned for (betting_options::horizon; 0 = x's size): with a
///        planned N the p-value is anytime-valid (P(p_τ ≤ u) ≤ u at any stopping time τ ≤ N)
/// @throws invalid_argument for an empty sample, a value outside [lo, hi], m0 outside [lo, hi], a
///         horizon below x's size
[[nodiscard]] inline double bounded_mean_p_value(std::span<const double> x, double lo, double hi, double m0,
                                                 double alpha = 0.05, double truncation = 0.9,
                                                 std::size_t horizon = 0) {
  constexpr std::string_view fn = "bounded_mean_p_value";
  detail::check_open_unit(fn, "alpha", alpha);
  detail::check_open_unit(fn, "truncation", truncation);
  if (x.empty()) LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": x is empty"));
  if (!(m0 >= lo && m0 <= hi)) LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": m0 outside [lo, hi]"));
  const auto y = detail::betting_unit_scale(fn, x, lo, hi);
  const double m = (m0 - lo) / (hi - lo);
  const auto lambda =
      detail::betting_plugin_bets(y, alpha / 2.0, detail::betting_tuned_n(fn, x.size(), horizon));
  const double inf = std::numeric_limits<double>::infinity();
  const double k = std::max(detail::betting_sup_capital(y, lambda, m, +1, truncation, inf),
                            detail::betting_sup_capital(y, lambda, m, -1, truncation, inf));
  return std::min(1.0, 2.0 / k);
}

/// @brief One-sided p-value for "the mean is at most m0" (against "above m0") from the lower-limit
/// capital process of bounded_mean_interval with alpha_lower = alpha: p = min(1, 1/sup_t K⁺_t(m0)),
/// the bets tuned for level `alpha`. So p ≤ alpha exactly when the capital at m0 reaches 1/alpha,
/// which is how the lower limit at level alpha excludes m0; and P(p ≤ u) ≤ u for every u and every
/// distribution on [lo, hi] with mean ≤ m0 (Ville's inequality), so the p-values of several such
/// nulls can enter Holm's procedure.
/// @param alpha the level the bets are tuned for (in (0, 1)); the p-value is valid at any level
/// @param horizon as bounded_mean_p_value's
/// @throws invalid_argument for an empty sample, a value outside [lo, hi], m0 outside [lo, hi], a
///         horizon below x's size
[[nodiscard]] inline double bounded_mean_p_value_above(std::span<const double> x, double lo, double hi,
                                                       double m0, double alpha = 0.05,
                                                       double truncation = 0.9, std::size_t horizon = 0) {
  constexpr std::string_view fn = "bounded_mean_p_value_above";
  detail::check_open_unit(fn, "alpha", alpha);
  detail::check_open_unit(fn, "truncation", truncation);
  if (x.empty()) LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": x is empty"));
  if (!(m0 >= lo && m0 <= hi)) LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": m0 outside [lo, hi]"));
  const auto y = detail::betting_unit_scale(fn, x, lo, hi);
  const auto lambda = detail::betting_plugin_bets(y, alpha, detail::betting_tuned_n(fn, x.size(), horizon));
  const double k = detail::betting_sup_capital(y, lambda, (m0 - lo) / (hi - lo), +1, truncation,
                                               std::numeric_limits<double>::infinity());
  return std::min(1.0, 1.0 / k);
}

/// @brief The fewest items for which the verdict interval can show a mean difference inside a
/// margin: the smallest K whose K item mean differences all 0 (every item concordant: the most
/// favourable data) give bounded_mean_interval(·, −1, 1) a lower limit above −margin at one-sided
/// level alpha (alpha_lower = alpha) with the given truncation. A design with fewer items can never
/// show non-inferiority at the margin, nor exclude a benefit of the margin ("absence"), whatever
/// its outcomes. No valid level-alpha test can do it with fewer than ⌈log alpha / log(1 − margin)⌉
/// items (mass margin at −1, the rest at 0, gives all zeros with probability (1 − margin)^K);
/// at margin 0.05, alpha 0.05 and truncation 0.9 this is 68 against that bound of 59
/// (docs/estimators/betting.md "Choice of the truncation").
/// @param margin the margin on the difference scale, in (0, 1)
/// @throws invalid_argument if margin, alpha or truncation ∉ (0, 1)
[[nodiscard]] inline std::size_t betting_items_for_margin(double margin, double alpha = 0.05,
                                                          double truncation = 0.9) {
  constexpr std::string_view fn = "betting_items_for_margin";
  detail::check_open_unit(fn, "margin", margin);
  detail::check_open_unit(fn, "alpha", alpha);
  detail::check_open_unit(fn, "truncation", truncation);
  const betting_options o{.alpha_lower = alpha, .alpha_upper = alpha, .truncation = truncation};
  auto shown = [&](std::size_t k) {
    const std::vector<double> z(k, 0.0);
    return bounded_mean_interval(z, -1.0, 1.0, o).low > -margin;
  };
  // the universal bound, then doubling and bisection. shown() need not be monotone in k in
  // principle (the plug-in bets shrink like 1/sqrt(n)); the bets reach the cap c/m within a few items
  // on all-zero data, after which each item multiplies the capital by the same factor > 1, and the
  // test checks at four margins that K − 1 items do not suffice.
  std::size_t lo = static_cast<std::size_t>(std::max(1.0, std::floor(std::log(alpha) / std::log1p(-margin))));
  if (shown(lo)) return lo;
  std::size_t hi = 2 * lo;
  while (!shown(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {  // not shown at lo, shown at hi
    const std::size_t mid = lo + (hi - lo) / 2;
    (shown(mid) ? hi : lo) = mid;
  }
  return hi;
}

/// @brief Per-item mean paired differences: for item ids `cluster` (any values; items are
/// ordered by id) and paired outcomes `treated`, `control` (0/1 or any values in [0, 1]), the
/// mean over each item's pairs of treated − control, in [−1, 1], one value per item.
/// @throws shape_mismatch if the lengths differ; invalid_argument for a value outside [0, 1]
[[nodiscard]] inline std::vector<double> item_mean_differences(std::span<const std::uint64_t> cluster,
                                                               std::span<const double> treated,
                                                               std::span<const double> control) {
  constexpr std::string_view fn = "item_mean_differences";
  if (treated.size() != cluster.size() || control.size() != cluster.size())
    LATENTAUDIT_THROW(shape_mismatch(std::string(fn) + ": cluster, treated and control differ in length"));
  std::vector<std::size_t> order(cluster.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cluster[a] < cluster[b]; });
  std::vector<double> out;
  for (std::size_t k = 0; k < order.size();) {
    double s = 0.0;
    std::size_t n = 0, j = k;
    for (; j < order.size() && cluster[order[j]] == cluster[order[k]]; ++j, ++n) {
      const double t = treated[order[j]], c = control[order[j]];
      if (!(t >= 0.0 && t <= 1.0 && c >= 0.0 && c <= 1.0))
        LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": outcome of pair " + std::to_string(order[j]) +
                                           " outside [0, 1]"));
      s += t - c;
    }
    out.push_back(s / static_cast<double>(n));
    k = j;
  }
  return out;
}

/// @brief The clustered paired difference of two binary arms with a betting interval over items:
/// estimate = mean over items of the item's mean paired difference (each item weighs equally;
/// with the same number of seeds per item this is the mean over pairs), interval =
/// bounded_mean_interval on [−1, 1] of the item means, p = bounded_mean_p_value at 0 with the
/// bets tuned for 2·alpha_lower when the sides are equal (so p < 2·alpha_lower exactly when 0 is
/// outside the interval). Seeds of one item are never treated as independent, the interval never
/// has zero width, and its error is at most alpha_lower / alpha_upper for any number of items.
/// method "betting_items", estimand "risk_difference", n_pairs = pairs, df = items.
/// @throws shape_mismatch, invalid_argument as item_mean_differences and bounded_mean_interval
[[nodiscard]] inline effect_estimate clustered_paired_difference(std::span<const std::uint64_t> cluster,
                                                                 std::span<const double> treated,
                                                                 std::span<const double> control,
                                                                 const betting_options& o = {}) {
  constexpr std::string_view fn = "clustered_paired_difference";
  detail::check_betting_options(fn, o);
  const auto items = item_mean_differences(cluster, treated, control);
  if (items.empty()) LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": no pairs"));
  const auto iv = bounded_mean_interval(items, -1.0, 1.0, o);
  effect_estimate e;
  e.method = "betting_items";
  e.estimand = "risk_difference";
  e.estimate = iv.estimate;
  e.ci_low = iv.low;
  e.ci_high = iv.high;
  e.level = 1.0 - o.alpha_lower - o.alpha_upper;
  e.df = static_cast<double>(items.size());
  e.p_value =
      bounded_mean_p_value(items, -1.0, 1.0, 0.0, o.alpha_lower + o.alpha_upper, o.truncation, o.horizon);
  e.n_pairs = cluster.size();
  return e;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_BETTING_HPP
