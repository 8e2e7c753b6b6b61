// SPDX-License-Identifier: MIT
// latentaudit: the paired effects of the audit (the Holm family of role contrasts in each regime),
// the need-regime decomposition of the relay effect (presence, pairing, content) and the effect
// findings (need.*, no_need.*) that decide on them: the analyses analyse_records() runs on the unit
// × arm table with the arm roles resolved once (detail/arm_roles.hpp). Estimands, intervals and
// verdict rules: report/audit.hpp and docs/audit-report.md "Findings". Not part of the public API.
// Header-only mode: report/audit.hpp first, outside this header's guard. audit.hpp's definitions
// (impl/audit-inl.hpp) include this header, and this header's definitions need audit.hpp's types;
// entered the other way round, each would meet the other half-declared.
#ifndef LATENTAUDIT_COMPILED_LIB
#include "../audit.hpp"
#endif
#ifndef LATENTAUDIT_REPORT_ANALYSES_EFFECTS_HPP
#define LATENTAUDIT_REPORT_ANALYSES_EFFECTS_HPP

#include <array>
#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>

#include "../../config.hpp"
#include "../detail/arm_roles.hpp"
#include "../detail/audit_data.hpp"
#include "../finding_catalog.hpp"

namespace latentaudit {
// Declared in report/audit.hpp, which defines them before it includes the definitions here (the
// declarations below need only the names; report/audit.hpp's implementation calls these functions).
struct audit_options;
struct audit_core;
}  // namespace latentaudit

namespace latentaudit::detail {

/// @brief The arm index (in an audit_data) of the arm playing each role, indexed by arm kind (as
/// detail::arm_roles holds its label): audit_data::npos where no arm plays it and for every kind
/// that is no role (arm_plan::role). Filled once by role_index_of(); the analyses read a role by
/// its kind (of(arm_kind::kv_full), of(pairing_placebo_kind())) and loop over the kinds for the
/// placebo and foreign roles, so a new placebo needs no field here.
struct role_index {
  /// the arm index of each kind's role, indexed by the arm_kind's value
  std::array<std::size_t, std::size(all_arm_kinds)> arm = [] {
    std::array<std::size_t, std::size(all_arm_kinds)> a{};
    a.fill(audit_data::npos);
    return a;
  }();

  /// @brief The arm index of the role of kind `k` (audit_data::npos when no arm plays it).
  [[nodiscard]] std::size_t of(arm_kind k) const noexcept { return arm[static_cast<std::size_t>(k)]; }
};

/// @brief The id pattern of the catalog rows "the role <arm> beats no communication" in the need
/// regime (the placebos' and cross_model's, each with its subject arm): audit_effect_findings writes
/// one finding per such row, in the catalog's order.
inline constexpr std::string_view need_beats_no_comm_pattern = "need.<arm>_beats_no_comm";

/// @brief Whether the role of kind `k` is contrasted with no_comm as a claim of its own (in the
/// Holm family of the need and no_need regimes): the roles of the placebo and foreign families
/// (deranged, zeroed, random, cross_model), in arm_kind order. The placebo roles are also
/// contrasted with kv_full (decomposition material, outside the family).
[[nodiscard]] constexpr bool contrasted_with_no_comm(arm_kind k) noexcept {
  const arm_plan p = plan_of(k);
  return p.role && (p.family == arm_family::placebo || p.family == arm_family::foreign);
}

/// @brief The arm index in `d` of each role `roles` names (audit_data::npos for a role no arm plays).
[[nodiscard]] role_index role_index_of(const audit_data& d, const arm_roles& roles);

/// @brief The method text of the verdict interval and p-value of every paired effect.
/// @param o the audit options (α)
/// @returns e.g. "90% verdict interval: betting over items (one-sided 0.05 per side; ...)"
[[nodiscard]] std::string effect_verdict_text(const audit_options& o);

/// @brief The paired effects (out.effects: every role contrast — kv_full − no_comm, kv_full −
/// text_full, text_full − no_comm, each role of contrasted_with_no_comm() − no_comm, each placebo
/// role − kv_full — in need and no_need with its descriptive interval, betting verdict interval,
/// betting p-value and Holm adjustment over the family) and the need-regime decomposition
/// (out.decomposition, Holm over its parts: presence over the zeroed and random arms, pairing,
/// content — named estimands of docs/audit-report.md, which a new placebo does not join).
/// Contrasts whose arms are absent or share no unit are skipped with a warning (out.warnings).
/// @param d the unit × arm table
/// @param r the arm index of each role
/// @param o levels, margins, bootstrap size, seed, threads (checked by the caller)
/// @param out receives effects, decomposition and warnings
void audit_paired_effects(const audit_data& d, const role_index& r, const audit_options& o, audit_core& out);

/// @brief The effect findings from out.effects, appended to out.findings in the documented order:
/// need.text_beats_no_comm, need.kv_beats_no_comm, need.kv_noninferior_to_text,
/// need.kv_equivalent_to_text, one finding per catalog row of pattern need_beats_no_comm_pattern
/// in the catalog's order (need.deranged_beats_no_comm, need.zeroed_beats_no_comm,
/// need.cross_model_beats_no_comm: the row's subject role against no_comm), then
/// no_need.kv_changes_accuracy (each inconclusive with n = 0 when its contrast is missing, e.g. no
/// arm plays the subject's role). The positive-control gate is applied by the caller.
/// @param d the unit × arm table (for the role labels)
/// @param r the arm index of each role
/// @param o α and the margins
/// @param out holds the effects; receives the findings
void audit_effect_findings(const audit_data& d, const role_index& r, const audit_options& o, audit_core& out);

}  // namespace latentaudit::detail

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/effects-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_ANALYSES_EFFECTS_HPP
