// SPDX-License-Identifier: MIT
// latentaudit: a confidence interval for the ratio of two means of paired bounded observations —
// ρ = E[a] / E[b], e.g. the retention of a cross-model cache map, (kv_mapped − no_comm) /
// (kv_full − no_comm) over items — by inverting the betting test of "E[a − ρ₀ b] = 0" (Fieller's
// construction with the betting interval in place of the t): the set of ρ₀ whose difference
// d = a − ρ₀ b has 0 inside its betting interval. Valid at every distribution of (a, b) on the
// box, with the betting interval's one-sided errors. docs/estimators/betting.md "A ratio of two
// means".
#ifndef LATENTAUDIT_ESTIMATORS_BETTING_RATIO_HPP
#define LATENTAUDIT_ESTIMATORS_BETTING_RATIO_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/rng.hpp"
#include "betting.hpp"
#include "betting_power.hpp"

namespace latentaudit {

/// @brief Options of bounded_ratio_interval().
struct ratio_options {
  /// one-sided error of each limit (when E[b] > 0; the set misses ρ with probability ≤ 2α); in
  /// (0, 0.25)
  double alpha = 0.05;
  double truncation = 0.9;  ///< the betting interval's truncation (betting_options::truncation)
  std::size_t horizon = 0;  ///< the items the bets are tuned for (betting_options::horizon)
  /// the ratios searched, [−search, search]; a set reaching an end is unbounded there (±∞); > 0
  double search = 10.0;
};

/// @brief A confidence set for ρ = E[a] / E[b], as its hull.
struct ratio_interval {
  double estimate = std::numeric_limits<double>::quiet_NaN();  ///< mean(a) / mean(b) (NaN if mean(b) = 0)
  double low = std::numeric_limits<double>::quiet_NaN();       ///< lower limit (−∞: unbounded)
  double high = std::numeric_limits<double>::quiet_NaN();      ///< upper limit (+∞: unbounded)
  /// false when no ρ₀ is accepted (the data contradict every ratio: E[b] shown 0 while E[a] is
  /// not): low and high are then NaN
  bool exists = true;
  std::size_t n = 0;  ///< pairs
};

/// @brief Confidence interval for ρ = E[a] / E[b] from paired observations (a_i, b_i) in
/// [lo, hi]², by test inversion: ρ₀ is accepted when 0 lies inside the 1 − 2α betting interval
/// (bounded_mean_interval, α per side, the bets tuned for `horizon`) of the mean of
/// d_i = a_i − ρ₀ b_i, each d_i in [lo − max(ρ₀lo, ρ₀hi), hi − min(ρ₀lo, ρ₀hi)]. At the true ρ
/// E[d] = 0, so P(ρ rejected) ≤ 2α for every distribution; when E[b] > 0 the mean of d falls as
/// ρ₀ grows, so the lower limit misses ρ from above with probability at most α and the upper limit
/// from below at most α. The set is searched on a grid
/// of 201 points over [−search, search] and at the estimate mean(a)/mean(b) (so that a set
/// narrower than the grid's step is found), its hull's ends refined by 30 bisections between the
/// outermost accepted point and its rejected neighbour (each returned limit is an accepted ρ₀); an
/// end at ±search is reported as ±∞ — as Fieller's interval is unbounded when E[b] is not shown
/// away from 0.
/// @throws invalid_argument for no pairs, a and b of different lengths, a value outside [lo, hi],
///         lo ≥ hi, a bad alpha, truncation or search, a horizon below the pairs
[[nodiscard]] inline ratio_interval bounded_ratio_interval(std::span<const double> a,
                                                           std::span<const double> b, double lo, double hi,
                                                           const ratio_options& o = {}) {
  constexpr std::string_view fn = "bounded_ratio_interval";
  if (a.empty() || a.size() != b.size())
    detail::throw_invalid(fn, "b", "must pair every value of a (at least one pair)");
  if (!(lo < hi)) detail::throw_invalid(fn, "hi", "must exceed lo");
  for (const auto* v : {&a, &b})
    for (const double x : *v)
      if (!(x >= lo && x <= hi)) detail::throw_invalid(fn, v == &a ? "a" : "b", "must lie in [lo, hi]");
  if (!(o.alpha > 0 && o.alpha < 0.25)) detail::throw_invalid(fn, "options.alpha", "must lie in (0, 0.25)");
  if (!(o.search > 0) || !std::isfinite(o.search)) detail::throw_invalid(fn, "options.search", "must be > 0");
  ratio_interval r;
  r.n = a.size();
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ma += a[i];
    mb += b[i];
  }
  ma /= static_cast<double>(a.size());
  mb /= static_cast<double>(b.size());
  if (mb != 0) r.estimate = ma / mb;
  // ρ₀ is accepted when 0 lies inside the (1 − 2α) betting interval of mean(d), as
  // bounded_mean_interval gives it (widened to hold the sample mean: the two-sided p-value alone can
  // reject the sample mean itself when the capital peaked on an early prefix), tested at 0 directly:
  // bounded_mean_interval's lower limit is the smallest m whose "mean > m"
  // capital stays below 1/α (the capital falls as m grows), so low ≤ 0 exactly when the capital at
  // 0 stays below 1/α or the sample mean is ≤ 0 (the interval holds it), and likewise for the
  // upper limit — the same acceptance without searching each interval's limits (a 400-point scan
  // and a bisection per limit), which made the ratio ~100× slower.
  betting_options bo{
      .alpha_lower = o.alpha, .alpha_upper = o.alpha, .truncation = o.truncation, .horizon = o.horizon};
  detail::check_betting_options(fn, bo);
  const std::size_t tuned = detail::betting_tuned_n(fn, a.size(), o.horizon);
  const double stop = 1.0 / o.alpha;
  std::vector<double> y(a.size());
  auto accepted = [&](double rho) {
    const double dlo = lo - std::max(rho * lo, rho * hi), dhi = hi - std::min(rho * lo, rho * hi);
    const double w = dhi - dlo;
    double mean = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double d = a[i] - rho * b[i];
      mean += d;
      y[i] = std::clamp((d - dlo) / w, 0.0, 1.0);
    }
    mean /= static_cast<double>(a.size());
    const double m0 = -dlo / w;  // 0 on the unit scale
    const auto lambda = detail::betting_plugin_bets(y, o.alpha, tuned);
    const bool low_ok =
        mean <= 0.0 || detail::betting_sup_capital(y, lambda, m0, +1, o.truncation, stop) < stop;
    const bool high_ok =
        mean >= 0.0 || detail::betting_sup_capital(y, lambda, m0, -1, o.truncation, stop) < stop;
    return low_ok && high_ok;
  };
  // The points searched: a grid of 201 over [−search, search] and the estimate mean(a)/mean(b),
  // where the mean of a − ρ b is 0 (the interval holds it, so the estimate is accepted unless the
  // capital rejected it early): an accepted set narrower than the grid's step is found there.
  constexpr int grid = 201;
  const double step = 2.0 * o.search / (grid - 1);
  std::vector<double> pts;
  pts.reserve(grid + 1);
  for (int k = 0; k < grid; ++k) pts.push_back(-o.search + step * k);
  if (std::isfinite(r.estimate) && r.estimate > -o.search && r.estimate < o.search)
    pts.insert(std::upper_bound(pts.begin(), pts.end(), r.estimate), r.estimate);
  std::ptrdiff_t first = -1, last = -1;
  for (std::size_t k = 0; k < pts.size(); ++k)
    if (accepted(pts[k])) {
      if (first < 0) first = static_cast<std::ptrdiff_t>(k);
      last = static_cast<std::ptrdiff_t>(k);
    }
  if (first < 0) {
    r.exists = false;
    return r;
  }
  // the hull's ends: between a rejected and an accepted point, the accepted side kept
  auto refine = [&](double rejected, double in) {
    for (int k = 0; k < 30; ++k) {
      const double mid = 0.5 * (rejected + in);
      (accepted(mid) ? in : rejected) = mid;
    }
    return in;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const auto at = [&](std::ptrdiff_t k) { return pts[static_cast<std::size_t>(k)]; };
  r.low = first == 0 ? -inf : refine(at(first - 1), at(first));
  r.high = last == static_cast<std::ptrdiff_t>(pts.size()) - 1 ? inf : refine(at(last + 1), at(last));
  return r;
}

