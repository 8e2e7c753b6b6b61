// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/svg.hpp (header-only mode includes this file; compiled mode compiles it
// once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_IMPL_SVG_INL_HPP
#define LATENTAUDIT_REPORT_IMPL_SVG_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "../../core/detail/check.hpp"

namespace latentaudit {

namespace detail {

[[nodiscard]] LATENTAUDIT_INLINE std::string_view palette_colour(std::size_t i) noexcept {
  return okabe_ito[i % okabe_ito.size()];
}

[[nodiscard]] LATENTAUDIT_INLINE std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out.append("&amp;");
        break;
      case '<':
        out.append("&lt;");
        break;
      case '>':
        out.append("&gt;");
        break;
      case '"':
        out.append("&quot;");
        break;
      case '\'':
        out.append("&apos;");
        break;
      default:
        // control characters other than tab/newline are not allowed in XML 1.0: drop them
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') break;
        out.push_back(c);
    }
  }
  return out;
}

[[nodiscard]] LATENTAUDIT_INLINE double text_width(std::string_view s, double font_size) noexcept {
  std::size_t cps = 0;
  for (char c : s) cps += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return static_cast<double>(cps) * 0.6 * font_size;
}

[[nodiscard]] LATENTAUDIT_INLINE std::vector<double> nice_ticks(double lo, double hi, int target,
                                                                int* decimals_out) {
  const double raw = (hi - lo) / static_cast<double>(std::max(target, 1));
  int e = static_cast<int>(std::floor(std::log10(raw)));
  double f = raw / std::pow(10.0, e);
  int m = f <= 1.0 ? 1 : f <= 2.0 ? 2 : f <= 5.0 ? 5 : 10;
  if (m == 10) m = 1, ++e;
  // value of k·m·10^e, computed so that decimal steps come out as the nearest double
  const auto tick = [&](double k) { return e >= 0 ? k * m * std::pow(10.0, e) : k * m / std::pow(10.0, -e); };
  const double step = tick(1.0);
  double k_lo = std::floor(lo / step);
  double k_hi = std::ceil(hi / step);
  // tolerate rounding: lo = 0.6 with step 0.2 must start at 3, not 2
  if (std::fabs(tick(k_lo + 1) - lo) <= 1e-9 * step) k_lo += 1;
  if (std::fabs(tick(k_hi - 1) - hi) <= 1e-9 * step) k_hi -= 1;
  std::vector<double> t;
  for (double k = k_lo; k <= k_hi + 0.5; k += 1.0) {
    double v = tick(k);
    if (std::fabs(v) < 1e-9 * step) v = 0.0;  // no "-0" or 5.5e-17
    t.push_back(v);
  }
  if (decimals_out) *decimals_out = std::max(0, -e);
  return t;
}

[[nodiscard]] LATENTAUDIT_INLINE std::vector<double> log_ticks(double lo, double hi, int target) {
  int k_lo = static_cast<int>(std::floor(std::log10(lo)));
  int k_hi = static_cast<int>(std::ceil(std::log10(hi)));
  if (std::pow(10.0, k_lo + 1) <= lo) ++k_lo;  // log10 rounding just below an exact power
  if (std::pow(10.0, k_hi - 1) >= hi) --k_hi;
  if (k_hi <= k_lo) k_hi = k_lo + 1;
  const int span = k_hi - k_lo;
  const int stride = std::max(1, (span + std::max(target, 1) - 1) / std::max(target, 1));
  std::vector<double> t;
  for (int k = k_lo; k < k_hi + stride; k += stride) t.push_back(std::pow(10.0, k));
  return t;
}

[[nodiscard]] LATENTAUDIT_INLINE svg_axis make_axis(std::string_view fn, double lo, double hi, bool log,
                                                    int target) {
  svg_axis a;
  a.log = log;
  if (log) {
    a.ticks = log_ticks(lo, hi, std::max(target, 2));
  } else {
    if (lo == hi) {
      const double pad = lo == 0.0 ? 1.0 : std::fabs(lo) * 0.1;
      lo -= pad;
      hi += pad;
    }
    if (!std::isfinite(hi - lo) || !std::isfinite(lo) || !std::isfinite(hi)) {
      throw_invalid(fn, "values",
                    "must span a finite range, got [" + number_text(lo) + ", " + number_text(hi) + "]");
    }
    a.ticks = nice_ticks(lo, hi, std::max(target, 1), &a.decimals);
  }
  a.lo = a.ticks.front();
  a.hi = a.ticks.back();
  if (!std::isfinite(a.lo) || !std::isfinite(a.hi) || !(a.lo < a.hi)) {
    throw_invalid(fn, "values",
                  "must span a finite range, got [" + number_text(lo) + ", " + number_text(hi) + "]");
  }
  return a;
}

[[nodiscard]] LATENTAUDIT_INLINE std::string tick_label(double v, const svg_axis& a) {
  if (a.log) {
    const int k = static_cast<int>(std::lround(std::log10(v)));
    if (k >= -3 && k <= 6) return fmt::format("{:.{}f}", v, std::max(0, -k));
    return fmt::format("1e{}", k);
  }
  if (std::fabs(v) >= 1e7 || a.decimals > 6) return fmt::format("{:g}", v);
  return fmt::format("{:.{}f}", v, a.decimals);
}

