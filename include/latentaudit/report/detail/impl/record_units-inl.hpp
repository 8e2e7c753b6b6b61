// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/detail/record_units.hpp (header-only mode includes this file; compiled
// mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_DETAIL_IMPL_RECORD_UNITS_INL_HPP
#define LATENTAUDIT_REPORT_DETAIL_IMPL_RECORD_UNITS_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../record_units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "../../../core/detail/check.hpp"
#include "../../../estimators/bootstrap.hpp"
#include "../../../estimators/difference_in_means.hpp"

namespace latentaudit::detail {

LATENTAUDIT_INLINE std::vector<record_unit> group_units(std::string_view fn,
                                                        std::span<const trial_record> records,
                                                        std::span<const std::string> arms,
                                                        const unit_records* table) {
  const auto t = units_of(table, fn, records, arms, duplicate_error::invalid_argument);
  std::vector<record_unit> out(t.units());
  for (std::size_t u = 0; u < out.size(); ++u) {
    out[u].item = t.unit_item[u];
    out[u].seed = t.unit_seed[u];
    out[u].arms.resize(t.arms());
    for (std::size_t a = 0; a < t.arms(); ++a) {
      const std::size_t i = t.record(u, a);
      out[u].arms[a] = i == unit_records::npos ? nullptr : &records[i];
    }
  }
  return out;
}

[[nodiscard]] LATENTAUDIT_INLINE bool has_arm(std::span<const trial_record> records,
                                              std::string_view arm) noexcept {
  return std::any_of(records.begin(), records.end(), [&](const trial_record& r) { return r.arm == arm; });
}

[[nodiscard]] LATENTAUDIT_INLINE double unit_uniform(std::uint64_t seed, std::uint64_t item,
                                                     std::uint32_t tag, std::uint64_t unit_seed) noexcept {
  auto g = make_stream({.seed = seed, .item = item, .arm = tag, .replicate = fold32(unit_seed)});
  return uniform01(g);
}

[[nodiscard]] LATENTAUDIT_INLINE double item_uniform(std::uint64_t seed, std::uint64_t item,
                                                     std::uint32_t tag) noexcept {
  auto g = make_stream({.seed = seed, .item = item, .arm = tag, .replicate = 0xFFFFFFFFu});
  return uniform01(g);
}

// The interval fields of clustered_mean from its bootstrap.
[[nodiscard]] inline effect_estimate finish_clustered_mean(effect_estimate e, const bootstrap_result& b) {
  e.std_error = b.effect.std_error;
  e.ci_low = b.effect.ci_low;
  e.ci_high = b.effect.ci_high;
  e.status = b.effect.status;
  return e;
}

[[nodiscard]] LATENTAUDIT_INLINE effect_estimate clustered_mean(std::span<const double> values,
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
  // bootstrap_clustered(values, clusters, mean) without expanding each replicate's clusters into
  // an index list: the values are laid out cluster after cluster once, and a replicate sums the
  // drawn clusters' runs in gather_sum's order (four accumulators by draw position), so every
  // replicate, and the interval, is bit for bit bootstrap_clustered's.
  constexpr std::string_view fn = "bootstrap_clustered";
  const bootstrap_options bo{.replicates = o.replicates,
                             .level = o.level,
                             .method = bootstrap_ci_method::percentile,
                             .seed = o.seed,
                             .if_degenerate = on_degenerate::flag};
  check_bootstrap_options(fn, bo);
  check_arm(fn, "x", values);
  const auto layout = make_cluster_layout(fn, clusters, {}, 1);
  std::vector<double> by_cluster(values.size());
  for (std::size_t i = 0; i < by_cluster.size(); ++i) by_cluster[i] = values[layout.members[0][i]];
  const auto& off = layout.offset[0];
  // Whole numbers whose absolute sum stays below 2^53 (accuracies, bytes) add exactly in any order:
  // a replicate is then the sum of its clusters' sums, the same double as gather_sum's.
  double abs_sum = 0;
  bool whole = true;
  for (const double v : values) {
    whole = whole && v == std::floor(v);
    abs_sum += std::fabs(v);
  }
  if (whole && abs_sum < 0x1p53) {
    std::vector<double> cluster_sum(layout.clusters, 0.0);
    for (std::uint32_t g = 0; g < layout.clusters; ++g)
      for (std::uint32_t i = off[g]; i < off[g + 1]; ++i) cluster_sum[g] += by_cluster[i];
    auto eval_whole = [&](const bootstrap_workspace& ws) {
      double sum = 0;
      std::size_t n = 0;
      for (const auto g : ws.draws[0]) {
        sum += cluster_sum[g];
        n += off[g + 1] - off[g];
      }
      return estimate_and_variance{n == 0 ? effect_estimate::nan : sum / static_cast<double>(n),
                                   effect_estimate::nan};
    };
    return finish_clustered_mean(e, run_bootstrap(fn, bootstrap_design{{layout.clusters}, {0}}, eval_whole,
                                                  false, bo, bootstrap_base(bo, "statistic")));
  }
  auto eval = [&](const bootstrap_workspace& ws) {
    double a[4] = {0, 0, 0, 0};
    std::size_t j = 0;
    for (const auto g : ws.draws[0])
      for (std::uint32_t i = off[g], end = off[g + 1]; i < end; ++i, ++j) a[j % 4] += by_cluster[i];
    const double mean =
        j == 0 ? effect_estimate::nan : ((a[0] + a[1]) + (a[2] + a[3])) / static_cast<double>(j);
    return estimate_and_variance{mean, effect_estimate::nan};
  };
  return finish_clustered_mean(e, run_bootstrap(fn, bootstrap_design{{layout.clusters}, {0}}, eval, false, bo,
                                                bootstrap_base(bo, "statistic")));
}

LATENTAUDIT_INLINE std::string estimate_text(const effect_estimate& e) {
  if (!std::isfinite(e.estimate)) return "n/a";
  if (!std::isfinite(e.ci_low) || !std::isfinite(e.ci_high)) return fmt::format("{:.3g} [n/a]", e.estimate);
  return fmt::format("{:.3g} [{:.3g}, {:.3g}]", e.estimate, e.ci_low, e.ci_high);
}

LATENTAUDIT_INLINE std::pair<double, double> mean_sd(std::span<const double> x) {
  if (x.empty()) return {0.0, 0.0};
  const auto m = moments(x);
  return {m.mean, std::sqrt(m.variance)};
}

[[nodiscard]] LATENTAUDIT_INLINE bool has_interval(const effect_estimate& e) noexcept {
  return std::isfinite(e.estimate) && std::isfinite(e.ci_low) && std::isfinite(e.ci_high);
}

[[nodiscard]] LATENTAUDIT_INLINE finding inconclusive_finding(finding_key key, std::string method,
                                                              std::string why) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  return finding{.id = key.id(),
                 .answer = verdict::inconclusive,
                 .estimate = nan,
                 .ci_low = nan,
                 .ci_high = nan,
                 .method = std::move(method),
                 .n = 0,
                 .detail = std::move(why),
                 .key = std::move(key)};
}

LATENTAUDIT_INLINE void check_level_replicates(std::string_view fn, double level, std::size_t replicates) {
  check_open_unit(fn, "options.level", level);
  if (replicates < 100 || replicates > std::numeric_limits<std::uint32_t>::max()) {
    throw_invalid(fn, "options.bootstrap_replicates",
                  "must lie in [100, 2^32 - 1], got " + std::to_string(replicates));
  }
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_IMPL_RECORD_UNITS_INL_HPP
