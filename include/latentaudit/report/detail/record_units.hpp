// SPDX-License-Identifier: MIT
// latentaudit: helpers shared by the record-level analyses of report/ (observational.hpp,
// cost.hpp): (item, seed) units as record pointers (a view of group_records(), the one pairing
// layer, in audit_data.hpp), deterministic per-unit and per-item uniforms from the counter-based
// generator, cluster-bootstrap means by item, and findings.
#ifndef LATENTAUDIT_REPORT_DETAIL_RECORD_UNITS_HPP
#define LATENTAUDIT_REPORT_DETAIL_RECORD_UNITS_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../config.hpp"
#include "../../core/error.hpp"
#include "../../core/rng.hpp"
#include "../../estimators/effect_estimate.hpp"
#include "../../trial/record.hpp"
#include "../finding.hpp"
#include "audit_data.hpp"

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
/// sorted by (item, seed); units without any requested arm are omitted. The record-pointer view of
/// units_of(table, fn, records, arms, duplicate_error::invalid_argument): the columns of the
/// report's one table when `table` is given, else the records grouped here.
/// @throws invalid_argument naming `fn` and the (item, seed, arm) if one (item, seed, arm) occurs twice
std::vector<record_unit> group_units(std::string_view fn, std::span<const trial_record> records,
                                     std::span<const std::string> arms, const unit_records* table = nullptr);

/// @brief Whether some record has arm label `arm`.
[[nodiscard]] bool has_arm(std::span<const trial_record> records, std::string_view arm) noexcept;

/// @brief Folds a 64-bit index into the 32-bit replicate word of a stream id.
[[nodiscard]] constexpr std::uint32_t fold32(std::uint64_t x) noexcept {
  return static_cast<std::uint32_t>(x ^ (x >> 32));
}

/// @brief Deterministic uniform in [0, 1) of one (item, seed) unit: the first draw of stream
/// make_stream({seed, item, tag, fold32(unit_seed)}).
[[nodiscard]] double unit_uniform(std::uint64_t seed, std::uint64_t item, std::uint32_t tag,
                                  std::uint64_t unit_seed) noexcept;

/// @brief Deterministic uniform in [0, 1) of one item: the first draw of stream
/// make_stream({seed, item, tag, 0xFFFFFFFF}) (replicate word reserved for item-level draws).
[[nodiscard]] double item_uniform(std::uint64_t seed, std::uint64_t item, std::uint32_t tag) noexcept;

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
[[nodiscard]] effect_estimate clustered_mean(std::span<const double> values,
                                             std::span<const std::size_t> clusters,
                                             const clustered_mean_options& o);

/// @brief Text of an estimate with its interval, e.g. "0.301 [0.236, 0.366]".
std::string estimate_text(const effect_estimate& e);

/// @brief Mean and SD (n − 1) of `x`; SD 0 for fewer than 2 values.
std::pair<double, double> mean_sd(std::span<const double> x);

/// @brief Whether an estimate has a finite point estimate and interval.
[[nodiscard]] bool has_interval(const effect_estimate& e) noexcept;

/// @brief An inconclusive finding with n = 0 and NaN numbers (written as null).
[[nodiscard]] finding inconclusive_finding(finding_key key, std::string method, std::string why);

/// @brief Checks a confidence level and a bootstrap replicate count for the analyses.
void check_level_replicates(std::string_view fn, double level, std::size_t replicates);

/// The link the cost check reads (decide and cost_benefit_analysis): `requested`, else the first
/// record's non-empty link, and pcie4 when there is none or it is a custom link.
[[nodiscard]] inline std::string cost_link_of(std::span<const trial_record> records, std::string requested) {
  if (!requested.empty()) return requested;
  for (const auto& r : records)
    if (!r.link.empty()) {
      requested = r.link;
      break;
    }
  if (requested.empty() || requested.rfind("custom:", 0) == 0) requested = "pcie4";
  return requested;
}

}  // namespace latentaudit::detail

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/record_units-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_DETAIL_RECORD_UNITS_HPP