[[nodiscard]] LATENTAUDIT_INLINE std::string value_label(double v) { return fmt::format("{:.3g}", v); }

LATENTAUDIT_INLINE svg_writer::svg_writer(std::string_view fn, double width, double height,
                                          std::string_view title)
    : fn_(fn) {
  out_.reserve(8192);
  out_.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  out_.append(
      fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
                  "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n",
                  num(width), num(height)));
  if (!title.empty()) out_.append("<title>").append(xml_escape(title)).append("</title>\n");
  out_.append(fmt::format(
      "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
      num(width), num(height)));
}

LATENTAUDIT_INLINE std::string svg_writer::num(double v) const {
  if (!std::isfinite(v)) [[unlikely]] {
    throw_numerical(fn_, "a coordinate is not finite (data range beyond floating-point range)");
  }
  if (std::fabs(v) < 0.005) v = 0.0;
  return fmt::format("{:.2f}", v);
}

LATENTAUDIT_INLINE void svg_writer::line(std::string_view cls, double x1, double y1, double x2, double y2,
                                         std::string_view stroke, double width, std::string_view extra) {
  out_.append(fmt::format(
      "<line class=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
      "stroke-width=\"{}\"{}{}/>\n",
      cls, num(x1), num(y1), num(x2), num(y2), stroke, num(width), extra.empty() ? "" : " ", extra));
}

LATENTAUDIT_INLINE void svg_writer::rect(std::string_view cls, double x, double y, double w, double h,
                                         std::string_view fill, std::string_view extra) {
  last_tag_ = "rect";
  out_.append(fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}{}",
                          cls, num(x), num(y), num(std::max(w, 0.0)), num(std::max(h, 0.0)), fill,
                          extra.empty() ? "" : " ", extra));
}

LATENTAUDIT_INLINE void svg_writer::circle(std::string_view cls, double cx, double cy, double r,
                                           std::string_view fill, std::string_view stroke) {
  last_tag_ = "circle";
  out_.append(fmt::format(
      "<circle class=\"{}\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"1.5\"", cls,
      num(cx), num(cy), num(r), fill, stroke));
}

LATENTAUDIT_INLINE void svg_writer::close(std::string_view tooltip) {
  if (tooltip.empty()) {
    out_.append("/>\n");
  } else {
    out_.append("><title>").append(xml_escape(tooltip)).append("</title></").append(last_tag_).append(">\n");
  }
}

LATENTAUDIT_INLINE void svg_writer::text(std::string_view cls, double x, double y, std::string_view content,
                                         std::string_view anchor, double size, std::string_view extra) {
  out_.append(fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"{}\"{}{}>",
                          cls, num(x), num(y), anchor, num(size), extra.empty() ? "" : " ", extra));
  out_.append(xml_escape(content)).append("</text>\n");
}

LATENTAUDIT_INLINE void svg_writer::poly(std::string_view element, std::string_view cls,
                                         const std::vector<std::pair<double, double>>& pts,
                                         std::string_view attrs) {
  std::string p;
  for (const auto& [x, y] : pts) p.append(num(x)).append(",").append(num(y)).append(" ");
  if (!p.empty()) p.pop_back();
  out_.append(fmt::format("<{} class=\"{}\" points=\"{}\" {}/>\n", element, cls, p, attrs));
}

LATENTAUDIT_INLINE void svg_writer::path(std::string_view cls, std::string_view d, std::string_view attrs) {
  out_.append(fmt::format("<path class=\"{}\" d=\"{}\" {}/>\n", cls, d, attrs));
}

LATENTAUDIT_INLINE void check_plot_options(std::string_view fn, const plot_options& o) {
  if (!(o.width >= 160.0) || !std::isfinite(o.width)) {
    throw_invalid(fn, "o.width", "must be finite and >= 160, got " + number_text(o.width));
  }
  if (!(o.height >= 120.0) || !std::isfinite(o.height)) {
    throw_invalid(fn, "o.height", "must be finite and >= 120, got " + number_text(o.height));
  }
}

LATENTAUDIT_INLINE void check_plot_value(std::string_view fn, std::string_view arg, std::size_t i,
                                         std::string_view field, double v) {
  if (!std::isfinite(v)) [[unlikely]] {
    std::string name(arg);
    name.append("[").append(std::to_string(i)).append("].").append(field);
    throw_invalid(fn, name, "must be finite, got " + number_text(v));
  }
}

LATENTAUDIT_INLINE void check_plot_interval(std::string_view fn, std::string_view arg, std::size_t i,
                                            std::string_view lo_name, double lo, std::string_view hi_name,
                                            double hi) {
  if (lo > hi) [[unlikely]] {
    std::string name(arg);
    name.append("[").append(std::to_string(i)).append("]");
    std::string what("must have ");
    what.append(lo_name)
        .append(" <= ")
        .append(hi_name)
        .append(", got ")
        .append(number_text(lo))
        .append(" > ")
        .append(number_text(hi));
    throw_invalid(fn, name, what);
  }
}

