// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/analyses/noise.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_ANALYSES_IMPL_NOISE_INL_HPP
#define LATENTAUDIT_REPORT_ANALYSES_IMPL_NOISE_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../noise.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "../../../core/detail/check.hpp"
#include "../../../core/error.hpp"
#include "../../../estimators/betting.hpp"
#include "../../../estimators/bootstrap.hpp"
#include "../../../estimators/detail/distributions.hpp"
#include "../../../estimators/equivalence.hpp"
#include "../../../estimators/paired_binary.hpp"

namespace latentaudit {

LATENTAUDIT_INLINE std::vector<double> isotonic_nonincreasing(std::span<const double> y,
                                                              std::span<const double> w) {
  constexpr std::string_view fn = "isotonic_nonincreasing";
  if (y.size() != w.size()) LATENTAUDIT_THROW(shape_mismatch(std::string(fn) + ": y and w differ in length"));
  for (std::size_t k = 0; k < y.size(); ++k) {
    detail::check_finite(fn, "y", y[k]);
    detail::check_positive(fn, "w", w[k]);
  }
  // Blocks of pooled levels: mean, weight, count. A new level that exceeds the last block's mean
  // violates "non-increasing" and is pooled with it, repeatedly.
  struct block {
    double mean, weight;
    std::size_t count;
  };
  std::vector<block> b;
  b.reserve(y.size());
  for (std::size_t k = 0; k < y.size(); ++k) {
    b.push_back({y[k], w[k], 1});
    while (b.size() > 1 && b[b.size() - 2].mean < b.back().mean) {
      const block top = b.back();
      b.pop_back();
      block& prev = b.back();
      const double wt = prev.weight + top.weight;
      prev.mean = (prev.mean * prev.weight + top.mean * top.weight) / wt;
      prev.weight = wt;
      prev.count += top.count;
    }
  }
  std::vector<double> f;
  f.reserve(y.size());
  for (const auto& bl : b) f.insert(f.end(), bl.count, bl.mean);
  return f;
}

LATENTAUDIT_INLINE std::optional<double> first_crossing(std::span<const double> sigma,
                                                        std::span<const double> f, double threshold) {
  constexpr std::string_view fn = "first_crossing";
  if (sigma.size() != f.size())
    LATENTAUDIT_THROW(shape_mismatch(std::string(fn) + ": sigma and f differ in length"));
  if (!(threshold < 0.0))
    detail::throw_invalid(fn, "threshold", "must be negative, got " + number_text(threshold));
  double s0 = 0.0, f0 = 0.0;  // the curve starts at (0, 0), above the threshold
  for (std::size_t k = 0; k < f.size(); ++k) {
    if (f[k] <= threshold) return s0 + (f0 - threshold) / (f0 - f[k]) * (sigma[k] - s0);
    s0 = sigma[k];
    f0 = f[k];
  }
  return std::nullopt;
}

namespace detail {

/// @brief Throws invalid_argument "fn: arm 'A', field F: noise level must be non-negative and finite,
/// got V (where)".
[[noreturn]] LATENTAUDIT_INLINE void throw_bad_sigma(std::string_view fn, std::string_view arm,
                                                     std::string_view field, double v,
                                                     std::string_view where) {
  LATENTAUDIT_THROW(invalid_argument(
      fmt::format("{}: arm '{}', field {}: a noise level must be non-negative and finite, got {}{}{}", fn,
                  arm, field, number_text(v), where.empty() ? "" : " ", where)));
}

/// @brief Accuracy `accuracy` with the betting interval over the item mean accuracies at 1 − α
/// (α/2 per side), widened to hold `accuracy`.
LATENTAUDIT_INLINE betting_interval noise_accuracy_interval(std::span<const double> item_means,
                                                            double accuracy, double alpha,
                                                            std::size_t horizon) {
  auto b = bounded_mean_interval(
      item_means, 0.0, 1.0, {.alpha_lower = alpha / 2.0, .alpha_upper = alpha / 2.0, .horizon = horizon});
  b.estimate = accuracy;
  b.low = std::min(b.low, accuracy);
  b.high = std::max(b.high, accuracy);
  return b;
}

/// @brief The isotonic fit and its first crossing of −margin for level means y (ascending sigma)
/// with weights w.
LATENTAUDIT_INLINE std::optional<double> noise_fit_crossing(std::span<const double> sigma,
                                                            std::span<const double> y,
                                                            std::span<const double> w, double margin) {
  if (y.empty()) return std::nullopt;
  const auto f = isotonic_nonincreasing(y, w);
  return first_crossing(sigma, f, -margin);
}

/// @brief The test-inversion interval of the first crossing of −margin (see estimate_noise_tolerance).
struct noise_inversion {
  double low = 0.0, high = 0.0;  ///< hull of the accepted σ inside the tested range
  bool low_in_range = false;     ///< some σ inside the tested range is accepted
  bool high_in_range = false;    ///< the upper limit lies inside the range (else beyond)
};

/// @brief The σ in [0, σ_K] where H0 "the interpolated curve equals −margin" is not rejected at
/// level alpha by the two-sided skewness-corrected t test over items (Johnson 1978), and whether
/// "beyond the range" (δ_K > −margin) is not rejected. D[k][g]: item differences (NaN: absent).
LATENTAUDIT_INLINE noise_inversion noise_test_inversion(std::span<const double> sigma,
                                                        const std::vector<std::vector<double>>& D,
                                                        double margin, double alpha) {
  const std::size_t K = D.size(), G = K ? D[0].size() : 0;
  std::vector<double> mean(K, 0.0);
  std::vector<std::vector<double>> dev(K, std::vector<double>(G, 0.0));  // influence per item
  for (std::size_t k = 0; k < K; ++k) {
    double s = 0.0, c = 0.0;
    for (double v : D[k])
      if (!std::isnan(v)) s += v, c += 1.0;
    mean[k] = s / c;
    for (std::size_t g = 0; g < G; ++g) dev[k][g] = std::isnan(D[k][g]) ? 0.0 : (D[k][g] - mean[k]) / c;
  }
  const double n = static_cast<double>(G);
  const double q = t_quantile_upper(alpha / 2.0, n - 1.0);
  // ≤ 0: accepted. Segment k runs from level k − 1 (the origin for k = 0) to level k, λ ∈ [0, 1].
  auto stat = [&](std::size_t k, double lam) {
    double v = 0.0, m3 = 0.0;
    for (std::size_t g = 0; g < G; ++g) {
      const double x = n * (lam * dev[k][g] + (k > 0 ? (1.0 - lam) * dev[k - 1][g] : 0.0));
      v += x * x;
      m3 += x * x * x;
    }
    const double e = lam * mean[k] + (k > 0 ? (1.0 - lam) * mean[k - 1] : 0.0);
    const double s2 = v / (n - 1.0);
    if (!(s2 > 0.0)) return e + margin == 0.0 ? -1.0 : 1.0;
    const double gam = (m3 / n) / std::pow(s2, 1.5);
    const double T = (e + margin) / std::sqrt(s2 / n), c = gam / (6.0 * std::sqrt(n));
    if (4.0 * std::abs(c * T) >= 1.0) return 1.0;  // past the turning point of the correction
    return std::abs(T + c * (1.0 + 2.0 * T * T)) - q;
  };
  noise_inversion r;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  auto take = [&](double x) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  };
  constexpr int grid = 32;
  for (std::size_t k = 0; k < K; ++k) {
    const double s0 = k > 0 ? sigma[k - 1] : 0.0, s1 = sigma[k];
    double pl = 0.0, pa = stat(k, 0.0);
    if (pa <= 0.0) take(s0);
    for (int i = 1; i <= grid; ++i) {
      const double l = static_cast<double>(i) / grid, a = stat(k, l);
      if ((pa <= 0.0) != (a <= 0.0)) {  // bisect the boundary
        double x0 = pl, x1 = l;
        for (int it = 0; it < 40; ++it) {
          const double mid = 0.5 * (x0 + x1);
          ((stat(k, mid) <= 0.0) == (pa <= 0.0) ? x0 : x1) = mid;
        }
        take(s0 + 0.5 * (x0 + x1) * (s1 - s0));
      }
      if (a <= 0.0) take(s0 + l * (s1 - s0));
      pl = l;
      pa = a;
    }
  }
  r.low_in_range = lo <= hi;
  r.low = lo;
  r.high = hi;
  // "beyond the range" is rejected only when the largest level is shown below −margin
  double vK = 0.0;
  for (double x : dev[K - 1]) vK += x * x;
  vK *= n / (n - 1.0);
  r.high_in_range = r.low_in_range && mean[K - 1] + q * std::sqrt(vK) < -margin && stat(K - 1, 1.0) > 0.0;
  return r;
}

}  // namespace detail

