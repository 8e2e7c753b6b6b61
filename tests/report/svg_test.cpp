// SPDX-License-Identifier: MIT
// Tests for report/svg.hpp: every plot is well-formed XML (a small checker below: one <svg> root
// in the SVG namespace with a viewBox, balanced tags, quoted attributes, every & an entity, no raw
// < or > in text, no "nan"/"inf" anywhere), 1-2-5 and decade ticks, data-to-pixel mapping at the
// plot-area edges, legends and shared colours, "no data" documents and every argument error.
#include <latentaudit/report/svg.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "support/catch.hpp"
#include "support/common.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;

namespace {

/// Why s is not well-formed XML of the kind the writers produce, or "" if it is.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> stack;
  std::size_t i = 0, roots = 0;
  auto entity_ok = [&](std::size_t at) {
    static const std::regex ent("^&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);");
    return std::regex_search(s.begin() + static_cast<std::ptrdiff_t>(at), s.end(), ent);
  };
  if (s.rfind("<?xml", 0) == 0) i = s.find("?>") + 2;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '<') {
      if (s.compare(i, 4, "<!--") == 0) {
        const auto e = s.find("-->", i);
        if (e == std::string::npos) return "unterminated comment";
        i = e + 3;
        continue;
      }
      if (s.compare(i, 2, "</") == 0) {
        const auto e = s.find('>', i);
        if (e == std::string::npos) return "unterminated end tag";
        const std::string name = s.substr(i + 2, e - i - 2);
        if (stack.empty() || stack.back() != name) return "mismatched </" + name + ">";
        stack.pop_back();
        i = e + 1;
        continue;
      }
      std::size_t j = i + 1;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-' || s[j] == ':'))
        ++j;
      const std::string name = s.substr(i + 1, j - i - 1);
      if (name.empty()) return "bad tag at " + std::to_string(i);
      if (stack.empty()) {
        if (++roots > 1) return "more than one root element";
      }
      std::set<std::string> attrs;
      bool self_closing = false;
      for (;;) {
        while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
        if (j >= s.size()) return "unterminated tag <" + name;
        if (s.compare(j, 2, "/>") == 0) {
          self_closing = true;
          j += 2;
          break;
        }
        if (s[j] == '>') {
          ++j;
          break;
        }
        std::size_t k = j;
        while (k < s.size() && (std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '-' || s[k] == ':'))
          ++k;
        const std::string an = s.substr(j, k - j);
        if (an.empty() || k + 1 >= s.size() || s[k] != '=' || s[k + 1] != '"')
          return "bad attribute in <" + name;
        if (!attrs.insert(an).second) return "duplicate attribute " + an + " in <" + name;
        const auto e = s.find('"', k + 2);
        if (e == std::string::npos) return "unterminated attribute value";
        for (std::size_t p = k + 2; p < e; ++p) {
          if (s[p] == '<') return "raw < in attribute " + an;
          if (s[p] == '&' && !entity_ok(p)) return "bare & in attribute " + an;
        }
        j = e + 1;
      }
      if (!self_closing) stack.push_back(name);
      i = j;
      continue;
    }
    if (c == '&' && !entity_ok(i)) return "bare & in text at " + std::to_string(i);
    if (c == '>') return "raw > in text at " + std::to_string(i);
    if (stack.empty() && !std::isspace(static_cast<unsigned char>(c))) return "text outside the root";
    ++i;
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (roots != 1) return "no root element";
  return "";
}

/// Checks the document: well-formed, an SVG root with namespace and viewBox, no nan/inf.
void check_svg(const std::string& s) {
  INFO(s.substr(0, 400));
  CHECK(xml_problem(s).empty());
  INFO("problem: " << xml_problem(s));
  CHECK(s.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  CHECK(std::regex_search(s, std::regex("<svg [^>]*viewBox=\"0 0 [0-9.]+ [0-9.]+\"")));
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return std::tolower(ch); });
  CHECK(lower.find("nan") == std::string::npos);
  CHECK(lower.find("inf") == std::string::npos);
}

/// Attribute `name` of the first element whose class attribute is exactly `cls`.
std::string attr_of(const std::string& s, const std::string& cls, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(s, m, std::regex("<[a-z]+ class=\"" + cls + "\"([^>]*)>"))) return "";
  const std::string attrs = m[1];
  std::smatch a;
  if (!std::regex_search(attrs, a, std::regex(" " + name + "=\"([^\"]*)\""))) return "";
  return a[1];
}

