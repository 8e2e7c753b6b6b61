// SPDX-License-Identifier: MIT
// latentaudit: the report's sections built once as report_section (report_model.hpp) from the
// analyses' results — relay failures (stale, conflict, drift), messages, cache maps, the cost per
// link, the fitted link and the relay gate — which report.md writes with markdown_of and report.html with
// html_of. The analyses write no output. Not part of the public API.
#ifndef LATENTAUDIT_REPORT_DETAIL_REPORT_SECTIONS_HPP
#define LATENTAUDIT_REPORT_DETAIL_REPORT_SECTIONS_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <optional>

#include "../../config.hpp"
#include "../analyses/mapped.hpp"
#include "../analyses/message.hpp"
#include "../audit.hpp"
#include "../report_model.hpp"

namespace latentaudit {
// report.hpp defines it and includes (through its -inl.hpp) this header: declared here, complete in
// impl/report_sections-inl.hpp.
struct audit_report;
}  // namespace latentaudit

namespace latentaudit::detail {

/// @brief "When relay does not pay": the stale and conflict contrasts, the stale answers, the
/// attention mechanism and the drift tolerance with its curve.
/// @param c the core analyses
/// @param margin the equivalence margin (a fraction)
[[nodiscard]] report_section relay_failures_section(const audit_core& c, double margin);

/// @brief "Messages: A's cache or A's message?" (none without message arms).
/// @param m the analysis
/// @param margin the equivalence margin (a fraction)
[[nodiscard]] std::optional<report_section> messages_section(const message_analysis& m, double margin);

/// @brief "Relay through a cache map" (none without kv_mapped arms).
/// @param m the analysis
/// @param margin the equivalence margin (a fraction)
[[nodiscard]] std::optional<report_section> mapped_section(const mapped_analysis& m, double margin);

/// @brief "Link fitted from measured relays" (none without relays over a real link).
/// @param r the report
[[nodiscard]] std::optional<report_section> link_fit_section(const audit_report& r);

/// @brief "Cost-benefit by link": the latency plots, the cost statement with its finding, the method,
/// the table per link, the projection for real model shapes and the cost notes.
/// @param r the report
[[nodiscard]] report_section cost_section(const audit_report& r);

/// @brief "Per-request relay gate".
/// @param r the report
[[nodiscard]] report_section gate_section(const audit_report& r);

}  // namespace latentaudit::detail

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/report_sections-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_DETAIL_REPORT_SECTIONS_HPP
