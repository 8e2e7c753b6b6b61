// SPDX-License-Identifier: MIT
// latentaudit: self-contained SVG 1.1 plots for audit reports — forest plots of effects with
// confidence intervals, lines with shaded confidence bands (noise sweeps), cost/accuracy frontiers
// with error bars, and stacked latency breakdowns. Hand-written SVG text: no dependency beyond fmt,
// nothing external referenced, Okabe–Ito colours (safe for the common colour-vision deficiencies),
// every text XML-escaped, and never a NaN or infinity written.
#ifndef LATENTAUDIT_REPORT_SVG_HPP
#define LATENTAUDIT_REPORT_SVG_HPP

#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"

namespace latentaudit {

/// @brief Layout and labels common to every plot.
struct plot_options {
  std::string title;    ///< drawn above the plot and as the SVG <title>; may be empty
  std::string x_label;  ///< label under the x axis; may be empty
  std::string y_label;  ///< label beside the y axis (rotated); may be empty
  double width = 720;   ///< width in px, finite, >= 160
  double height = 420;  ///< height in px, finite, >= 120 (forest and bar plots grow to fit their rows)
  bool log_x = false;   ///< logarithmic x axis (decades); every x value must then be > 0
};

/// @brief One row of a forest plot: an estimate with its confidence interval.
struct forest_row {
  std::string label;  ///< row label, drawn left of the plot
  double estimate;    ///< point estimate, finite
  double ci_low;      ///< lower CI limit, finite, <= ci_high
  double ci_high;     ///< upper CI limit, finite
  std::string group;  ///< optional group name: rows of one group share a colour (legend if > 1 group)
  /// optional second interval drawn behind the CI as a wide pale bar (e.g. the verdict interval a
  /// finding reads, next to the descriptive CI); finite, first <= second
  std::optional<std::pair<double, double>> verdict = {};
};

/// @brief What a forest plot draws besides its rows: margin lines and the legend of the two
/// intervals.
struct forest_marks {
  std::vector<double> margins;          ///< x of dotted vertical lines (e.g. −m and +m), finite
  std::string margin_label = "margin";  ///< legend entry of the margin lines
  std::string ci_label = "CI";          ///< legend entry of the row line (when a row has a verdict interval)
  std::string verdict_label = "verdict interval";  ///< legend entry of the wide pale bar
};

/// @brief A forest plot: one row per estimate, its CI as a horizontal line, the estimate as a
/// square, a dashed vertical reference line, labels on the left and "estimate [low, high]" on
/// the right; rows with a `verdict` interval get it as a wide pale bar behind the line, and
/// `marks.margins` are drawn as dotted vertical lines (both in the legend, and inside the axis).
/// @param rows the rows, drawn top to bottom in order; empty gives a valid SVG saying "no data"
/// @param o title, axis labels, size, log_x
/// @param reference where the dashed reference line goes (0 for differences, 1 for ratios), finite
/// (> 0 on a log axis)
/// @param marks margin lines and legend texts
/// @returns the SVG document
/// @throws invalid_argument naming forest_plot and the argument: non-finite values, ci_low >
/// ci_high (or verdict.first > verdict.second), x <= 0 on a log axis, bad width or height.
[[nodiscard]] std::string forest_plot(std::span<const forest_row> rows, const plot_options& o,
                                      double reference = 0.0, const forest_marks& marks = {});

/// @brief One point of a band series: a value with its confidence band at x.
struct band_point {
  double x;   ///< x, finite (> 0 on a log axis)
  double y;   ///< value, finite
  double lo;  ///< lower band limit, finite, <= hi
  double hi;  ///< upper band limit, finite
};

/// @brief A named line with a shaded confidence band.
struct band_series {
  std::string name;                ///< legend entry
  std::vector<band_point> points;  ///< drawn in increasing x (sorted by the plot)
};

/// @brief Lines with shaded confidence bands (e.g. accuracy against relay noise σ per arm), with
/// an optional dashed horizontal reference (e.g. the text-relay accuracy), an optional dashed
/// vertical marker (e.g. the estimated tolerance σ) and an optional shaded vertical band (its CI).
/// @param series the series; no points in any series gives a valid SVG saying "no data"
/// @param o title, axis labels, size, log_x
/// @param hline optional y of a horizontal reference line, finite
/// @param vline optional x of a vertical marker, finite (> 0 on a log axis)
/// @param vband optional x interval {low, high} shaded behind the data, finite, low <= high
/// (> 0 on a log axis)
/// @returns the SVG document
/// @throws invalid_argument naming band_plot and the argument.
[[nodiscard]] std::string band_plot(std::span<const band_series> series, const plot_options& o,
                                    std::optional<double> hline = {}, std::optional<double> vline = {},
                                    std::optional<std::pair<double, double>> vband = {});

/// @brief One configuration of a frontier plot: cost x, outcome y with an error bar in y.
struct scatter_point {
  std::string label;  ///< name (drawn for highlighted points; a tooltip for all)
  double x;           ///< cost (bytes, latency), finite (> 0 on a log axis)
  double y;           ///< outcome (accuracy), finite
  double lo;          ///< lower end of the error bar, finite, <= hi
  double hi;          ///< upper end of the error bar, finite
  bool highlight;     ///< a member of the Pareto set: joined by the frontier line and labelled
};

/// @brief Points with vertical error bars; highlighted points (the Pareto set) are drawn in
/// colour, labelled, and joined in increasing x by a step line (the frontier: each level held
/// until the next point, then a vertical step).
/// @param points the points; empty gives a valid SVG saying "no data"
/// @param o title, axis labels, size, log_x
/// @returns the SVG document
/// @throws invalid_argument naming frontier_plot and the argument.
[[nodiscard]] std::string frontier_plot(std::span<const scatter_point> points, const plot_options& o);

/// @brief One part of a stacked bar.
struct bar_segment {
  std::string name;  ///< segment name: segments with the same name share a colour and a legend entry
  double value;      ///< length, finite, >= 0
};

/// @brief One horizontal bar made of segments, left to right.
struct stacked_bar {
  std::string label;                  ///< bar label, drawn left of the plot
  std::vector<bar_segment> segments;  ///< the parts in drawing order
};

/// @brief Horizontal stacked bars with a legend (e.g. a latency breakdown per arm: prefill,
/// export, transfer, import, decode); the total is written at the end of each bar.
/// @param bars the bars, top to bottom; empty gives a valid SVG saying "no data"
/// @param o title, axis labels, size (log_x must be false)
/// @param colour_order segment names in palette order: a name listed here gets the colour of its
/// position, so that two plots sharing the names share the colours (e.g. a receiver-only view
/// without the first stage); names not listed follow, in order of appearance; empty: order of
/// appearance
/// @returns the SVG document
/// @throws invalid_argument naming stacked_bar_plot and the argument: non-finite or negative
/// values, log_x set, bad width or height.
[[nodiscard]] std::string stacked_bar_plot(std::span<const stacked_bar> bars, const plot_options& o,
                                           std::span<const std::string> colour_order = {});

/// @brief A forest plot's data: forest_plot's arguments.
struct forest_figure {
  std::vector<forest_row> rows;  ///< the rows, top to bottom
  plot_options options;          ///< title, axis labels, size
  double reference = 0.0;        ///< the dashed reference line
  forest_marks marks;            ///< margin lines and legend texts
};

/// @brief A band plot's data: band_plot's arguments.
struct band_figure {
  std::vector<band_series> series;                 ///< the series
  plot_options options;                            ///< title, axis labels, size, log_x
  std::optional<double> hline;                     ///< the dashed horizontal reference
  std::optional<double> vline;                     ///< the dashed vertical marker
  std::optional<std::pair<double, double>> vband;  ///< the shaded vertical band
};

/// @brief A frontier plot's data: frontier_plot's arguments.
struct frontier_figure {
  std::vector<scatter_point> points;  ///< the points
  plot_options options;               ///< title, axis labels, size, log_x
};

/// @brief A stacked-bar plot's data: stacked_bar_plot's arguments.
struct bars_figure {
  std::vector<stacked_bar> bars;          ///< the bars, top to bottom
  plot_options options;                   ///< title, axis labels, size
  std::vector<std::string> colour_order;  ///< segment names in palette order
};

/// @brief A plot's data — the arguments of one of the four plots — or none (std::monostate).
using plot_spec = std::variant<std::monostate, forest_figure, band_figure, frontier_figure, bars_figure>;

/// @brief The SVG document of `p`, drawn by its plot function; none for std::monostate.
/// @param p the plot's data
/// @returns the SVG document, or std::nullopt
/// @throws invalid_argument as the plot function does.
[[nodiscard]] std::optional<std::string> svg_of(const plot_spec& p);

// ---- implementation ---------------------------------------------------------------------------

namespace detail {

/// @brief The Okabe–Ito palette (Okabe & Ito 2008), ordered for lines on white: blue, vermillion,
/// bluish green, reddish purple, orange, sky blue, yellow, black; then grey and Tol's wine
/// (#882255) so that up to ten series (e.g. the nine latency stages) get distinct colours.
inline constexpr std::array<std::string_view, 10> okabe_ito = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                               "#E69F00", "#56B4E9", "#F0E442", "#000000",
                                                               "#999999", "#882255"};

/// @brief Colour i of the palette (cycled).
[[nodiscard]] std::string_view palette_colour(std::size_t i) noexcept;

/// @brief Escapes & < > " ' for XML text and attribute values.
[[nodiscard]] std::string xml_escape(std::string_view s);

/// @brief Approximate rendered width of text in px (code points × 0.6 × font size).
[[nodiscard]] double text_width(std::string_view s, double font_size = 12.0) noexcept;

/// @brief An axis: its domain (extended to whole ticks), its ticks and how to label them.
struct svg_axis {
  double lo = 0.0;            ///< domain low (first tick)
  double hi = 1.0;            ///< domain high (last tick)
  bool log = false;           ///< decades
  std::vector<double> ticks;  ///< tick values, increasing, lo and hi included
  int decimals = 0;           ///< decimals of linear tick labels

