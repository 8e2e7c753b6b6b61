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
  std::string name;                        ///< dependency, homogeneity, value, cost, monitor
  verdict passed = verdict::inconclusive;  ///< yes = the check supports relaying
  std::string reason;                      ///< one sentence with the numbers behind it
};

/// @brief The sequential monitor replayed on the audit's own need-regime units in item order:
/// per-unit differences relay − reference fed to an mSPRT (estimators/sequential.hpp).
struct monitor_replay {
  std::string contrast;                ///< e.g. "kv_full - no_comm"
  sequential_result result;            ///< state after every unit
  std::optional<std::size_t> stop_at;  ///< first unit at which the always-valid test rejected θ = 0
};

/// @brief The decision with its reasons.
struct audit_decision {
  std::string verdict;  ///< "relay", "send text", "no communication needed" or "inconclusive"
  std::vector<checklist_item> checklist;  ///< dependency, homogeneity, value, cost, monitor
  std::vector<monitor_replay> monitors;   ///< replays of the sequential monitor
  std::string link;                       ///< link the cost check used
  std::string summary;                    ///< one paragraph
};

/// @brief Options of decide().
struct decision_options {
  std::string link;  ///< link preset for the cost check ("" = the records' link, else pcie4)
  sequential_options monitor{.alpha = 0.05, .tau = 0.2, .sigma = 0.0, .burn_in = 20};  ///< mSPRT settings
};

namespace detail {

const finding* find_finding(std::span<const finding> fs, std::string_view id);

std::string finding_text(const finding* f);

// Need-regime per-unit differences treated − control in (item, seed) order.
std::vector<double> unit_differences(std::span<const trial_record> rs, std::string_view treated,
                                     std::string_view control);

}  // namespace detail

/// @brief Decides from the findings and the records.
///
/// Checklist (docs/audit-report.md "Decision"):
/// - dependency: need.kv_beats_no_comm — without a need-regime effect there is nothing to relay;
/// - homogeneity: every KV record other than cross_model has sender fingerprint = receiver
///   fingerprint, and need.cross_model_beats_no_comm is not "yes" (a foreign cache is useless);
/// - value: need.kv_equivalent_to_text — relay must be as accurate as text within the margin;
/// - cost: cost.relay_pays_on_<link>;
/// - monitor: the mSPRT replay of kv_full − no_comm stopped (informational; a serving stack runs
///   the same monitor online).
/// Verdict: "no communication needed" if dependency is "no"; "relay" if dependency, homogeneity,
/// value and cost are all "yes"; "send text" if dependency is "yes" and value or cost is "no";
/// otherwise "inconclusive".
/// @throws invalid_argument on bad monitor options.
[[nodiscard]] audit_decision decide(std::span<const finding> findings,
                                    std::span<const trial_record> records,
                                    const decision_options& o = {});

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/decision-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_DECISION_HPP
