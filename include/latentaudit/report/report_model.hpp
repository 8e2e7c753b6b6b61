// SPDX-License-Identifier: MIT
// latentaudit: one model of the report's sections — typed tables (columns with a unit and an
// alignment; cells that are text, an id, a number with its format, an interval, a verdict or
// nothing) and paragraphs, lists and figures in order — written by thin writers: Markdown
// (report.md), HTML (report.html) and JSON. A writer formats each cell by its type and escapes each
// text for its format; what a section says is decided once, by the function that builds it. The
// anchor is statsmodels' Summary (one table model; as_text, as_latex, as_html).
#ifndef LATENTAUDIT_REPORT_REPORT_MODEL_HPP
#define LATENTAUDIT_REPORT_REPORT_MODEL_HPP

#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "../config.hpp"
#include "../core/json.hpp"
#include "finding.hpp"
#include "svg.hpp"

namespace latentaudit {

/// @brief One run of inline text of a paragraph, list item or table cell.
struct report_span {
  /// @brief What the run is, and so how each writer escapes it.
  enum class kind {
    text,    ///< data (labels, notes, sentences from records, tasks or options): escaped fully
    prose,   ///< the library's own wording, already Markdown-inert: written into Markdown as it is; it
             ///< may hold markdown_text's escapes (backslashes, "kv\\_full"; "&lt;" for '<'), which the
             ///< HTML and JSON writers undo
    code,    ///< an identifier or a command: a Markdown code span where that is inert, <code> in HTML
    strong,  ///< prose in bold (**…** in Markdown, <strong> in HTML)
    link,    ///< prose linking to the anchor `target` of report.html ([…](report.html#target); #target)
    badge,   ///< a short status word in a coloured pill: HTML <span class="badge b-`target`">; Markdown:
             ///< the prose as it is (`target` is the tone: "supports", "against", "context", "not-shown")
    small    ///< a small-print label after other text: HTML <span class="lbl">; Markdown: the prose
  };
  kind k = kind::text;  ///< the kind
  std::string text;     ///< the text (prose and strong: with its Markdown backslash escapes)
  std::string target;   ///< link: the anchor in report.html, without '#'; badge: its tone