  /// @brief Position of v in the domain, 0 at lo, 1 at hi (log10 scale on a log axis).
  [[nodiscard]] double unit(double v) const noexcept {
    if (log) return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    return (v - lo) / (hi - lo);
  }
};

/// @brief Ticks by the 1-2-5 rule: step = {1, 2, 5} × 10^e, the smallest such step giving at
/// most `target` intervals over [lo, hi]; the ticks run from floor(lo/step)·step to
/// ceil(hi/step)·step, so they cover [lo, hi]. E.g. [0, 0.93], 5 → 0, 0.2, …, 1.
/// @pre lo < hi, both finite, hi − lo finite; target >= 1.
/// @param decimals_out if given, receives the decimals needed to label the ticks
[[nodiscard]] std::vector<double> nice_ticks(double lo, double hi, int target = 5,
                                             int* decimals_out = nullptr);

/// @brief Decade ticks 10^k covering [lo, hi] (every `stride`-th decade when there are more than
/// `target` decades). E.g. [1e2, 3e5] → 1e2, 1e3, 1e4, 1e5, 1e6.
/// @pre 0 < lo <= hi, both finite.
[[nodiscard]] std::vector<double> log_ticks(double lo, double hi, int target = 8);

/// @brief Builds an axis over the data range [lo, hi] (lo <= hi), widening a single value.
/// @throws invalid_argument naming `fn` if the range is not representable.
[[nodiscard]] svg_axis make_axis(std::string_view fn, double lo, double hi, bool log, int target);

/// @brief A tick label: fixed decimals on a linear axis; on a log axis "0.001" … "1000000" and
/// "1e-4", "1e7" beyond.
[[nodiscard]] std::string tick_label(double v, const svg_axis& a);

/// @brief A short value label (3 significant digits).
[[nodiscard]] std::string value_label(double v);

/// @brief Accumulates SVG elements; every number goes through num(), which refuses non-finite
/// values (a numerical_error naming the plot, never a "nan" in the output).
class svg_writer {
 public:
  svg_writer(std::string_view fn, double width, double height, std::string_view title);

