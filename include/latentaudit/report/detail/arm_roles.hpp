// SPDX-License-Identifier: MIT
// latentaudit: the one place where the report's analyses find the arms that play the design's roles
// (the arm kinds whose plan is a role, trial/arm.hpp). Every analysis of report/ — the effects and the
// decomposition (audit.hpp), cost and the relay gate (cost.hpp), the observational demonstrations
// (observational.hpp) and the decision's monitor replay (decision.hpp) — resolves arms through
// resolve_arm(), so an arm relabelled but keeping its arm_kind is found by all of them or by none.
// Not part of the public API.
#ifndef LATENTAUDIT_REPORT_DETAIL_ARM_ROLES_HPP
#define LATENTAUDIT_REPORT_DETAIL_ARM_ROLES_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../config.hpp"
#include "../../trial/arm.hpp"
#include "../../trial/record.hpp"

namespace latentaudit::detail {

/// @brief The arm label that plays each role of the design: one per arm kind whose plan is a role
/// (arm_plan::role: no_comm, text_full, kv_full, the placebos, cross_model); "" when no arm plays it.
struct arm_roles {
  std::array<std::string, std::size(all_arm_kinds)> label;  ///< indexed by the arm_kind's value

  /// @brief The label playing the role of kind `k` ("" when no arm plays it, or `k` is no role).
  [[nodiscard]] const std::string& of(arm_kind k) const noexcept {
    return label[static_cast<std::size_t>(k)];
  }
};

/// @brief The arm label that answers to `name`: the arm labelled `name` if one is; else the arm
/// whose kind is `name` (record_arm_kind: a record with an empty arm_kind has the kind parse_arm
/// reads in its label, as in the audit's unit table); when several arms have that kind, the first of their
/// labels in sorted (byte-wise) order, with a warning naming all of them; "" when no arm answers.
/// @param records the trial records
/// @param name a label or a role/arm_kind name (e.g. "kv_full")
/// @param warnings receives the ambiguity warning, if any
/// @returns the label, or an empty string
[[nodiscard]] std::string resolve_arm(std::span<const trial_record> records, std::string_view name,
                                      std::vector<std::string>& warnings);

/// @brief resolve_arm(), or `name` itself when no arm answers to it (so that an analysis reports the
/// arm it asked for as absent). The analyses that take arm labels in their options (cost, the relay
/// gate, the observational demonstrations, the decision's monitor) pass each through this.
/// @param records the trial records
/// @param name a label or a role/arm_kind name
/// @param warnings receives the ambiguity warning, if any
/// @returns the label answering to `name`, else `name`
[[nodiscard]] std::string resolve_arm_or_name(std::span<const trial_record> records, std::string_view name,
                                              std::vector<std::string>& warnings);

/// @brief resolve_arm() for every role (the kinds whose arm_plan::role is set): by label first,
/// then by kind, ties between arms of one kind broken by the first label in sorted order (with a
/// warning).
/// @param records the trial records
/// @param warnings receives one warning per ambiguous role
/// @returns the label of each role ("" for a role no arm plays)
[[nodiscard]] arm_roles resolve_arm_roles(std::span<const trial_record> records,
                                          std::vector<std::string>& warnings);

}  // namespace latentaudit::detail

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/arm_roles-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_DETAIL_ARM_ROLES_HPP
