// SPDX-License-Identifier: MIT
// latentaudit: power, items needed and detectable difference of the audit's verdict rule — the
// one-sided betting limit over item mean differences (estimators/betting.hpp) — by simulation of
// clustered paired binary outcomes: each item draws a logit shift shared by its seeds and both
// arms (the model under which the verdicts' error rates are checked, docs/audit-report.md), so
// seeds of one item are correlated and discordance follows from the accuracies and the shift.
// No closed form holds for the betting test at these sizes; the simulation is exact up to Monte
// Carlo error (reported), every stream counter-based (Philox) from (seed, item, replicate).
// Formulas and the planning table: docs/estimators/betting.md "Planning".
#ifndef LATENTAUDIT_ESTIMATORS_BETTING_POWER_HPP
#define LATENTAUDIT_ESTIMATORS_BETTING_POWER_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/rng.hpp"
#include "betting.hpp"
#include "detail/distributions.hpp"

namespace latentaudit {

/// @brief Paired binary outcomes of a treated and a control arm on items with seeds: accuracies
/// are the arms' exact marginal accuracies (averaged over the item effect).
struct clustered_binary_model {
  double control = 0.5;   ///< accuracy of the control arm, in (0, 1) or exactly 0 or 1
  double treated = 0.5;   ///< accuracy of the treated arm, in (0, 1) or exactly 0 or 1
  double item_sd = 0.6;   ///< sd of the item's logit shift (shared by its seeds and both arms), ≥ 0
  std::size_t seeds = 1;  ///< seeds (repeated trials) per item, ≥ 1
};

/// @brief Which side of the verdict interval the claim rests on.
enum class betting_claim {
  above,  ///< lower limit L > threshold ("beats": threshold 0; non-inferior: threshold −margin)
  below   ///< upper limit U < threshold (a benefit of the margin excluded: threshold margin)
};

/// @brief Options of the planning functions.
struct betting_power_options {
  double alpha = 0.05;                         ///< one-sided level of the limit, in (0, 0.5)
  double threshold = 0.0;                      ///< θ₀ of the claim, in (−1, 1)
  betting_claim claim = betting_claim::above;  ///< the side
  std::size_t replicates = 2000;               ///< simulated designs per power value, ≥ 100
  std::uint64_t seed = 2028;                   ///< the streams' seed (printed by the callers)
  double truncation = 0.9;                     ///< truncation c of the bets (betting_options)
};

/// @brief A simulated power with its Monte Carlo standard error.
struct betting_power_result {
  double power = std::numeric_limits<double>::quiet_NaN();      ///< share of designs that show the claim
  double std_error = std::numeric_limits<double>::quiet_NaN();  ///< sqrt(p(1 − p)/replicates)
  std::size_t items = 0;                                        ///< items per design
  std::size_t replicates = 0;                                   ///< designs simulated
};

namespace detail {

/// @brief E[expit(logit(p) + s)], s ~ N(0, sd²): the marginal accuracy of an arm whose item-level
/// accuracy is expit(logit(p) + s) (trapezoid rule on ±10 sd, 2001 points).
inline double logit_normal_mean(double p, double sd) {
  if (p <= 0.0 || p >= 1.0 || sd == 0.0) return p;
  const int n = 2000;
  const double lp = std::log(p / (1.0 - p)), lo = -10.0 * sd, h = 20.0 * sd / n;
  double s = 0.0, w = 0.0;
  for (int i = 0; i <= n; ++i) {
    const double x = lo + h * i;
    const double k = (i == 0 || i == n ? 0.5 : 1.0) * std::exp(-0.5 * (x / sd) * (x / sd));
    s += k / (1.0 + std::exp(-(lp + x)));
    w += k;
  }
  return s / w;
}

/// @brief The item-level logit location whose marginal accuracy (logit_normal_mean) is `target`.
inline double logit_for_accuracy(double target, double sd) {
  if (target <= 0.0) return -std::numeric_limits<double>::infinity();
  if (target >= 1.0) return std::numeric_limits<double>::infinity();
  double lo = 1e-12, hi = 1.0 - 1e-12;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (logit_normal_mean(mid, sd) < target ? lo : hi) = mid;
  }
  const double p = 0.5 * (lo + hi);
  return std::log(p / (1.0 - p));
}

inline void check_betting_power(std::string_view fn, const clustered_binary_model& m,
                                const betting_power_options& o) {
  auto unit = [fn](const char* name, double x) {
    if (!(x >= 0.0 && x <= 1.0))
      LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": " + name + " must lie in [0, 1]"));
  };
  unit("control", m.control);
  unit("treated", m.treated);
  if (!(m.item_sd >= 0.0 && m.item_sd <= 10.0))
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": item_sd must lie in [0, 10]"));
  if (m.seeds < 1 || m.seeds > 1000)
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": seeds must lie in [1, 1000]"));
  if (!(o.alpha > 0.0 && o.alpha < 0.5))
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": alpha must lie in (0, 0.5)"));
  if (!(o.threshold > -1.0 && o.threshold < 1.0))
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": threshold must lie in (-1, 1)"));
  if (o.replicates < 100 || o.replicates > 1000000)
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": replicates must lie in [100, 1000000]"));
  check_open_unit(fn, "truncation", o.truncation);
}