double num_attr(const std::string& s, const std::string& cls, const std::string& name) {
  const auto v = attr_of(s, cls, name);
  REQUIRE_FALSE(v.empty());
  return std::stod(v);
}

const std::string tricky = "a & b < c > \"d\" 'e' \xcf\x83";  // & < > " ' and a UTF-8 sigma

}  // namespace

TEST_CASE("nice ticks follow the 1-2-5 rule and log ticks are decades", "[report][svg]") {
  int dec = -1;
  CHECK(detail::nice_ticks(0.0, 0.93, 5, &dec) == std::vector<double>{0.0, 0.2, 0.4, 0.6, 0.8, 1.0});
  CHECK(dec == 1);
  CHECK(detail::nice_ticks(-3.2, 7.9, 5) == std::vector<double>{-5.0, 0.0, 5.0, 10.0});
  CHECK(detail::nice_ticks(0.6, 1.4, 4) == std::vector<double>{0.6, 0.8, 1.0, 1.2, 1.4});
  CHECK(detail::nice_ticks(1234.0, 98765.0, 5) ==
        std::vector<double>{0.0, 20000.0, 40000.0, 60000.0, 80000.0, 100000.0});
  CHECK(detail::nice_ticks(0.0012, 0.0047, 4, &dec) ==
        std::vector<double>{0.001, 0.002, 0.003, 0.004, 0.005});
  CHECK(dec == 3);
  // properties over many ranges: steps are {1,2,5}×10^e, ticks cover the range, at most target intervals
  for (double lo : {-17.3, -1.0, 0.0, 0.004, 3.0, 250.0}) {
    for (double span : {0.01, 0.7, 1.0, 9.99, 123.0, 5e4}) {
      for (int target : {2, 5, 8}) {
        const auto t = detail::nice_ticks(lo, lo + span, target);
        INFO("lo " << lo << " span " << span << " target " << target);
        REQUIRE(t.size() >= 2);
        CHECK(t.front() <= lo);
        CHECK(t.back() >= lo + span);
        CHECK(static_cast<int>(t.size()) - 1 <= target + 1);  // + 1: the range need not start on a tick
        const double step = t[1] - t[0];
        const double mant = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
        CHECK((std::fabs(mant - 1) < 1e-6 || std::fabs(mant - 2) < 1e-6 || std::fabs(mant - 5) < 1e-6));
      }
    }
  }
  CHECK(detail::log_ticks(1e2, 3e5) == std::vector<double>{1e2, 1e3, 1e4, 1e5, 1e6});
  CHECK(detail::log_ticks(1e2, 1e5) == std::vector<double>{1e2, 1e3, 1e4, 1e5});
  CHECK(detail::log_ticks(2.0, 8.0) == std::vector<double>{1.0, 10.0});
  CHECK(detail::log_ticks(1e-3, 1e9, 4) == std::vector<double>{1e-3, 1.0, 1e3, 1e6, 1e9});
  const auto la = detail::make_axis("t", 1e2, 3e5, true, 8);
  CHECK(detail::tick_label(1e2, la) == "100");
  CHECK(detail::tick_label(1e6, la) == "1000000");
  CHECK(detail::tick_label(1e7, la) == "1e7");
  CHECK(detail::tick_label(1e-4, la) == "1e-4");
  CHECK(detail::tick_label(1e-3, la) == "0.001");
  const auto lin = detail::make_axis("t", 0.0, 0.93, false, 5);
  CHECK(detail::tick_label(0.6, lin) == "0.6");
  CHECK(detail::tick_label(0.0, lin) == "0.0");
  const auto single = detail::make_axis("t", 3.0, 3.0, false, 5);  // a single value is widened
  CHECK(single.lo < 3.0);
  CHECK(single.hi > 3.0);
  CHECK(detail::xml_escape(tricky) == "a &amp; b &lt; c &gt; &quot;d&quot; &apos;e&apos; \xcf\x83");
}