LATENTAUDIT_INLINE noise_tolerance estimate_noise_tolerance(std::span<const noise_level_pairs> levels,
                                                            const noise_reference& reference,
                                                            const noise_options& o) {
  constexpr std::string_view fn = "estimate_noise_tolerance";
  detail::check_tost_alpha(fn, o.alpha);
  detail::check_positive(fn, "options.margin", o.margin);
  const std::size_t B = o.bootstrap_replicates;
  if (B < 2 || B > std::numeric_limits<std::uint32_t>::max() ||
      (static_cast<double>(B) + 1.0) * o.alpha / 2.0 < 1.0) {
    detail::throw_invalid(fn, "options.bootstrap_replicates",
                          "must lie in [2, 4294967295] with (B + 1)·alpha/2 >= 1, got " + number_text(B));
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double level = 1.0 - o.alpha;
  const double m = o.margin;
  noise_tolerance nt;
  for (const auto& l : levels) {
    if (!std::isfinite(l.sigma) || l.sigma < 0.0)
      detail::throw_bad_sigma(fn, l.arm, o.dose_field, l.sigma, "");
    if (l.noise.size() != l.item.size() || l.reference.size() != l.item.size())
      LATENTAUDIT_THROW(shape_mismatch(std::string(fn) + ": arm '" + l.arm +
                                       "': item, noise and reference differ in length"));
    if (l.item.empty()) detail::throw_invalid(fn, "arm '" + l.arm + "'", "has no pairs");
  }
  if (levels.empty()) {
    nt.method = "not estimable: no noise level";
    return nt;
  }
  std::vector<std::size_t> order(levels.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return levels[a].sigma < levels[b].sigma; });
  const std::size_t K = levels.size();

  // Items of every level, ascending id; per level the item mean differences (NaN: item absent).
  std::vector<std::uint64_t> ids;
  for (const auto& l : levels) ids.insert(ids.end(), l.item.begin(), l.item.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  const std::size_t G = ids.size();
  std::vector<std::vector<double>> D(K, std::vector<double>(G, nan));
  std::vector<double> sigma(K), mean(K), weight(K);

  {
    proportion_interval w0{nan, nan, nan, level};
    if (reference.n > 0 && !reference.item_means.empty()) {
      const double acc = static_cast<double>(reference.correct) / static_cast<double>(reference.n);
      const auto b = detail::noise_accuracy_interval(reference.item_means, acc, o.alpha, o.horizon);
      w0 = {b.estimate, b.low, b.high, level};
    } else if (reference.n > 0) {
      w0 = wilson_interval({.successes = reference.correct, .trials = reference.n}, {.level = level});
    }
    nt.curve.push_back({.arm = reference.arm,
                        .sigma = 0.0,
                        .n = reference.n,
                        .items = G,
                        .accuracy = w0.estimate,
                        .ci_low = w0.low,
                        .ci_high = w0.high,
                        .diff_vs_kv_full = 0.0,
                        .diff_ci_low = 0.0,
                        .diff_ci_high = 0.0,
                        .fitted_diff = 0.0,
                        .noninferior = true});
  }
  for (std::size_t k = 0; k < K; ++k) {
    const auto& l = levels[order[k]];
    std::vector<double> s(G, 0.0), c(G, 0.0), sa(G, 0.0), acc;
    double x = 0.0;
    for (std::size_t i = 0; i < l.item.size(); ++i) {
      const double a = l.noise[i], r = l.reference[i];
      if (!(a >= 0.0 && a <= 1.0 && r >= 0.0 && r <= 1.0))
        detail::throw_invalid(fn, "arm '" + l.arm + "'",
                              "pair " + std::to_string(i) + " has an outcome outside [0, 1]");
      const auto g =
          static_cast<std::size_t>(std::lower_bound(ids.begin(), ids.end(), l.item[i]) - ids.begin());
      s[g] += a - r;
      c[g] += 1.0;
      sa[g] += a;
      x += a;
    }
    std::size_t items = 0;
    for (std::size_t g = 0; g < G; ++g) {
      if (c[g] == 0.0) continue;
      D[k][g] = s[g] / c[g];
      acc.push_back(sa[g] / c[g]);
      ++items;
    }
    const auto e = clustered_paired_difference(
        l.item, l.noise, l.reference, {.alpha_lower = o.alpha, .alpha_upper = o.alpha, .horizon = o.horizon});
    const std::size_t n = l.item.size();
    const auto w = detail::noise_accuracy_interval(acc, x / static_cast<double>(n), o.alpha, o.horizon);
    sigma[k] = l.sigma;
    mean[k] = e.estimate;
    weight[k] = static_cast<double>(items);
    nt.curve.push_back({.arm = l.arm,
                        .sigma = l.sigma,
                        .n = n,
                        .items = items,
                        .accuracy = w.estimate,
                        .ci_low = w.low,
                        .ci_high = w.high,
                        .diff_vs_kv_full = e.estimate,
                        .diff_ci_low = e.ci_low,
                        .diff_ci_high = e.ci_high,
                        .fitted_diff = nan,
                        .noninferior = e.ci_low > -m});
  }
  const auto fitted = isotonic_nonincreasing(mean, weight);
  for (std::size_t k = 0; k < K; ++k) nt.curve[k + 1].fitted_diff = fitted[k];
  nt.tolerance_sigma = first_crossing(sigma, fitted, -m);
  for (std::size_t k = 0; k < K && nt.curve[k + 1].noninferior; ++k) nt.sigma_noninferior = sigma[k];

  // The betting band: crossings of the per-level limits at α/(2K) per side (Bonferroni over the
  // levels and the two sides). If every true level difference lies inside its limits, the true
  // curve's first crossing lies between the crossings of the lower and the upper limits.
  auto betting_band = [&] {
    std::vector<double> lo(K), hi(K), x;
    const double a = o.alpha / (2.0 * static_cast<double>(K));
    for (std::size_t k = 0; k < K; ++k) {
      x.clear();
      for (double v : D[k])
        if (!std::isnan(v)) x.push_back(v);
      const auto iv =
          bounded_mean_interval(x, -1.0, 1.0, {.alpha_lower = a, .alpha_upper = a, .horizon = o.horizon});
      lo[k] = iv.low;
      hi[k] = iv.high;
    }
    nt.ci_low = first_crossing(sigma, lo, -m);
    nt.ci_high = first_crossing(sigma, hi, -m);
    nt.ci_from_betting_band = true;
  };
  std::string ci_text;
  const std::string band_text = fmt::format(
      "the crossings of the per-level betting limits at alpha/(2K) = {} per side (Bonferroni over K = {} "
      "levels and both sides)",
      number_text(o.alpha / (2.0 * static_cast<double>(K))), K);
  if (G >= 2) {
    constexpr double none = -1.0;  // a replicate whose fit never reaches −margin
    auto statistic = [&](const resample_view& v) {
      std::vector<double> sg, y, wt;
      sg.reserve(K);
      y.reserve(K);
      wt.reserve(K);
      for (std::size_t k = 0; k < K; ++k) {
        double s = 0.0, c = 0.0;
        for (auto g : v.indices()) {
          const double d = D[k][g];
          if (std::isnan(d)) continue;
          s += d;
          c += 1.0;
        }
        if (c == 0.0) continue;
        sg.push_back(sigma[k]);
        y.push_back(s / c);
        wt.push_back(c);
      }
      const auto t = detail::noise_fit_crossing(sg, y, wt, m);
      return t ? *t : none;
    };
    std::vector<double> unit(G);
    for (std::size_t g = 0; g < G; ++g) unit[g] = static_cast<double>(g);
    const auto r = bootstrap(std::span<const double>(unit), statistic,
                             {.replicates = B,
                              .level = level,
                              .method = bootstrap_ci_method::percentile,
                              .seed = o.seed,
                              .threads = o.threads,
                              .keep_replicates = true,
                              .if_degenerate = on_degenerate::flag});
    std::vector<double> t = r.replicates;
    std::size_t unbounded = 0;
    for (auto& v : t) {
      if (v == none) {
        v = std::numeric_limits<double>::infinity();
        ++unbounded;
      }
    }
    nt.unbounded_fraction = static_cast<double>(unbounded) / static_cast<double>(t.size());
    const double t0 = nt.tolerance_sigma.value_or(std::numeric_limits<double>::infinity());
    const bool point_mass =
        std::isfinite(t0) && std::all_of(t.begin(), t.end(), [&](double v) { return v == t0; });
    if (point_mass) {
      betting_band();
      ci_text = fmt::format(
          "{}% CI: {} (the cluster bootstrap is a point mass: every replicate equals the "
          "estimate)",
          number_text(100.0 * level), band_text);
    } else {
      const auto ti = detail::noise_test_inversion(sigma, D, m, o.alpha);
      if (ti.low_in_range) nt.ci_low = ti.low;
      if (ti.high_in_range) nt.ci_high = ti.high;
      if (nt.tolerance_sigma) {  // widened to hold the estimate
        if (nt.ci_low) nt.ci_low = std::min(*nt.ci_low, *nt.tolerance_sigma);
        if (nt.ci_high) nt.ci_high = std::max(*nt.ci_high, *nt.tolerance_sigma);
        if (!ti.low_in_range && !ti.high_in_range) nt.ci_low = *nt.tolerance_sigma;
      }
      if (nt.ci_low && nt.ci_high && *nt.ci_low == *nt.ci_high) {
        betting_band();  // zero width (no item variation where it matters)
        ci_text = fmt::format("{}% CI: {} (the test inversion has zero width)", number_text(100.0 * level),
                              band_text);
      } else {
        ci_text = fmt::format(
            "{}% CI: test inversion over {} items - the {} where 'the curve through (0, 0) and the level "
            "means, linear between levels, equals -{}' is not rejected by a two-sided skewness-corrected t "
            "test (Johnson 1978; t quantile, {} df; item-level variance of the interpolated difference); "
            "upper limit beyond the tested range when the largest level is not shown below -{}; widened to "
            "hold the estimate. Cluster bootstrap (B = {}, seed {}) for the share of replicates that never "
            "reach the margin",
            number_text(100.0 * level), G, o.dose, number_text(m), G - 1, number_text(m), B, o.seed);
      }
    }
  } else {
    betting_band();
    ci_text =
        fmt::format("{}% CI: {} (fewer than 2 items: no bootstrap)", number_text(100.0 * level), band_text);
  }
  nt.method = fmt::format(
      "need regime, paired with kv_full; per {0}: mean over items of the item-mean difference arm - "
      "kv_full; fit: isotonic regression (non-increasing in {0}, pool-adjacent-violators weighted by "
      "items) through (0, 0), linear between levels; tolerance {0} = first {0} where the fit reaches "
      "-{1} (beyond the tested range when it never does); {2}; conservative: largest {0} shown "
      "non-inferior by fixed-sequence betting tests over items (lower limit, one-sided {3}, > -{1})",
      o.dose, number_text(m), ci_text, number_text(o.alpha));
  return nt;
}

LATENTAUDIT_INLINE finding noise_tolerance_finding(const noise_tolerance& nt, const noise_options& o) {
  return detail::tolerance_finding(nt, o, {finding_kind::noise_tolerance_sigma},
                                   "no kv_noise_* arm paired with kv_full in the need regime");
}

namespace detail {

LATENTAUDIT_INLINE finding tolerance_finding(const noise_tolerance& nt, const noise_options& o,
                                             finding_key key, std::string missing) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto sig3 = [](double x) { return fmt::format("{:.3g}", x); };
  const double inf = std::numeric_limits<double>::infinity();
  if (nt.curve.size() < 2) {
    return {.id = key.id(),
            .answer = verdict::inconclusive,
            .estimate = nan,
            .ci_low = nan,
            .ci_high = nan,
            .method = "not estimable",
            .n = 0,
            .detail = std::move(missing),
            .key = std::move(key)};
  }
  auto num = [&](const std::optional<double>& x) { return x ? sig3(*x) : std::string("beyond"); };
  const std::string pts = fmt::format("{:.1f}", 100.0 * o.margin);
  const std::string lvl = number_text(100.0 * (1.0 - o.alpha));
  const std::string& dose = o.dose;
  const double top = nt.curve.back().sigma;
  finding f{.id = key.id(),
            .estimate = nt.tolerance_sigma.value_or(inf),
            .ci_low = nt.ci_low.value_or(inf),
            .ci_high = nt.ci_high.value_or(inf),
            .method = nt.method,
            .n = nt.curve.front().n,
            .key = std::move(key)};
  for (const auto& p : nt.curve) f.reads.push_back({"need", p.arm});  // the curve is the need regime's
  const bool located = nt.tolerance_sigma && nt.ci_low && nt.ci_high;
  f.answer = located ? verdict::yes : verdict::inconclusive;
  const std::string conservative =
      nt.sigma_noninferior
          ? fmt::format("largest {} shown non-inferior (conservative): {}", dose, sig3(*nt.sigma_noninferior))
          : fmt::format("no {} level shown non-inferior (conservative quantity absent)", dose);
  const std::string source = nt.ci_from_betting_band ? "betting band" : "test inversion";
  if (located) {
    f.detail = fmt::format(
        "the fitted accuracy difference vs kv_full reaches -{} points at {} {}; {}% CI {} to {} ({}); {}",
        pts, dose, sig3(*nt.tolerance_sigma), lvl, num(nt.ci_low), num(nt.ci_high), source, conservative);
  } else if (!nt.tolerance_sigma) {
    f.detail = fmt::format(
        "not located: the fitted accuracy difference vs kv_full stays above -{} points up to the largest "
        "tested {} {}, so the tolerance lies beyond the tested range ({}% CI lower limit {}; {:.1f}% of "
        "bootstrap replicates never reach the margin); {}; 'no' does not apply to a location",
        pts, dose, sig3(top), lvl, nt.ci_low ? sig3(*nt.ci_low) : "beyond the range",
        100.0 * nt.unbounded_fraction, conservative);
  } else {
    f.detail = fmt::format(
        "not located: the fitted accuracy difference vs kv_full reaches -{} points at {} {}, but the "
        "{}% CI ({}) runs from {} to {} and a limit beyond the tested range (largest {} {}) leaves the "
        "tolerance unbounded ({:.1f}% of bootstrap replicates never reach the margin); {}; 'no' does not "
        "apply to a location",
        pts, dose, sig3(*nt.tolerance_sigma), lvl, source, nt.ci_low ? sig3(*nt.ci_low) : "beyond the range",
        nt.ci_high ? sig3(*nt.ci_high) : "beyond the range", dose, sig3(top), 100.0 * nt.unbounded_fraction,
        conservative);
  }
  return f;
}

LATENTAUDIT_INLINE std::vector<noise_level_pairs> dose_level_pairs(const audit_data& d,
                                                                   std::span<const dose_arm> arms,
                                                                   std::size_t reference,
                                                                   std::string_view what,
                                                                   std::vector<std::string>& warnings) {
  std::vector<noise_level_pairs> levels;
  for (const auto& da : arms) {
    noise_level_pairs l{.arm = d.arm_label[da.arm], .sigma = da.dose};
    for (std::size_t u = 0; u < d.units(); ++u) {
      if (d.unit_regime[u] != audit_regime::need) continue;
      const int ya = d.outcome(u, da.arm), yf = d.outcome(u, reference);
      if (ya < 0 || yf < 0) continue;
      l.item.push_back(d.unit_item[u]);
      l.noise.push_back(ya);
      l.reference.push_back(yf);
    }
    if (l.item.empty()) {
      warnings.push_back(fmt::format(
          "{} arm '{}' has no need-regime unit with kv_full; left out of the dose-response", what, l.arm));
      continue;
    }
    levels.push_back(std::move(l));
  }
  return levels;
}

LATENTAUDIT_INLINE noise_reference dose_reference(const audit_data& d, std::size_t reference) {
  noise_reference ref;
  ref.arm = d.arm_label[reference];
  std::vector<double> count;
  std::uint32_t last = std::numeric_limits<std::uint32_t>::max();
  for (std::size_t u = 0; u < d.units(); ++u) {
    if (d.unit_regime[u] != audit_regime::need || d.outcome(u, reference) < 0) continue;
    ++ref.n;
    ref.correct += static_cast<std::size_t>(d.outcome(u, reference));
    if (d.unit_cluster[u] != last) {  // units are sorted by item
      ref.item_means.push_back(0.0);
      count.push_back(0.0);
      last = d.unit_cluster[u];
    }
    ref.item_means.back() += d.outcome(u, reference);
    count.back() += 1.0;
  }
  for (std::size_t g = 0; g < count.size(); ++g) ref.item_means[g] /= count[g];
  return ref;
}

LATENTAUDIT_INLINE std::optional<double> noise_arm_sigma(const audit_data& d,
                                                         std::span<const trial_record> records, std::size_t a,
                                                         std::vector<std::string>& warnings) {
  std::optional<double> s;
  bool mixed = false;
  for (std::size_t u = 0; u < d.units(); ++u) {
    const std::size_t i = d.rec[u * d.arms() + a];
    if (i == audit_data::npos || !records[i].noise_sigma) continue;
    const double v = *records[i].noise_sigma;
    if (!(v >= 0.0))
      throw_bad_sigma("analyse_records", d.arm_label[a], "noise_sigma", v, "(record " + number_text(i) + ")");
    if (!s)
      s = v;
    else if (*s != v)
      mixed = true;
  }
  if (mixed) {
    warnings.push_back(fmt::format("arm '{}' records more than one noise_sigma; the first ({}) is used",
                                   d.arm_label[a], number_text(*s)));
  }
  if (s) return s;
  if (const auto& la = d.label_arms[a]; la && la->noise_sigma)  // the σ its label names
    return *la->noise_sigma;
  return std::nullopt;
}

LATENTAUDIT_INLINE noise_tolerance audit_noise(const audit_data& d, std::span<const trial_record> records,
                                               std::size_t kv_full, const noise_options& o,
                                               std::vector<std::string>& warnings) {
  // A negative noise level is refused wherever it is recorded.
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    if (r.noise_sigma && !(*r.noise_sigma >= 0.0)) {
      throw_bad_sigma("analyse_records", r.arm, "noise_sigma", *r.noise_sigma,
                      fmt::format("(record {}, item {}, seed {})", i, r.item, r.seed));
    }
  }
  noise_tolerance nt;
  std::vector<dose_arm> narms;
  if (kv_full != audit_data::npos) {
    for (std::size_t a = 0; a < d.arms(); ++a) {
      if (a == kv_full) continue;
      // policy arms with a noise level (in their records, or in the label they parse to: kv_noise_<σ>)
      bool has_sigma = d.label_arms[a] && d.label_arms[a]->noise_sigma;
      for (std::size_t u = 0; u < d.units() && !has_sigma; ++u) {
        const std::size_t i = d.rec[u * d.arms() + a];
        has_sigma = i != audit_data::npos && records[i].noise_sigma.has_value();
      }
      if (!has_sigma || !d.is(a, arm_kind::kv_policy)) continue;
      const auto s = noise_arm_sigma(d, records, a, warnings);
      if (!s) {
        warnings.push_back(fmt::format("noise arm '{}' has no readable sigma; left out of the dose-response",
                                       d.arm_label[a]));
        continue;
      }
      narms.push_back({a, *s});
    }
  }
  const std::vector<noise_level_pairs> levels = dose_level_pairs(d, narms, kv_full, "noise", warnings);
  const noise_reference ref = kv_full != audit_data::npos ? dose_reference(d, kv_full) : noise_reference{};
  if (levels.empty() || ref.n == 0) {
    nt.method = "not estimable: no kv_noise_* arm, or no need-regime unit with kv_full";
    warnings.push_back(fmt::format("noise tolerance skipped: {}",
                                   levels.empty() ? "no kv_noise_* arm paired with kv_full in the need regime"
                                                  : "no need-regime kv_full unit"));
    return nt;
  }
  nt = estimate_noise_tolerance(levels, ref, o);
  if (nt.curve.front().items < 2)
    warnings.push_back(
        "noise tolerance: fewer than 2 need-regime items paired with kv_full; no bootstrap interval (the "
        "betting band instead)");
  return nt;
}

}  // namespace detail

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_ANALYSES_IMPL_NOISE_INL_HPP