LATENTAUDIT_INLINE void check_log_positive(std::string_view fn, std::string_view name, double x) {
  if (!(x > 0.0)) [[unlikely]] {
    std::string what("must be > 0 on a log x axis (o.log_x), got ");
    what.append(number_text(x));
    throw_invalid(fn, name, what);
  }
}

[[nodiscard]] LATENTAUDIT_INLINE int legend_rows(const std::vector<legend_item>& items, double x0,
                                                 double x1) {
  if (items.empty()) return 0;
  int rows = 1;
  double x = x0;
  for (const auto& it : items) {
    const double w = 22.0 + text_width(it.name) + 14.0;
    if (x + w > x1 && x > x0) ++rows, x = x0;
    x += w;
  }
  return rows;
}

LATENTAUDIT_INLINE void draw_legend(svg_writer& w, const std::vector<legend_item>& items, double x0,
                                    double x1, double y) {
  double x = x0;
  w.raw("<g class=\"legend\">\n");
  for (const auto& it : items) {
    const double iw = 22.0 + text_width(it.name) + 14.0;
    if (x + iw > x1 && x > x0) x = x0, y += 18.0;
    if (it.key == 'b') {
      w.rect("legend-key", x, y - 9, 16, 10, it.colour);
      w.close();
    } else if (it.key == 'p') {
      w.circle("legend-key", x + 8, y - 4, 4, it.colour, it.colour);
      w.close();
    } else {
      w.line("legend-key", x, y - 4, x + 16, y - 4, it.colour, 2.5);
    }
    w.text("legend-text", x + 22, y, it.name);
    x += iw;
  }
  w.raw("</g>\n");
}

[[nodiscard]] LATENTAUDIT_INLINE std::string no_data_svg(std::string_view fn, const plot_options& o) {
  svg_writer w(fn, o.width, o.height, o.title);
  if (!o.title.empty()) w.text("title", o.width / 2, 22, o.title, "middle", 15, "font-weight=\"bold\"");
  w.text("no-data", o.width / 2, o.height / 2, "no data", "middle", 14, "fill=\"#555555\"");
  return w.finish();
}

LATENTAUDIT_INLINE void draw_x_axis(svg_writer& w, const plot_frame& f, const plot_options& o) {
  w.raw("<g class=\"x-axis\">\n");
  for (double t : f.ax.ticks) {
    const double x = f.px(t);
    w.line("grid", x, f.y0, x, f.y1, "#e5e5e5");
    w.line("tick", x, f.y1, x, f.y1 + 5, "#333333");
    w.text("tick-label", x, f.y1 + 18, tick_label(t, f.ax), "middle", 11);
  }
  w.line("axis", f.x0, f.y1, f.x1, f.y1, "#333333");
  if (!o.x_label.empty()) w.text("x-label", (f.x0 + f.x1) / 2, f.y1 + 36, o.x_label, "middle", 12);
  w.raw("</g>\n");
}

LATENTAUDIT_INLINE void draw_y_axis(svg_writer& w, const plot_frame& f, const plot_options& o) {
  w.raw("<g class=\"y-axis\">\n");
  for (double t : f.ay.ticks) {
    const double y = f.py(t);
    w.line("grid", f.x0, y, f.x1, y, "#e5e5e5");
    w.line("tick", f.x0 - 5, y, f.x0, y, "#333333");
    w.text("tick-label", f.x0 - 8, y + 4, tick_label(t, f.ay), "end", 11);
  }
  w.line("axis", f.x0, f.y0, f.x0, f.y1, "#333333");
  if (!o.y_label.empty()) {
    const double y = (f.y0 + f.y1) / 2;
    w.text("y-label", 16, y, o.y_label, "middle", 12,
           fmt::format("transform=\"rotate(-90 16 {})\"", w.num(y)));
  }
  w.raw("</g>\n");
}

LATENTAUDIT_INLINE void draw_title_and_frame(svg_writer& w, const plot_frame& f, const plot_options& o,
                                             double width) {
  if (!o.title.empty()) w.text("title", width / 2, 22, o.title, "middle", 15, "font-weight=\"bold\"");
  w.rect("plot-area", f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0, "none", "stroke=\"#cccccc\"");
  w.close();
}

[[nodiscard]] LATENTAUDIT_INLINE double top_margin(const plot_options& o, int legend_rows) {
  return (o.title.empty() ? 12.0 : 34.0) + 18.0 * legend_rows + (legend_rows > 0 ? 6.0 : 0.0);
}

[[nodiscard]] LATENTAUDIT_INLINE std::vector<std::string> distinct_names(
    const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

[[nodiscard]] LATENTAUDIT_INLINE std::size_t name_index(const std::vector<std::string>& names,
                                                        const std::string& n) {
  return static_cast<std::size_t>(std::find(names.begin(), names.end(), n) - names.begin());
}

[[nodiscard]] LATENTAUDIT_INLINE int tick_target(double length, double spacing) {
  return std::clamp(static_cast<int>(length / spacing), 2, 10);
}

}  // namespace detail

