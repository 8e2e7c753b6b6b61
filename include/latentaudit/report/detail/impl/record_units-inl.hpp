// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/detail/record_units.hpp (header-only mode includes this file; compiled
// mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_DETAIL_IMPL_RECORD_UNITS_INL_HPP
#define LATENTAUDIT_REPORT_DETAIL_IMPL_RECORD_UNITS_INL_HPP

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

[[nodiscard]] LATENTAUDIT_INLINE finding inconclusive_finding(std::string id, std::string method,
                                                              std::string why) {
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

LATENTAUDIT_INLINE void check_level_replicates(std::string_view fn, double level, std::size_t replicates) {
  check_open_unit(fn, "options.level", level);
  if (replicates < 100 || replicates > std::numeric_limits<std::uint32_t>::max()) {
    throw_invalid(fn, "options.bootstrap_replicates",
                  "must lie in [100, 2^32 - 1], got " + std::to_string(replicates));
  }
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_IMPL_RECORD_UNITS_INL_HPP