TEST_CASE("every plot is well-formed, escaped SVG", "[report][svg]") {
  const plot_options o{.title = "Title " + tricky, .x_label = "x " + tricky, .y_label = "y " + tricky};
  const std::vector<forest_row> rows = {{tricky, 0.1, -0.05, 0.25, "g1"},
                                        {"placebo: deranged", -0.02, -0.1, 0.06, "g2"},
                                        {"zeroed <cache>", -0.147, -0.2, -0.09, "g2"}};
  const auto forest = forest_plot(rows, o);
  check_svg(forest);
  CHECK(forest.find("<c") == std::string::npos);
  // title element, title text, x label, row label…
  CHECK(test::count_of(forest, "&amp; b &lt; c &gt;") >= 4);
  CHECK(forest.find("class=\"legend\"") != std::string::npos);  // two groups
  CHECK(forest.find("stroke-dasharray") != std::string::npos);  // the reference line

  const std::vector<band_series> series = {
      {"relay " + tricky, {{0.0, 0.9, 0.85, 0.95}, {0.5, 0.7, 0.6, 0.8}, {1.0, 0.3, 0.2, 0.4}}},
      {"text", {{0.0, 0.6, 0.55, 0.65}, {1.0, 0.6, 0.55, 0.65}}}};
  const auto band = band_plot(series, o, 0.6, 0.45, std::pair{0.35, 0.55});
  check_svg(band);
  CHECK(band.find("class=\"legend\"") != std::string::npos);
  CHECK(test::count_of(band, "class=\"band\"") == 2);
  CHECK(band.find("class=\"vband\"") != std::string::npos);
  CHECK(band.find("class=\"hline\"") != std::string::npos);
  CHECK(band.find("class=\"vline\"") != std::string::npos);

  const std::vector<scatter_point> pts = {{"text", 4000, 0.6, 0.55, 0.65, true},
                                          {"kv int8 " + tricky, 9e4, 0.85, 0.8, 0.9, true},
                                          {"kv fp16", 3e5, 0.86, 0.81, 0.91, false},
                                          {"kv top-k", 2e4, 0.5, 0.4, 0.6, false}};
  const auto front =
      frontier_plot(pts, {.title = "frontier", .x_label = "bytes", .y_label = "accuracy", .log_x = true});
  check_svg(front);
  CHECK(
      std::regex_search(front, std::regex("class=\"frontier\" d=\"M [0-9.]+ [0-9.]+ H [0-9.]+ V [0-9.]+\"")));
  // the Pareto set; the others in grey where room
  CHECK(test::count_of(front, "class=\"point-label\"") == 2);
  CHECK(test::count_of(front, "class=\"point highlight\"") == 2);
  CHECK(front.find(">1000<") != std::string::npos);  // decade tick labels, 1e3 .. 1e6
  CHECK(front.find(">100000<") != std::string::npos);
  CHECK(front.find(">1000000<") != std::string::npos);
  CHECK(front.find("class=\"legend\"") != std::string::npos);

  const std::vector<stacked_bar> bars = {
      {"text", {{"prefill", 12.0}, {"decode", 30.0}}},
      {"kv " + tricky,
       {{"prefill", 3.0}, {"export", 2.0}, {"transfer", 5.5}, {"import", 1.5}, {"decode", 28.0}}}};
  const auto bar = stacked_bar_plot(bars, o);
  check_svg(bar);
  CHECK(test::count_of(bar, "class=\"bar-segment\"") == 7);
  CHECK(bar.find("class=\"legend\"") != std::string::npos);
}

TEST_CASE("legends appear only with more than one series, shared names share a colour, Okabe-Ito only",
          "[report][svg]") {
  const std::vector<forest_row> one_group = {{"a", 0.1, 0.0, 0.2, ""}, {"b", 0.2, 0.1, 0.3, ""}};
  CHECK(forest_plot(one_group, {}).find("class=\"legend\"") == std::string::npos);
  const std::vector<band_series> one = {{"only", {{1, 1, 0, 2}, {2, 2, 1, 3}}}};
  CHECK(band_plot(one, {}).find("class=\"legend\"") == std::string::npos);
  const std::vector<scatter_point> all_high = {{"a", 1, 1, 0, 2, true}, {"b", 2, 2, 1, 3, true}};
  CHECK(frontier_plot(all_high, {}).find("class=\"legend\"") == std::string::npos);

  const std::vector<stacked_bar> bars = {{"x", {{"prefill", 1.0}, {"decode", 2.0}}},
                                         {"y", {{"decode", 1.0}, {"prefill", 4.0}}}};
  const auto svg = stacked_bar_plot(bars, {});
  std::smatch m;
  std::vector<std::pair<std::string, std::string>> fills;  // (tooltip name, fill)
  const std::regex seg("class=\"bar-segment\"[^>]*fill=\"(#[0-9A-F]{6})\"[^>]*><title>[xy], ([a-z]+):");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), seg); it != std::sregex_iterator(); ++it) {
    fills.emplace_back((*it)[2], (*it)[1]);
  }
  REQUIRE(fills.size() == 4);
  for (const auto& [name, fill] : fills) {
    for (const auto& [name2, fill2] : fills) CHECK((name == name2) == (fill == fill2));
  }
  const std::set<std::string> palette(detail::okabe_ito.begin(), detail::okabe_ito.end());
  for (const auto& doc : {svg, forest_plot(one_group, {}), band_plot(one, {})}) {
    const std::regex colour("(fill|stroke)=\"(#[0-9A-Fa-f]{6})\"");
    for (auto it = std::sregex_iterator(doc.begin(), doc.end(), colour); it != std::sregex_iterator(); ++it) {
      const std::string c = (*it)[2];
      const bool grey = c[1] == c[3] && c[3] == c[5] && c[2] == c[4] && c[4] == c[6];  // greys and white
      CHECK((palette.count(c) == 1 || grey));
    }
  }
}