LATENTAUDIT_INLINE std::string forest_plot(std::span<const forest_row> rows, const plot_options& o,
                                           double reference, const forest_marks& marks) {
  constexpr std::string_view fn = "forest_plot";
  detail::check_plot_options(fn, o);
  detail::check_finite(fn, "reference", reference);
  if (o.log_x) detail::check_log_positive(fn, "reference", reference);
  bool any_verdict = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    detail::check_plot_value(fn, "rows", i, "estimate", r.estimate);
    detail::check_plot_value(fn, "rows", i, "ci_low", r.ci_low);
    detail::check_plot_value(fn, "rows", i, "ci_high", r.ci_high);
    detail::check_plot_interval(fn, "rows", i, "ci_low", r.ci_low, "ci_high", r.ci_high);
    if (r.verdict) {
      any_verdict = true;
      detail::check_plot_value(fn, "rows", i, "verdict.first", r.verdict->first);
      detail::check_plot_value(fn, "rows", i, "verdict.second", r.verdict->second);
      detail::check_plot_interval(fn, "rows", i, "verdict.first", r.verdict->first, "verdict.second",
                                  r.verdict->second);
    }
    if (o.log_x) {
      const std::string name = "rows[" + std::to_string(i) + "]";
      detail::check_log_positive(fn, name, std::min({r.estimate, r.ci_low, r.ci_high}));
      if (r.verdict) detail::check_log_positive(fn, name + ".verdict", r.verdict->first);
    }
  }
  for (std::size_t i = 0; i < marks.margins.size(); ++i) {
    detail::check_plot_value(fn, "marks.margins", i, "x", marks.margins[i]);
    if (o.log_x) detail::check_log_positive(fn, "marks.margins[" + std::to_string(i) + "]", marks.margins[i]);
  }
  if (rows.empty()) return detail::no_data_svg(fn, o);
  constexpr std::string_view verdict_colour = "#999999", margin_colour = "#D55E00";

  // groups → colours; a legend when there is more than one group
  std::vector<std::string> group_of;
  for (const auto& r : rows) group_of.push_back(r.group);
  const auto groups = detail::distinct_names(group_of);
  std::vector<detail::legend_item> legend;
  if (groups.size() > 1) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      legend.push_back(
          {groups[g].empty() ? std::string("(none)") : groups[g], detail::palette_colour(g), 'b'});
    }
  }
  if (any_verdict) {
    legend.push_back(
        {marks.ci_label, groups.size() > 1 ? std::string_view("#000000") : detail::palette_colour(0), 'l'});
    legend.push_back({marks.verdict_label, verdict_colour, 'b'});
  }
  if (!marks.margins.empty()) legend.push_back({marks.margin_label, margin_colour, 'l'});

  // layout: labels left, "estimate [low, high]" right
  std::vector<std::string> values;
  double label_w = 0.0, value_w = 0.0;
  for (const auto& r : rows) {
    values.push_back(fmt::format("{} [{}, {}]", detail::value_label(r.estimate),
                                 detail::value_label(r.ci_low), detail::value_label(r.ci_high)));
    label_w = std::max(label_w, detail::text_width(r.label));
    value_w = std::max(value_w, detail::text_width(values.back()));
  }
  const double width = o.width;
  const double y_label_w = o.y_label.empty() ? 0.0 : 22.0;
  const double left = y_label_w + std::clamp(label_w + 16.0, 40.0, 0.4 * width);
  const double right = std::clamp(value_w + 16.0, 30.0, 0.3 * width);
  const int lrows = detail::legend_rows(legend, left, width - right);
  const double top = detail::top_margin(o, lrows);
  const double bottom = o.x_label.empty() ? 30.0 : 48.0;
  const double n = static_cast<double>(rows.size());
  const double height = std::max(o.height, top + bottom + 18.0 * n);
  const double row_h = (height - top - bottom) / n;

  double lo = reference, hi = reference;
  for (const auto& r : rows) {
    lo = std::min({lo, r.ci_low, r.estimate}), hi = std::max({hi, r.ci_high, r.estimate});
    if (r.verdict) lo = std::min(lo, r.verdict->first), hi = std::max(hi, r.verdict->second);
  }
  for (double m : marks.margins) lo = std::min(lo, m), hi = std::max(hi, m);
  detail::plot_frame f{left, width - right, top, height - bottom, {}, {}};
  f.ax = detail::make_axis(fn, lo, hi, o.log_x, detail::tick_target(f.x1 - f.x0, 80.0));

  detail::svg_writer w(fn, width, height, o.title);
  detail::draw_title_and_frame(w, f, o, width);
  if (!legend.empty())
    detail::draw_legend(w, legend, left, width - right, (o.title.empty() ? 12.0 : 34.0) + 12.0);
  detail::draw_x_axis(w, f, o);
  if (!o.y_label.empty()) {
    const double y = (f.y0 + f.y1) / 2;
    w.text("y-label", 16, y, o.y_label, "middle", 12,
           fmt::format("transform=\"rotate(-90 16 {})\"", w.num(y)));
  }
  const double xr = f.px(reference);
  w.line("reference", xr, f.y0, xr, f.y1, "#555555", 1.2, "stroke-dasharray=\"5,4\"");
  for (double m : marks.margins) {
    const double xm = f.px(m);
    w.line("margin", xm, f.y0, xm, f.y1, margin_colour, 1.2, "stroke-dasharray=\"2,3\"");
  }
  w.raw("<g class=\"rows\">\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const double y = f.y0 + (static_cast<double>(i) + 0.5) * row_h;
    const auto colour = detail::palette_colour(detail::name_index(groups, r.group));
    w.text("label", left - 8, y + 4, r.label, "end");
    if (r.verdict) {
      const double h = std::clamp(row_h * 0.55, 5.0, 12.0);
      const double x0 = f.px(r.verdict->first);
      w.rect("verdict", x0, y - h / 2, std::max(f.px(r.verdict->second) - x0, 1.0), h, verdict_colour,
             "fill-opacity=\"0.35\"");
      w.close(fmt::format("{}: {} [{}, {}]", r.label, marks.verdict_label,
                          detail::value_label(r.verdict->first), detail::value_label(r.verdict->second)));
    }
    w.line("ci", f.px(r.ci_low), y, f.px(r.ci_high), y, colour, 2.0);
    const double s = std::clamp(row_h * 0.45, 4.0, 9.0);
    w.rect("estimate", f.px(r.estimate) - s / 2, y - s / 2, s, s, colour);
    w.close(r.label + ": " + values[i]);
    w.text("value", width - right + 8, y + 4, values[i], "start", 11);
  }
  w.raw("</g>\n");
  return w.finish();
}

