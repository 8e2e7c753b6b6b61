// SPDX-License-Identifier: MIT
// One model of the report (report/report_model.hpp, issue 53 item 3): each cell type in each writer
// (Markdown, HTML, JSON), the escaping of data text (| in Markdown, <&> in HTML), prose written into
// Markdown as it is and without its backslash escapes elsewhere, empty tables and sections, and a
// row with the wrong number of cells.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "latentaudit/report/detail/markdown_text.hpp"
#include "latentaudit/report/report_model.hpp"

using namespace latentaudit;

namespace {

const double nan_v = std::numeric_limits<double>::quiet_NaN();

number_format pts() { return {.spec = "{:+.1f}", .scale = 100.0}; }

// One row with every kind of cell.
report_table every_kind() {
  report_table t;
  t.columns = {{"label"},
               {"code"},
               {"number", "points", true},
               {"interval", "points", true},
               {"estimate [interval]", "", true},
               {"verdict"},
               {"missing", "", true},
               {"blank"}};
  t.rows.push_back(
      {report_cell::label("a|b <c> & d_e"), report_cell::code_id("need.kv_beats_no_comm", "f-need"),
       report_cell::number(0.125, pts()), report_cell::interval(std::nullopt, -0.05, 0.1, {}, pts()),
       report_cell::interval(0.5, 0.25, 0.75, {.spec = "{:.2f}"}, {.spec = "{:.2f}"}, " pts"),
       report_cell::of_verdict(verdict::no), report_cell::none(), report_cell::blank()});
  return t;
}

}  // namespace

TEST_CASE("format_number: spec, scale, unit, automatic units, signless zero, infinities") {
  CHECK(format_number(0.1234, pts()) == "+12.3");
  CHECK(format_number(0.473, {.spec = "{:.1f}", .scale = 100.0, .unit = "%"}) == "47.3%");
  CHECK(format_number(8.72e-16, {.spec = "{:.3g}"}) == "8.72e-16");
  CHECK(format_number(177, {.spec = "{}"}) == "177");
  CHECK(format_number(nan_v, pts()) == "–");
  CHECK(format_number(std::numeric_limits<double>::infinity(), {.infinities = true}) == "∞");
  CHECK(format_number(nan_v, {.infinities = true}) == "−∞");
  CHECK(format_number(-0.0001, {.spec = "{:+.1f}", .scale = 100.0}) == "-0.0");
  CHECK(format_number(-0.0001, {.spec = "{:+.1f}", .scale = 100.0, .unsigned_zero = true}) == "0.0");
  CHECK(format_number(602e-6, {.automatic = number_format::auto_unit::seconds}) == "602 µs");
  CHECK(format_number(0.0123, {.automatic = number_format::auto_unit::seconds}) == "12.3 ms");
  CHECK(format_number(9840, {.automatic = number_format::auto_unit::bytes}) == "9.84 kB");
  CHECK(format_number(12, {.automatic = number_format::auto_unit::bytes}) == "12 B");
}

TEST_CASE("markdown_of(table): every cell kind, data escaped, prose as it is") {
  const std::string md = markdown_of(every_kind());
  CHECK(md ==
        "| label | code | number | interval | estimate [interval] | verdict | missing | blank |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| a\\|b &lt;c> \\& d\\_e | `need.kv_beats_no_comm` | +12.5 | [-5.0, +10.0] | 0.50 [0.25, 0.75] pts "
        "| no | "
        "– | |\n\n");
  report_table t;
  t.columns = {{"kv\\_full − no\\_comm"}};
  t.rows.push_back({report_cell::of_text({report_span::prose("see "), report_span::code("a`b"),
                                          report_span::strong("bold"), report_span::prose(" "),
                                          report_span::link("method", "f-x")})});
  t.caption = {report_span::prose("Caption (kv\\_full)")};
  t.notes.push_back({report_span::data("note [x](y)")});
  CHECK(markdown_of(t) ==
        "Caption (kv\\_full)\n\n| kv\\_full − no\\_comm |\n|---|\n| see a\\`b**bold** "
        "[method](report.html#f-x) "
        "|\n\nnote \\[x\\]\\(y\\)\n\n");
}

