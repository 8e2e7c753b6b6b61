// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/html.hpp (header-only mode includes this file; compiled mode compiles
// it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_IMPL_HTML_INL_HPP
#define LATENTAUDIT_REPORT_IMPL_HTML_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../html.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "../../core/error.hpp"
#include "../analyses/answer_probability.hpp"
#include "../analyses/effects.hpp"
#include "../detail/core_sections.hpp"
#include "../detail/decision_sections.hpp"
#include "../detail/failure_report.hpp"
#include "../detail/report_sections.hpp"
#include "../report.hpp"
#include "../report_model.hpp"

namespace latentaudit {

namespace detail {

/// @brief Whether `s` starts with `p`.
[[nodiscard]] inline bool html_starts_with(std::string_view s, std::string_view p) noexcept {
  return s.substr(0, p.size()) == p;
}

/// @brief `x` with `decimals` fixed decimals, "-0.0" printed as "0.0".
[[nodiscard]] inline std::string fixed_text(double x, int decimals, bool sign = false) {
  std::string s = sign ? fmt::format("{:+.{}f}", x, decimals) : fmt::format("{:.{}f}", x, decimals);
  const bool zero = s.find_first_not_of("+-0.") == std::string::npos;
  if (zero && (s.front() == '-' || s.front() == '+')) s.erase(0, 1);
  return s;
}

LATENTAUDIT_INLINE std::string points_text(double x) {
  return std::isfinite(x) ? fixed_text(100.0 * x, 1, true) + " pts" : std::string("–");
}

LATENTAUDIT_INLINE std::string points_interval_text(double lo, double hi) {
  const auto one = [](double v) { return std::isfinite(v) ? fixed_text(100.0 * v, 1) : std::string("–"); };
  return "[" + one(lo) + ", " + one(hi) + "] pts";
}

LATENTAUDIT_INLINE std::string p_value_text(double p) {
  if (!std::isfinite(p)) return "–";
  return p < 0.001 ? std::string("<0.001") : fmt::format("{:.3f}", p);
}

/// @brief `x` in `u` without the unit (fixed precision); signed when `sign` (points only).
[[nodiscard]] inline std::string finding_number(finding_unit u, double x, bool sign) {
  if (!std::isfinite(x)) return "–";
  switch (u) {
    case finding_unit::ms:
      return fixed_text(1e3 * x, 2);
    case finding_unit::sigma:
      return fixed_text(x, 2);
    case finding_unit::steps:
      return fixed_text(x, 0);
    case finding_unit::ratio:
      return fixed_text(100.0 * x, 1);
    case finding_unit::points:
      break;
  }
  return fixed_text(100.0 * x, 1, sign);
}

/// @brief The unit's suffix: " pts", " ms", " σ", " steps", "%".
[[nodiscard]] inline std::string_view finding_unit_suffix(finding_unit u) noexcept {
  switch (u) {
    case finding_unit::ms:
      return " ms";
    case finding_unit::sigma:
      return " σ";
    case finding_unit::steps:
      return " steps";
    case finding_unit::ratio:
      return "%";
    case finding_unit::points:
      break;
  }
  return " pts";
}

LATENTAUDIT_INLINE std::string finding_value(const finding& f, double x) {
  if (!std::isfinite(x)) return "–";
  const auto u = finding_info(f.key.kind).unit;
  return finding_number(u, x, true) + std::string(finding_unit_suffix(u));
}

LATENTAUDIT_INLINE std::string finding_interval_text(const finding& f, double lo, double hi) {
  const auto u = finding_info(f.key.kind).unit;
  return "[" + finding_number(u, lo, false) + ", " + finding_number(u, hi, false) + "]" +
         std::string(finding_unit_suffix(u));
}

LATENTAUDIT_INLINE std::string finding_magnitude_text(const finding& f, double x) {
  if (!std::isfinite(x)) return "–";
  const auto u = finding_info(f.key.kind).unit;
  return finding_number(u, x, false) + std::string(finding_unit_suffix(u));
}

/// @brief At most `max_bytes` of `s`, cut at a UTF-8 character boundary, with "…" when cut.
[[nodiscard]] inline std::string html_clip(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  std::size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // not inside a character
  return std::string(s.substr(0, n)) + "…";
}

/// @brief A task field as the drill-down shows it: its text (at most 300 bytes), or its first 16
/// token ids.
[[nodiscard]] inline std::string task_text_shown(const task_text& t) {
  if (t.text) return html_clip(*t.text, 300);
  if (t.tokens.empty()) return "–";
  std::string s = "tokens";
  for (std::size_t i = 0; i < t.tokens.size() && i < 16; ++i) s += " " + std::to_string(t.tokens[i]);
  if (t.tokens.size() > 16) s += fmt::format(" … ({} ids)", t.tokens.size());
  return s;
}

/// @brief The query of `rec` in `tasks`: line rec.item's query rec.query_index (0 without one),
/// when that line exists and its id equals the record's task_id (records without a task_id: the
/// built-in tasks, matched by item); nullptr otherwise.
[[nodiscard]] inline const task_query* task_query_of(const task_file& tasks, const trial_record& rec) {
  if (rec.item >= tasks.tasks.size()) return nullptr;
  const auto& t = tasks.tasks[static_cast<std::size_t>(rec.item)];
  if (!rec.task_id.empty() && rec.task_id != t.id) return nullptr;
  const std::size_t q = rec.query_index ? static_cast<std::size_t>(*rec.query_index) : 0;
  return q < t.queries.size() ? &t.queries[q] : nullptr;
}

/// @brief The accepted answers of `q` as the drill-down shows them: " | " between them, at most 5.
[[nodiscard]] inline std::string task_answers_shown(const task_query& q) {
  std::string s;
  for (std::size_t i = 0; i < q.answers.size() && i < 5; ++i)
    s += (i ? " | " : "") + task_text_shown(q.answers[i]);
  if (q.answers.size() > 5) s += fmt::format(" (+{} more)", q.answers.size() - 5);
  return s.empty() ? std::string("–") : s;
}

/// @brief An id for an HTML anchor: every character outside [A-Za-z0-9._-] becomes '_'.
[[nodiscard]] inline std::string html_anchor_part(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == '_';
    out.push_back(ok ? c : '_');
  }
  return out;
}

/// @brief An SVG document for inlining in HTML: the XML declaration and the xmlns attribute
/// (implied by the HTML parser) removed.
[[nodiscard]] LATENTAUDIT_INLINE std::string inline_svg(std::string_view svg) {
  std::string s(svg);
  if (html_starts_with(s, "<?xml")) {
    const auto e = s.find("?>");
    s.erase(0, e == std::string::npos ? s.size() : e + 2);
    while (!s.empty() && (s.front() == '\n' || s.front() == '\r')) s.erase(0, 1);
  }
  constexpr std::string_view ns = " xmlns=\"http://www.w3.org/2000/svg\"";
  if (const auto p = s.find(ns); p != std::string::npos && p < 8) s.erase(p, ns.size());
  return s;
}

/// @brief The page's style sheet.
inline constexpr std::string_view html_css = R"css(
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1b;background:#fff;margin:0}
main{max-width:1180px;margin:0 auto;padding:12px 20px 40px}
h1{font-size:1.5em;margin:.4em 0 .2em}h2{font-size:1.25em;margin:1.6em 0 .5em;border-bottom:1px solid #ddd;padding-bottom:.2em}
h3{font-size:1.05em;margin:1.2em 0 .4em}
.meta{color:#555;margin:0 0 .8em}
.decision{border:2px solid #999;border-radius:8px;padding:10px 16px;margin:10px 0}
.decision.allowed{border-color:#009E73;background:#f2fbf7}.decision.blocked{border-color:#D55E00;background:#fff7f2}
.verdict{font-size:1.6em;font-weight:700;margin:0}
.gate code{font-size:1.05em;padding:1px 6px;border-radius:4px;background:#eee}
ol.policy li{margin:.2em 0}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.92em}
th,td{border:1px solid #d5d5d5;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
table.sortable th{cursor:pointer}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.badge{display:inline-block;padding:1px 7px;border-radius:9px;font-size:.85em;font-weight:600;white-space:nowrap}
.b-supports{background:#d7f0e6;color:#00573f}.b-against{background:#fbe1d3;color:#8a3400}
.b-not-shown{background:#ececec;color:#444}.b-context{background:#dcebf7;color:#004a75}
.lbl{color:#555;font-size:.85em}
code.fid{font-size:.85em;overflow-wrap:normal;word-break:normal}code.fid>span{white-space:nowrap}#findings td:nth-child(4){min-width:18em}
.iv{white-space:nowrap}
details{margin:.2em 0}summary{cursor:pointer;color:#0b5394}
td details p{margin:.3em 0;max-width:60em}
pre{white-space:pre-wrap;background:#f7f7f7;border:1px solid #e3e3e3;padding:8px;font-size:.85em}
svg{max-width:100%;height:auto;display:block;margin:.4em 0}
.ok{color:#00573f;font-weight:600}.bad{color:#8a3400;font-weight:600}
.note{color:#555;font-size:.9em}
.filters{margin:.5em 0;display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center}
.filters fieldset{border:1px solid #ddd;border-radius:6px;padding:2px 8px;margin:0;font-size:.88em}
.filters label.arm{white-space:nowrap;margin-right:6px}
.dd-wrap{overflow:auto;max-height:80vh;border:1px solid #e3e3e3}
table.dd{margin:0;font-size:.85em}table.dd th{position:sticky;top:0;z-index:1}
table.dd th.arm{white-space:nowrap}table.dd td{white-space:nowrap}
table.dd td.y{background:#e8f6ef}table.dd td.x{background:#fcebe2}
table.dd q{quotes:none;white-space:normal;display:inline-block;max-width:14em;color:#333}
)css";

/// @brief The inline table sorter: click (or Enter on) a header of a table.sortable; a cell's
/// data-v attribute, else its text, is the key (numbers numerically). Without scripts the tables
/// keep the order the report gives them. Then the drill-down's filters (drill_filter_script).
inline constexpr std::string_view html_sort_script = R"js(
(function(){
function key(c){if(!c)return "";var v=c.getAttribute("data-v");if(v===null)v=c.textContent.trim();
var n=Number(v);return v!==""&&isFinite(n)?n:v.toLowerCase();}
var ts=document.querySelectorAll("table.sortable");
for(var t=0;t<ts.length;t++)(function(tb){if(!tb.tHead)return;var hs=tb.tHead.rows[0].cells;
for(var i=0;i<hs.length;i++)(function(h,i){h.tabIndex=0;h.title="sort";
function go(){var asc=h.getAttribute("aria-sort")!=="ascending";
for(var j=0;j<hs.length;j++)hs[j].removeAttribute("aria-sort");
h.setAttribute("aria-sort",asc?"ascending":"descending");
var b=tb.tBodies[0],rs=Array.prototype.slice.call(b.rows);
rs.sort(function(x,y){var a=key(x.cells[i]),c=key(y.cells[i]);
if(typeof a!==typeof c){a=String(a);c=String(c);}return(a<c?-1:a>c?1:0)*(asc?1:-1);});
for(var k=0;k<rs.length;k++)b.appendChild(rs[k]);}
h.addEventListener("click",go);
h.addEventListener("keydown",function(e){if(e.key==="Enter"||e.key===" "){e.preventDefault();go();}});
})(hs[i],i);})(ts[t]);
})();
)js";

/// @brief The drill-down's filters: shows the controls, hides the arm columns unticked and the rows
/// outside the regime, the correctness choice (among the arms shown) or the search text (in the
/// cells shown); an arm's link in the accuracy table sets regime and arms. Without scripts every
/// row and column is shown and the controls stay hidden.
inline constexpr std::string_view html_filter_script = R"js(
(function(){
var t=document.getElementById("dd"),f=document.getElementById("dd-filters");if(!t||!f)return;f.hidden=false;
var rg=document.getElementById("dd-regime"),cr=document.getElementById("dd-correct"),
q=document.getElementById("dd-q"),cnt=document.getElementById("dd-count"),
boxes=f.querySelectorAll("input[data-col]"),first=Number(t.getAttribute("data-first"));
function apply(){var show=[],i,c;
for(i=0;i<boxes.length;i++)show[Number(boxes[i].getAttribute("data-col"))]=boxes[i].checked;
var hs=t.tHead.rows[0].cells;for(c=first;c<hs.length;c++)hs[c].hidden=!show[c];
var want=rg.value,cm=cr.value,text=q.value.trim().toLowerCase(),rows=t.tBodies[0].rows,n=0;
for(i=0;i<rows.length;i++){var row=rows[i],cs=row.cells,y=0,x=0,s="";
for(c=0;c<cs.length;c++){var on=c<first||show[c];if(c>=first)cs[c].hidden=!on;if(!on)continue;
s+=" "+cs[c].textContent+" "+(cs[c].title||"");
if(c>=first){if(cs[c].className==="y")y++;else if(cs[c].className==="x")x++;}}
var ok=(!want||row.getAttribute("data-r")===want)&&(cm==="any"||(cm==="disagree"&&x>0&&y>0)||
(cm==="wrong"&&x>0)||(cm==="allwrong"&&x>0&&y===0)||(cm==="right"&&y>0&&x===0))&&
(!text||s.toLowerCase().indexOf(text)>=0);
row.hidden=!ok;if(ok)n++;}
cnt.textContent=n+" of "+rows.length+" rows shown";}
f.addEventListener("input",apply);f.addEventListener("change",apply);
function pick(keep){for(var j=0;j<boxes.length;j++)boxes[j].checked=keep(boxes[j]);apply();}
var bs=f.querySelectorAll("button[data-set]"),ls=document.querySelectorAll("#accuracy a[href='#tasks']"),k;
for(k=0;k<bs.length;k++)bs[k].addEventListener("click",function(e){var m=e.currentTarget.getAttribute("data-set");
pick(function(b){return m==="all"||b.hasAttribute("data-role");});});
for(k=0;k<ls.length;k++)ls[k].addEventListener("click",function(e){var a=e.currentTarget,arm=a.textContent;
rg.value=a.closest("tr").cells[0].textContent;if(rg.selectedIndex<0)rg.value="";
pick(function(b){return b.value===arm||b.hasAttribute("data-role");});});
apply();})();
)js";

/// @brief Builds the page.
class html_page {
 public:
  void raw(std::string_view s) { out_.append(s); }
  void text(std::string_view s) { out_.append(html_escape(s)); }
  /// @brief <tag attrs>escaped text</tag>
  void el(std::string_view tag, std::string_view content, std::string_view attrs = {}) {
    open(tag, attrs);
    text(content);
    close(tag);
  }
  void open(std::string_view tag, std::string_view attrs = {}) {
    out_.append("<").append(tag);
    if (!attrs.empty()) out_.append(" ").append(attrs);
    out_.append(">");
  }
  void close(std::string_view tag) { out_.append("</").append(tag).append(">\n"); }
  /// @brief A table header row.
  void head(std::initializer_list<std::string_view> cols, bool sortable = true) {
    open("table", sortable ? "class=\"sortable\"" : "");
    raw("<thead><tr>");
    for (auto c : cols) el("th", c);
    raw("</tr></thead>\n<tbody>\n");
  }
  void end_table() { raw("</tbody></table>\n"); }
  /// @brief A text cell.
  void td(std::string_view s) { el("td", s); }
  /// @brief A numeric cell: right-aligned, sorted by `v` when finite.
  void tdn(std::string_view s, double v) {
    if (std::isfinite(v))
      open("td", fmt::format("class=\"n\" data-v=\"{}\"", fmt::format("{:.17g}", v)));
    else
      open("td", "class=\"n\"");
    text(s);
    close("td");
  }
  void tdn(std::size_t v) { tdn(std::to_string(v), static_cast<double>(v)); }
  [[nodiscard]] std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// What every section of report_html reads: the page being written, the report, its records, the
// options, the interval levels, the figures and the records grouped by (regime, arm) for the
// drill-down.
struct html_report_context {
  html_page& p;
  const audit_report& r;
  std::span<const trial_record> records;
  std::span<const std::pair<std::string, std::string>> svgs;
  const html_options& o;
  double alpha;
  std::string level, vlevel;
  std::map<std::tuple<int, std::string, std::string>, std::vector<std::size_t>> groups;

  // The figure `name` (one of svgs) inline with its caption; "" when it was not drawn.
  [[nodiscard]] std::string figure_html(std::string_view name) const {
    std::string s;
    for (const auto& [n, svg] : svgs)
      if (n == name) {
        s = inline_svg(svg);
        break;
      }
    if (s.empty()) return s;
    return fmt::format("<figure id=\"{}\">", html_anchor_part(name)) + s + "<figcaption class=\"note\">" +
           html_escape(name) + "</figcaption>\n</figure>\n";
  }
  // The figure `name` written into the page (nothing when it was not drawn).
  void figure(std::string_view name) { p.raw(figure_html(name)); }
};

// report_html's sections: the decision (its policy, rules, checklist, monitors and relay switch) and the
// findings, from the report's model (report.md writes the same sections).
LATENTAUDIT_INLINE void html_section_decision(html_report_context& c) {
  c.p.raw(html_of(decision_section(c.r)));
}
LATENTAUDIT_INLINE void html_section_findings(html_report_context& c) {
  c.p.raw(html_of(findings_section(c.r)));
}

// report_html's section: the paired effects and, under them, the CATE table, from the report's model
// (report.md writes the same sections).
LATENTAUDIT_INLINE void html_section_effects(html_report_context& c) {
  const report_figure_writer figure = [&c](const report_figure& f) { return c.figure_html(f.file); };
  c.p.raw(html_of(effects_section(c.r), figure));
  if (auto s = cate_section(c.r)) {
    s->level = 3;  // a sub-heading of the paired effects
    c.p.raw(html_of(*s, figure));
  }
}

// report_html's section: accuracy by arm, from the report's model (report.md writes the same section),
// with what only the page has: a note on the links, and each arm of the records linked to the
// drill-down (the filter script sets the drill-down's regime and arms from the link's row).
LATENTAUDIT_INLINE void html_section_accuracy(html_report_context& c) {
  report_section s = accuracy_section(c.r);
  s.blocks.insert(
      s.blocks.begin(),
      report_paragraph{
          {report_span::prose("Sorted by regime, then arm. CI: item-clustered " + c.level +
                              " interval. An arm links to the items side by side, filtered to its "
                              "regime, itself and no_comm, text_full and kv_full. Click a header to sort.")},
          true});
  for (auto& b : s.blocks)
    if (auto* t = std::get_if<report_table>(&b))
      for (auto& row : t->rows) {  // regime, arm, ...: the arm's records are in the drill-down
        const std::string regime = plain_text(row[0].text), arm = plain_text(row[1].text);
        if (c.groups.count({regime_rank(regime), regime, arm})) row[1] = report_cell::code_id(arm, "tasks");
      }
  c.p.raw(html_of(s));
}

/// @brief One row of the side-by-side drill-down: a unit (item, seed), its regime, and per column
/// (arm) the index of its record (npos where the arm has no record on the unit).
struct drill_unit {
  std::uint64_t item = 0;          ///< item
  std::uint64_t seed = 0;          ///< seed
  std::string regime;              ///< the records' regime ("unknown" when empty)
  std::vector<std::size_t> cells;  ///< per column, the record index or npos
  bool disagree = false;           ///< some arm right and some wrong on this unit
};

/// @brief The drill-down's columns: the arms of `records`, no_comm, text_full and kv_full first (by
/// arm_kind, else by label), then by label.
[[nodiscard]] inline std::vector<std::string> drill_arms(std::span<const trial_record> records) {
  std::map<std::string, int> rank;
  for (const auto& rec : records) {
    const std::string_view k = rec.arm_kind.empty() ? std::string_view(rec.arm) : rec.arm_kind;
    const int r = k == "no_comm" ? 0 : k == "text_full" ? 1 : k == "kv_full" ? 2 : 3;
    auto [it, fresh] = rank.emplace(rec.arm, r);
    if (!fresh) it->second = std::min(it->second, r);
  }
  std::vector<std::pair<int, std::string>> v;
  for (const auto& [arm, r] : rank) v.emplace_back(r, arm);
  std::sort(v.begin(), v.end());
  std::vector<std::string> arms;
  for (auto& [r, arm] : v) arms.push_back(std::move(arm));
  return arms;
}

/// @brief Every unit of `records` with its record per column of `arms`, in (regime rank, regime,
/// item, seed) order.
[[nodiscard]] inline std::vector<drill_unit> drill_units(std::span<const trial_record> records,
                                                         std::span<const std::string> arms) {
  std::map<std::string_view, std::size_t> col;
  for (std::size_t k = 0; k < arms.size(); ++k) col.emplace(arms[k], k);
  std::map<std::pair<std::uint64_t, std::uint64_t>, drill_unit> by_unit;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& rec = records[i];
    auto& u = by_unit[{rec.item, rec.seed}];
    if (u.cells.empty()) {
      u.item = rec.item;
      u.seed = rec.seed;
      u.regime = rec.regime.empty() ? std::string("unknown") : rec.regime;
      u.cells.assign(arms.size(), std::string::npos);
    }
    u.cells[col.at(rec.arm)] = i;
  }
  std::vector<drill_unit> units;
  units.reserve(by_unit.size());
  for (auto& [key, u] : by_unit) {
    bool right = false, wrong = false;
    for (auto i : u.cells)
      if (i != std::string::npos) (records[i].correct ? right : wrong) = true;
    u.disagree = right && wrong;
    units.push_back(std::move(u));
  }
  std::stable_sort(units.begin(), units.end(), [](const drill_unit& a, const drill_unit& b) {
    return std::tuple(regime_rank(a.regime), std::string_view(a.regime), a.item, a.seed) <
           std::tuple(regime_rank(b.regime), std::string_view(b.regime), b.item, b.seed);
  });
  return units;
}

/// @brief The units embedded in the page: all when at most `max` of them, else `max`, those where
/// the arms disagree first, kept in the order of `units`.
[[nodiscard]] inline std::vector<const drill_unit*> drill_embedded(const std::vector<drill_unit>& units,
                                                                   std::size_t max) {
  std::vector<const drill_unit*> out;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& u : units)
      if (out.size() < max && u.disagree == (pass == 0)) out.push_back(&u);
  std::sort(out.begin(), out.end());  // pointers into `units`: its order
  return out;
}

/// @brief One arm's cell of a drill-down row: ✓ or ✗, the probability B gives the reference
/// answer (exp(answer_logprob)), B's answer text (clipped; the whole in the tooltip), the
/// probability of the task's continuation (continuation_prob, when the task has one), the stale
/// value and a relay error; class "y" (right) or "x" (wrong), sorted by the probability.
[[nodiscard]] inline std::string drill_cell(const trial_record& rec, const html_options& o) {
  const std::optional<double> prob = rec.answer_logprob && std::isfinite(*rec.answer_logprob)
                                         ? std::optional(std::exp(*rec.answer_logprob))
                                         : std::nullopt;
  std::string s = fmt::format("<td class=\"{}\" data-v=\"{}\"", rec.correct ? "y" : "x",
                              prob ? fmt::format("{:.4f}", *prob) : std::string(rec.correct ? "1" : "0"));
  if (rec.answer_text && rec.answer_text->size() > o.max_answer_bytes)
    s += " title=\"" + html_escape(html_clip(*rec.answer_text, 1000)) + "\"";
  s += rec.correct ? ">✓" : ">✗";
  if (prob) s += *prob < 0.001 ? std::string(" &lt;0.1%") : " " + fixed_text(100.0 * *prob, 1) + "%";
  if (rec.answer_text) s += "<br><q>" + html_escape(html_clip(*rec.answer_text, o.max_answer_bytes)) + "</q>";
  if (rec.continuation_prob && std::isfinite(*rec.continuation_prob))
    s += "<br><span class=\"lbl\">continuation</span> " +
         (*rec.continuation_prob < 0.001 ? std::string("&lt;0.1%")
                                         : fixed_text(100.0 * *rec.continuation_prob, 1) + "%");
  if (rec.stale_answer && *rec.stale_answer) s += "<br><span class=\"lbl\">stale value</span>";
  if (rec.relay_error)
    s += "<br><span class=\"bad\" title=\"" + html_escape(html_clip(*rec.relay_error, 300)) +
         "\">relay failed</span>";
  return s + "</td>";
}

/// @brief The drill-down's filter controls (hidden until the script shows them): regime, the arms
/// shown, correctness among the arms shown, and a text search.
LATENTAUDIT_INLINE void drill_filters(html_page& p, std::span<const std::string> arms,
                                      std::span<const std::string> regimes, std::size_t first,
                                      std::size_t rows) {
  p.raw("<div id=\"dd-filters\" class=\"filters\" hidden=\"hidden\">\n");
  p.raw("<label>regime <select id=\"dd-regime\"><option value=\"\">all</option>");
  for (const auto& rg : regimes)
    p.raw("<option value=\"" + html_escape(rg) + "\">" + html_escape(rg) + "</option>");
  p.raw("</select></label>\n");
  p.raw(
      "<label>correct <select id=\"dd-correct\"><option value=\"any\">any</option>"
      "<option value=\"disagree\">shown arms disagree</option><option value=\"wrong\">some shown arm "
      "wrong</option><option value=\"allwrong\">every shown arm wrong</option><option value=\"right\">every "
      "shown arm right</option></select></label>\n");
  p.raw(
      "<label>search <input id=\"dd-q\" type=\"search\" placeholder=\"answer, item, task, query\" "
      "size=\"28\"></label>\n");
  p.raw(fmt::format("<span id=\"dd-count\" class=\"note\">{} rows</span>\n", rows));
  p.raw("<fieldset><legend>arms shown</legend>");
  p.raw(
      "<button type=\"button\" data-set=\"all\">all</button> <button type=\"button\" "
      "data-set=\"roles\">no_comm, text_full, kv_full</button> ");
  for (std::size_t k = 0; k < arms.size(); ++k) {
    const bool role = k < 3 && (arms[k] == "no_comm" || arms[k] == "text_full" || arms[k] == "kv_full");
    p.raw(
        fmt::format("<label class=\"arm\"><input type=\"checkbox\" checked=\"checked\" data-col=\"{}\"{} "
                    "value=\"{}\">{}</label> ",
                    first + k, role ? " data-role=\"1\"" : "", html_escape(arms[k]), html_escape(arms[k])));
  }
  p.raw("</fieldset>\n</div>\n");
}

// report_html's section: the side-by-side drill-down: per (item, seed) every arm's answer.
LATENTAUDIT_INLINE void html_section_tasks(html_report_context& c) {
  auto& p = c.p;
  const std::span<const trial_record> records = c.records;
  const html_options& o = c.o;
  bool any_answer = false, any_task = false, any_prob = false;
  std::size_t unmatched = 0;  // records the task file has no line or query for
  for (const auto& rec : records) {
    any_answer = any_answer || rec.answer_text.has_value();
    any_task = any_task || !rec.task_id.empty();
    any_prob = any_prob || rec.answer_logprob.has_value();
    if (o.tasks != nullptr && task_query_of(*o.tasks, rec) == nullptr) ++unmatched;
  }
  const auto arms = drill_arms(records);
  const auto units = drill_units(records, arms);
  const auto shown = drill_embedded(units, o.max_item_rows);
  std::vector<std::string> regimes;
  for (const auto* u : shown)
    if (std::find(regimes.begin(), regimes.end(), u->regime) == regimes.end()) regimes.push_back(u->regime);
  std::string tasks_text;
  if (o.tasks != nullptr) {
    tasks_text = fmt::format(" The query and the accepted answers come from the task file {} (line = item).",
                             o.tasks->path.empty() ? std::string("of the audit") : o.tasks->path);
    if (unmatched > 0)
      tasks_text += fmt::format(
          " {} trial(s) match no line or query of it (item beyond the file, or a task id that differs): "
          "\"–\".",
          unmatched);
  } else {
    tasks_text = " The query and the accepted answers are in the task file, not in the records" +
                 (o.tasks_note.empty() ? std::string(".") : ": " + o.tasks_note + ".");
  }
  std::size_t left_disagree = 0;
  for (const auto& u : units) left_disagree += u.disagree ? 1 : 0;
  for (const auto* u : shown) left_disagree -= u->disagree ? 1 : 0;
  p.open("section", "id=\"tasks\"");
  p.el("h2", "Items side by side");
  p.el("p",
       fmt::format(
           "One row per item and seed, one column per arm: ✓ or ✗ (B's answer correct), the probability B "
           "gives the reference answer (exp(answer_logprob)){}{}. Filter by regime, by the arms shown, by "
           "correctness among the arms shown and by text; click a header to sort (an arm by the "
           "probability).{}{}{}",
           any_prob ? "" : " (not in these records)",
           any_answer ? ", and B's answer as scored" : "; these records carry no answer text (token scoring)",
           tasks_text, any_task ? "" : " These records carry no task id (built-in tasks).",
           units.size() > shown.size()
               ? fmt::format(" {} of {} rows are embedded (the rows where the arms disagree first); {} left "
                             "out ({} of them with disagreeing arms): records.jsonl holds every trial, and "
                             "the filters work on the rows embedded.",
                             shown.size(), units.size(), units.size() - shown.size(), left_disagree)
               : std::string()),
       "class=\"note\"");
  std::size_t first = 3 + (any_task ? 1 : 0) + (o.tasks != nullptr ? 2 : 0);
  drill_filters(p, arms, regimes, first, shown.size());
  p.raw(
      fmt::format("<div class=\"dd-wrap\"><table id=\"dd\" class=\"sortable dd\" data-first=\"{}\">", first));
  p.raw("<thead><tr><th>item</th><th>seed</th><th>regime</th>");
  if (any_task) p.raw("<th>task</th>");
  if (o.tasks != nullptr) p.raw("<th>query text</th><th>accepted answers</th>");
  for (const auto& arm : arms) p.raw("<th class=\"arm\">" + html_escape(arm) + "</th>");
  p.raw("</tr></thead>\n<tbody>\n");
  for (const auto* u : shown) {
    const trial_record* any = nullptr;  // the unit's record whose task id and query are shown
    for (auto i : u->cells) {
      if (i == std::string::npos) continue;
      if (any == nullptr) any = &records[i];
      if (o.tasks == nullptr || task_query_of(*o.tasks, records[i]) != nullptr) {
        any = &records[i];
        break;
      }
    }
    p.raw(fmt::format("<tr data-r=\"{0}\"><td class=\"n\">{1}</td><td class=\"n\">{2}</td><td>{0}</td>",
                      html_escape(u->regime), u->item, u->seed));
    if (any_task) p.raw("<td>" + html_escape(any->task_id.empty() ? "–" : any->task_id) + "</td>");
    if (o.tasks != nullptr) {
      const auto* q = task_query_of(*o.tasks, *any);
      p.raw("<td>" + html_escape(q ? task_text_shown(q->query) : std::string("–")) + "</td><td>" +
            html_escape(q ? task_answers_shown(*q) : std::string("–")) + "</td>");
    }
    for (auto i : u->cells)
      p.raw(i == std::string::npos ? std::string("<td>–</td>") : drill_cell(records[i], o));
    p.raw("</tr>\n");
  }
  p.raw("</tbody></table></div>\n");
  p.close("section");
}

// report_html's section: the noise dose-response, from the report's model (report.md writes the same
// section).
LATENTAUDIT_INLINE void html_section_noise(html_report_context& c) {
  const report_figure_writer figure = [&c](const report_figure& f) { return c.figure_html(f.file); };
  c.p.raw(html_of(noise_section(c.r), figure));
}

// report_html's section: the accuracy-bytes frontier, from the report's model (report.md writes the
// same section).
LATENTAUDIT_INLINE void html_section_frontier(html_report_context& c) {
  const report_figure_writer figure = [&c](const report_figure& f) { return c.figure_html(f.file); };
  c.p.raw(html_of(frontier_section(c.r), figure));
}

// report_html's section: the cost of the relay per link, from the report's model (report.md writes
// the same section).
LATENTAUDIT_INLINE void html_section_cost(html_report_context& c) {
  const report_figure_writer figure = [&c](const report_figure& f) { return c.figure_html(f.file); };
  c.p.raw(html_of(cost_section(c.r), figure));
}

// report_html's section: everything else — the relay failures, messages, cache maps, fitted link and
// relay gate, the teaching demonstrations, the warnings and what the engine could not run or measure as
// HTML tables from the report's model (the sections report.md writes from the same model).
LATENTAUDIT_INLINE void html_section_more(html_report_context& c) {
  auto& p = c.p;
  const audit_report& r = c.r;
  p.open("section", "id=\"more\"");
  p.el("h2", "More: relay failures, messages, cache maps, link, gate, demonstrations");
  std::vector<report_section> sections;
  sections.push_back(relay_failures_section(r.core, r.options.equivalence_margin));
  if (auto s = messages_section(r.core.messages, r.options.equivalence_margin))
    sections.push_back(std::move(*s));
  if (auto s = mapped_section(r.core.mapped, r.options.equivalence_margin)) sections.push_back(std::move(*s));
  if (auto s = link_fit_section(r)) sections.push_back(std::move(*s));
  sections.push_back(gate_section(r));
  const report_figure_writer figure = [&c](const report_figure& f) { return c.figure_html(f.file); };
  for (auto& s : sections) {
    s.level = 3;  // inside "More"
    p.raw(html_of(s, figure));
  }
  sections.clear();  // the demonstrations, the warnings and what the engine could not run or measure
  sections.push_back(demonstrations_section(r));
  if (auto w = warnings_section(r)) sections.push_back(std::move(*w));
  if (auto u = unavailable_section(r, c.records)) sections.push_back(std::move(*u));
  for (auto& s : sections) {
    s.level = 3;  // inside "More"
    p.raw(html_of(s, figure));
  }
  p.el(
      "p",
      "Formulas, tests and references: docs/audit-report.md and docs/estimators/ in the latentaudit sources. "
      "Machine-readable: report.json beside this page.",
      "class=\"note\"");
  p.close("section");
}

}  // namespace detail

LATENTAUDIT_INLINE relay_polarity finding_polarity(const finding& f) noexcept {
  if (f.answer == verdict::inconclusive) return relay_polarity::not_shown;
  const bool yes = f.answer == verdict::yes;
  switch (finding_info(f.key.kind).polarity) {
    case finding_polarity::yes_supports:
      return yes ? relay_polarity::supports : relay_polarity::against;
    case finding_polarity::yes_against:
      return yes ? relay_polarity::against : relay_polarity::supports;
    case finding_polarity::no_by_sign:  // differs beyond the margin: the sign decides
      if (yes) return relay_polarity::supports;
      return std::isfinite(f.estimate) && f.estimate > 0 ? relay_polarity::supports : relay_polarity::against;
    case finding_polarity::yes_against_if_lost:  // a gain where B needs nothing is no harm
      if (!yes) return relay_polarity::supports;
      return std::isfinite(f.estimate) && f.estimate < 0 ? relay_polarity::against : relay_polarity::context;
    case finding_polarity::context:
      break;
  }
  return relay_polarity::context;
}

LATENTAUDIT_INLINE std::string finding_statement(const finding& f) {
  const finding_kind_info& row = finding_info(f.key.kind);
  if (row.question.empty()) return f.id + ": " + verdict_name(f.answer) + ".";
  std::string s = f.answer == verdict::yes  ? std::string(row.yes)
                  : f.answer == verdict::no ? std::string(row.no)
                                            : "Not shown either way: " + std::string(row.question);
  // the parameters the id carries, in words
  if (f.key.kind == finding_kind::cost_relay_pays_on_link)
    s += " (link " + finding_link_part(f.key.params.link) + ")";
  if (f.key.kind == finding_kind::message_kv_vs_text_message && f.key.params.budget > 0)
    s += fmt::format(" (k{}.{})", f.key.params.budget, f.key.params.regime);
  return s;
}

LATENTAUDIT_INLINE std::string finding_interval_label(const finding& f, double alpha) {
  const auto pc = [](double level) { return fmt::format("{:g}%", 100.0 * level); };
  switch (finding_info(f.key.kind).interval) {
    case finding_interval::verdict_betting:
      return pc(1.0 - 2.0 * alpha) + " verdict interval (betting over items)";
    case finding_interval::betting:
      return pc(1.0 - 2.0 * alpha) + " interval (betting over items)";
    case finding_interval::bootstrap_ms:
      return pc(1.0 - alpha) + " bootstrap CI (receiver ms saved)";
    case finding_interval::test_inversion:
      return pc(1.0 - alpha) + " CI (test inversion over items)";
    case finding_interval::other:
      break;
  }
  return "interval (see method)";
}

LATENTAUDIT_INLINE std::string finding_method_short(const finding& f) {
  if (f.method.rfind("not estimable", 0) == 0) return "not estimable";
  const std::string_view m = finding_info(f.key.kind).method_short;
  return m.empty() ? std::string("see method") : std::string(m);
}

LATENTAUDIT_INLINE std::string finding_anchor(std::string_view id) {
  return "f-" + detail::html_anchor_part(id);
}

LATENTAUDIT_INLINE std::string report_html(const audit_report& r, std::span<const trial_record> records,
                                           std::span<const std::pair<std::string, std::string>> svgs,
                                           const html_options& o) {
  if (o.max_item_rows == 0) detail::throw_invalid("report_html", "o.max_item_rows", "must be at least 1");
  if (o.max_answer_bytes == 0)
    detail::throw_invalid("report_html", "o.max_answer_bytes", "must be at least 1");
  using detail::html_escape;
  using detail::num;
  using detail::pct;
  detail::html_page p;
  const double alpha = r.options.alpha;
  const std::string level = fmt::format("{:g}%", 100.0 * (1.0 - alpha));
  const std::string vlevel = fmt::format("{:g}%", 100.0 * (1.0 - 2.0 * alpha));
  p.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
  // Nothing is loaded from anywhere: no network, no file beside the page.
  p.raw(
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "script-src 'unsafe-inline'; img-src data:\">\n");
  p.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
  p.el("title", std::string("latentaudit report: ") + decision_verdict_name(r.decision.verdict));
  p.raw("<style>");
  p.raw(detail::html_css);
  p.raw("</style>\n</head>\n<body>\n<main>\n");
  p.raw(html_of(detail::title_section(r)));  // the title, the meta paragraph, an early stop
  p.raw(
      "<nav class=\"note\">Sections: <a href=\"#decision\">Decision</a> · <a href=\"#findings\">Findings</a> "
      "· "
      "<a href=\"#effects\">Paired effects</a> · <a href=\"#accuracy\">Accuracy by arm</a> · <a "
      "href=\"#tasks\">Items side by side</a> · <a href=\"#noise\">Noise</a> · <a "
      "href=\"#frontier\">Frontier</a> · <a "
      "href=\"#cost\">Cost</a> · <a href=\"#more\">More</a></nav>\n");

  // the drill-down groups: (regime, arm) → record indices
  std::map<std::tuple<int, std::string, std::string>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const std::string rg = records[i].regime.empty() ? std::string("unknown") : records[i].regime;
    groups[{detail::regime_rank(rg), rg, records[i].arm}].push_back(i);
  }
  detail::html_report_context c{.p = p,
                                .r = r,
                                .records = records,
                                .svgs = svgs,
                                .o = o,
                                .alpha = alpha,
                                .level = level,
                                .vlevel = vlevel,
                                .groups = std::move(groups)};
  detail::html_section_decision(c);
  detail::html_section_findings(c);
  detail::html_section_effects(c);
  detail::html_section_accuracy(c);
  detail::html_section_tasks(c);
  detail::html_section_noise(c);
  detail::html_section_frontier(c);
  detail::html_section_cost(c);
  detail::html_section_more(c);
  p.raw("</main>\n<script>");
  p.raw(detail::html_sort_script);
  p.raw(detail::html_filter_script);
  p.raw("</script>\n</body>\n</html>\n");
  return p.take();
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_IMPL_HTML_INL_HPP