LATENTAUDIT_INLINE std::string band_plot(std::span<const band_series> series, const plot_options& o,
                                         std::optional<double> hline, std::optional<double> vline,
                                         std::optional<std::pair<double, double>> vband) {
  constexpr std::string_view fn = "band_plot";
  detail::check_plot_options(fn, o);
  if (hline) detail::check_finite(fn, "hline", *hline);
  if (vline) {
    detail::check_finite(fn, "vline", *vline);
    if (o.log_x) detail::check_log_positive(fn, "vline", *vline);
  }
  if (vband) {
    detail::check_finite(fn, "vband.first", vband->first);
    detail::check_finite(fn, "vband.second", vband->second);
    if (vband->first > vband->second) {
      detail::throw_invalid(
          fn, "vband",
          "must have first <= second, got " + number_text(vband->first) + " > " + number_text(vband->second));
    }
    if (o.log_x) detail::check_log_positive(fn, "vband.first", vband->first);
  }
  std::size_t total = 0;
  for (std::size_t s = 0; s < series.size(); ++s) {
    const std::string arg = "series[" + std::to_string(s) + "].points";
    const auto& pts = series[s].points;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      detail::check_plot_value(fn, arg, i, "x", pts[i].x);
      detail::check_plot_value(fn, arg, i, "y", pts[i].y);
      detail::check_plot_value(fn, arg, i, "lo", pts[i].lo);
      detail::check_plot_value(fn, arg, i, "hi", pts[i].hi);
      detail::check_plot_interval(fn, arg, i, "lo", pts[i].lo, "hi", pts[i].hi);
      if (o.log_x) detail::check_log_positive(fn, arg + "[" + std::to_string(i) + "].x", pts[i].x);
    }
    total += pts.size();
  }
  if (total == 0) return detail::no_data_svg(fn, o);

  double xlo = 0, xhi = 0, ylo = 0, yhi = 0;
  bool first = true;
  for (const auto& s : series) {
    for (const auto& p : s.points) {
      if (first) xlo = xhi = p.x, ylo = std::min(p.lo, p.y), yhi = std::max(p.hi, p.y), first = false;
      xlo = std::min(xlo, p.x), xhi = std::max(xhi, p.x);
      ylo = std::min({ylo, p.lo, p.y}), yhi = std::max({yhi, p.hi, p.y});
    }
  }
  if (hline) ylo = std::min(ylo, *hline), yhi = std::max(yhi, *hline);
  if (vline) xlo = std::min(xlo, *vline), xhi = std::max(xhi, *vline);
  if (vband) xlo = std::min(xlo, vband->first), xhi = std::max(xhi, vband->second);

  std::vector<detail::legend_item> legend;
  if (series.size() > 1) {
    for (std::size_t s = 0; s < series.size(); ++s)
      legend.push_back({series[s].name, detail::palette_colour(s), 'l'});
  }
  const double width = o.width, height = o.height;
  const double left = (o.y_label.empty() ? 0.0 : 22.0) + 56.0;
  const double right = 20.0;
  const int lrows = detail::legend_rows(legend, left, width - right);
  const double top = detail::top_margin(o, lrows);
  const double bottom = o.x_label.empty() ? 30.0 : 48.0;
  detail::plot_frame f{left, width - right, top, std::max(height - bottom, top + 40.0), {}, {}};
  f.ax = detail::make_axis(fn, xlo, xhi, o.log_x, detail::tick_target(f.x1 - f.x0, 80.0));
  f.ay = detail::make_axis(fn, ylo, yhi, false, detail::tick_target(f.y1 - f.y0, 45.0));
  const double full_height = std::max(height, f.y1 + bottom);

  detail::svg_writer w(fn, width, full_height, o.title);
  detail::draw_title_and_frame(w, f, o, width);
  if (!legend.empty())
    detail::draw_legend(w, legend, left, width - right, (o.title.empty() ? 12.0 : 34.0) + 12.0);
  if (vband) {
    w.rect("vband", f.px(vband->first), f.y0, f.px(vband->second) - f.px(vband->first), f.y1 - f.y0,
           "#999999", "fill-opacity=\"0.2\"");
    w.close();
  }
  detail::draw_x_axis(w, f, o);
  detail::draw_y_axis(w, f, o);
  if (hline)
    w.line("hline", f.x0, f.py(*hline), f.x1, f.py(*hline), "#555555", 1.2, "stroke-dasharray=\"5,4\"");
  if (vline)
    w.line("vline", f.px(*vline), f.y0, f.px(*vline), f.y1, "#000000", 1.2, "stroke-dasharray=\"2,3\"");
  for (std::size_t s = 0; s < series.size(); ++s) {
    auto pts = series[s].points;
    if (pts.empty()) continue;
    std::stable_sort(pts.begin(), pts.end(),
                     [](const band_point& a, const band_point& b) { return a.x < b.x; });
    const auto colour = detail::palette_colour(s);
    w.raw(fmt::format("<g class=\"series\"><title>{}</title>\n", detail::xml_escape(series[s].name)));
    std::vector<std::pair<double, double>> band, line;
    for (const auto& p : pts) band.emplace_back(f.px(p.x), f.py(p.hi));
    for (auto it = pts.rbegin(); it != pts.rend(); ++it) band.emplace_back(f.px(it->x), f.py(it->lo));
    w.poly("polygon", "band", band, fmt::format("fill=\"{}\" fill-opacity=\"0.2\" stroke=\"none\"", colour));
    for (const auto& p : pts) line.emplace_back(f.px(p.x), f.py(p.y));
    w.poly("polyline", "series-line", line,
           fmt::format("fill=\"none\" stroke=\"{}\" stroke-width=\"2\"", colour));
    for (const auto& p : pts) {
      w.circle("point", f.px(p.x), f.py(p.y), 2.5, colour, colour);
      w.close(fmt::format("{}: x {} y {} [{}, {}]", series[s].name, detail::value_label(p.x),
                          detail::value_label(p.y), detail::value_label(p.lo), detail::value_label(p.hi)));
    }
    w.raw("</g>\n");
  }
  return w.finish();
}