/// @brief Whether item differences `x` (in [−1, 1]) show the claim: the capital of the claim's
/// side at θ₀, with the bets of bounded_mean_interval at level alpha, reaches 1/alpha.
inline bool betting_claim_shown(std::span<const double> x, const betting_power_options& o,
                                std::vector<double>& y) {
  y.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = 0.5 * (x[i] + 1.0);
  const auto lambda = betting_plugin_bets(y, o.alpha);
  const double m = 0.5 * (o.threshold + 1.0), stop = 1.0 / o.alpha;
  return betting_sup_capital(y, lambda, m, o.claim == betting_claim::above ? +1 : -1, o.truncation, stop) >=
         stop;
}

/// @brief The power of `shown` of `replicates` simulated designs of `items` items, with its Monte
/// Carlo standard error.
inline betting_power_result power_result(std::size_t shown, std::size_t items, std::size_t replicates) {
  betting_power_result out;
  out.items = items;
  out.replicates = replicates;
  out.power = static_cast<double>(shown) / static_cast<double>(replicates);
  out.std_error = std::sqrt(out.power * (1.0 - out.power) / static_cast<double>(replicates));
  return out;
}

}  // namespace detail

/// @brief Power of the claim at `items` items: the share of simulated designs whose one-sided
/// betting limit at level alpha lies beyond the threshold (L > θ₀ or U < θ₀). Replicate r's item i
/// draws its logit shift and its outcomes from the stream (seed, i, 0, r), the same at every
/// item count and every accuracy (common random numbers: power curves are smooth in both).
/// @param items items per design, in [1, 10^6]
/// @throws invalid_argument on an accuracy outside [0, 1], item_sd ∉ [0, 10], seeds ∉ [1, 1000],
///         alpha ∉ (0, 0.5), threshold ∉ (−1, 1), replicates ∉ [100, 10^6], bad truncation, or items
[[nodiscard]] inline betting_power_result clustered_betting_power(std::size_t items,
                                                                  const clustered_binary_model& m,
                                                                  const betting_power_options& o = {}) {
  constexpr std::string_view fn = "clustered_betting_power";
  detail::check_betting_power(fn, m, o);
  if (items < 1 || items > 1000000)
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": items must lie in [1, 1000000]"));
  const double lc = detail::logit_for_accuracy(m.control, m.item_sd);
  const double lt = detail::logit_for_accuracy(m.treated, m.item_sd);
  auto prob = [](double l, double s) {
    return std::isinf(l) ? (l > 0 ? 1.0 : 0.0) : 1.0 / (1.0 + std::exp(-(l + s)));
  };
  std::vector<double> x(items), y;
  std::size_t shown = 0;
  for (std::size_t r = 0; r < o.replicates; ++r) {
    for (std::size_t i = 0; i < items; ++i) {
      auto g = make_stream({.seed = o.seed, .item = i, .arm = 0, .replicate = static_cast<std::uint32_t>(r)});
      const double s = m.item_sd * standard_normal(g);
      const double pc = prob(lc, s), pt = prob(lt, s);
      double d = 0.0;
      for (std::size_t k = 0; k < m.seeds; ++k) {
        const double ut = uniform01(g), uc = uniform01(g);
        d += (ut < pt ? 1.0 : 0.0) - (uc < pc ? 1.0 : 0.0);
      }
      x[i] = d / static_cast<double>(m.seeds);
    }
    shown += detail::betting_claim_shown(x, o, y) ? 1 : 0;
  }
  return detail::power_result(shown, items, o.replicates);
}

