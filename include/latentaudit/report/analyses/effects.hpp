// SPDX-License-Identifier: MIT
// latentaudit: the paired effects of the audit (the Holm family of role contrasts in each regime),
// the need-regime decomposition of the relay effect (presence, pairing, content) and the effect
// findings (need.*, no_need.*) that decide on them: the analyses analyse_records() runs on the unit
// × arm table with the arm roles resolved once (detail/arm_roles.hpp). Estimands, intervals and
// verdict rules: report/audit.hpp and docs/audit-report.md "Findings". Not part of the public API.
#ifndef LATENTAUDIT_REPORT_ANALYSES_EFFECTS_HPP
#define LATENTAUDIT_REPORT_ANALYSES_EFFECTS_HPP

#include <cstddef>
#include <string>

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

/// @brief The arm index (in an audit_data) of each role; audit_data::npos when no arm plays it.
struct role_index {
  std::size_t no_comm = audit_data::npos;          ///< no communication
  std::size_t text_full = audit_data::npos;        ///< full text relay
  std::size_t kv_full = audit_data::npos;          ///< full KV relay
  std::size_t pairing_placebo = audit_data::npos;  ///< placebo: another item's cache (pairing_placebo_kind())
  std::size_t zeroed = audit_data::npos;           ///< placebo: zeroed cache
  std::size_t random = audit_data::npos;           ///< placebo: random cache
  std::size_t cross_model = audit_data::npos;      ///< placebo: a foreign model's cache
};

/// @brief The key of the finding "the role of kind `k` beats no communication" in the need regime:
/// the catalog's row whose pattern is need.<arm>_beats_no_comm with subject `k` (audit_effect_findings
/// writes those of the placebos and cross_model); finding_kind::unknown when the catalog has none.
[[nodiscard]] inline finding_key need_beats_no_comm_key(arm_kind k) {
  for (const auto& row : finding_catalog())
    if (row.pattern == "need.<arm>_beats_no_comm" && row.subject == k) return {row.kind};
  return {};
}

/// @brief The arm index in `d` of each role `roles` names (audit_data::npos for a role no arm plays).
[[nodiscard]] role_index role_index_of(const audit_data& d, const arm_roles& roles);

/// @brief The method text of the verdict interval and p-value of every paired effect.
/// @param o the audit options (α)
/// @returns e.g. "90% verdict interval: betting over items (one-sided 0.05 per side; ...)"
[[nodiscard]] std::string effect_verdict_text(const audit_options& o);

/// @brief The paired effects (out.effects: every role contrast in need and no_need with its
/// descriptive interval, betting verdict interval, betting p-value and Holm adjustment over the
/// family) and the need-regime decomposition (out.decomposition, Holm over its parts). Contrasts
/// whose arms are absent or share no unit are skipped with a warning (out.warnings).
/// @param d the unit × arm table
/// @param r the arm index of each role
/// @param o levels, margins, bootstrap size, seed, threads (checked by the caller)
/// @param out receives effects, decomposition and warnings
void audit_paired_effects(const audit_data& d, const role_index& r, const audit_options& o, audit_core& out);

/// @brief The effect findings from out.effects, appended to out.findings in the documented order:
/// need.text_beats_no_comm, need.kv_beats_no_comm, need.kv_noninferior_to_text,
/// need.kv_equivalent_to_text, the pairing placebo's, need.zeroed_beats_no_comm and
/// need.cross_model_beats_no_comm (need_beats_no_comm_key), no_need.kv_changes_accuracy (inconclusive with n
/// = 0 when the contrast is missing). The positive-control gate is applied by the caller.
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
