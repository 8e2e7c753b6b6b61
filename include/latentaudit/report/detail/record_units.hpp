// SPDX-License-Identifier: MIT
// latentaudit: helpers shared by the record-level analyses of report/ (observational.hpp,
// cost.hpp): grouping records into (item, seed) units, deterministic per-unit and per-item
// uniforms from the counter-based generator, cluster-bootstrap means by item, and findings.
#ifndef LATENTAUDIT_REPORT_DETAIL_RECORD_UNITS_HPP
#define LATENTAUDIT_REPORT_DETAIL_RECORD_UNITS_HPP

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../core/detail/check.hpp"
#include "../../core/error.hpp"
#include "../../core/rng.hpp"
#include "../../estimators/bootstrap.hpp"
#include "../../estimators/difference_in_means.hpp"
#include "../../estimators/effect_estimate.hpp"
#include "../../trial/record.hpp"
#include "../finding.hpp"

namespace latentaudit::detail {

/// @brief One (item, seed) unit of a paired design with the records of the requested arms.
struct record_unit {
  std::uint64_t item = 0;                 ///< item index (the cluster)
  std::uint64_t seed = 0;                 ///< seed index
  std::vector<const trial_record*> arms;  ///< one slot per requested arm; nullptr when absent

  /// @brief Whether every slot in `slots` holds a record.
  [[nodiscard]] bool has(std::initializer_list<std::size_t> slots) const noexcept {
    for (auto s : slots)
      if (s >= arms.size() || arms[s] == nullptr) return false;
    return true;
  }
};

/// @brief Groups `records` into (item, seed) units holding the records of `arms` (in that order),
/// sorted by (item, seed); units without any requested arm are omitted.
/// @throws invalid_argument naming `fn` if one (item, seed, arm) occurs twice
inline std::vector<record_unit> group_units(std::string_view fn, std::span<const trial_record> records,
                                            std::span<const std::string> arms) {
  std::map<std::pair<std::uint64_t, std::uint64_t>, record_unit> by_unit;
  for (const auto& r : records) {
    const auto it = std::find(arms.begin(), arms.end(), r.arm);
    if (it == arms.end()) continue;
    const auto slot = static_cast<std::size_t>(it - arms.begin());
    auto& u = by_unit[{r.item, r.seed}];
    if (u.arms.empty()) {
      u.item = r.item;
      u.seed = r.seed;
      u.arms.assign(arms.size(), nullptr);
    }
    if (u.arms[slot] != nullptr) {
      throw_invalid(fn, "records",
                    "must hold one record per (item, seed, arm), got two for item " + std::to_string(r.item) +
                        ", seed " + std::to_string(r.seed) + ", arm '" + r.arm + "'");
    }
    u.arms[slot] = &r;
  }
  std::vector<record_unit> out;
  out.reserve(by_unit.size());
  for (auto& [key, u] : by_unit) out.push_back(std::move(u));
  return out;
}

/// @brief Whether some record has arm label `arm`.
[[nodiscard]] inline bool has_arm(std::span<const trial_record> records, std::string_view arm) noexcept {
  return std::any_of(records.begin(), records.end(), [&](const trial_record& r) { return r.arm == arm; });
}

/// @brief Folds a 64-bit index into the 32-bit replicate word of a stream id.
[[nodiscard]] constexpr std::uint32_t fold32(std::uint64_t x) noexcept {
  return static_cast<std::uint32_t>(x ^ (x >> 32));
}

/// @brief Deterministic uniform in [0, 1) of one (item, seed) unit: the first draw of stream
/// make_stream({seed, item, tag, fold32(unit_seed)}).
[[nodiscard]] inline double unit_uniform(std::uint64_t seed, std::uint64_t item, std::uint32_t tag,
                                         std::uint64_t unit_seed) noexcept {
  auto g = make_stream({.seed = seed, .item = item, .arm = tag, .replicate = fold32(unit_seed)});
  return uniform01(g);
}

/// @brief Deterministic uniform in [0, 1) of one item: the first draw of stream
/// make_stream({seed, item, tag, 0xFFFFFFFF}) (replicate word reserved for item-level draws).
[[nodiscard]] inline double item_uniform(std::uint64_t seed, std::uint64_t item, std::uint32_t tag) noexcept {
  auto g = make_stream({.seed = seed, .item = item, .arm = tag, .replicate = 0xFFFFFFFFu});
  return uniform01(g);
}

/// @brief Settings of clustered_mean.
struct clustered_mean_options {
  double level = 0.95;            ///< confidence level
  std::size_t replicates = 2000;  ///< cluster-bootstrap replicates
  std::uint64_t seed = 0;         ///< bootstrap seed
};

/// @brief Mean of `values` with a percentile cluster-bootstrap interval that resamples the
/// clusters (items). Constant values give the interval [v, v] and SE 0; an empty sample gives NaN
/// fields with status degenerate; a single cluster gives the mean with NaN interval, status
/// degenerate. method "cluster_bootstrap_percentile(item)", n_pairs = number of values.
/// @throws invalid_argument (from bootstrap_clustered) on non-finite values or bad options
[[nodiscard]] inline effect_estimate clustered_mean(std::span<const double> values,
                                                    std::span<const std::size_t> clusters,
                                                    const clustered_mean_options& o) {
  effect_estimate e{.method = "cluster_bootstrap_percentile(item)", .estimand = "mean"};
  e.level = o.level;
  e.n_pairs = values.size();
  if (values.empty()) {
    e.status = estimate_status::degenerate;
    return e;
  }
  double s = 0;
  for (double v : values) s += v;
  e.estimate = s / static_cast<double>(values.size());
  const bool constant =
      std::all_of(values.begin(), values.end(), [&](double v) { return v == values.front(); });
  if (constant) {
    e.estimate = values.front();
    e.std_error = 0;
    e.ci_low = e.ci_high = values.front();
    return e;
  }
  std::vector<std::size_t> distinct(clusters.begin(), clusters.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() < 2 || values.size() < 2) {
    e.status = estimate_status::degenerate;
    return e;
  }
  const auto b = bootstrap_clustered(
      values, clusters, [](const resample_view& v) { return v.mean(); },
      bootstrap_options{.replicates = o.replicates,
                        .level = o.level,
                        .method = bootstrap_ci_method::percentile,
                        .seed = o.seed,
                        .if_degenerate = on_degenerate::flag});
  e.std_error = b.effect.std_error;
  e.ci_low = b.effect.ci_low;
  e.ci_high = b.effect.ci_high;
  e.status = b.effect.status;
  return e;
}

/// @brief Text of an estimate with its interval, e.g. "0.301 [0.236, 0.366]".
inline std::string estimate_text(const effect_estimate& e) {
  if (!std::isfinite(e.estimate)) return "n/a";
  if (!std::isfinite(e.ci_low) || !std::isfinite(e.ci_high)) return fmt::format("{:.3g} [n/a]", e.estimate);
  return fmt::format("{:.3g} [{:.3g}, {:.3g}]", e.estimate, e.ci_low, e.ci_high);
}

/// @brief Mean and SD (n − 1) of `x`; SD 0 for fewer than 2 values.
inline std::pair<double, double> mean_sd(std::span<const double> x) {
  if (x.empty()) return {0.0, 0.0};
  const auto m = moments(x);
  return {m.mean, std::sqrt(m.variance)};
}

/// @brief Whether an estimate has a finite point estimate and interval.
[[nodiscard]] inline bool has_interval(const effect_estimate& e) noexcept {
  return std::isfinite(e.estimate) && std::isfinite(e.ci_low) && std::isfinite(e.ci_high);
}

/// @brief An inconclusive finding with n = 0 and NaN numbers (written as null).
[[nodiscard]] inline finding inconclusive_finding(std::string id, std::string method, std::string why) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  return finding{.id = std::move(id),
                 .answer = verdict::inconclusive,
                 .estimate = nan,
                 .ci_low = nan,
                 .ci_high = nan,
                 .method = std::move(method),
                 .n = 0,
                 .detail = std::move(why)};
}

/// @brief Checks a confidence level and a bootstrap replicate count for the analyses.
inline void check_level_replicates(std::string_view fn, double level, std::size_t replicates) {
  check_open_unit(fn, "options.level", level);
  if (replicates < 100 || replicates > std::numeric_limits<std::uint32_t>::max()) {
    throw_invalid(fn, "options.bootstrap_replicates",
                  "must lie in [100, 2^32 - 1], got " + std::to_string(replicates));
  }
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_RECORD_UNITS_HPP