TEST_CASE("markdown_of: empty table and empty section") {
  report_table t;
  t.columns = {{"a"}, {"b"}};
  CHECK(markdown_of(t) == "| a | b |\n|---|---|\n\n");
  report_section s{.id = "s", .title = "Title", .level = 2, .blocks = {}};
  CHECK(markdown_of(s) == "## Title\n\n");
}

TEST_CASE("markdown_of(section): paragraphs, lists, figures and tables in order, a blank line after each") {
  report_section s{.id = "x", .title = "When relay does not pay", .level = 2, .blocks = {}};
  s.blocks.emplace_back(
      report_paragraph{{report_span::prose("Margin 5.0 points; "), report_span::data("a_b")}});
  s.blocks.emplace_back(
      report_list{{{report_span::prose("never a feature: "), report_span::data("regime")}}});
  s.blocks.emplace_back(report_list{});
  s.blocks.emplace_back(report_figure{"drift_response.svg", "drift dose-response"});
  report_table t;
  t.columns = {{"k"}};
  t.rows.push_back({report_cell::number(4, {.spec = "{}"})});
  s.blocks.emplace_back(std::move(t));
  CHECK(markdown_of(s) ==
        "## When relay does not pay\n\nMargin 5.0 points; a\\_b\n\n- never a feature: regime\n\n\n"
        "![drift dose-response](drift_response.svg)\n\n| k |\n|---|\n| 4 |\n\n");
}

TEST_CASE("html_of(table): every cell kind, data escaped, numeric cells carry their value") {
  const std::string h = html_of(every_kind());
  CHECK(h.rfind("<table class=\"sortable\"><thead><tr><th>label</th>", 0) == 0);
  CHECK(h.find("<th title=\"unit: points\">number</th>") != std::string::npos);
  CHECK(h.find("<td>a|b &lt;c&gt; &amp; d_e</td>") != std::string::npos);
  CHECK(h.find("<td><a href=\"#f-need\"><code>need.kv_beats_no_comm</code></a></td>") != std::string::npos);
  CHECK(h.find("<td class=\"n\" data-v=\"0.125\">+12.5</td>") != std::string::npos);
  CHECK(h.find("<td class=\"n\" data-v=\"-0.050000000000000003\">[-5.0, +10.0]</td>") != std::string::npos);
  CHECK(h.find("<td class=\"n\" data-v=\"0.5\">0.50 [0.25, 0.75] pts</td>") != std::string::npos);
  CHECK(h.find("<td>no</td>") != std::string::npos);
  CHECK(h.find("<td class=\"n\">–</td><td></td></tr>") != std::string::npos);
  CHECK(h.find("<script") == std::string::npos);
  report_table t;
  t.columns = {{"kv\\_full &"}};
  t.sortable = false;
  t.rows.push_back({report_cell::of_text({report_span::prose("kv\\_full "), report_span::code("<x>"),
                                          report_span::strong("b\\*"), report_span::link("m", "f-<a>")})});
  t.caption = {report_span::data("cap <b>")};
  t.notes.push_back({report_span::prose("(a) \\[b\\]")});
  const std::string g = html_of(t);
  CHECK(g ==
        "<table><caption>cap &lt;b&gt;</caption><thead><tr><th>kv_full &amp;</th></tr></thead>\n<tbody>\n"
        "<tr><td>kv_full <code>&lt;x&gt;</code><strong>b*</strong><a href=\"#f-&lt;a&gt;\">m</a></td></tr>\n"
        "</tbody></table>\n<p class=\"note\">(a) [b]</p>\n");
  // Record text made Markdown-inert (markdown_text) and shown in bold: every writer but Markdown's
  // undoes the escapes, so HTML shows "a<b & c_d" once escaped, not "&amp;lt;" (a headline does this).
  const report_text bold{report_span::strong(detail::markdown_text("a<b & c_d"))};
  CHECK(plain_text(bold) == "a<b & c_d");
  report_section sec;
  sec.title = "t";
  sec.blocks.emplace_back(report_paragraph{bold});
  CHECK(html_of(sec).find("<strong>a&lt;b &amp; c_d</strong>") != std::string::npos);
  CHECK(markdown_of(sec).find("**a&lt;b \\& c\\_d**") != std::string::npos);
}

