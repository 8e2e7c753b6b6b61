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
#include <span>
#include <string_view>
#include <vector>

#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "betting.hpp"

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
/// of 201 points over [−search, search], its hull's ends refined by 30 bisections (each returned
/// limit is an accepted ρ₀); an end at ±search is reported as ±∞ — as Fieller's interval is
/// unbounded when E[b] is not shown away from 0.
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
  // 0 inside the (1 − 2α) betting interval of mean(d), as bounded_mean_interval gives it (widened
  // to hold the sample mean: the two-sided p-value alone can reject the sample mean itself when
  // the capital peaked on an early prefix)
  const betting_options bo{
      .alpha_lower = o.alpha, .alpha_upper = o.alpha, .truncation = o.truncation, .horizon = o.horizon};
  std::vector<double> d(a.size());
  auto accepted = [&](double rho) {
    for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - rho * b[i];
    const double dlo = lo - std::max(rho * lo, rho * hi), dhi = hi - std::min(rho * lo, rho * hi);
    const auto iv = bounded_mean_interval(d, dlo, dhi, bo);
    return iv.low <= 0.0 && iv.high >= 0.0;
  };
  constexpr int grid = 201;
  const double step = 2.0 * o.search / (grid - 1);
  int first = -1, last = -1;
  for (int k = 0; k < grid; ++k) {
    const double rho = -o.search + step * k;
    if (accepted(rho)) {
      if (first < 0) first = k;
      last = k;
    }
  }
  if (first < 0) {
    r.exists = false;
    return r;
  }
  // the hull's ends: between a rejected and an accepted grid point, the accepted side kept
  auto refine = [&](double rejected, double in) {
    for (int k = 0; k < 30; ++k) {
      const double mid = 0.5 * (rejected + in);
      (accepted(mid) ? in : rejected) = mid;
    }
    return in;
  };
  const double inf = std::numeric_limits<double>::infinity();
  r.low = first == 0 ? -inf : refine(-o.search + step * (first - 1), -o.search + step * first);
  r.high = last == grid - 1 ? inf : refine(-o.search + step * (last + 1), -o.search + step * last);
  return r;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ESTIMATORS_BETTING_RATIO_HPP