LATENTAUDIT_INLINE std::string frontier_plot(std::span<const scatter_point> points, const plot_options& o) {
  constexpr std::string_view fn = "frontier_plot";
  detail::check_plot_options(fn, o);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    detail::check_plot_value(fn, "points", i, "x", p.x);
    detail::check_plot_value(fn, "points", i, "y", p.y);
    detail::check_plot_value(fn, "points", i, "lo", p.lo);
    detail::check_plot_value(fn, "points", i, "hi", p.hi);
    detail::check_plot_interval(fn, "points", i, "lo", p.lo, "hi", p.hi);
    if (o.log_x) detail::check_log_positive(fn, "points[" + std::to_string(i) + "].x", p.x);
  }
  if (points.empty()) return detail::no_data_svg(fn, o);

  double xlo = points[0].x, xhi = points[0].x, ylo = points[0].y, yhi = points[0].y;
  bool any_high = false, any_low = false;
  for (const auto& p : points) {
    xlo = std::min(xlo, p.x), xhi = std::max(xhi, p.x);
    ylo = std::min({ylo, p.lo, p.y}), yhi = std::max({yhi, p.hi, p.y});
    (p.highlight ? any_high : any_low) = true;
  }
  const std::string_view c_high = detail::okabe_ito[1], c_low = detail::okabe_ito[0];
  std::vector<detail::legend_item> legend;
  if (any_high && any_low) legend = {{"Pareto frontier", c_high, 'p'}, {"other", c_low, 'p'}};

  const double width = o.width, height = o.height;
  const double left = (o.y_label.empty() ? 0.0 : 22.0) + 56.0;
  const double right = 20.0;
  const int lrows = detail::legend_rows(legend, left, width - right);
  const double top = detail::top_margin(o, lrows);
  const double bottom = o.x_label.empty() ? 30.0 : 48.0;
  detail::plot_frame f{left, width - right, top, std::max(height - bottom, top + 40.0), {}, {}};
  f.ax = detail::make_axis(fn, xlo, xhi, o.log_x, detail::tick_target(f.x1 - f.x0, 80.0));
  f.ay = detail::make_axis(fn, ylo, yhi, false, detail::tick_target(f.y1 - f.y0, 45.0));
  const double full_height = std::max(height, f.y1 + bottom);

  detail::svg_writer w(fn, width, full_height, o.title);
  detail::draw_title_and_frame(w, f, o, width);
  if (!legend.empty())
    detail::draw_legend(w, legend, left, width - right, (o.title.empty() ? 12.0 : 34.0) + 12.0);
  detail::draw_x_axis(w, f, o);
  detail::draw_y_axis(w, f, o);

  // the frontier: highlighted points in increasing x, each level held until the next point
  std::vector<const scatter_point*> front;
  for (const auto& p : points) {
    if (p.highlight) front.push_back(&p);
  }
  std::stable_sort(front.begin(), front.end(),
                   [](const scatter_point* a, const scatter_point* b) { return a->x < b->x; });
  if (front.size() > 1) {
    std::string d = fmt::format("M {} {}", w.num(f.px(front[0]->x)), w.num(f.py(front[0]->y)));
    for (std::size_t i = 1; i < front.size(); ++i) {
      d.append(fmt::format(" H {} V {}", w.num(f.px(front[i]->x)), w.num(f.py(front[i]->y))));
    }
    w.path("frontier", d, fmt::format("fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"", c_high));
  }
  w.raw("<g class=\"points\">\n");
  // non-highlighted first, so the frontier's points are drawn on top
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& p : points) {
      if (p.highlight != (pass == 1)) continue;
      const auto colour = p.highlight ? c_high : c_low;
      const double x = f.px(p.x);
      w.line("error-bar", x, f.py(p.lo), x, f.py(p.hi), colour, 1.2);
      w.line("error-bar", x - 3, f.py(p.lo), x + 3, f.py(p.lo), colour, 1.2);
      w.line("error-bar", x - 3, f.py(p.hi), x + 3, f.py(p.hi), colour, 1.2);
      w.circle(p.highlight ? "point highlight" : "point", x, f.py(p.y), p.highlight ? 4.0 : 3.5,
               p.highlight ? colour : std::string_view("#ffffff"), colour);
      w.close(fmt::format("{}: x {} y {} [{}, {}]", p.label, detail::value_label(p.x),
                          detail::value_label(p.y), detail::value_label(p.lo), detail::value_label(p.hi)));
    }
  }
  w.raw("</g>\n");
  // Labels, placed so that none overlaps another or a point: the Pareto set's first (always drawn,
  // at its least crowded place), then the others in grey where a free place is found (the rest keep
  // their tooltip).
  struct box {
    double x0, y0, x1, y1;
  };
  std::vector<box> taken;
  for (const auto& p : points) {
    const double x = f.px(p.x), y = f.py(p.y);
    taken.push_back({x - 4.5, y - 4.5, x + 4.5, y + 4.5});
  }
  auto overlaps = [&](const box& b) {
    std::size_t n = 0;
    for (const auto& t : taken) n += (b.x0 < t.x1 && t.x0 < b.x1 && b.y0 < t.y1 && t.y0 < b.y1) ? 1 : 0;
    return n;
  };
  w.raw("<g class=\"point-labels\">\n");
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& p : points) {
      if (p.highlight != (pass == 0) || p.label.empty()) continue;
      const double size = p.highlight ? 11.0 : 10.0;
      const double tw = detail::text_width(p.label, size), x = f.px(p.x), y = f.py(p.y);
      // candidates: right or left of the point, level, above or below, then further away
      static constexpr double dys[] = {-7.0, 15.0, 4.0, -19.0, 27.0, -31.0, 39.0};
      std::optional<std::pair<box, bool>> best;  // box, anchored at its end
      std::size_t best_overlaps = std::numeric_limits<std::size_t>::max();
      for (double dy : dys) {
        for (int side = 0; side < 2; ++side) {
          const bool end = side == 1;
          const double tx = end ? x - 7 : x + 7, ty = y + dy;
          const box b{end ? tx - tw : tx, ty - 0.8 * size, end ? tx : tx + tw, ty + 0.25 * size};
          if (b.x0 < f.x0 || b.x1 > f.x1 || b.y0 < f.y0 || b.y1 > f.y1) continue;
          const auto n = overlaps(b);
          if (n < best_overlaps) best_overlaps = n, best = std::pair{b, end};
          if (n == 0) break;
        }
        if (best_overlaps == 0) break;
      }
      if (!best && p.highlight) {  // nowhere inside: beside the point, as before
        const bool end = x > f.x0 + 0.75 * (f.x1 - f.x0);
        const double tx = end ? x - 7 : x + 7, ty = y + (y < f.y0 + 16.0 ? 15.0 : -7.0);
        best = std::pair{box{end ? tx - tw : tx, ty - 0.8 * size, end ? tx : tx + tw, ty + 0.25 * size}, end};
        best_overlaps = 0;
      }
      if (!best || (!p.highlight && best_overlaps > 0)) continue;
      const auto& [b, end] = *best;
      taken.push_back(b);
      const double ty = b.y1 - 0.25 * size;
      if (p.highlight)
        w.text("point-label", end ? b.x1 : b.x0, ty, p.label, end ? "end" : "start", size);
      else
        w.text("point-label minor", end ? b.x1 : b.x0, ty, p.label, end ? "end" : "start", size,
               "fill=\"#555555\"");
    }
  }
  w.raw("</g>\n");
  return w.finish();
}

