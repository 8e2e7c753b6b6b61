// SPDX-License-Identifier: MIT
// latentaudit: the conflicting-cache analysis. In regime "conflict" B's own prompt holds the right
// pairs while A's document binds the same keys to other values, and every relay (KV and text)
// carries that conflicting document. Finding conflict.kv_worse_than_no_comm (kv_full − no_comm on
// conflict units) and its mechanism: B's attention mass on the relayed tokens in the conflict
// regime against the need regime, with an interval, when the engine records attention_mass —
// "unavailable on this engine" otherwise, never a zero. Rules: docs/audit-report.md "When relay
// does not pay". Not part of the public API.
#ifndef LATENTAUDIT_REPORT_ANALYSES_CONFLICT_HPP
#define LATENTAUDIT_REPORT_ANALYSES_CONFLICT_HPP

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../trial/record.hpp"
#include "../detail/audit_data.hpp"
#include "../finding.hpp"
#include "regime_contrast.hpp"

namespace latentaudit {

/// @brief B's attention mass on the relayed tokens (kv_full records), conflict vs need regime.
struct attention_contrast {
  bool available = false;          ///< both regimes have kv_full records carrying attention_mass
  std::string note;                ///< why it is unavailable ("" when available)
  std::size_t conflict_items = 0;  ///< items of the conflict regime with attention_mass
  std::size_t need_items = 0;      ///< items of the need regime with attention_mass
  double conflict_mean = std::numeric_limits<double>::quiet_NaN();  ///< mean over items, conflict
  double conflict_low = std::numeric_limits<double>::quiet_NaN();   ///< its lower limit
  double conflict_high = std::numeric_limits<double>::quiet_NaN();  ///< its upper limit
  double need_mean = std::numeric_limits<double>::quiet_NaN();      ///< mean over items, need
  double need_low = std::numeric_limits<double>::quiet_NaN();       ///< its lower limit
  double need_high = std::numeric_limits<double>::quiet_NaN();      ///< its upper limit
  double difference = std::numeric_limits<double>::quiet_NaN();     ///< conflict − need
  /// 1 − α interval of the difference: [conflict_low − need_high, conflict_high − need_low], each
  /// group's interval a betting interval over its item means on [0, 1] at α/4 per side (so both
  /// hold together with probability ≥ 1 − α; the groups are different items)
  double difference_low = std::numeric_limits<double>::quiet_NaN();
  double difference_high = std::numeric_limits<double>::quiet_NaN();  ///< its upper limit
};

/// @brief The conflicting-cache analysis.
struct conflict_analysis {
  std::size_t units = 0;            ///< (item, seed) units in regime "conflict"
  regime_contrast kv_vs_no_comm;    ///< kv_full − no_comm (the finding's contrast; Holm family)
  regime_contrast text_vs_no_comm;  ///< text_full − no_comm (descriptive: the conflicting text)
  regime_contrast kv_vs_text;       ///< kv_full − text_full (descriptive)
  attention_contrast attention;     ///< the mechanism
};

/// @brief conflict.kv_worse_than_no_comm: yes if kv_full − no_comm on conflict units has Holm
/// p < α (relay-failure family) and a negative estimate; no if the verdict lower limit > −margin;
/// inconclusive otherwise, with the reason when the regime or an arm is missing. The detail gives
/// the attention mechanism (or says it is unavailable on this engine).
[[nodiscard]] finding conflict_worse_finding(const conflict_analysis& c, double alpha, double margin);

namespace detail {

/// @brief The conflict analysis on the unit × arm table (roles by the caller; npos: absent). The
/// Holm adjustment is the caller's.
[[nodiscard]] conflict_analysis audit_conflict(const audit_data& d, std::span<const trial_record> records,
                                               std::size_t kv_full, std::size_t text_full,
                                               std::size_t no_comm, double alpha,
                                               std::vector<std::string>& warnings);

/// @brief The attention contrast from item means of attention_mass (each in [0, 1]), the bets
/// tuned for `horizon` items (audit_data::horizon; 0 = each sample's size).
/// @throws invalid_argument for a value outside [0, 1]
[[nodiscard]] attention_contrast attention_between(std::span<const double> conflict_items,
                                                   std::span<const double> need_items, double alpha,
                                                   std::size_t horizon);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/conflict-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_ANALYSES_CONFLICT_HPP