/// @brief Three arms on items with seeds, for planning a ratio of paired differences: ρ =
/// (treated − base) / (reference − base) — a mapped cache's retention, (kv_mapped − no_comm) /
/// (kv_full − no_comm). Accuracies are the arms' exact marginal accuracies (over the item effect).
struct clustered_ratio_model {
  double base = 0.3;       ///< accuracy of the base arm (no_comm), in [0, 1]
  double reference = 0.9;  ///< accuracy of the reference arm (kv_full), in [0, 1]
  double treated = 0.9;    ///< accuracy of the treated arm (kv_mapped), in [0, 1]
  double item_sd = 0.6;    ///< sd of the item's logit shift (shared by its seeds and arms), in [0, 10]
  std::size_t seeds = 1;   ///< seeds per item, in [1, 1000]
  /// @brief The true ratio (treated − base) / (reference − base) (NaN when reference = base).
  [[nodiscard]] double ratio() const noexcept {
    return reference == base ? std::numeric_limits<double>::quiet_NaN()
                             : (treated - base) / (reference - base);
  }
};

/// @brief Power of the gate "the ratio's lower limit (bounded_ratio_interval at one-sided alpha
/// per limit, the rule of mapped.*.retention) is at least `gate`" at `items` items, simulated on
/// `replicates` designs: replicate r's item i draws its logit shift and its outcomes from the stream
/// (seed, i, 1, r) (common random numbers across item counts and accuracies).
/// @throws invalid_argument on an accuracy outside [0, 1], item_sd ∉ [0, 10], seeds ∉ [1, 1000],
///         items ∉ [1, 10^5], replicates ∉ [50, 10^6], a non-finite gate, or a bad alpha
[[nodiscard]] inline betting_power_result clustered_ratio_gate_power(std::size_t items,
                                                                     const clustered_ratio_model& m,
                                                                     double gate,
                                                                     const betting_power_options& o = {}) {
  constexpr std::string_view fn = "clustered_ratio_gate_power";
  for (const double x : {m.base, m.reference, m.treated})
    if (!(x >= 0.0 && x <= 1.0)) detail::throw_invalid(fn, "model", "accuracies must lie in [0, 1]");
  if (!(m.item_sd >= 0.0 && m.item_sd <= 10.0))
    detail::throw_invalid(fn, "model.item_sd", "must lie in [0, 10]");
  if (m.seeds < 1 || m.seeds > 1000) detail::throw_invalid(fn, "model.seeds", "must lie in [1, 1000]");
  if (items < 1 || items > 100000) detail::throw_invalid(fn, "items", "must lie in [1, 100000]");
  if (o.replicates < 50 || o.replicates > 1000000)
    detail::throw_invalid(fn, "options.replicates", "must lie in [50, 1000000]");
  if (!std::isfinite(gate)) detail::throw_invalid(fn, "gate", "must be finite");
  if (!(o.alpha > 0.0 && o.alpha < 0.25)) detail::throw_invalid(fn, "options.alpha", "must lie in (0, 0.25)");
  const double l[3] = {detail::logit_for_accuracy(m.base, m.item_sd),
                       detail::logit_for_accuracy(m.reference, m.item_sd),
                       detail::logit_for_accuracy(m.treated, m.item_sd)};
  auto prob = [](double x, double s) {
    return std::isinf(x) ? (x > 0 ? 1.0 : 0.0) : 1.0 / (1.0 + std::exp(-(x + s)));
  };
  std::vector<double> a(items), b(items);
  std::size_t shown = 0;
  for (std::size_t r = 0; r < o.replicates; ++r) {
    for (std::size_t i = 0; i < items; ++i) {
      auto g = make_stream({.seed = o.seed, .item = i, .arm = 1, .replicate = static_cast<std::uint32_t>(r)});
      const double s = m.item_sd * standard_normal(g);
      double sa = 0.0, sb = 0.0;
      for (std::size_t k = 0; k < m.seeds; ++k) {
        const double y0 = uniform01(g) < prob(l[0], s) ? 1.0 : 0.0;
        const double yf = uniform01(g) < prob(l[1], s) ? 1.0 : 0.0;
        const double ym = uniform01(g) < prob(l[2], s) ? 1.0 : 0.0;
        sa += ym - y0;
        sb += yf - y0;
      }
      a[i] = sa / static_cast<double>(m.seeds);
      b[i] = sb / static_cast<double>(m.seeds);
    }
    const auto iv = bounded_ratio_interval(a, b, -1.0, 1.0, {.alpha = o.alpha, .truncation = o.truncation});
    shown += iv.exists && iv.low >= gate ? 1 : 0;
  }
  return detail::power_result(shown, items, o.replicates);
}

/// @brief The fewest items at which clustered_ratio_gate_power() reaches `power` (doubling from 8,
/// then bisection, as clustered_betting_items), or std::nullopt beyond `max_items` (e.g. a true
/// ratio below the gate).
/// @throws invalid_argument as clustered_ratio_gate_power(), power ∉ (0, 1), max_items ∉ [1, 10^5]
[[nodiscard]] inline std::optional<std::size_t> clustered_ratio_gate_items(
    double power, const clustered_ratio_model& m, double gate, const betting_power_options& o = {},
    std::size_t max_items = 100000) {
  constexpr std::string_view fn = "clustered_ratio_gate_items";
  detail::check_open_unit(fn, "power", power);
  if (max_items < 1 || max_items > 100000) detail::throw_invalid(fn, "max_items", "must lie in [1, 100000]");
  auto reaches = [&](std::size_t k) { return clustered_ratio_gate_power(k, m, gate, o).power >= power; };
  std::size_t lo = 0, hi = std::min<std::size_t>(8, max_items);
  while (!reaches(hi)) {
    if (hi == max_items) return std::nullopt;
    lo = hi;
    hi = std::min(2 * hi, max_items);
  }
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (reaches(mid) ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_BETTING_RATIO_HPP