LATENTAUDIT_INLINE std::string stacked_bar_plot(std::span<const stacked_bar> bars, const plot_options& o,
                                                std::span<const std::string> colour_order) {
  constexpr std::string_view fn = "stacked_bar_plot";
  detail::check_plot_options(fn, o);
  if (o.log_x) detail::throw_invalid(fn, "o.log_x", "must be false: stacked bars need a linear axis from 0");
  for (std::size_t b = 0; b < bars.size(); ++b) {
    const std::string arg = "bars[" + std::to_string(b) + "].segments";
    const auto& segs = bars[b].segments;
    for (std::size_t i = 0; i < segs.size(); ++i) {
      detail::check_plot_value(fn, arg, i, "value", segs[i].value);
      if (segs[i].value < 0.0) {
        detail::throw_invalid(fn, arg + "[" + std::to_string(i) + "].value",
                              "must be >= 0, got " + number_text(segs[i].value));
      }
    }
  }
  if (bars.empty()) return detail::no_data_svg(fn, o);

  std::vector<std::string> seg_names;
  // values as plain numbers up to 10^7 ("7790", not "7.79e+03"), 3 significant digits beyond
  const auto plain = [](double v) {
    return v >= 1000.0 && v < 1e7 ? fmt::format("{:.0f}", v) : detail::value_label(v);
  };
  std::vector<double> totals;
  std::vector<std::string> total_text;
  double label_w = 0.0, total_w = 0.0, max_total = 0.0;
  for (const auto& b : bars) {
    double t = 0.0;
    for (const auto& s : b.segments) seg_names.push_back(s.name), t += s.value;
    if (!std::isfinite(t))
      detail::throw_invalid(fn, "bars", "segment totals must be finite (their sum overflowed)");
    totals.push_back(t);
    total_text.push_back(plain(t));
    max_total = std::max(max_total, t);
    label_w = std::max(label_w, detail::text_width(b.label));
    total_w = std::max(total_w, detail::text_width(total_text.back()));
  }
  const auto names = detail::distinct_names(seg_names);
  // colour of a name: its position in colour_order, else after those in order of appearance
  std::vector<std::string_view> colours;
  for (std::size_t i = 0, extra = 0; i < names.size(); ++i) {
    const auto at = std::find(colour_order.begin(), colour_order.end(), names[i]);
    colours.push_back(detail::palette_colour(at != colour_order.end()
                                                 ? static_cast<std::size_t>(at - colour_order.begin())
                                                 : colour_order.size() + extra++));
  }
  std::vector<detail::legend_item> legend;
  for (std::size_t i = 0; i < names.size(); ++i) legend.push_back({names[i], colours[i], 'b'});

  const double width = o.width;
  const double left = (o.y_label.empty() ? 0.0 : 22.0) + std::clamp(label_w + 16.0, 40.0, 0.4 * width);
  const double right = std::clamp(total_w + 16.0, 30.0, 0.3 * width);
  const int lrows = detail::legend_rows(legend, left, width - right);
  const double top = detail::top_margin(o, lrows);
  const double bottom = o.x_label.empty() ? 30.0 : 48.0;
  const double n = static_cast<double>(bars.size());
  const double height = std::max(o.height, top + bottom + 20.0 * n);
  const double row_h = (height - top - bottom) / n;
  detail::plot_frame f{left, width - right, top, height - bottom, {}, {}};
  f.ax = detail::make_axis(fn, 0.0, max_total, false, detail::tick_target(f.x1 - f.x0, 80.0));

  detail::svg_writer w(fn, width, height, o.title);
  detail::draw_title_and_frame(w, f, o, width);
  if (!legend.empty())
    detail::draw_legend(w, legend, left, width - right, (o.title.empty() ? 12.0 : 34.0) + 12.0);
  detail::draw_x_axis(w, f, o);
  if (!o.y_label.empty()) {
    const double y = (f.y0 + f.y1) / 2;
    w.text("y-label", 16, y, o.y_label, "middle", 12,
           fmt::format("transform=\"rotate(-90 16 {})\"", w.num(y)));
  }
  w.raw("<g class=\"bars\">\n");
  for (std::size_t b = 0; b < bars.size(); ++b) {
    const double yc = f.y0 + (static_cast<double>(b) + 0.5) * row_h;
    const double bh = std::clamp(row_h * 0.6, 6.0, 28.0);
    w.text("label", left - 8, yc + 4, bars[b].label, "end");
    double acc = 0.0;
    for (const auto& s : bars[b].segments) {
      const double xa = f.px(acc), xb = f.px(acc + s.value);
      w.rect("bar-segment", xa, yc - bh / 2, xb - xa, bh, colours[detail::name_index(names, s.name)],
             "stroke=\"#ffffff\" stroke-width=\"0.5\"");
      w.close(bars[b].label + ", " + s.name + ": " + plain(s.value));
      acc += s.value;
    }
    w.text("value", f.px(totals[b]) + 6, yc + 4, total_text[b], "start", 11);
  }
  w.raw("</g>\n");
  return w.finish();
}

LATENTAUDIT_INLINE std::optional<std::string> svg_of(const plot_spec& p) {
  struct draw {
    std::optional<std::string> operator()(std::monostate) const { return std::nullopt; }
    std::optional<std::string> operator()(const forest_figure& f) const {
      return forest_plot(f.rows, f.options, f.reference, f.marks);
    }
    std::optional<std::string> operator()(const band_figure& f) const {
      return band_plot(f.series, f.options, f.hline, f.vline, f.vband);
    }
    std::optional<std::string> operator()(const frontier_figure& f) const {
      return frontier_plot(f.points, f.options);
    }
    std::optional<std::string> operator()(const bars_figure& f) const {
      return stacked_bar_plot(f.bars, f.options, f.colour_order);
    }
  };
  return std::visit(draw{}, p);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_IMPL_SVG_INL_HPP
