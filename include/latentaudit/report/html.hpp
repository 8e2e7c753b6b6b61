// SPDX-License-Identifier: MIT
// latentaudit: report.html — the audit report as one self-contained page written beside report.md:
// the decision and its policy first, findings with what each verdict means for relay, labelled
// intervals in percentage points, sortable tables, the plots inline, and a side-by-side drill-down:
// per (item, seed) every arm's answer (B's answer text, correct, the answer's probability),
// filterable by regime, arm, correctness and a text search. Inline CSS and SVG, one small inline
// script (table sorting and the filters; the page reads the same with scripts off, every row
// shown), nothing loaded from the network, every text HTML-escaped.
#ifndef LATENTAUDIT_REPORT_HTML_HPP
#define LATENTAUDIT_REPORT_HTML_HPP

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../trial/record.hpp"
#include "../trial/task_file.hpp"
#include "detail/html_text.hpp"  // html_escape
#include "finding.hpp"

namespace latentaudit {

// report.hpp includes this header (report.md uses the polarity and labels): audit_report is declared
// there, and impl/html-inl.hpp includes it.
struct audit_report;

/// @brief What a finding's verdict means for relaying the cache.
enum class relay_polarity {
  supports,   ///< the verdict is good news for relay (e.g. need.kv_beats_no_comm: yes)
  against,    ///< the verdict is bad news for relay (e.g. stale.kv_worse_than_text: yes)
  not_shown,  ///< inconclusive: the records show neither
  context     ///< a descriptive finding (e.g. noise.tolerance_sigma): no direction for relay
};

/// @brief "supports", "against", "not shown" or "context".
/// @param p the polarity
/// @returns its name as report.md and report.html print it
[[nodiscard]] constexpr const char* relay_polarity_name(relay_polarity p) noexcept {
  return p == relay_polarity::supports  ? "supports"
         : p == relay_polarity::against ? "against"
         : p == relay_polarity::context ? "context"
                                        : "not shown";
}

/// @brief What `f`'s verdict means for relay, by its id (docs/audit-report.md "Findings"): a "yes"
/// of a benefit finding (need.kv_beats_no_comm, need.kv_noninferior_to_text, cost.relay_pays_on_*,
/// ...) supports relay, a "yes" of a risk finding (stale.*, conflict.*, placebo and cross-model
/// benefits, a negative no-need change, a located drift tolerance) is against it, and the reverse
/// for "no"; inconclusive is "not shown"; ids without a direction (noise.tolerance_sigma, unknown
/// ids) are "context".
/// @param f the finding
/// @returns its polarity
[[nodiscard]] LATENTAUDIT_INLINE relay_polarity finding_polarity(const finding& f) noexcept;

/// @brief One plain sentence saying what `f`'s verdict means ("KV relay beats no communication in
/// the need regime.").
/// @param f the finding
/// @returns the sentence (unknown ids: "<id>: <verdict>.")
[[nodiscard]] LATENTAUDIT_INLINE std::string finding_statement(const finding& f);

/// @brief The level and method of `f`'s interval [ci_low, ci_high], by its id: "90% verdict
/// interval (betting over items)" for the paired contrasts (1 − 2α), "90% interval (betting over
/// items)" for the gate, "95% bootstrap CI (receiver ms saved)" for the cost findings and "95% CI
/// (test inversion over items)" for the noise and drift tolerances (1 − α).
/// @param f the finding
/// @param alpha the report's α (audit_options::alpha), in (0, 0.5)
/// @returns the label
[[nodiscard]] LATENTAUDIT_INLINE std::string finding_interval_label(const finding& f, double alpha);

/// @brief A short name of `f`'s method for a table cell (the full text stays in report.json and in
/// report.html's collapsed method).
/// @param f the finding
/// @returns e.g. "paired, betting over items"
[[nodiscard]] LATENTAUDIT_INLINE std::string finding_method_short(const finding& f);

/// @brief The anchor of `f` in report.html ("f-" and the id with every character outside
/// [A-Za-z0-9._-] replaced by '_'); report.md links its method cells there.
/// @param id a finding id
/// @returns the fragment name, without '#'
[[nodiscard]] LATENTAUDIT_INLINE std::string finding_anchor(std::string_view id);

/// @brief Options of report_html().
struct html_options {
  /// most rows of the side-by-side drill-down embedded in the page, one row per (item, seed) with
  /// every arm's answer: the units where the arms disagree on correctness first, then by regime,
  /// item and seed; the rest are counted in a note and left to records.jsonl (the page's filters
  /// work on the rows embedded)
  std::size_t max_item_rows = 400;
  /// most bytes of one answer text shown in a cell (cut at a UTF-8 boundary, "…"; the whole text,
  /// up to 1000 bytes, in the cell's tooltip)
  std::size_t max_answer_bytes = 60;
  /// the task file of the records (audit_options::tasks): the drill-down's query and accepted
  /// answers columns; null: not shown
  const task_file* tasks = nullptr;
  /// shown in the drill-down's note when `tasks` is null (audit_options::tasks_note)
  std::string tasks_note;
};

/// @brief report.html: one self-contained HTML5 page for `r` built from `records` (the records the
/// report was built from), with the plots `svgs` (report_svgs(r)) inline.
/// @param r the report
/// @param records its records (the drill-down reads item, seed, regime, arm, arm_kind, task_id,
/// query_index, answer_text, answer_logprob, correct, stale_answer and relay_error)
/// @param svgs pairs (file name, SVG document) to inline, in order
/// @param o options
/// @returns the page (UTF-8)
/// @throws invalid_argument naming report_html if o.max_item_rows or o.max_answer_bytes is 0.
[[nodiscard]] LATENTAUDIT_INLINE std::string report_html(
    const audit_report& r, std::span<const trial_record> records,
    std::span<const std::pair<std::string, std::string>> svgs, const html_options& o = {});

namespace detail {

/// @brief A difference of accuracies (or of probabilities) in percentage points, signed, one
/// decimal: 0.982 → "+98.2 pts", −1 → "-100.0 pts", 0 → "0.0 pts"; "–" when not finite.
/// @param x the difference as a fraction
/// @returns the text
[[nodiscard]] LATENTAUDIT_INLINE std::string points_text(double x);

/// @brief An interval of differences in percentage points, one decimal, the unit once:
/// (0.951, 0.997) → "[95.1, 99.7] pts"; a limit that is not finite is "–".
/// @param lo lower limit (fraction)
/// @param hi upper limit (fraction)
/// @returns the text
[[nodiscard]] LATENTAUDIT_INLINE std::string points_interval_text(double lo, double hi);

/// @brief A p-value with fixed precision: three decimals ("0.008", "1.000"), "<0.001" below
/// 0.001, "–" when not finite.
/// @param p the p-value
/// @returns the text
[[nodiscard]] LATENTAUDIT_INLINE std::string p_value_text(double p);

/// @brief A finding's estimate as report.md and report.html print it, with its unit and fixed
/// precision, by its id: accuracy and probability differences in signed percentage points ("+98.2
/// pts"), cost findings (seconds) in milliseconds ("1.08 ms"), noise.tolerance_sigma in σ ("0.75
/// σ"), drift.tolerance_steps in steps ("300 steps"), a cache map's retention (a ratio) in percent
/// ("93.2%"); "–" when not finite.
/// @param f the finding (its id decides the unit)
/// @param x its estimate (an interval limit: finding_interval_text)
/// @returns the text
[[nodiscard]] LATENTAUDIT_INLINE std::string finding_value(const finding& f, double x);

/// @brief A finding's interval in the unit of finding_value, the unit once: "[95.1, 99.7] pts",
/// "[1.08, 2.30] ms", "[0.50, 1.00] σ".
/// @param f the finding (its id decides the unit)
/// @param lo lower limit
/// @param hi upper limit
/// @returns the text
[[nodiscard]] LATENTAUDIT_INLINE std::string finding_interval_text(const finding& f, double lo, double hi);

/// @brief A magnitude in the unit of finding_value, unsigned (the minimum detectable effect:
/// "12.3 pts"); "–" when not finite.
/// @param f the finding (its id decides the unit)
/// @param x the magnitude
/// @returns the text
[[nodiscard]] LATENTAUDIT_INLINE std::string finding_magnitude_text(const finding& f, double x);

/// @brief The order of regimes in the tables: need, no_need, stale, conflict, then others.
/// @param r a regime name
/// @returns its rank (0 to 4)
[[nodiscard]] inline int regime_rank(std::string_view r) noexcept {
  if (r == "need") return 0;
  if (r == "no_need") return 1;
  if (r == "stale") return 2;
  if (r == "conflict") return 3;
  return 4;
}

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/html-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_HTML_HPP
