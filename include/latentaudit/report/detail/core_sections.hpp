// SPDX-License-Identifier: MIT
// latentaudit: the report's core sections built once as report_section (report_model.hpp) from the
// audit's results — the title with the meta paragraph, accuracy by arm, the paired effects with their forest
// plot, the CATE table, the noise dose-response, the slicing and compression frontier, the teaching
// demonstrations (with the production log and the rollout), the warnings and what the engine could not run
// or measure — which report.md writes with
// markdown_of and report.html with html_of. Not part of the public API.
#ifndef LATENTAUDIT_REPORT_DETAIL_CORE_SECTIONS_HPP
#define LATENTAUDIT_REPORT_DETAIL_CORE_SECTIONS_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <optional>
#include <span>

#include "../../config.hpp"
#include "../report_model.hpp"

namespace latentaudit {
// report.hpp defines it and includes (through its -inl.hpp) this header: declared here, complete in
// impl/core_sections-inl.hpp.
struct audit_report;
struct trial_record;
}  // namespace latentaudit

namespace latentaudit::detail {

/// @brief The report's title (level 1), the meta paragraph (records, items, seeds, α, margin,
/// bootstrap) and, for an audit stopped when decided (audit_options::horizon), the note on its horizon,
/// looks and the arms it stopped one by one.
/// @param r the report
[[nodiscard]] report_section title_section(const audit_report& r);

/// @brief "Accuracy by arm": one row per (regime, arm), the "all" regime left out, sorted by regime
/// (need, no_need, stale, conflict, others) then arm; the arm is data text (report.html links it to
/// its drill-down).
/// @param r the report
[[nodiscard]] report_section accuracy_section(const audit_report& r);

/// @brief "Paired effects (Holm across the family) and decomposition": what the forest plot shows,
/// the plot and one row per paired effect, then per decomposition contrast.
/// @param r the report
[[nodiscard]] report_section effects_section(const audit_report& r);

/// @brief "Effects by regime and covariate (CATE)" (none without CATE estimates).
/// @param r the report
[[nodiscard]] std::optional<report_section> cate_section(const audit_report& r);

/// @brief "Noise dose-response": the plot, the tolerance σ, the curve's table and its method.
/// @param r the report
[[nodiscard]] report_section noise_section(const audit_report& r);

/// @brief "Slicing and compression frontier (need regime)": the plot and the table.
/// @param r the report
[[nodiscard]] report_section frontier_section(const audit_report& r);

/// @brief "Teaching demonstrations — true by construction, not findings": what they are, their
/// table and details, the production log and the rollout with their methods' estimates.
/// @param r the report
[[nodiscard]] report_section demonstrations_section(const audit_report& r);

/// @brief "Warnings" (none without warnings).
/// @param r the report
[[nodiscard]] std::optional<report_section> warnings_section(const audit_report& r);

/// @brief "Unavailable on this engine (name)": the arms left out of the design
/// (audit_options::arms_unavailable) and the metrics the records hold as unavailable, each with the
/// engine's reason (none when audit_options::engine is empty, or nothing is unavailable).
/// @param r the report
/// @param records its records (their `unavailable` metrics)
[[nodiscard]] std::optional<report_section> unavailable_section(const audit_report& r,
                                                                std::span<const trial_record> records);

}  // namespace latentaudit::detail

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/core_sections-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_DETAIL_CORE_SECTIONS_HPP