TEST_CASE("data map onto the plot-area edges", "[report][svg]") {
  // x and y both span exactly [0, 1] = the axis domains: the first point lands on the bottom-left
  // corner of the plot area and the last on the top-right.
  const std::vector<band_series> s = {
      {"a", {{0.0, 0.0, 0.0, 0.5}, {0.5, 0.4, 0.2, 0.6}, {1.0, 1.0, 0.9, 1.0}}}};
  const auto svg = band_plot(s, {.x_label = "sigma", .y_label = "accuracy"});
  const double x = num_attr(svg, "plot-area", "x"), y = num_attr(svg, "plot-area", "y");
  const double w = num_attr(svg, "plot-area", "width"), h = num_attr(svg, "plot-area", "height");
  const auto line = attr_of(svg, "series-line", "points");
  double x0, y0, x1, y1, x2, y2;
  REQUIRE(std::sscanf(line.c_str(), "%lf,%lf %lf,%lf %lf,%lf", &x0, &y0, &x1, &y1, &x2, &y2) == 6);
  CHECK(x0 == Approx(x).margin(0.011));
  CHECK(y0 == Approx(y + h).margin(0.011));
  CHECK(x2 == Approx(x + w).margin(0.011));
  CHECK(y2 == Approx(y).margin(0.011));
  CHECK(x1 == Approx(x + w / 2).margin(0.011));  // linear in between
  CHECK(y1 == Approx(y + h * 0.6).margin(0.011));

  // forest: the reference at the axis minimum is the left edge
  const std::vector<forest_row> rows = {{"a", 0.5, 0.0, 1.0, ""}};
  const auto f = forest_plot(rows, {}, 0.0);
  CHECK(num_attr(f, "reference", "x1") == Approx(num_attr(f, "plot-area", "x")).margin(0.011));
  CHECK(num_attr(f, "ci", "x2") ==
        Approx(num_attr(f, "plot-area", "x") + num_attr(f, "plot-area", "width")).margin(0.011));

  // log axis: x = 10 and 1000 are the domain ends; 100 is halfway
  const std::vector<scatter_point> pts = {
      {"a", 10, 0, 0, 0, false}, {"b", 100, 0.5, 0.5, 0.5, false}, {"c", 1000, 1, 1, 1, false}};
  const auto g = frontier_plot(pts, {.log_x = true});
  std::vector<double> cx;
  const std::regex circ("class=\"point\" cx=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(g.begin(), g.end(), circ); it != std::sregex_iterator(); ++it)
    cx.push_back(std::stod((*it)[1]));
  REQUIRE(cx.size() == 3);
  const double gx = num_attr(g, "plot-area", "x"), gw = num_attr(g, "plot-area", "width");
  CHECK(cx[0] == Approx(gx).margin(0.011));
  CHECK(cx[1] == Approx(gx + gw / 2).margin(0.011));
  CHECK(cx[2] == Approx(gx + gw).margin(0.011));

  // stacked bars start at 0 = the left edge
  const std::vector<stacked_bar> bars = {{"a", {{"p", 1.0}, {"d", 1.0}}}};
  const auto b = stacked_bar_plot(bars, {});
  CHECK(num_attr(b, "bar-segment", "x") == Approx(num_attr(b, "plot-area", "x")).margin(0.011));
}

TEST_CASE("empty input gives a valid SVG saying no data", "[report][svg]") {
  const plot_options o{.title = "empty " + tricky};
  for (const auto& svg :
       {forest_plot({}, o), band_plot({}, o), frontier_plot({}, o), stacked_bar_plot({}, o)}) {
    check_svg(svg);
    CHECK(svg.find(">no data</text>") != std::string::npos);
  }
  const std::vector<band_series> no_points = {{"a", {}}, {"b", {}}};
  CHECK(band_plot(no_points, o).find(">no data</text>") != std::string::npos);
  // a bar with no segments, or all zero, is still a plot
  const std::vector<stacked_bar> zero = {{"a", {}}, {"b", {{"p", 0.0}}}};
  check_svg(stacked_bar_plot(zero, o));
}

TEST_CASE("bad arguments throw invalid_argument naming the function and argument", "[report][svg]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<forest_row> bad_est = {{"a", 0.1, 0.0, 0.2, ""}, {"b", nan, 0.0, 0.2, ""}};
  CHECK_THROWS_WITH(forest_plot(bad_est, {}), Contains("forest_plot: argument 'rows[1].estimate'"));
  const std::vector<forest_row> reversed = {{"a", 0.1, 0.3, 0.2, ""}};
  CHECK_THROWS_WITH(forest_plot(reversed, {}),
                    Contains("forest_plot: argument 'rows[0]'") && Contains("ci_low <= ci_high"));
  const std::vector<forest_row> ok = {{"a", 1.1, 0.9, 1.3, ""}};
  CHECK_THROWS_WITH(forest_plot(ok, {.log_x = true}),
                    Contains("forest_plot: argument 'reference'"));  // 0 on a log axis
  CHECK_NOTHROW(forest_plot(ok, {.log_x = true}, 1.0));
  const std::vector<forest_row> neg = {{"a", 1.1, -0.1, 1.3, ""}};
  CHECK_THROWS_WITH(forest_plot(neg, {.log_x = true}, 1.0), Contains("'rows[0]'") && Contains("log"));
  CHECK_THROWS_WITH(forest_plot(ok, {}, inf), Contains("forest_plot: argument 'reference'"));
  CHECK_THROWS_WITH(forest_plot(ok, {.width = 50}), Contains("forest_plot: argument 'o.width'"));
  CHECK_THROWS_WITH(forest_plot(ok, {.height = nan}), Contains("argument 'o.height'"));
  const std::vector<forest_row> huge = {{"a", 0.0, -1.5e308, 1.5e308, ""}};
  CHECK_THROWS_AS(forest_plot(huge, {}), invalid_argument);  // span overflows: refused, not written as inf

  const std::vector<band_series> bad_band = {{"a", {{0, 0, 0, 0}}}, {"b", {{1, 1, 2, 0}}}};
  CHECK_THROWS_WITH(band_plot(bad_band, {}),
                    Contains("band_plot: argument 'series[1].points[0]'") && Contains("lo <= hi"));
  const std::vector<band_series> inf_band = {{"a", {{0, inf, 0, 0}}}};
  CHECK_THROWS_WITH(band_plot(inf_band, {}), Contains("band_plot: argument 'series[0].points[0].y'"));
  const std::vector<band_series> zero_x = {{"a", {{0, 0, 0, 0}}}};
  CHECK_THROWS_WITH(band_plot(zero_x, {.log_x = true}),
                    Contains("band_plot: argument 'series[0].points[0].x'"));
  const std::vector<band_series> good = {{"a", {{1, 0, 0, 0}}}};
  CHECK_THROWS_WITH(band_plot(good, {}, nan), Contains("band_plot: argument 'hline'"));
  CHECK_THROWS_WITH(band_plot(good, {}, {}, inf), Contains("band_plot: argument 'vline'"));
  CHECK_THROWS_WITH(band_plot(good, {}, {}, {}, std::pair{2.0, 1.0}),
                    Contains("band_plot: argument 'vband'"));
  CHECK_THROWS_WITH(band_plot(good, {.log_x = true}, {}, {}, std::pair{0.0, 1.0}),
                    Contains("argument 'vband.first'"));
  CHECK_THROWS_WITH(band_plot(good, {.log_x = true}, {}, -1.0), Contains("argument 'vline'"));

  const std::vector<scatter_point> bad_pt = {{"a", 1, 0.5, 0.6, 0.4, true}};
  CHECK_THROWS_WITH(frontier_plot(bad_pt, {}), Contains("frontier_plot: argument 'points[0]'"));
  const std::vector<scatter_point> neg_x = {{"a", 0, 0.5, 0.4, 0.6, true}};
  CHECK_THROWS_WITH(frontier_plot(neg_x, {.log_x = true}), Contains("frontier_plot: argument 'points[0].x'"));
  const std::vector<scatter_point> nan_pt = {{"a", 1, 0.5, nan, 0.6, true}};
  CHECK_THROWS_WITH(frontier_plot(nan_pt, {}), Contains("frontier_plot: argument 'points[0].lo'"));

  const std::vector<stacked_bar> neg_seg = {{"a", {{"p", 1.0}, {"d", -1.0}}}};
  CHECK_THROWS_WITH(stacked_bar_plot(neg_seg, {}),
                    Contains("stacked_bar_plot: argument 'bars[0].segments[1].value'"));
  const std::vector<stacked_bar> nan_seg = {{"a", {{"p", nan}}}};
  CHECK_THROWS_WITH(stacked_bar_plot(nan_seg, {}),
                    Contains("stacked_bar_plot: argument 'bars[0].segments[0].value'"));
  const std::vector<stacked_bar> fine = {{"a", {{"p", 1.0}}}};
  CHECK_THROWS_WITH(stacked_bar_plot(fine, {.log_x = true}),
                    Contains("stacked_bar_plot: argument 'o.log_x'"));
}

TEST_CASE("forest and bar plots grow to fit many rows", "[report][svg]") {
  std::vector<forest_row> rows;
  for (int i = 0; i < 60; ++i)
    rows.push_back({"row " + std::to_string(i), 0.01 * i, 0.01 * i - 0.1, 0.01 * i + 0.1, ""});
  const auto svg = forest_plot(rows, {.height = 200});
  check_svg(svg);
  std::smatch m;
  REQUIRE(std::regex_search(svg, m, std::regex("viewBox=\"0 0 [0-9.]+ ([0-9.]+)\"")));
  CHECK(std::stod(m[1]) >= 60 * 18.0);
  CHECK(test::count_of(svg, "class=\"ci\"") == 60);
}

TEST_CASE("forest plots draw verdict intervals behind the CI and dotted margin lines inside the axis",
          "[report][svg]") {
  std::vector<forest_row> rows = {{"need: kv_full − no_comm", 0.9, 0.85, 0.95, "need"},
                                  {"no_need: kv_full − no_comm", 0.0, -0.01, 0.01, "no_need"}};
  rows[0].verdict = std::pair{0.80, 1.0};
  rows[1].verdict = std::pair{-0.04, 0.04};
  forest_marks marks{.margins = {-0.05, 0.05},
                     .margin_label = "margin ±0.05",
                     .ci_label = "95% CI",
                     .verdict_label = "90% verdict interval"};
  const auto svg = forest_plot(rows, {.title = "effects"}, 0.0, marks);
  check_svg(svg);
  CHECK(test::count_of(svg, "class=\"verdict\"") == 2);
  CHECK(test::count_of(svg, "class=\"margin\"") == 2);
  CHECK(svg.find("90% verdict interval") != std::string::npos);  // legend and tooltips
  CHECK(svg.find("margin ±0.05") != std::string::npos);
  // the verdict bar of row 0 is drawn before its CI line (behind it)
  CHECK(svg.find("class=\"verdict\"") < svg.find("class=\"ci\""));
  // without marks nothing of the kind is drawn
  const std::vector<forest_row> plain = {{"a", 0.1, 0.0, 0.2, ""}};
  const auto p = forest_plot(plain, {});
  CHECK(p.find("class=\"verdict\"") == std::string::npos);
  CHECK(p.find("class=\"margin\"") == std::string::npos);
  // a margin beyond every interval widens the axis: the −0.5 tick appears
  const auto wide = forest_plot(plain, {}, 0.0, forest_marks{.margins = {-0.5}});
  check_svg(wide);
  CHECK(wide.find(">-0.5<") != std::string::npos);
  // bad marks and intervals throw, naming the argument
  std::vector<forest_row> bad = plain;
  bad[0].verdict = std::pair{0.3, 0.1};
  CHECK_THROWS_AS(forest_plot(bad, {}), invalid_argument);
  bad[0].verdict = std::pair{std::numeric_limits<double>::quiet_NaN(), 0.1};
  CHECK_THROWS_WITH(forest_plot(bad, {}), Contains("verdict.first"));
  CHECK_THROWS_WITH(
      forest_plot(plain, {}, 0.0, forest_marks{.margins = {std::numeric_limits<double>::infinity()}}),
      Contains("marks.margins"));
}

TEST_CASE("frontier labels do not overlap each other or a point, the others are labelled where there is room",
          "[report][svg]") {
  // two Pareto points almost on top of each other (text_budget_4 and text_message_8 overprinted
  // before issue 31) and a cloud of KV points
  std::vector<scatter_point> pts = {{"text_budget_4", 1000, 0.60, 0.55, 0.65, true},
                                    {"text_message_8", 1100, 0.61, 0.56, 0.66, true},
                                    {"kv_full", 2e5, 0.95, 0.9, 0.99, true}};
  for (int i = 0; i < 12; ++i)
    pts.push_back({"kv_noise_" + std::to_string(i), 1.5e5 + 4e3 * i, 0.9 - 0.03 * i, 0.85 - 0.03 * i,
                   0.95 - 0.03 * i, false});
  const auto svg =
      frontier_plot(pts, {.title = "frontier", .x_label = "bytes", .y_label = "accuracy", .log_x = true});
  check_svg(svg);
  struct box {
    double x0, y0, x1, y1;
  };
  std::vector<box> boxes;
  const std::regex label(
      "class=\"point-label( minor)?\" x=\"([-0-9.]+)\" y=\"([-0-9.]+)\" text-anchor=\"(start|end)\" "
      "font-size=\"([0-9.]+)\"[^>]*>([^<]*)<");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    const double x = std::stod(m[2]), y = std::stod(m[3]), size = std::stod(m[5]);
    const double w = detail::text_width(m[6].str(), size);
    boxes.push_back({m[4] == "end" ? x - w : x, y - 0.8 * size, m[4] == "end" ? x : x + w, y + 0.25 * size});
  }
  CHECK(test::count_of(svg, "class=\"point-label\"") == 3);        // every Pareto point
  CHECK(test::count_of(svg, "class=\"point-label minor\"") >= 3);  // some of the cloud
  REQUIRE(boxes.size() >= 6);
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j) {
      const auto& a = boxes[i];
      const auto& b = boxes[j];
      INFO(i << " " << j);
      CHECK_FALSE((a.x0 < b.x1 - 0.01 && b.x0 < a.x1 - 0.01 && a.y0 < b.y1 - 0.01 && b.y0 < a.y1 - 0.01));
    }
}