TEST_CASE("html_of: empty table, section with its blocks, figures by the writer or a note") {
  report_table t;
  t.columns = {{"a"}};
  CHECK(html_of(t) ==
        "<table class=\"sortable\"><thead><tr><th>a</th></tr></thead>\n<tbody>\n</tbody></table>\n");
  report_section s{.id = "gate", .title = "Per-request relay gate", .level = 2, .blocks = {}};
  CHECK(html_of(s) == "<section id=\"gate\"><h2>Per-request relay gate</h2>\n</section>\n");
  s.blocks.emplace_back(report_paragraph{{report_span::data("x < y")}, true});
  s.blocks.emplace_back(report_list{});
  s.blocks.emplace_back(report_list{{{report_span::prose("one")}}});
  s.blocks.emplace_back(report_figure{"drift_response.svg", "drift"});
  CHECK(html_of(s) ==
        "<section id=\"gate\"><h2>Per-request relay gate</h2>\n<p class=\"note\">x &lt; "
        "y</p>\n<ul>\n<li>one</li>\n"
        "</ul>\n<p class=\"note\">Figure: drift (drift_response.svg, beside this page).</p>\n</section>\n");
  const std::string with =
      html_of(s, [](const report_figure& f) { return "<figure id=\"" + f.file + "\"></figure>\n"; });
  CHECK(with.find("<figure id=\"drift_response.svg\"></figure>\n</section>") != std::string::npos);
}

TEST_CASE("json_of: numbers, intervals, verdicts, ids and plain text") {
  const json_value j = json_of(every_kind());
  const auto& row = j.at("rows").at(0);
  CHECK(row.at(0).as_string() == "a|b <c> & d_e");
  CHECK(row.at(1).as_string() == "need.kv_beats_no_comm");
  CHECK(row.at(2).as_number() == 0.125);
  CHECK(row.at(3).at("estimate").is_null());
  CHECK(row.at(3).at("low").as_number() == -0.05);
  CHECK(row.at(4).at("unit").as_string() == " pts");
  CHECK(row.at(5).as_string() == "no");
  CHECK(row.at(6).is_null());
  CHECK(row.at(7).is_null());
  CHECK(j.at("columns").at(2).at("unit").as_string() == "points");
  report_table t;
  t.columns = {{"kv\\_full"}};
  CHECK(json_of(t).at("columns").at(0).at("header").as_string() == "kv_full");
  CHECK(json_of(t).at("rows").size() == 0);
}

TEST_CASE("writers refuse a row with the wrong number of cells") {
  report_table t;
  t.columns = {{"a"}, {"b"}};
  t.rows.push_back({report_cell::blank()});
  CHECK_THROWS_AS(markdown_of(t), invalid_argument);
  CHECK_THROWS_AS(html_of(t), invalid_argument);
}