  /// @brief Finite number with two decimals.
  [[nodiscard]] std::string num(double v) const;

  void line(std::string_view cls, double x1, double y1, double x2, double y2, std::string_view stroke,
            double width = 1.0, std::string_view extra = {});

  void rect(std::string_view cls, double x, double y, double w, double h, std::string_view fill,
            std::string_view extra = {});

  void circle(std::string_view cls, double cx, double cy, double r, std::string_view fill,
              std::string_view stroke);

  /// @brief Closes an element opened by rect() or circle(), with an optional tooltip.
  void close(std::string_view tooltip = {});

  void text(std::string_view cls, double x, double y, std::string_view content,
            std::string_view anchor = "start", double size = 12.0, std::string_view extra = {});

  /// @brief points: "x,y x,y …"; element: polyline (open) or polygon (closed).
  void poly(std::string_view element, std::string_view cls, const std::vector<std::pair<double, double>>& pts,
            std::string_view attrs);

  void path(std::string_view cls, std::string_view d, std::string_view attrs);

  void raw(std::string_view s) { out_.append(s); }

  [[nodiscard]] std::string finish() {
    out_.append("</svg>\n");
    return std::move(out_);
  }

 private:
  std::string_view fn_;
  std::string out_;
  std::string_view last_tag_ = "rect";
};

/// @brief Checks the options every plot shares.
void check_plot_options(std::string_view fn, const plot_options& o);

/// @brief Checks one finite value of element i ("rows[3].ci_low").
void check_plot_value(std::string_view fn, std::string_view arg, std::size_t i, std::string_view field,
                      double v);

/// @brief Checks lo <= hi for element i.
void check_plot_interval(std::string_view fn, std::string_view arg, std::size_t i, std::string_view lo_name,
                         double lo, std::string_view hi_name, double hi);

/// @brief Checks x > 0 on a log axis.
void check_log_positive(std::string_view fn, std::string_view name, double x);

/// @brief A legend entry: name, colour, and how the key is drawn.
struct legend_item {
  std::string name;
  std::string_view colour;
  char key = 'l';  ///< 'l' line, 'b' box, 'p' point
};

/// @brief Rows the legend needs across [x0, x1].
[[nodiscard]] int legend_rows(const std::vector<legend_item>& items, double x0, double x1);

/// @brief Draws the legend starting at (x0, y) across [x0, x1], 18 px per row.
void draw_legend(svg_writer& w, const std::vector<legend_item>& items, double x0, double x1, double y);

/// @brief The document for empty input: title and a centred "no data".
[[nodiscard]] std::string no_data_svg(std::string_view fn, const plot_options& o);

/// @brief The plot area and its axes.
struct plot_frame {
  double x0, x1, y0, y1;  ///< plot area: left, right, top, bottom (px)
  svg_axis ax;            ///< x axis
  svg_axis ay;            ///< y axis (unused by forest and bar plots)
  [[nodiscard]] double px(double v) const noexcept { return x0 + ax.unit(v) * (x1 - x0); }
  [[nodiscard]] double py(double v) const noexcept { return y1 - ay.unit(v) * (y1 - y0); }
};

/// @brief Title, the plot-area frame, the x axis with ticks, grid and label.
void draw_x_axis(svg_writer& w, const plot_frame& f, const plot_options& o);

/// @brief The y axis with ticks, grid and (rotated) label.
void draw_y_axis(svg_writer& w, const plot_frame& f, const plot_options& o);

/// @brief Title at the top (if any) and the outline of the plot area.
void draw_title_and_frame(svg_writer& w, const plot_frame& f, const plot_options& o, double width);

/// @brief Top margin: title row, legend rows, padding.
[[nodiscard]] double top_margin(const plot_options& o, int legend_rows);

/// @brief Distinct names in first-appearance order.
[[nodiscard]] std::vector<std::string> distinct_names(const std::vector<std::string>& names);

/// @brief Index of name in names (present).
[[nodiscard]] std::size_t name_index(const std::vector<std::string>& names, const std::string& n);

/// @brief Ticks that fit a length in px (about one per `spacing` px, between 2 and 10).
[[nodiscard]] int tick_target(double length, double spacing);

}  // namespace detail

std::string forest_plot(std::span<const forest_row> rows, const plot_options& o, double reference,
                        const forest_marks& marks);

std::string band_plot(std::span<const band_series> series, const plot_options& o, std::optional<double> hline,
                      std::optional<double> vline, std::optional<std::pair<double, double>> vband);

std::string frontier_plot(std::span<const scatter_point> points, const plot_options& o);

std::string stacked_bar_plot(std::span<const stacked_bar> bars, const plot_options& o,
                             std::span<const std::string> colour_order);

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/svg-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_SVG_HPP