TEST_CASE("stacked bars share colours by name across plots through colour_order", "[report][svg]") {
  const std::vector<std::string> order = {"A prefill", "export", "B prefill"};
  const std::vector<stacked_bar> all = {{"kv", {{"A prefill", 5.0}, {"export", 1.0}, {"B prefill", 2.0}}}};
  const std::vector<stacked_bar> receiver = {{"kv", {{"export", 1.0}, {"B prefill", 2.0}}}};
  const auto a = stacked_bar_plot(all, {}, order), r = stacked_bar_plot(receiver, {}, order);
  check_svg(a);
  check_svg(r);
  // "B prefill" is the palette's third colour in both; without the order the receiver plot would give it the
  // second
  const std::string third = std::string(detail::palette_colour(2)),
                    second = std::string(detail::palette_colour(1));
  const std::regex seg("<rect class=\"bar-segment\"[^>]*fill=\"(#[0-9A-Fa-f]+)\"[^>]*><title>kv, B prefill");
  std::smatch m;
  REQUIRE(std::regex_search(a, m, seg));
  CHECK(m[1] == third);
  REQUIRE(std::regex_search(r, m, seg));
  CHECK(m[1] == third);
  const auto plain = stacked_bar_plot(receiver, {});
  REQUIRE(std::regex_search(plain, m, seg));
  CHECK(m[1] == second);
  // totals print as plain numbers, not 7.79e+03
  const std::vector<stacked_bar> big = {{"text", {{"prefill", 7790.0}}}};
  const auto b = stacked_bar_plot(big, {});
  CHECK(b.find(">7790<") != std::string::npos);
  CHECK(b.find("e+03") == std::string::npos);
}
