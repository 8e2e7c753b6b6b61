// SPDX-License-Identifier: MIT
// latentaudit: the one place where the report's analyses find the arms that play the design's roles
// (no_comm, text_full, kv_full and the placebos). Every analysis of report/ — the effects and the
// decomposition (audit.hpp), cost and the relay gate (cost.hpp), the observational demonstrations
// (observational.hpp) and the decision's monitor replay (decision.hpp) — resolves arms through
// resolve_arm(), so an arm relabelled but keeping its arm_kind is found by all of them or by none.
// Not part of the public API.
#ifndef LATENTAUDIT_REPORT_DETAIL_ARM_ROLES_HPP
#define LATENTAUDIT_REPORT_DETAIL_ARM_ROLES_HPP

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../config.hpp"
#include "../../trial/record.hpp"

namespace latentaudit::detail {

/// @brief The role names of the design, in the order arm_roles lists them.
inline constexpr std::array<std::string_view, 7> arm_role_names = {
    "no_comm", "text_full", "kv_full", "deranged", "zeroed", "random", "cross_model"};

/// @brief The arm label that plays each role of the design ("" when no arm plays it).
struct arm_roles {
  std::string no_comm;      ///< no communication (the control)
  std::string text_full;    ///< full text relay (the positive control)
  std::string kv_full;      ///< full KV-cache relay
  std::string deranged;     ///< placebo: another item's cache
  std::string zeroed;       ///< placebo: zeroed cache
  std::string random;       ///< placebo: random cache
  std::string cross_model;  ///< placebo: a foreign model's cache

  /// @brief The label playing role `role` (one of arm_role_names), or "" (also for an unknown role).
  /// @param role the role name
  /// @returns the label, or an empty string
  [[nodiscard]] const std::string& of(std::string_view role) const noexcept;
};

/// @brief The arm label that answers to `name`: the arm labelled `name` if one is; else the arm
/// whose arm_kind is `name` (a record with an empty arm_kind has the kind of its label, as in the
/// audit's unit table); when several arms have that kind, the first of their labels in sorted
/// (byte-wise) order, with a warning naming all of them; "" when no arm answers.
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

/// @brief resolve_arm() for every role of arm_role_names: by label first, then by arm_kind, ties
/// between arms of one kind broken by the first label in sorted order (with a warning).
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