TEST_CASE("badges, small print, details cells, breakable ids and row anchors in every writer") {
  report_table t;
  t.columns = {{"id"}, {"for relay"}, {"n", "", true}, {"method"}};
  report_cell id = report_cell::code_id("need.kv<beats>", "f-1");
  id.breakable = true;
  t.rows.push_back({id,
                    report_cell::of_text({report_span::badge("against", "against"), report_span::prose(" "),
                                          report_span::small("a\\_condition")}),
                    report_cell::of_text({report_span::data("12 ms")}, 0.012),
                    report_cell::of_details({report_span::data("betting | items")},
                                            {{report_span::prose("Method: a\\_b")}}, "f-1")});
  t.rows.push_back(
      {report_cell::code_id("x"), report_cell::blank(), report_cell::of_text({}), report_cell::none()});
  t.row_ids = {"f-1", ""};
  CHECK(markdown_of(t) ==
        "| id | for relay | n | method |\n|---|---|---|---|\n"
        "| need.kv&lt;beats> | against a\\_condition | 12 ms | [betting \\| items](report.html#f-1) |\n"
        "| `x` | |  | – |\n\n");
  const std::string h = html_of(t);
  CHECK(h.find("<tr id=\"f-1\"><td><a href=\"#f-1\"><code class=\"fid\"><span>need.</span><wbr>"
               "<span>kv&lt;beats&gt;</span></code></a></td>") != std::string::npos);
  CHECK(
      h.find(
          "<td><span class=\"badge b-against\">against</span> <span class=\"lbl\">a_condition</span></td>") !=
      std::string::npos);
  CHECK(h.find("<td class=\"n\" data-v=\"0.012\">12 ms</td>") != std::string::npos);
  CHECK(h.find("<td><details><summary>betting | items</summary><p>Method: a_b</p></details></td></tr>\n"
               "<tr><td><code>x</code></td>") != std::string::npos);
  CHECK(h.find("<td class=\"n\"></td>") != std::string::npos);  // text without a key: no data-v
  // a text cell's key sorts a text column too (the accuracy table's regime by regime rank)
  report_table k;
  k.columns = {{"regime"}};
  k.rows = {{report_cell::of_text({report_span::data("no_need")}, 1)}, {report_cell::label("need")}};
  const std::string kh = html_of(k);
  CHECK(kh.find("<td data-v=\"1\">no_need</td>") != std::string::npos);
  CHECK(kh.find("<td>need</td>") != std::string::npos);
  CHECK(markdown_of(k) == "| regime |\n|---|\n| no\\_need |\n| need |\n\n");
  const json_value j = json_of(t);
  CHECK(j.at("rows").at(0).at(1).as_string() == "against a_condition");
  CHECK(j.at("rows").at(0).at(3).as_string() == "betting | items");
  t.row_ids = {"only one"};
  CHECK_THROWS_AS(html_of(t), invalid_argument);
}

TEST_CASE("sections: inline-text heading, sub-headings, numbered lists, paragraph classes and a box") {
  report_section s;
  s.id = "decision";
  s.title = "unused";
  s.heading = {report_span::prose("Decision: "), report_span::strong("relay")};
  s.blocks.emplace_back(report_paragraph{{report_span::data("gate <on>")}, false, "gate"});
  s.blocks.emplace_back(report_list{{{report_span::data("a")}, {report_span::data("b")}}, true, "policy"});
  s.blocks.emplace_back(report_heading{{report_span::prose("Checklist")}, "check-list", 3});
  s.blocks.emplace_back(report_paragraph{{report_span::prose("note")}, true});
  s.boxed = 2;
  s.box_style = "decision allowed";
  CHECK(markdown_of(s) ==
        "## Decision: **relay**\n\ngate &lt;on>\n\n1. a\n2. b\n\n### Checklist\n\nnote\n\n");
  CHECK(
      html_of(s) ==
      "<section id=\"decision\"><h2>Decision: <strong>relay</strong></h2>\n<div class=\"decision allowed\">\n"
      "<p class=\"gate\">gate &lt;on&gt;</p>\n<ol class=\"policy\">\n<li>a</li>\n<li>b</li>\n</ol>\n</div>\n"
      "<h3 id=\"check-list\">Checklist</h3>\n<p class=\"note\">note</p>\n</section>\n");
  s.boxed = 9;  // a box over every block closes before the section ends
  CHECK(html_of(s).find("<p class=\"note\">note</p>\n</div>\n</section>\n") != std::string::npos);
}
