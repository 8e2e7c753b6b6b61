// SPDX-License-Identifier: MIT
// latentaudit: the report's decision and findings sections built once as report_section
// (report_model.hpp) — the verdict with the relay gate, the serving policy with its conditions, the
// policy's rules and their replay, the checklist, the sequential monitors and the relay switch; the
// findings table with what each verdict means for relay — which report.md writes with markdown_of
// and report.html with html_of. Not part of the public API.
#ifndef LATENTAUDIT_REPORT_DETAIL_DECISION_SECTIONS_HPP
#define LATENTAUDIT_REPORT_DETAIL_DECISION_SECTIONS_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../../config.hpp"
#include "../report_model.hpp"

namespace latentaudit {
// report.hpp defines it and includes (through its -inl.hpp) this header: declared here, complete in
// impl/decision_sections-inl.hpp.
struct audit_report;
}  // namespace latentaudit

namespace latentaudit::detail {

/// @brief "Decision: **verdict**": in a box (HTML; class "decision allowed" or "decision blocked") the
/// relay gate field, why a relay verdict is not one (or the unverified risk checks), the headline,
/// the summary, the serving policy as a numbered list — a line a rule of which rests on a risk check
/// shown present (checklist_item::risk, passed "no") carries a "condition" badge — and the cost
/// check's link; then the policy's rules with their replay, the input warnings, the checklist (with
/// what each outcome means for relay), the sequential monitors and the relay switch.
/// @param r the report
[[nodiscard]] report_section decision_section(const audit_report& r);

/// @brief "Findings": one row per finding (anchored "f-…" in report.html): id, what its verdict means
/// for relay (a badge), verdict, statement, estimate, interval and what it is, the detectable effect,
/// n and the method (its full text behind the short name); then each finding's detail.
/// @param r the report
[[nodiscard]] report_section findings_section(const audit_report& r);

}  // namespace latentaudit::detail

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/decision_sections-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_DETAIL_DECISION_SECTIONS_HPP