  /// @brief Data text, escaped by every writer.
  [[nodiscard]] static report_span data(std::string t) { return {kind::text, std::move(t), {}}; }
  /// @brief The library's own Markdown-inert wording.
  [[nodiscard]] static report_span prose(std::string t) { return {kind::prose, std::move(t), {}}; }
  /// @brief An identifier or command as code.
  [[nodiscard]] static report_span code(std::string t) { return {kind::code, std::move(t), {}}; }
  /// @brief Bold prose.
  [[nodiscard]] static report_span strong(std::string t) { return {kind::strong, std::move(t), {}}; }
  /// @brief Prose linking to an anchor of report.html.
  [[nodiscard]] static report_span link(std::string t, std::string anchor) {
    return {kind::link, std::move(t), std::move(anchor)};
  }
  /// @brief Prose in a badge of tone `tone` (HTML class "b-tone").
  [[nodiscard]] static report_span badge(std::string t, std::string tone) {
    return {kind::badge, std::move(t), std::move(tone)};
  }
  /// @brief Prose as a small-print label.
  [[nodiscard]] static report_span small(std::string t) { return {kind::small, std::move(t), {}}; }
};

/// @brief Inline text: runs in order.
using report_text = std::vector<report_span>;

/// @brief How a number is written: `value * scale` through the {fmt} format `spec`, then `unit`.
struct number_format {
  /// @brief Units chosen by the value's size instead of `spec`/`scale`/`unit`.
  enum class auto_unit {
    none,     ///< `spec`, `scale` and `unit` as given
    seconds,  ///< three significant digits in s, ms or µs ("602 µs")
    bytes     ///< three significant digits in B, kB, MB or GB ("9.84 kB")
  };
  std::string spec = "{}";                ///< {fmt} replacement field for one double ("{:+.1f}", "{:.3g}")
  double scale = 1.0;                     ///< multiplies the value before `spec` (100: a fraction in points)
  std::string unit;                       ///< appended to a finite number as it is ("%", " ms", " points")
  auto_unit automatic = auto_unit::none;  ///< see auto_unit
  bool unsigned_zero = false;             ///< a number that rounds to zero loses its sign ("0.0", not "-0.0")
  /// a value that is not finite: "–" when false; "∞" (above 0) or "−∞" (else, NaN too) when true
  bool infinities = false;
};

/// @brief `x` written by `f` ("–" when not finite, unless `f.infinities`).
/// @param x the value
/// @param f the format
/// @returns the text (UTF-8)
/// @throws fmt::format_error if `f.spec` is not a replacement field for a double.
[[nodiscard]] LATENTAUDIT_INLINE std::string format_number(double x, const number_format& f);

/// @brief One cell of a report_table.
struct report_cell {
  /// @brief What the cell holds.
  enum class kind {
    empty,     ///< nothing (a blank cell)
    missing,   ///< a value that does not exist: "–"
    text,      ///< inline text (a label, a sentence)
    code,      ///< an id (a finding id, an arm) as code, linked to `anchor` in report.html when set
    number,    ///< `value` written by `format`
    interval,  ///< "[lo, hi]" by `limits` (`value` by `format` first with `with_estimate`), then `unit`
    verdict,   ///< yes, no or inconclusive
    details    ///< `text` as a summary with the paragraphs `more` behind it: HTML <details><summary>;
               ///< Markdown: the summary, linked to report.html#`anchor` when set (`more` is left out)
  };
  kind k = kind::empty;           ///< the kind
  report_text text;               ///< text; details: the summary
  std::vector<report_text> more;  ///< details: the paragraphs behind the summary
  std::string id;                 ///< code: the id
  std::string anchor;             ///< code, details: its anchor in report.html (without '#'); empty: none
  /// number; interval: estimate (NaN: none); text: its sort key in HTML, in any column (NaN: none)
  double value = std::numeric_limits<double>::quiet_NaN();
  double lo = std::numeric_limits<double>::quiet_NaN();  ///< interval: lower limit
  double hi = std::numeric_limits<double>::quiet_NaN();  ///< interval: upper limit
  number_format format;                                  ///< number; interval: the estimate's
  number_format limits;                                  ///< interval: the limits'
  std::string unit;                                      ///< interval: after "]" ("] pts")
  verdict answer = verdict::inconclusive;                ///< verdict
  bool with_estimate = false;                            ///< interval: `value` written before it
  /// code: HTML lets a long id wrap only after a '.' (<code class="fid">, one nowrap <span> a part)
  bool breakable = false;

