// SPDX-License-Identifier: MIT
// latentaudit: the audit's decision — relay, send text, or no communication needed — from a
// checklist over the findings (dependency, model homogeneity, value, cost-benefit) plus the
// sequential monitor a serving stack runs online to switch relay on or off.
#ifndef LATENTAUDIT_REPORT_DECISION_HPP
#define LATENTAUDIT_REPORT_DECISION_HPP

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../estimators/sequential.hpp"
#include "../trial/record.hpp"
#include "finding.hpp"

namespace latentaudit {

/// @brief One item of the decision checklist.
struct checklist_item {
  std::string name;                        ///< positive_control, dependency, ..., monitor (decide())
  verdict passed = verdict::inconclusive;  ///< yes = the check supports relaying
  std::string reason;                      ///< one sentence with the numbers behind it
};

/// @brief The sequential monitor replayed on the audit's own need-regime data, at the item level:
/// one observation per item — the item's mean paired difference relay − reference over its seeds,
/// in [−1, 1] — in item-id order (fixed before any outcome is seen), fed to the betting monitor
/// (estimators/sequential.hpp, betting_monitor). Seeds of one item are never treated as
/// independent observations.
struct monitor_replay {
  std::string contrast;                ///< e.g. "kv_full - no_comm"
  std::string unit = "item";           ///< what one observation is: an item (its seeds averaged)
  std::size_t pairs = 0;               ///< (item, seed) pairs behind the items
  betting_sequential_result result;    ///< state after every item (n = items)
  std::optional<std::size_t> stop_at;  ///< first item at which the always-valid test rejected θ = 0
};

/// @brief The decision with its reasons.
struct audit_decision {
  /// "relay", "relay only where B needs A's information", "send text" or "inconclusive"
  std::string verdict;
  /// positive_control, dependency, homogeneity, value, cost, no_need_harm, monitor
  std::vector<checklist_item> checklist;
  std::vector<monitor_replay> monitors;  ///< replays of the sequential monitor
  std::string link;                      ///< link the cost check used
  std::string summary;                   ///< one paragraph
};

/// @brief Options of decide().
struct decision_options {
  std::string link;  ///< link preset for the cost check ("" = the records' link, else pcie4)
  /// the arms of the monitor replay: each answers by label, else by arm_kind (the resolver every
  /// analysis of the report shares, report/detail/arm_roles.hpp)
  std::string relay_arm = "kv_full";
  std::string control_arm = "no_comm";  ///< the control of the first replay (relay − control)
  std::string text_arm = "text_full";   ///< the reference of the second replay (relay − text)
  /// item-level betting monitor: level alpha, bounds [−1, 1], θ₀ = 0 (the defaults)
  betting_sequential_options monitor{};
};

namespace detail {

const finding* find_finding(std::span<const finding> fs, std::string_view id);

std::string finding_text(const finding* f);

/// @brief Need-regime item mean differences treated − control, one per item in item-id order (the
/// mean over the item's seeds that have both arms; items without such a seed are left out).
struct need_item_diffs {
  std::vector<double> d;  ///< item means, in [−1, 1]
  std::size_t pairs = 0;  ///< (item, seed) pairs behind them
};

/// @brief The need-regime item mean differences of `treated` − `control` in `rs` (pairs from
/// group_records(), the report's one pairing layer).
/// @throws invalid_argument naming "decide" and the (item, seed, arm) if one of them has two records
need_item_diffs need_item_differences(std::span<const trial_record> rs, std::string_view treated,
                                      std::string_view control);

}  // namespace detail

/// @brief Decides from the findings and the records.
///
/// Checklist (docs/audit-report.md "Decision"), in this order:
/// - positive_control: need.text_beats_no_comm — text relay must beat no communication in the need
///   regime, else the need regime does not test dependency and the verdict is "inconclusive";
/// - dependency: need.kv_beats_no_comm — without a need-regime effect there is nothing to relay;
/// - homogeneity: every KV record other than cross_model has sender fingerprint = receiver
///   fingerprint, and need.cross_model_beats_no_comm is not "yes" (a foreign cache must not help:
///   cross_model is a placebo; if it helps, identical models are not shown to be what the relay
///   relies on); "no" if either fails;
/// - value: need.kv_noninferior_to_text — relay must not be less accurate than text beyond the margin;
/// - cost: cost.relay_pays_on_<link>;
/// - no_need_harm: no_need.kv_changes_accuracy — "no" when a negative change is shown (relaying
///   where B needs nothing lowers accuracy), "yes" when no change or a gain is shown;
/// - monitor: the item-level betting monitor replayed on relay_arm − control_arm (kv_full − no_comm
///   by role; decision_options names the arms, resolved by label then arm_kind; one observation per
///   item, its mean paired difference over seeds, in item-id order) rejected θ = 0 (informational;
///   a serving stack runs the same monitor online, item by item).
/// Verdict: "inconclusive" if positive_control is not "yes"; else "send text" if dependency is "no"
/// (text carries A's information, the relay does not); "relay" if dependency, homogeneity, value
/// and cost are all "yes" — "relay only where B needs A's information" instead when no_need_harm
/// is "no"; "send text" if dependency is "yes" and value or cost is "no"; otherwise
/// "inconclusive". (With the positive-control gate, "no communication needed" is never concluded:
/// it would need the need regime to show that text does not help, which is the failed control.)
/// @throws invalid_argument on bad monitor options, or two records of one (item, seed, arm) of the
///         monitor's arms.
[[nodiscard]] audit_decision decide(std::span<const finding> findings, std::span<const trial_record> records,
                                    const decision_options& o = {});

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/decision-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_DECISION_HPP
