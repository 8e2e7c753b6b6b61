// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/report_model.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_IMPL_REPORT_MODEL_INL_HPP
#define LATENTAUDIT_REPORT_IMPL_REPORT_MODEL_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../report_model.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <variant>

#include <fmt/format.h>

#include "../../core/detail/check.hpp"
#include "../detail/html_text.hpp"
#include "../detail/markdown_text.hpp"

namespace latentaudit {

namespace detail {

// Prose without its Markdown escapes, the inverse of markdown_text's: backslash escapes ("kv\_full"
// → "kv_full") and the entity "&lt;" ('<'; markdown_text backslash-escapes every '&', so a bare
// "&lt;" is always one of its '<').
[[nodiscard]] inline std::string model_unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && std::ispunct(static_cast<unsigned char>(s[i + 1]))) {
      ++i;
    } else if (s.substr(i, 4) == "&lt;") {
      out.push_back('<');
      i += 3;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

[[nodiscard]] inline std::string model_markdown_text(const report_text& t) {
  std::string out;
  for (const auto& s : t) switch (s.k) {
      case report_span::kind::text:
        out += markdown_text(s.text);
        break;
      case report_span::kind::prose:
        out += s.text;
        break;
      case report_span::kind::code:
        out += markdown_code(s.text);
        break;
      case report_span::kind::strong:
        out += "**" + s.text + "**";
        break;
      case report_span::kind::link:
        out += "[" + s.text + "](report.html#" + s.target + ")";
        break;
      case report_span::kind::badge:
      case report_span::kind::small:
        out += s.text;
        break;
    }
  return out;
}

[[nodiscard]] inline std::string model_html_text(const report_text& t) {
  std::string out;
  for (const auto& s : t) switch (s.k) {
      case report_span::kind::text:
        out += html_escape(s.text);
        break;
      case report_span::kind::prose:
        out += html_escape(model_unescape(s.text));
        break;
      case report_span::kind::code:
        out += "<code>" + html_escape(s.text) + "</code>";
        break;
      case report_span::kind::strong:
        out += "<strong>" + html_escape(model_unescape(s.text)) + "</strong>";
        break;
      case report_span::kind::link:
        out += "<a href=\"#" + html_escape(s.target) + "\">" + html_escape(model_unescape(s.text)) + "</a>";
        break;
      case report_span::kind::badge:
        out += "<span class=\"badge b-" + html_escape(s.target) + "\">" +
               html_escape(model_unescape(s.text)) + "</span>";
        break;
      case report_span::kind::small:
        out += "<span class=\"lbl\">" + html_escape(model_unescape(s.text)) + "</span>";
        break;
    }
  return out;
}

// The cell's text as every writer but HTML's markup shows it; `md`: Markdown (escaped) or plain.
[[nodiscard]] inline std::string model_cell_text(const report_cell& c, bool md) {
  switch (c.k) {
    case report_cell::kind::empty:
      return {};
    case report_cell::kind::missing:
      return "–";
    case report_cell::kind::text:
      return md ? model_markdown_text(c.text) : plain_text(c.text);
    case report_cell::kind::code:
      return md ? markdown_code(c.id) : c.id;
    case report_cell::kind::number:
      return format_number(c.value, c.format);
    case report_cell::kind::interval: {
      std::string s = c.with_estimate ? format_number(c.value, c.format) + " " : std::string();
      return s + "[" + format_number(c.lo, c.limits) + ", " + format_number(c.hi, c.limits) + "]" + c.unit;
    }
    case report_cell::kind::verdict:
      return verdict_name(c.answer);
    case report_cell::kind::details:
      if (!md) return plain_text(c.text);
      return c.anchor.empty() ? model_markdown_text(c.text)
                              : "[" + model_markdown_text(c.text) + "](report.html#" + c.anchor + ")";
  }
  return {};
}

// An id as HTML that wraps only after a '.': each part up to and including a dot a <span> (the page's
// style sheet keeps it on one line), <wbr> between them.
[[nodiscard]] inline std::string model_breakable_id(std::string_view id) {
  std::string out;
  std::size_t start = 0;
  while (start < id.size()) {
    const auto dot = id.find('.', start);
    const std::size_t end = dot == std::string_view::npos ? id.size() : dot + 1;
    if (start > 0) out += "<wbr>";
    out += "<span>" + html_escape(id.substr(start, end - start)) + "</span>";
    start = end;
  }
  return out;
}

// The cell's content in HTML.
[[nodiscard]] inline std::string model_html_cell(const report_cell& c) {
  switch (c.k) {
    case report_cell::kind::text:
      return model_html_text(c.text);
    case report_cell::kind::code: {
      const std::string code = c.breakable ? "<code class=\"fid\">" + model_breakable_id(c.id) + "</code>"
                                           : "<code>" + html_escape(c.id) + "</code>";
      return c.anchor.empty() ? code : "<a href=\"#" + html_escape(c.anchor) + "\">" + code + "</a>";
    }
    case report_cell::kind::details: {
      std::string h = "<details><summary>" + model_html_text(c.text) + "</summary>";
      for (const auto& p : c.more) h += "<p>" + model_html_text(p) + "</p>";
      return h + "</details>";
    }
    default:
      return html_escape(model_cell_text(c, false));
  }
}

inline void model_check_rows(const report_table& t, std::string_view function) {
  for (std::size_t i = 0; i < t.rows.size(); ++i)
    if (t.rows[i].size() != t.columns.size())
      throw_invalid(function, "t.rows",
                    fmt::format("row {} has {} cells for {} columns", i, t.rows[i].size(), t.columns.size()));
}

}  // namespace detail

LATENTAUDIT_INLINE std::string format_number(double x, const number_format& f) {
  if (!std::isfinite(x)) return f.infinities ? (x > 0 ? "∞" : "−∞") : "–";
  if (f.automatic == number_format::auto_unit::seconds) {
    const double a = std::fabs(x);
    return a >= 1.0    ? fmt::format("{:.3g} s", x)
           : a >= 1e-3 ? fmt::format("{:.3g} ms", x * 1e3)
                       : fmt::format("{:.3g} µs", x * 1e6);
  }
  if (f.automatic == number_format::auto_unit::bytes) {
    const double a = std::fabs(x);
    return a >= 1e9   ? fmt::format("{:.3g} GB", x / 1e9)
           : a >= 1e6 ? fmt::format("{:.3g} MB", x / 1e6)
           : a >= 1e3 ? fmt::format("{:.3g} kB", x / 1e3)
                      : fmt::format("{:.3g} B", x);
  }
  std::string s = fmt::format(fmt::runtime(f.spec), f.scale * x);
  if (f.unsigned_zero && !s.empty() && (s.front() == '-' || s.front() == '+') &&
      s.find_first_not_of("+-0.") == std::string::npos)
    s.erase(0, 1);
  return s + f.unit;
}

LATENTAUDIT_INLINE std::string plain_text(const report_text& t) {
  std::string out;
  for (const auto& s : t)
    out += s.k == report_span::kind::text || s.k == report_span::kind::code ? s.text
                                                                            : detail::model_unescape(s.text);
  return out;
}

LATENTAUDIT_INLINE std::string markdown_of(const report_table& t) {
  detail::model_check_rows(t, "markdown_of");
  std::string m;
  if (!t.caption.empty()) m += detail::model_markdown_text(t.caption) + "\n\n";
  m += "|";
  for (const auto& c : t.columns) m += " " + c.header + " |";
  m += "\n|";
  for (std::size_t i = 0; i < t.columns.size(); ++i) m += "---|";
  m += "\n";
  for (const auto& row : t.rows) {
    m += "|";
    for (const auto& c : row) {
      const std::string s = detail::model_cell_text(c, true);
      m += c.k == report_cell::kind::empty ? " |" : " " + s + " |";
    }
    m += "\n";
  }
  m += "\n";
  for (const auto& n : t.notes) m += detail::model_markdown_text(n) + "\n\n";
  return m;
}

LATENTAUDIT_INLINE std::string markdown_of(const report_section& s) {
  std::string m = std::string(static_cast<std::size_t>(std::max(1, s.level)), '#') + " " +
                  (s.heading.empty() ? s.title : detail::model_markdown_text(s.heading)) + "\n\n";
  for (const auto& b : s.blocks) {
    if (const auto* p = std::get_if<report_paragraph>(&b)) {
      m += detail::model_markdown_text(p->text) + "\n\n";
    } else if (const auto* t = std::get_if<report_table>(&b)) {
      m += markdown_of(*t);
    } else if (const auto* l = std::get_if<report_list>(&b)) {
      for (std::size_t i = 0; i < l->items.size(); ++i)
        m += (l->ordered ? fmt::format("{}. ", i + 1) : std::string("- ")) +
             detail::model_markdown_text(l->items[i]) + "\n";
      m += "\n";
    } else if (const auto* f = std::get_if<report_figure>(&b)) {
      m += "![" + f->alt + "](" + f->file + ")\n\n";
    } else if (const auto* g = std::get_if<report_heading>(&b)) {
      m += std::string(static_cast<std::size_t>(std::clamp(g->level, 1, 6)), '#') + " " +
           detail::model_markdown_text(g->title) + "\n\n";
    }
  }
  return m;
}

LATENTAUDIT_INLINE std::string html_of(const report_table& t) {
  detail::model_check_rows(t, "html_of");
  using detail::html_escape;
  std::string h = "<table";
  if (!t.id.empty()) h += " id=\"" + html_escape(t.id) + "\"";
  if (t.sortable) h += " class=\"sortable\"";
  h += ">";
  if (!t.caption.empty()) h += "<caption>" + detail::model_html_text(t.caption) + "</caption>";
  h += "<thead><tr>";
  for (const auto& c : t.columns) {
    h += c.unit.empty() ? std::string("<th>") : "<th title=\"unit: " + html_escape(c.unit) + "\">";
    h += html_escape(detail::model_unescape(c.header)) + "</th>";
  }
  h += "</tr></thead>\n<tbody>\n";
  if (!t.row_ids.empty() && t.row_ids.size() != t.rows.size())
    detail::throw_invalid("html_of", "t.row_ids",
                          fmt::format("{} row ids for {} rows", t.row_ids.size(), t.rows.size()));
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    h += r < t.row_ids.size() && !t.row_ids[r].empty() ? "<tr id=\"" + html_escape(t.row_ids[r]) + "\">"
                                                       : std::string("<tr>");
    for (std::size_t i = 0; i < row.size(); ++i) {
      const report_cell& c = row[i];
      const bool n = t.columns[i].numeric;
      const double key = c.k == report_cell::kind::number || c.k == report_cell::kind::text ? c.value
                         : c.k == report_cell::kind::interval
                             ? (c.with_estimate && std::isfinite(c.value) ? c.value : c.lo)
                             : std::numeric_limits<double>::quiet_NaN();
      h += "<td";
      if (n) h += " class=\"n\"";
      // a number's value sorts a numeric column; a text cell's own key sorts any column
      if ((n || c.k == report_cell::kind::text) && std::isfinite(key))
        h += fmt::format(" data-v=\"{:.17g}\"", key);
      h += ">" + detail::model_html_cell(c) + "</td>";
    }
    h += "</tr>\n";
  }
  h += "</tbody></table>\n";
  for (const auto& n : t.notes) h += "<p class=\"note\">" + detail::model_html_text(n) + "</p>\n";
  return h;
}