/// @brief The fewest items at which the claim's simulated power reaches `power` (doubling from 8,
/// then bisection; power is close to monotone in the items under common random numbers, and the
/// result is the first item count found at or above the target on that path), or std::nullopt when
/// `max_items` items do not reach it (e.g. a true difference on the wrong side of θ₀).
/// @param power target power, in (0, 1)
/// @param max_items the largest design considered, in [1, 10^6]
/// @throws invalid_argument as clustered_betting_power(), or power ∉ (0, 1)
[[nodiscard]] inline std::optional<std::size_t> clustered_betting_items(double power,
                                                                        const clustered_binary_model& m,
                                                                        const betting_power_options& o = {},
                                                                        std::size_t max_items = 100000) {
  constexpr std::string_view fn = "clustered_betting_items";
  detail::check_open_unit(fn, "power", power);
  detail::check_betting_power(fn, m, o);
  if (max_items < 1 || max_items > 1000000)
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": max_items must lie in [1, 1000000]"));
  auto reaches = [&](std::size_t k) { return clustered_betting_power(k, m, o).power >= power; };
  std::size_t lo = 0, hi = std::min<std::size_t>(8, max_items);
  while (!reaches(hi)) {
    if (hi == max_items) return std::nullopt;
    lo = hi;
    hi = std::min(2 * hi, max_items);
  }
  while (hi - lo > 1) {  // not reached at lo (or lo = 0), reached at hi
    const std::size_t mid = lo + (hi - lo) / 2;
    (reaches(mid) ? hi : lo) = mid;
  }
  return hi;
}

/// @brief The detectable difference at `items` items: for a claim `above`, the smallest true
/// difference treated − control (treated = control + δ) at which the claim's power reaches `power`;
/// for `below`, the largest. The control's accuracy is the model's; `m.treated` is ignored. By
/// bisection to 0.001 on δ over the feasible range (treated in [0, 1]); std::nullopt when even the
/// most favourable difference (treated 1 for above, 0 for below) does not reach the power.
/// @throws invalid_argument as clustered_betting_items()
[[nodiscard]] inline std::optional<double> clustered_betting_detectable(std::size_t items, double power,
                                                                        const clustered_binary_model& m,
                                                                        const betting_power_options& o = {}) {
  constexpr std::string_view fn = "clustered_betting_detectable";
  detail::check_open_unit(fn, "power", power);
  detail::check_betting_power(fn, m, o);
  const bool above = o.claim == betting_claim::above;
  auto reaches = [&](double delta) {
    auto mm = m;
    mm.treated = std::clamp(m.control + delta, 0.0, 1.0);
    return clustered_betting_power(items, mm, o).power >= power;
  };
  double good = above ? 1.0 - m.control : -m.control;  // the most favourable difference
  double bad = o.threshold;                            // at θ₀ the power is at most alpha < power
  bad = std::clamp(bad, -m.control, 1.0 - m.control);
  if (!reaches(good)) return std::nullopt;
  while (std::fabs(good - bad) > 1e-3) {
    const double mid = 0.5 * (good + bad);
    (reaches(mid) ? good : bad) = mid;
  }
  return good;
}

/// @brief The minimum detectable difference of a one-sided betting limit at the spread a sample
/// shows, without simulation (what every finding of report.json carries as
/// `minimum_detectable_effect`): a claim whose limit lies `half_width` from the estimate is shown
/// with power ≈ `power` when the true mean lies h + z_power · s / √K beyond the claim's threshold,
/// s the sample sd of the K values `x` (the estimate moves like a normal mean with standard error
/// s/√K, and the limit keeps its distance h from it). The same number is the margin an absence
/// claim reaches with that power when the true mean is 0. Calibrated against the simulation
/// (clustered_betting_detectable) in docs/audit-report.md "Minimum detectable effect":
/// within −8 % / +26 % of the simulated value over 29 designs (K 30–300, 1–3 seeds, control 0.3–0.8),
/// power at it 0.70–0.98; it errs on the large side near an accuracy ceiling, where the spread
/// shrinks as the difference grows.
/// @param x the item values the limit was computed from (item mean differences), K ≥ 2, finite
/// @param half_width distance from the estimate to the claim's limit, ≥ 0 and finite
/// @param power target power, in (0, 1)
/// @return NaN when K < 2 or a value is not finite (no spread to read), else the difference
/// @throws invalid_argument if half_width is negative or not finite, or power ∉ (0, 1)
[[nodiscard]] inline double betting_detectable_difference(std::span<const double> x, double half_width,
                                                          double power = 0.8) {
  constexpr std::string_view fn = "betting_detectable_difference";
  detail::check_open_unit(fn, "power", power);
  if (!(half_width >= 0.0 && std::isfinite(half_width)))
    LATENTAUDIT_THROW(invalid_argument(std::string(fn) + ": half_width must be finite and >= 0"));
  if (x.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  double mean = 0.0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double ss = 0.0;
  for (double v : x) ss += (v - mean) * (v - mean);
  if (!std::isfinite(ss)) return std::numeric_limits<double>::quiet_NaN();
  const double k = static_cast<double>(x.size());
  return half_width + detail::normal_quantile(power) * std::sqrt(ss / (k - 1.0) / k);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_BETTING_POWER_HPP
