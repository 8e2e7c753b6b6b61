// SPDX-License-Identifier: MIT
// latentaudit: the cross-model map analysis — does a foreign sender's cache, mapped into B's model's
// shape (arm kv_mapped, kv/kv_map.hpp), carry what B needs? For each kv_mapped arm of the records,
// on need units, three findings decided on betting intervals over items:
//   mapped[.<sender>].beats_unmapped            kv_mapped − the same sender's unmapped arm
//                                               (cross_model, kv_drift_<k>); Holm over the mapped
//                                               family's beats_unmapped contrasts
//   mapped[.<sender>].noninferior_to_same_model kv_mapped − kv_full within the margin (what the
//                                               decision's map path reads)
//   mapped[.<sender>].retention                 (kv_mapped − no_comm) / (kv_full − no_comm): the
//                                               share of same-model relay's benefit the map keeps,
//                                               a ratio of paired item means with the test-inversion
//                                               interval of bounded_ratio_interval; "yes" when its
//                                               lower limit reaches the retention gate (0.90)
// (<sender> is left out for the partner's map: mapped.retention; a drifted sender's is
// mapped.drift_300.retention.) Rules: docs/audit-report.md "Relay through a cache map".
// Not part of the public API.
#ifndef LATENTAUDIT_REPORT_ANALYSES_MAPPED_HPP
#define LATENTAUDIT_REPORT_ANALYSES_MAPPED_HPP

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../core/json.hpp"
#include "../../estimators/betting_ratio.hpp"
#include "../../trial/record.hpp"
#include "../detail/audit_data.hpp"
#include "../finding.hpp"
#include "regime_contrast.hpp"

namespace latentaudit {

/// @brief The retention gate of mapped.*.retention: a map passes when the lower limit of the share
/// of same-model relay's benefit it keeps is at least this (the gate vLLM's semantic-router applies
/// to cross-model KV reuse).
inline constexpr double default_retention_gate = 0.90;

/// @brief The map's screen on the audit's items (descriptive): the attention-output cosine its
/// records carry (map_cosine, kv/map_screen.hpp) against the map's per-item benefit.
struct mapped_screen {
  std::size_t items = 0;  ///< need items with a cosine and a kv_mapped − no_comm pair
  double mean_cosine = std::numeric_limits<double>::quiet_NaN();  ///< mean over those items
  /// Pearson correlation over items of the item's mean cosine and its mean kv_mapped − no_comm
  /// (NaN with fewer than 3 items or no spread in either)
  double r = std::numeric_limits<double>::quiet_NaN();
  double ci_low = std::numeric_limits<double>::quiet_NaN();   ///< percentile bootstrap over items, 1 − 2α
  double ci_high = std::numeric_limits<double>::quiet_NaN();  ///< its upper limit
};

/// @brief One kv_mapped arm's contrasts (need regime).
struct mapped_contrast {
  std::string arm;                 ///< the kv_mapped arm's label
  std::string sender;              ///< its sender ("partner", "drift_300", ...)
  std::string unmapped;            ///< the same sender's unmapped arm ("" when absent)
  std::string map;                 ///< the map id its records name (policy "map"; "" when none does)
  finding_params params;           ///< its findings' parameters: the sender ("" for the partner)
  regime_contrast beats_unmapped;  ///< kv_mapped − unmapped (Holm over the mapped family)
  regime_contrast vs_same_model;   ///< kv_mapped − kv_full
  regime_contrast mapped_benefit;  ///< kv_mapped − no_comm (descriptive)
  /// retention = (kv_mapped − no_comm) / (kv_full − no_comm) over the items whose units hold all
  /// three arms (test-inversion betting interval, α per side)
  ratio_interval retention;
  std::size_t retention_items = 0;    ///< items behind the retention
  std::size_t retention_missing = 0;  ///< need units that ran the three arms but lack a record of one
  mapped_screen screen;               ///< the attention-output cosine against the per-item benefit
};

/// @brief The cross-model map analysis.
struct mapped_analysis {
  std::vector<mapped_contrast> arms;     ///< one per kv_mapped arm, in label order
  double gate = default_retention_gate;  ///< the retention gate the findings used
};

/// @brief The findings of the analysis (three per kv_mapped arm; none without kv_mapped arms).
/// @param m the analysis
/// @param alpha the audit's α (one-sided per limit)
/// @param margin the non-inferiority margin (accuracy points)
[[nodiscard]] std::vector<finding> mapped_findings(const mapped_analysis& m, double alpha, double margin);

namespace detail {

/// @brief The analysis of every kv_mapped arm of `d` against kv_full, no_comm and its sender's
/// unmapped arm on need units.
[[nodiscard]] mapped_analysis audit_mapped(const audit_data& d, std::span<const trial_record> records,
                                           std::size_t kv_full, std::size_t no_comm, double alpha,
                                           std::vector<std::string>& warnings);

/// @brief report.json's "mapped" (null without kv_mapped arms).
[[nodiscard]] json_value mapped_json(const mapped_analysis& m);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/mapped-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_ANALYSES_MAPPED_HPP