LATENTAUDIT_INLINE std::string html_of(const report_section& s, const report_figure_writer& figure) {
  using detail::html_escape;
  const std::string hn = fmt::format("h{}", std::clamp(s.level, 1, 6));
  std::string h = "<section";
  if (!s.id.empty()) h += " id=\"" + html_escape(s.id) + "\"";
  h += "><" + hn + ">" +
       (s.heading.empty() ? html_escape(detail::model_unescape(s.title))
                          : detail::model_html_text(s.heading)) +
       "</" + hn + ">\n";
  const bool box = s.boxed > 0 && !s.blocks.empty();
  if (box) h += "<div class=\"" + html_escape(s.box_style) + "\">\n";
  for (std::size_t bi = 0; bi < s.blocks.size(); ++bi) {
    if (box && bi == s.boxed) h += "</div>\n";
    const report_block& b = s.blocks[bi];
    if (const auto* p = std::get_if<report_paragraph>(&b)) {
      const std::string cls = !p->style.empty() ? p->style : p->note ? std::string("note") : std::string();
      h += (cls.empty() ? std::string("<p>") : "<p class=\"" + html_escape(cls) + "\">") +
           detail::model_html_text(p->text) + "</p>\n";
    } else if (const auto* t = std::get_if<report_table>(&b)) {
      h += html_of(*t);
    } else if (const auto* l = std::get_if<report_list>(&b)) {
      if (l->items.empty()) continue;
      const std::string tag = l->ordered ? "ol" : "ul";
      h +=
          "<" + tag + (l->style.empty() ? std::string() : " class=\"" + html_escape(l->style) + "\"") + ">\n";
      for (const auto& i : l->items) h += "<li>" + detail::model_html_text(i) + "</li>\n";
      h += "</" + tag + ">\n";
    } else if (const auto* f = std::get_if<report_figure>(&b)) {
      std::string fig = figure ? figure(*f) : std::string();
      h += !fig.empty() ? fig
                        : "<p class=\"note\">Figure: " + html_escape(f->alt) + " (" + html_escape(f->file) +
                              ", beside this page).</p>\n";
    } else if (const auto* g = std::get_if<report_heading>(&b)) {
      const std::string gn = fmt::format("h{}", std::clamp(g->level, 1, 6));
      h += "<" + gn + (g->id.empty() ? std::string() : " id=\"" + html_escape(g->id) + "\"") + ">" +
           detail::model_html_text(g->title) + "</" + gn + ">\n";
    }
  }
  if (box && s.boxed >= s.blocks.size()) h += "</div>\n";
  h += "</section>\n";
  return h;
}