  /// @brief A blank cell.
  [[nodiscard]] static report_cell blank() { return {}; }
  /// @brief "–": no value.
  [[nodiscard]] static report_cell none() {
    report_cell c;
    c.k = kind::missing;
    return c;
  }
  /// @brief Inline text.
  [[nodiscard]] static report_cell of_text(report_text t) {
    report_cell c;
    c.k = kind::text;
    c.text = std::move(t);
    return c;
  }
  /// @brief Inline text sorted by `key` (HTML data-v, in any column; NaN: by its text).
  [[nodiscard]] static report_cell of_text(report_text t, double key) {
    report_cell c = of_text(std::move(t));
    c.value = key;
    return c;
  }
  /// @brief A summary with paragraphs behind it; Markdown links the summary to `anchor` when set.
  [[nodiscard]] static report_cell of_details(report_text summary, std::vector<report_text> more,
                                              std::string anchor = {}) {
    report_cell c;
    c.k = kind::details;
    c.text = std::move(summary);
    c.more = std::move(more);
    c.anchor = std::move(anchor);
    return c;
  }
  /// @brief Data text (one run).
  [[nodiscard]] static report_cell label(std::string t) { return of_text({report_span::data(std::move(t))}); }
  /// @brief The library's own wording (one run).
  [[nodiscard]] static report_cell words(std::string t) {
    return of_text({report_span::prose(std::move(t))});
  }
  /// @brief An id as code, linked to `anchor` when not empty.
  [[nodiscard]] static report_cell code_id(std::string id, std::string anchor = {}) {
    report_cell c;
    c.k = kind::code;
    c.id = std::move(id);
    c.anchor = std::move(anchor);
    return c;
  }
  /// @brief A number.
  [[nodiscard]] static report_cell number(double x, number_format f) {
    report_cell c;
    c.k = kind::number;
    c.value = x;
    c.format = std::move(f);
    return c;
  }
  /// @brief An interval, with its estimate first when `estimate` is given ("–" when it is not finite).
  [[nodiscard]] static report_cell interval(std::optional<double> estimate, double lo, double hi,
                                            number_format estimate_format, number_format limit_format,
                                            std::string unit = {}) {
    report_cell c;
    c.k = kind::interval;
    c.with_estimate = estimate.has_value();
    c.value = estimate.value_or(std::numeric_limits<double>::quiet_NaN());
    c.lo = lo;
    c.hi = hi;
    c.format = std::move(estimate_format);
    c.limits = std::move(limit_format);
    c.unit = std::move(unit);
    return c;
  }
  /// @brief A verdict.
  [[nodiscard]] static report_cell of_verdict(verdict v) {
    report_cell c;
    c.k = kind::verdict;
    c.answer = v;
    return c;
  }
};

/// @brief One column of a report_table.
struct report_column {
  std::string header;    ///< its header, the library's Markdown-inert wording (report_span::prose)
  std::string unit;      ///< the unit of its numbers ("points", "µs"; empty: none or in the header)
  bool numeric = false;  ///< right-aligned and sorted by value in HTML
};

/// @brief A table: columns, rows of cells (one per column), a caption and notes.
struct report_table {
  std::string id;                              ///< its anchor in report.html (empty: none)
  report_text caption;                         ///< shown above it (empty: none)
  std::vector<report_column> columns;          ///< the columns
  std::vector<std::vector<report_cell>> rows;  ///< the rows, each with columns.size() cells
  std::vector<report_text> notes;              ///< paragraphs shown below it
  bool sortable = true;                        ///< HTML: headers sort the rows
  /// HTML: each row's anchor (id on its <tr>), one per row or none at all; "" leaves a row without one
  std::vector<std::string> row_ids;
};

/// @brief A paragraph.
struct report_paragraph {
  report_text text;   ///< its text
  bool note = false;  ///< HTML: a side note (smaller print)
  /// HTML: the paragraph's class instead of "note" ("bad": a warning; "verdict", "gate": the page's
  /// decision box); Markdown ignores it
  std::string style;
};

/// @brief A bullet list, or a numbered one.
struct report_list {
  std::vector<report_text> items;  ///< the items
  bool ordered = false;            ///< numbered: Markdown "1. ", HTML <ol>
  std::string style;               ///< HTML: the list's class (empty: none)
};

/// @brief A heading inside a section (a sub-heading: level 3 under a section of level 2).
struct report_heading {
  report_text title;  ///< its text
  std::string id;     ///< its anchor in report.html (empty: none)
  int level = 3;      ///< heading level ("###", <h3>)
};

/// @brief A plot written beside the report, placed here, with the data it is drawn from: report_svgs
/// draws every figure of the report's sections that has a plot (svg_of).
struct report_figure {
  std::string file;  ///< its file name ("drift_response.svg")
  std::string alt;   ///< its short description
  plot_spec plot;    ///< its data (std::monostate: a figure drawn elsewhere, or not at all)
};

/// @brief One block of a section.
using report_block = std::variant<report_paragraph, report_table, report_list, report_figure, report_heading>;

/// @brief A section: a heading and its blocks in order.
struct report_section {
  std::string id;                    ///< its anchor in report.html ("relay-failures")
  std::string title;                 ///< its heading, the library's Markdown-inert wording
  int level = 2;                     ///< heading level (2: "##", <h2>)
  std::vector<report_block> blocks;  ///< its content
  report_text heading;               ///< when not empty: the heading as inline text instead of `title`
  /// HTML: the first `boxed` blocks are drawn in a box, <div class="`box_style`"> (0: no box)
  std::size_t boxed = 0;
  std::string box_style;  ///< HTML: the box's class ("decision allowed")
};

/// @brief The table in Markdown: the caption as a paragraph, the header row, "|---|" per column, one
/// line per row, a blank line, then each note as a paragraph. Cells by kind: data text escaped
/// (markdown_text), prose as it is, code spans (markdown_code), numbers by their format, "–" for
/// missing, nothing for blank ("| |"); links as [text](report.html#anchor).
/// @param t the table
/// @returns the Markdown text, ending in a blank line
/// @throws invalid_argument naming markdown_of if a row does not have one cell per column.
[[nodiscard]] LATENTAUDIT_INLINE std::string markdown_of(const report_table& t);

/// @brief The section in Markdown: "## title" (or `heading`), a blank line, then each block followed by
/// a blank line (a paragraph is one line; a list one line per item, "- " or "1. "; a figure
/// "![alt](file)"; a heading "### title").
/// @param s the section
/// @returns the Markdown text
/// @throws invalid_argument as markdown_of(const report_table&).
[[nodiscard]] LATENTAUDIT_INLINE std::string markdown_of(const report_section& s);

/// @brief How html_of writes a figure: the HTML for the file name (report.html inlines the SVG);
/// empty or returning "": a note naming the file.
using report_figure_writer = std::function<std::string(const report_figure&)>;

/// @brief The table in HTML: <table class="sortable"> with a <caption>, a header row (the column's
/// unit in a title attribute) and one row per row; numeric columns' cells class "n" with the value
/// in data-v (sorting), and a text cell's sort key in data-v in any column; every text HTML-escaped (prose
/// without its Markdown backslash escapes); code as <code>, linked to "#anchor"; details as
/// <details><summary>; a row's id from `row_ids` on its <tr>; notes as <p class="note"> after the table.
/// @param t the table
/// @returns the HTML fragment
/// @throws invalid_argument naming html_of if a row does not have one cell per column.
[[nodiscard]] LATENTAUDIT_INLINE std::string html_of(const report_table& t);

/// @brief The section in HTML: <section id> with an <hN> heading, paragraphs as <p> (class: `style`,
/// else "note" for a note), lists as <ul> or <ol>, headings as <hN id>, tables as html_of(table),
/// figures by `figure`; the first `boxed` blocks inside <div class="box_style">.
/// @param s the section
/// @param figure writes a figure (empty: a note naming the file)
/// @returns the HTML fragment
/// @throws invalid_argument as html_of(const report_table&).
[[nodiscard]] LATENTAUDIT_INLINE std::string html_of(const report_section& s,
                                                     const report_figure_writer& figure = {});

/// @brief The table as JSON: {id, caption, columns: [{header, unit}], rows: [[cell, ...]], notes};
/// a cell is a number (null when not finite), {estimate, low, high, unit} for an interval, the
/// verdict's name, the id, the text without escapes (details: the summary), or null (blank, missing).
/// @param t the table
/// @returns the JSON value
[[nodiscard]] LATENTAUDIT_INLINE json_value json_of(const report_table& t);

/// @brief Plain text of `t`: the runs' text joined, prose without its Markdown backslash escapes.
/// @param t inline text
/// @returns the text
[[nodiscard]] LATENTAUDIT_INLINE std::string plain_text(const report_text& t);

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/report_model-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_REPORT_MODEL_HPP
