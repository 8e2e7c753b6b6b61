// SPDX-License-Identifier: MIT
// latentaudit: the audit report — every analysis of the records (core effects, observational
// demonstrations, cost-benefit and relay gate, decision) assembled into report.md, report.json
// (with the machine-readable findings a CI pipeline gates on) and SVG plots.
#ifndef LATENTAUDIT_REPORT_REPORT_HPP
#define LATENTAUDIT_REPORT_REPORT_HPP

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/json.hpp"
#include "../trial/record.hpp"
#include "analyses/link_fit.hpp"
#include "audit.hpp"
#include "cost.hpp"
#include "decision.hpp"
#include "detail/markdown_text.hpp"
#include "finding.hpp"
#include "finding_catalog.hpp"
#include "observational.hpp"
#include "svg.hpp"

namespace latentaudit {

/// @brief Everything the audit found.
struct audit_report {
  audit_options options;  ///< levels, margins, bootstrap
  audit_core core;        ///< per-arm accuracy, paired effects, decomposition, CATE, noise, frontier
  observational_result observational;   ///< production log and rollout demonstrations
  cost_benefit_result cost;             ///< cost-benefit per link
  link_fit_result link_fit;             ///< the link fitted from measured relays (transfer_measured_s)
  std::vector<link_arm_row> link_rows;  ///< modeled vs measured transfer per arm (measured relays only)
  relay_gate_result gate;               ///< the per-request relay gate
  audit_decision decision;              ///< the checklist and verdict
  std::vector<finding> findings;        ///< every gating finding, core first (no demonstration)
  /// the observational demonstrations' coverage checks (log.*, rollout.*): true by construction on
  /// a simulated log, teaching material, never among `findings` (a pipeline must not gate on them)
  std::vector<finding> demonstrations;
};

/// @brief Runs every analysis on `records`.
/// @throws invalid_argument / corrupt_data as analyse_records.
[[nodiscard]] audit_report build_audit_report(std::span<const trial_record> records,
                                              const audit_options& o = {});

namespace detail {

std::string pct(double x);
std::string num(double x);
json_value jnum(double x);
/// @brief The strings as a JSON array.
json_value strings_json(std::span<const std::string> v);
json_value jopt(const std::optional<double>& x);
/// @brief Text from records, tasks or options as inert Markdown (markdown_text, its one owner).
std::string md_escape(std::string s);
json_value estimate_json(const effect_estimate& e);
std::string estimate_md(const effect_estimate& e);
/// @brief report.json's "decision", "observational" and "gate" objects (parts of report_json).
[[nodiscard]] json_value decision_json(const audit_report& r);
[[nodiscard]] json_value observational_json(const audit_report& r);
[[nodiscard]] json_value gate_json(const audit_report& r);
/// @brief report.json's "options": the levels and, for an audit stopped when decided
/// (audit_options::horizon), horizon_items, looks and regime_horizon_items.
[[nodiscard]] json_value options_json(const audit_options& o);

}  // namespace detail

/// @brief report.json: options, counts, the findings array ({id, verdict, estimate, ci_low,
/// ci_high, method, n, detail}), the decision, every table, and the observational
/// demonstrations' coverage checks in their own `demonstrations` array (same fields, not findings).
[[nodiscard]] json_value report_json(const audit_report& r);

/// @brief The SVG plots, each drawn (svg_of) from the data its figure carries in the report's sections
/// (report_figure::plot): forest.svg (paired effects, decomposition, relay failures), dose_response.svg
/// (accuracy vs noise σ with its band and the tolerance σ), frontier.svg (bytes vs accuracy, Pareto
/// set), drift_response.svg (with drift arms), latency_receiver.svg and latency.svg (latency by stage
/// per arm, audit_core::stage_latency). Pairs (file name, SVG text), in that order.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> report_svgs(const audit_report& r);

/// @brief report.md: the decision and its checklist first, then every table.
[[nodiscard]] std::string report_markdown(const audit_report& r);

/// @brief Builds the report and writes report.md, report.json and the SVG plots into `dir`, as one
/// set (each file complete or the previous one left; report.md and report.html hold the "Unavailable on
/// this engine" section when audit_options::engine is set and an arm or a metric is unavailable).
/// @throws corrupt_data if a file cannot be written; errors of build_audit_report.
audit_report run_audit_report(std::span<const trial_record> records, const audit_options& o,
                              const std::filesystem::path& dir);

/// @brief The findings as a compact JSON object {id: verdict} (for the CLI summary).
[[nodiscard]] json_value findings_summary(const audit_report& r);

/// @brief The decision as {verdict, link, checklist: {name: passed}}.
[[nodiscard]] json_value decision_summary(const audit_report& r);

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/report-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_REPORT_HPP