LATENTAUDIT_INLINE json_value json_of(const report_table& t) {
  json_value j = json_value::object();
  j.set("id", t.id);
  j.set("caption", plain_text(t.caption));
  json_value cols = json_value::array();
  for (const auto& c : t.columns) {
    json_value o = json_value::object();
    o.set("header", detail::model_unescape(c.header));
    o.set("unit", c.unit);
    cols.push_back(std::move(o));
  }
  j.set("columns", std::move(cols));
  auto num = [](double x) { return std::isfinite(x) ? json_value(x) : json_value(nullptr); };
  json_value rows = json_value::array();
  for (const auto& row : t.rows) {
    json_value r = json_value::array();
    for (const auto& c : row) switch (c.k) {
        case report_cell::kind::empty:
        case report_cell::kind::missing:
          r.push_back(nullptr);
          break;
        case report_cell::kind::text:
        case report_cell::kind::details:
          r.push_back(plain_text(c.text));
          break;
        case report_cell::kind::code:
          r.push_back(c.id);
          break;
        case report_cell::kind::number:
          r.push_back(num(c.value));
          break;
        case report_cell::kind::interval: {
          json_value o = json_value::object();
          o.set("estimate", c.with_estimate ? num(c.value) : json_value(nullptr));
          o.set("low", num(c.lo));
          o.set("high", num(c.hi));
          o.set("unit", detail::model_unescape(c.unit));
          r.push_back(std::move(o));
          break;
        }
        case report_cell::kind::verdict:
          r.push_back(verdict_name(c.answer));
          break;
      }
    rows.push_back(std::move(r));
  }
  j.set("rows", std::move(rows));
  json_value notes = json_value::array();
  for (const auto& n : t.notes) notes.push_back(plain_text(n));
  j.set("notes", std::move(notes));
  return j;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_IMPL_REPORT_MODEL_INL_HPP
