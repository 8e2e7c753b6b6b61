// SPDX-License-Identifier: MIT
// report.html (report/html.hpp): built from synthetic records of the four regimes (relay_failure_sim.hpp)
// with a hostile arm label and hostile answers, the page is checked by a small HTML checker below
// (balanced tags for every element the page emits, void elements, raw-text script/style, quoted
// attributes, every & an entity, no raw < in text); it holds every finding id of report.json and
// the decision with its relay_allowed field, loads nothing from the network, and escapes every text.
// Also: what each verdict means for relay (polarity), the interval labels, the report.md fixes of
// issue 31 (polarity column, labelled intervals, sorted accuracy table, links to report.html), and
// issue 49's: the items side by side (every arm's answer text, correctness and probability, the
// filters, the row cap), numbers in percentage points, ids that wrap only at dots, the policy count.
#include <latentaudit/report.hpp>
#include <latentaudit/report/detail/core_sections.hpp>
#include <latentaudit/report/detail/decision_sections.hpp>
#include <latentaudit/report/detail/failure_report.hpp>
#include <latentaudit/report/detail/report_sections.hpp>
#include <latentaudit/report/html.hpp>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "relay_failure_sim.hpp"
#include "support/common.hpp"

using namespace latentaudit;

namespace {

const std::string hostile_arm = "kv<script>alert(1)</script>&co";
const std::string hostile_answer = "</td><script>alert(2)</script> \"quoted\" & <b>bold</b>";

/// Four regimes with drift arms (40 items each, 2 seeds), a hostile arm in the need regime, and
/// task ids and answers (one of them hostile) on the records.
std::vector<trial_record> html_records() {
  test::relay_failure_design d;
  d.items_per_regime = 40;
  d.with_drift = true;
  d.drift_steps = {50, 200};
  d.logprob_sd = 0.5;  // the answer's probability in the side-by-side cells
  auto recs = test::simulate_relay_failure(d, 31);
  std::vector<trial_record> extra;
  for (auto& r : recs) {
    r.task_id = "task-" + std::to_string(r.item);
    r.query_index = static_cast<std::int64_t>(r.seed);
    r.answer_text = r.correct ? "v" + std::to_string(r.item) : "wrong";
    if (r.arm == "kv_full" && r.regime == "need") {
      if (r.item == 3) r.answer_text = hostile_answer;
      auto h = r;
      h.arm = hostile_arm;
      h.arm_kind = "";
      extra.push_back(std::move(h));
    }
  }
  recs.insert(recs.end(), extra.begin(), extra.end());
  return recs;
}

struct built {
  std::vector<trial_record> records;
  audit_report report;
  std::vector<std::pair<std::string, std::string>> svgs;
  std::string html;
};

const built& html_report() {
  static const built b = [] {
    built x;
    x.records = html_records();
    x.report = build_audit_report(x.records, {.bootstrap_replicates = 200, .seed = 5});
    x.svgs = report_svgs(x.report);
    x.html = report_html(x.report, x.records, x.svgs);
    return x;
  }();
  return b;
}

/// `s` without its tags (the text a browser shows, entities left as written).
std::string strip_tags(const std::string& s) {
  std::string out;
  bool in_tag = false;
  for (char c : s) {
    if (c == '<') in_tag = true;
    if (!in_tag) out.push_back(c);
    if (c == '>') in_tag = false;
  }
  return out;
}

/// Why `s` is not a well-formed page of the kind report_html writes, or "" if it is: a doctype, then
/// one <html> root; every element closed in order except the void ones (and SVG's "/>"); script and
/// style are raw text up to their end tag; attribute values quoted; no raw '<' in text; every '&'
/// starts an entity.
std::string html_problem(const std::string& s, std::multiset<std::string>* tags = nullptr) {
  static const std::set<std::string> void_elements = {"meta",  "br",   "hr",  "img",
                                                      "input", "link", "col", "wbr"};
  static const std::regex entity("^&(amp|lt|gt|quot|apos|#39|#[0-9]+|#x[0-9a-fA-F]+);");
  if (s.rfind("<!DOCTYPE html>", 0) != 0) return "no doctype";
  std::vector<std::string> stack;
  std::size_t i = std::string("<!DOCTYPE html>").size(), roots = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '&') {
      if (!std::regex_search(s.begin() + static_cast<std::ptrdiff_t>(i), s.end(), entity))
        return "bare & at " + std::to_string(i) + ": " + s.substr(i, 20);
      ++i;
      continue;
    }
    if (c == '>') return "raw > in text at " + std::to_string(i) + ": " + s.substr(i > 30 ? i - 30 : 0, 40);
    if (c != '<') {
      ++i;
      continue;
    }
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
      if (stack.empty() || stack.back() != name)
        return "mismatched </" + name + "> (open: " + (stack.empty() ? "none" : stack.back()) + ") at " +
               std::to_string(i);
      stack.pop_back();
      i = e + 1;
      continue;
    }
    std::size_t j = i + 1;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-')) ++j;
    const std::string name = s.substr(i + 1, j - i - 1);
    if (name.empty()) return "raw < in text at " + std::to_string(i) + ": " + s.substr(i, 30);
    if (stack.empty() && ++roots > 1) return "more than one root element";
    if (stack.empty() && name != "html") return "root is not <html>";
    if (tags != nullptr) tags->insert(name);
    // attributes: name="value" (no raw < or " inside the value)
    bool self_closing = false;
    while (true) {
      while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j >= s.size()) return "unterminated tag <" + name;
      if (s[j] == '>') break;
      if (s.compare(j, 2, "/>") == 0) {
        self_closing = true;
        ++j;
        break;
      }
      const std::size_t a = j;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-' || s[j] == ':'))
        ++j;
      if (j == a) return "bad attribute in <" + name + "> at " + std::to_string(j);
      if (s[j] != '=' || s[j + 1] != '"') return "unquoted attribute in <" + name + ">";
      const auto e = s.find('"', j + 2);
      if (e == std::string::npos) return "unterminated attribute value";
      if (s.substr(j + 2, e - j - 2).find('<') != std::string::npos) return "< in an attribute value";
      j = e + 1;
    }
    i = j + 1;
    if (self_closing || void_elements.count(name)) continue;
    if (name == "script" || name == "style") {  // raw text up to the end tag
      const auto e = s.find("</" + name + ">", i);
      if (e == std::string::npos) return "unterminated <" + name + ">";
      i = e + name.size() + 3;
      continue;
    }
    stack.push_back(name);
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  return roots == 1 ? "" : "no root element";
}

}  // namespace

TEST_CASE("report.html: well-formed, every finding and the decision, nothing from the network",
          "[report][html]") {
  const auto& b = html_report();
  const auto& h = b.html;
  std::multiset<std::string> tags;
  INFO(h.size() << " bytes");
  CHECK(html_problem(h, &tags).empty());
  INFO(html_problem(h));
  for (const char* t :
       {"html", "head",    "body",    "main", "section", "table",  "thead", "tbody", "tr", "th",
        "td",   "details", "summary", "svg",  "figure",  "script", "style", "code",  "ul", "li"})
    CHECK(tags.count(t) > 0);
  // every finding id of report.json, with its anchor; the decision, with the gate field
  const auto j = report_json(b.report);
  REQUIRE(j.at("findings").size() == b.report.findings.size());
  REQUIRE(b.report.findings.size() >= 10);
  for (std::size_t i = 0; i < j.at("findings").size(); ++i) {
    const std::string id = j.at("findings").as_array()[i].at("id").as_string();
    INFO(id);
    const auto row = h.find("id=\"" + finding_anchor(id) + "\"");
    REQUIRE(row != std::string::npos);
    const auto code = h.find("<code class=\"fid\">", row);
    REQUIRE(code != std::string::npos);
    const auto code_end = h.find("</code>", code);
    CHECK(strip_tags(h.substr(code, code_end - code)) == detail::html_escape(id));
  }
  CHECK(h.find(std::string("Decision: <strong>") +
               detail::html_escape(decision_verdict_name(b.report.decision.verdict)) + "</strong>") !=
        std::string::npos);
  CHECK(h.find(std::string("<code>decision.relay_allowed</code> = <code>") +
               (b.report.decision.relay_allowed ? "true" : "false") + "</code>") != std::string::npos);
  CHECK(h.find("Decision:") < h.find("id=\"findings\""));  // the decision first
  for (const auto& rule : b.report.decision.policy)
    CHECK(h.find(detail::html_escape(rule)) != std::string::npos);
  // no resource from anywhere: no URL at all, no src attribute, in-page links only
  CHECK(h.find("http://") == std::string::npos);
  CHECK(h.find("https://") == std::string::npos);
  CHECK(h.find(" src=") == std::string::npos);
  CHECK(h.find("url(") == std::string::npos);
  CHECK(h.find("@import") == std::string::npos);
  std::size_t hrefs = 0;
  for (auto p = h.find(" href=\""); p != std::string::npos; p = h.find(" href=\"", p + 1), ++hrefs)
    CHECK(h.compare(p + 7, 1, "#") == 0);
  CHECK(hrefs > 5);
  // the plots inline, without their XML declaration
  CHECK(test::count_of(h, "<svg ") == b.svgs.size());
  CHECK(h.find("<?xml") == std::string::npos);
  for (const char* bad : {"nan", "inf<", ">inf"}) CHECK(h.find(bad) == std::string::npos);
}

TEST_CASE("report.html: a hostile arm label and answer text are escaped", "[report][html]") {
  const auto& h = html_report().html;
  CHECK(test::count_of(h, "<script") == 1);  // the page's own sorter and filters only
  CHECK(h.find("alert(") != std::string::npos);
  CHECK(h.find("<script>alert") == std::string::npos);
  CHECK(h.find("<b>bold") == std::string::npos);
  CHECK(h.find("kv&lt;script&gt;alert(1)&lt;/script&gt;&amp;co") != std::string::npos);
  CHECK(h.find("&lt;/td&gt;&lt;script&gt;alert(2)&lt;/script&gt; &quot;quoted&quot; &amp; "
               "&lt;b&gt;bold&lt;/b&gt;") != std::string::npos);
  CHECK(detail::html_escape(std::string("a\x01'b\x7F")) == "a\xEF\xBF\xBD&#39;b\xEF\xBF\xBD");
}

TEST_CASE("report.html: findings say what they mean for relay, intervals carry their level and method",
          "[report][html]") {
  const auto& b = html_report();
  const auto& h = b.html;
  for (const auto& f : b.report.findings) {
    INFO(f.id);
    const auto row = h.find("id=\"" + finding_anchor(f.id) + "\"");
    REQUIRE(row != std::string::npos);
    const auto end = h.find("</tr>", row);
    const std::string tr = h.substr(row, end - row);
    CHECK(tr.find(std::string("badge b-")) != std::string::npos);
    CHECK(tr.find(relay_polarity_name(finding_polarity(f))) != std::string::npos);
    CHECK(tr.find(detail::html_escape(finding_interval_label(f, b.report.options.alpha))) !=
          std::string::npos);
    CHECK(tr.find("<details><summary>") != std::string::npos);  // the method text collapsed
    CHECK(tr.find(detail::html_escape(f.method)) != std::string::npos);
  }
  // each label names what the finding's own method text says its interval is
  for (const auto& f : b.report.findings) {
    if (f.method.rfind("not estimable", 0) == 0) continue;
    const auto label = finding_interval_label(f, b.report.options.alpha);
    INFO(f.id << ": " << label << " | " << f.method);
    CHECK(label.find("see method") == std::string::npos);
    // every finding id has its plain statement and direction (the catalog's row: finding_catalog.hpp)
    CHECK(finding_statement(f).rfind(f.id + ":", 0) != 0);
    if (label.find("verdict interval") != std::string::npos)
      CHECK(f.method.find("90% verdict interval") != std::string::npos);
    if (label.find("test inversion") != std::string::npos)
      CHECK(f.method.find("95% CI: test inversion") != std::string::npos);
    if (label.find("bootstrap") != std::string::npos) CHECK(f.method.find("bootstrap") != std::string::npos);
    if (label.find("betting") != std::string::npos) CHECK(f.method.find("betting") != std::string::npos);
  }
  // the polarity flips with the finding: a stale loss is bad news for relay, a need benefit good news
  const auto with = [](finding_key key, verdict v, double est = 0.1) {
    finding f = make_finding(std::move(key), v);
    f.estimate = est;
    return f;
  };
  CHECK(finding_polarity(with({finding_kind::stale_kv_worse_than_text}, verdict::yes, -0.5)) ==
        relay_polarity::against);
  CHECK(finding_polarity(with({finding_kind::stale_kv_worse_than_text}, verdict::no)) ==
        relay_polarity::supports);
  CHECK(finding_polarity(with({finding_kind::need_kv_beats_no_comm}, verdict::yes)) ==
        relay_polarity::supports);
  CHECK(finding_polarity(with({finding_kind::need_kv_beats_no_comm}, verdict::no)) ==
        relay_polarity::against);
  CHECK(finding_polarity(with({finding_kind::need_kv_beats_no_comm}, verdict::inconclusive)) ==
        relay_polarity::not_shown);
  CHECK(finding_polarity(with({finding_kind::conflict_kv_worse_than_no_comm}, verdict::yes)) ==
        relay_polarity::against);
  CHECK(finding_polarity(with({finding_kind::drift_tolerance_steps}, verdict::yes)) ==
        relay_polarity::against);
  CHECK(finding_polarity(with({finding_kind::no_need_kv_changes_accuracy}, verdict::yes, -0.2)) ==
        relay_polarity::against);
  CHECK(finding_polarity(with({finding_kind::no_need_kv_changes_accuracy}, verdict::no)) ==
        relay_polarity::supports);
  CHECK(finding_polarity(with({finding_kind::need_kv_equivalent_to_text}, verdict::no, -0.2)) ==
        relay_polarity::against);
  CHECK(finding_polarity(with({finding_kind::need_kv_equivalent_to_text}, verdict::no, 0.2)) ==
        relay_polarity::supports);
  CHECK(finding_polarity(with({finding_kind::cost_relay_pays_on_link, {.link = "pcie4"}}, verdict::yes)) ==
        relay_polarity::supports);
  CHECK(finding_polarity(with({finding_kind::message_kv_vs_text_message, {.budget = 8, .regime = "need"}},
                              verdict::no)) == relay_polarity::against);
  CHECK(finding_polarity(with({finding_kind::noise_tolerance_sigma}, verdict::yes)) ==
        relay_polarity::context);
  CHECK(finding_polarity(with({finding_kind::need_kv_raises_answer_probability}, verdict::yes)) ==
        relay_polarity::supports);
  CHECK(finding_polarity(with({finding_kind::need_pairing_raises_answer_probability}, verdict::no)) ==
        relay_polarity::against);
  CHECK(finding_statement(with({finding_kind::need_kv_answer_probability_noninferior_to_text}, verdict::yes))
            .find("answer probability") != std::string::npos);
  CHECK(finding_polarity(with({}, verdict::yes)) == relay_polarity::context);
  CHECK(finding_interval_label(with({finding_kind::need_kv_beats_no_comm}, verdict::yes), 0.05) ==
        "90% verdict interval (betting over items)");
  CHECK(finding_interval_label(with({finding_kind::cost_relay_pays_on_link, {.link = "pcie4"}}, verdict::yes),
                               0.05)
            .rfind("95% bootstrap CI", 0) == 0);
  CHECK(finding_interval_label(with({finding_kind::noise_tolerance_sigma}, verdict::yes), 0.05) ==
        "95% CI (test inversion over items)");
  CHECK(finding_interval_label(with({finding_kind::gate_not_worse_than_always_relay}, verdict::yes), 0.1) ==
        "80% interval (betting over items)");
  // issue 52 item 5: a gate that relays every request (gate.saves_relays "no") is context, not bad
  // news; a gate shown worse than always-relay is
  CHECK(finding_polarity(with({finding_kind::gate_saves_relays}, verdict::no)) == relay_polarity::context);
  CHECK(finding_polarity(with({finding_kind::gate_not_worse_than_always_relay}, verdict::no)) ==
        relay_polarity::against);
  CHECK(finding_polarity(with({finding_kind::gate_not_worse_than_always_relay}, verdict::yes)) ==
        relay_polarity::supports);
  CHECK(finding_polarity(with({finding_kind::need_kv_raises_continuation_probability}, verdict::yes)) ==
        relay_polarity::supports);
  CHECK(finding_statement(with({finding_kind::need_kv_continuation_noninferior_to_text}, verdict::no))
            .find("continuation probability") != std::string::npos);
  CHECK(finding_statement(with({finding_kind::stale_kv_worse_than_text}, verdict::yes)).find("fresh") !=
        std::string::npos);
  CHECK(finding_statement(with({finding_kind::cost_relay_pays_on_link, {.link = "nvlink4"}}, verdict::no))
            .find("nvlink4") != std::string::npos);
  CHECK(finding_anchor("message.kv_vs_text_message.k8 <x>") == "f-message.kv_vs_text_message.k8__x_");
  CHECK_THROWS_AS(report_html(b.report, b.records, b.svgs, {.max_item_rows = 0}), invalid_argument);
  CHECK_THROWS_AS(report_html(b.report, b.records, b.svgs, {.max_answer_bytes = 0}), invalid_argument);
}

/// The rows of the side-by-side table of page `h`: each <tr data-r=...>...</tr>.
std::vector<std::string> drill_rows(const std::string& h) {
  std::vector<std::string> rows;
  const auto at = h.find("<table id=\"dd\"");
  const auto end = h.find("</table>", at);
  for (auto p = h.find("<tr data-r=", at); p < end; p = h.find("<tr data-r=", p + 1))
    rows.push_back(h.substr(p, h.find("</tr>", p) - p));
  return rows;
}

TEST_CASE("report.html: items side by side, every arm with B's answer, correctness and probability",
          "[report][html]") {
  const auto& b = html_report();
  const auto& h = b.html;
  REQUIRE(h.find("<table id=\"dd\"") != std::string::npos);
  // one column per arm, the reference arms first; the hostile label escaped
  std::set<std::string> arms;
  std::set<std::pair<std::uint64_t, std::uint64_t>> units;
  for (const auto& r : b.records) arms.insert(r.arm), units.insert({r.item, r.seed});
  const auto head = h.substr(h.find("<table id=\"dd\""),
                             h.find("</thead>", h.find("<table id=\"dd\"")) - h.find("<table id=\"dd\""));
  CHECK(test::count_of(head, "<th class=\"arm\">") == arms.size());
  CHECK(head.find(
            "<th class=\"arm\">no_comm</th><th class=\"arm\">text_full</th><th class=\"arm\">kv_full</th>") !=
        std::string::npos);
  CHECK(head.find(detail::html_escape(hostile_arm)) != std::string::npos);
  // one row per (item, seed) (320 here, under the default cap of 400), each with a cell per arm
  const auto rows = drill_rows(h);
  CHECK(rows.size() == units.size());
  CHECK(h.find(std::to_string(units.size()) + " of ") == std::string::npos);  // nothing left out
  // the row of need item 3, seed 0: every arm's correctness, probability and answer text
  const trial_record* kv = nullptr;
  for (const auto& r : b.records)
    if (r.item == 3 && r.seed == 0 && r.arm == "kv_full") kv = &r;
  REQUIRE(kv != nullptr);
  REQUIRE(kv->answer_logprob);
  std::string row;
  for (const auto& r : rows)
    if (r.find("<td class=\"n\">3</td><td class=\"n\">0</td>") != std::string::npos) row = r;
  REQUIRE(!row.empty());
  CHECK(row.rfind("<tr data-r=\"" + kv->regime + "\">", 0) == 0);
  CHECK(test::count_of(row, "<td class=\"y\"") + test::count_of(row, "<td class=\"x\"") == arms.size());
  const double prob = std::exp(*kv->answer_logprob);
  const std::string pct = prob < 0.001 ? "&lt;0.1%" : fmt::format("{:.1f}%", 100.0 * prob);
  CHECK(row.find(std::string(kv->correct ? "✓ " : "✗ ") + pct + "<br><q>" +
                 detail::html_escape(*kv->answer_text) + "</q>") != std::string::npos);
  for (const auto& r : b.records)  // every arm's answer text of this unit
    if (r.item == 3 && r.seed == 0 && r.answer_text)
      CHECK(row.find("<q>" + detail::html_escape(*r.answer_text) + "</q>") != std::string::npos);
  CHECK(row.find("task-3") != std::string::npos);
  // filter controls: regime (every regime embedded), arms (one box per column), correctness, search
  for (const char* id : {"id=\"dd-filters\"", "id=\"dd-regime\"", "id=\"dd-correct\"", "id=\"dd-q\"",
                         "type=\"search\"", "id=\"dd-count\"", "data-set=\"all\"", "data-set=\"roles\""})
    CHECK(h.find(id) != std::string::npos);
  for (const char* rg : {"need", "no_need", "stale", "conflict"})
    CHECK(h.find(std::string("<option value=\"") + rg + "\">") != std::string::npos);
  for (const char* v : {"any", "disagree", "wrong", "allwrong", "right"})
    CHECK(h.find(std::string("<option value=\"") + v + "\">") != std::string::npos);
  CHECK(test::count_of(h, "<input type=\"checkbox\" checked=\"checked\" data-col=") == arms.size());
  CHECK(h.find("getElementById(\"dd\")") != std::string::npos);  // the filter script
  // the accuracy table's arms set the filters and jump to the table
  CHECK(h.find("<tr><td data-v=\"0\">need</td><td><a href=\"#tasks\"><code>kv_full</code></a></td>") !=
        std::string::npos);
  CHECK(h.find("querySelectorAll(\"#accuracy a[href='#tasks']\")") != std::string::npos);
  // the old per (regime, arm) lists are gone
  CHECK(h.find("<details id=\"t-") == std::string::npos);
}

TEST_CASE("report.html: the side-by-side table is capped, disagreeing rows first, and says what it left out",
          "[report][html]") {
  const auto& b = html_report();
  std::set<std::pair<std::uint64_t, std::uint64_t>> units;
  for (const auto& r : b.records) units.insert({r.item, r.seed});
  const auto h = report_html(b.report, b.records, b.svgs, {.max_item_rows = 50, .max_answer_bytes = 20});
  CHECK(html_problem(h).empty());
  const auto rows = drill_rows(h);
  CHECK(rows.size() == 50);
  CHECK(h.find("50 of " + std::to_string(units.size()) + " rows are embedded") != std::string::npos);
  CHECK(h.find(std::to_string(units.size() - 50) + " left out") != std::string::npos);
  CHECK(h.find("the filters work on the rows embedded") != std::string::npos);
  for (const auto& r : rows) {  // more than 50 units disagree: every embedded row is one of them
    CHECK(r.find("<td class=\"y\"") != std::string::npos);
    CHECK(r.find("<td class=\"x\"") != std::string::npos);
  }
  CHECK(h.size() < b.html.size());
  // a long answer is clipped in the cell and whole in the tooltip
  const bool clipped =
      h.find("<q>&lt;/td&gt;&lt;script&gt;alert(2…</q>") != std::string::npos &&
      h.find("title=\"&lt;/td&gt;&lt;script&gt;alert(2)&lt;/script&gt; &quot;quoted&quot;") !=
          std::string::npos;
  CHECK((clipped || h.find("alert(2") == std::string::npos));  // item 3 may be left out
  CHECK(h.find("http://") == std::string::npos);
  CHECK(h.find("https://") == std::string::npos);
  // records without task ids, answers or probabilities (built-in tasks, token scoring)
  auto bare = b.records;
  for (auto& r : bare)
    r.task_id.clear(), r.query_index.reset(), r.answer_text.reset(), r.answer_logprob.reset();
  const auto h2 = report_html(b.report, bare, b.svgs);
  CHECK(html_problem(h2).empty());
  CHECK(h2.find("<q>") == std::string::npos);
  CHECK(h2.find("<th>task</th>") == std::string::npos);
  CHECK(h2.find("carry no answer text") != std::string::npos);
  CHECK(h2.find("carry no task id") != std::string::npos);
  CHECK(h2.find("(not in these records)") != std::string::npos);
  CHECK(h2.size() < b.html.size());
}

TEST_CASE("report.html and report.md: numbers in percentage points with fixed precision", "[report][html]") {
  using detail::finding_interval_text;
  using detail::finding_magnitude_text;
  using detail::finding_value;
  CHECK(detail::points_text(0.982) == "+98.2 pts");
  CHECK(detail::points_text(-1.0) == "-100.0 pts");
  CHECK(detail::points_text(-0.0001) == "0.0 pts");
  CHECK(detail::points_text(std::nan("")) == "–");
  CHECK(detail::points_interval_text(0.951, 0.997) == "[95.1, 99.7] pts");
  CHECK(detail::points_interval_text(-1.0, -0.8897) == "[-100.0, -89.0] pts");
  CHECK(detail::p_value_text(0.007937) == "0.008");
  CHECK(detail::p_value_text(0.0002) == "<0.001");
  CHECK(detail::p_value_text(1.0) == "1.000");
  finding f = make_finding({finding_kind::need_kv_beats_no_comm});
  CHECK(finding_value(f, 0.982) == "+98.2 pts");
  CHECK(finding_interval_text(f, 0.951, 0.997) == "[95.1, 99.7] pts");
  CHECK(finding_magnitude_text(f, 0.123) == "12.3 pts");
  f = make_finding({finding_kind::cost_relay_pays_on_link, {.link = "pcie4"}});
  CHECK(finding_value(f, 1.08e-3) == "1.08 ms");
  CHECK(finding_interval_text(f, 1.08e-3, 2.3e-3) == "[1.08, 2.30] ms");
  f = make_finding({finding_kind::noise_tolerance_sigma});
  CHECK(finding_value(f, 0.75) == "0.75 σ");
  f = make_finding({finding_kind::drift_tolerance_steps});
  CHECK(finding_value(f, 300.0) == "300 steps");
  f = make_finding({finding_kind::mapped_retention});
  CHECK(finding_value(f, 0.932) == "93.2%");
  // the page: every paired finding's estimate and interval in points, every p-value fixed
  const auto& b = html_report();
  const auto& h = b.html;
  const std::regex pts_est("^[+-]?[0-9]+\\.[0-9] pts$|^–$");
  const std::regex pts_iv("^\\[(-?[0-9]+\\.[0-9]|–), (-?[0-9]+\\.[0-9]|–)\\] pts$");
  std::size_t checked = 0;
  for (const auto& g : b.report.findings) {
    if (g.id.rfind("need.", 0) != 0 && g.id.rfind("stale.", 0) != 0 && g.id.rfind("conflict.", 0) != 0)
      continue;
    INFO(g.id);
    const auto row = h.find("id=\"" + finding_anchor(g.id) + "\"");
    REQUIRE(row != std::string::npos);
    const std::string tr = h.substr(row, h.find("</tr>", row) - row);
    CHECK(std::regex_search(finding_value(g, g.estimate), pts_est));
    CHECK(tr.find(">" + finding_value(g, g.estimate) + "</td>") != std::string::npos);
    CHECK(std::regex_match(finding_interval_text(g, g.ci_low, g.ci_high), pts_iv));
    CHECK(tr.find(finding_interval_text(g, g.ci_low, g.ci_high)) != std::string::npos);
    ++checked;
  }
  CHECK(checked >= 8);
  // the paired-effects table: estimate, both intervals in points, p-values with three decimals
  const auto eff = h.find("<section id=\"effects\">");
  const std::string effects = h.substr(eff, h.find("</section>", eff) - eff);
  for (const auto& e : b.report.core.effects) {
    INFO(e.id);
    CHECK(effects.find(">" + detail::points_text(e.estimate) + "</td>") != std::string::npos);
    CHECK(effects.find(">" + detail::points_interval_text(e.verdict_low, e.verdict_high) + "</td>") !=
          std::string::npos);
  }
  const std::regex bare_fraction(">-?0\\.[0-9]{4,}</td>");  // e.g. 0.007937: none left
  CHECK_FALSE(std::regex_search(effects, bare_fraction));
  // report.md: the findings, the paired effects and the monitors in points too (report.json keeps fractions)
  const auto md = report_markdown(b.report);
  for (const auto& g : b.report.findings) {
    INFO(g.id);
    CHECK(md.find("| " + finding_value(g, g.estimate) + " | " +
                  finding_interval_text(g, g.ci_low, g.ci_high) + " | ") != std::string::npos);
  }
  for (const auto& e : b.report.core.effects) {
    INFO(e.id);
    CHECK(md.find(" | " + detail::points_text(e.estimate) + " | " +
                  detail::points_interval_text(e.ci_low, e.ci_high) + " | " +
                  detail::points_interval_text(e.verdict_low, e.verdict_high) + " | " +
                  detail::p_value_text(e.p_value) + " | ") != std::string::npos);
  }
  const auto j = report_json(b.report);
  CHECK(j.at("effects").as_array()[0].at("estimate").as_number() == b.report.core.effects[0].estimate);
  // finding ids wrap only after a dot: no break-all, each part on one line
  CHECK(h.find("break-all") == std::string::npos);
  CHECK(h.find("code.fid>span{white-space:nowrap}") != std::string::npos);
  CHECK(h.find("<span>need.</span><wbr><span>kv_beats_no_comm</span>") != std::string::npos);
}

TEST_CASE("report.html and report.md: the More sections are one model, tables in HTML, Markdown in report.md",
          "[report][html]") {
  const auto& b = html_report();
  const auto& h = b.html;
  const double margin = b.report.options.equivalence_margin;
  const auto at = h.find("<section id=\"more\">");
  REQUIRE(at != std::string::npos);
  const std::string more = h.substr(at);
  CHECK(more.find("<pre") == std::string::npos);  // no preformatted Markdown without html_options::markdown
  const auto md = report_markdown(b.report);
  std::vector<report_section> sections{detail::relay_failures_section(b.report.core, margin),
                                       detail::gate_section(b.report)};
  if (auto s = detail::messages_section(b.report.core.messages, margin)) sections.push_back(*s);
  if (auto s = detail::mapped_section(b.report.core.mapped, margin)) sections.push_back(*s);
  for (const auto& s : sections) {
    INFO(s.id);
    CHECK(more.find("<section id=\"" + s.id + "\"><h3>") != std::string::npos);
    CHECK(md.find(markdown_of(s)) != std::string::npos);  // report.md writes the same model
  }
  // the relay-failure contrasts: a table row each, labels escaped, points in numeric cells
  std::size_t rows = 0;
  for (const auto* k : {&b.report.core.stale.kv_vs_text, &b.report.core.conflict.kv_vs_no_comm}) {
    if (!k->estimable()) continue;
    ++rows;
    CHECK(more.find("<td>" + detail::html_escape(k->treated) + " − " + detail::html_escape(k->control) +
                    "</td><td class=\"n\" data-v=\"" + std::to_string(k->n_pairs) + "\">") !=
          std::string::npos);
    CHECK(more.find(">" + format_number(k->estimate, {.spec = "{:+.1f}", .scale = 100.0}) + "</td>") !=
          std::string::npos);
  }
  CHECK(rows == 2);
  // the drift figure sits inside its section; the gate's population and model are text, not Markdown
  const auto rf = more.find("<section id=\"relay-failures\">");
  if (b.report.core.drift.tolerance.curve.size() >= 2)
    CHECK(more.find("<figure id=\"drift_response.svg\">", rf) < more.find("</section>", rf));
  CHECK(more.find("kv\\_full") == std::string::npos);
  CHECK(more.find("\\(") == std::string::npos);
  // what the engine could not run or measure: one model section, after the tables in report.html and
  // at the end of report.md, its data escaped in both; none without an engine name
  CHECK_FALSE(detail::unavailable_section(b.report, b.records).has_value());
  audit_report r = b.report;
  r.options.engine = "x<y>";
  r.options.arms_unavailable = {{"kv_layers_0", "partial_layer_import: the engine imports whole caches"}};
  const auto u = detail::unavailable_section(r, b.records);
  REQUIRE(u.has_value());
  const std::string h2 = report_html(r, b.records, b.svgs, {});
  CHECK(h2.find(html_of(*u)) == std::string::npos);  // level 3 inside "More"
  auto u3 = *u;
  u3.level = 3;
  const auto u_at = h2.find(html_of(u3));
  REQUIRE(u_at != std::string::npos);
  CHECK(h2.find("<section id=\"gate\">") < u_at);
  CHECK(h2.find("Unavailable on this engine (x&lt;y&gt;)") != std::string::npos);
  CHECK(h2.find("<code>kv_layers_0</code>") != std::string::npos);
  CHECK(h2.find("<pre>") == std::string::npos);  // no Markdown text inside the page
  const auto u_md = markdown_of(*u);
  CHECK(u_md.find("## Unavailable on this engine (x") != std::string::npos);
  CHECK(u_md.find("<y>") == std::string::npos);  // data escaped
  CHECK(u_md.find("partial\\_layer\\_import") != std::string::npos);
}

TEST_CASE("report.html and report.md: accuracy, effects, noise, frontier, demonstrations are one model",
          "[report][html]") {
  const auto& b = html_report();
  const auto& h = b.html;
  const auto md = report_markdown(b.report);
  std::vector<report_section> sections{detail::accuracy_section(b.report), detail::effects_section(b.report),
                                       detail::noise_section(b.report), detail::frontier_section(b.report),
                                       detail::demonstrations_section(b.report)};
  if (auto s = detail::cate_section(b.report)) sections.push_back(*s);
  if (auto s = detail::warnings_section(b.report)) sections.push_back(*s);
  REQUIRE(sections.size() >= 6);  // the simulated audit has CATE estimates
  // the accuracy table's regime column sorts by regime rank (need, no_need, stale, conflict), not by name
  CHECK(h.find("<td data-v=\"0\">need</td>") != std::string::npos);
  // the title and meta paragraph open both files
  const report_section title = detail::title_section(b.report);
  CHECK(md.rfind(markdown_of(title), 0) == 0);
  CHECK(h.find(html_of(title)) != std::string::npos);
  CHECK(
      h.find(
          "<section><h1>latentaudit report: when does latent communication pay?</h1>\n<p class=\"meta\">") !=
      std::string::npos);
  for (const auto& s : sections) {
    INFO(s.id);
    CHECK(md.find(markdown_of(s)) != std::string::npos);  // report.md writes the model as it is
    const auto at = h.find("<section id=\"" + s.id + "\">");
    REQUIRE(at != std::string::npos);
    const std::string sec = h.substr(at, h.find("</section>", at) - at);
    for (const auto& block : s.blocks)  // report.html writes the same tables (the accuracy table's
      if (const auto* t = std::get_if<report_table>(&block); t != nullptr && s.id != "accuracy")
        CHECK(sec.find(html_of(*t)) != std::string::npos);  // arms are links there: checked below
  }
  // report.md's effects table has report.html's regime column; p-values below 0.001 read "<0.001"
  // and keep their value for sorting
  CHECK(md.find("| contrast | regime | pairs | items | estimate |") != std::string::npos);
  const auto& e = b.report.core.effects.front();
  CHECK(md.find("| " + detail::markdown_text(e.id) + " | " + detail::markdown_text(e.regime) + " | " +
                std::to_string(e.n_pairs) + " | ") != std::string::npos);
  std::size_t small = 0;
  for (const auto& x : b.report.core.effects)
    if (x.p_value < 0.001) {
      ++small;
      CHECK(h.find(fmt::format("data-v=\"{:.17g}\">&lt;0.001</td>", x.p_value)) != std::string::npos);
    }
  CHECK(small > 0);
  // the accuracy table: every arm of the records linked to the drill-down, sorted as report.md's
  const auto acc = h.find("<section id=\"accuracy\">");
  const std::string accuracy = h.substr(acc, h.find("</section>", acc) - acc);
  for (const auto& a : b.report.core.arms)
    if (a.regime != "all")
      CHECK(accuracy.find("<tr><td data-v=\"" + std::to_string(detail::regime_rank(a.regime)) + "\">" +
                          detail::html_escape(a.regime) + "</td><td><a href=\"#tasks\"><code>" +
                          detail::html_escape(a.arm) + "</code></a></td>") != std::string::npos);
  // the demonstrations in report.html too: the production log and the rollout with their methods
  const auto dem = h.find("<section id=\"demonstrations\"><h3>");
  REQUIRE(dem != std::string::npos);
  if (b.report.observational.log.missing.empty())
    CHECK(h.find("<td>nearest-neighbour matching</td>", dem) != std::string::npos);
  else
    CHECK(h.find("Production log: not run (", dem) != std::string::npos);
}

TEST_CASE(
    "report.html and report.md: a policy line is a condition when a rule of it rests on a risk shown present",
    "[report][html]") {
  const auto& b = html_report();
  auto r = b.report;
  r.decision.verdict = decision_verdict::relay_with_conditions;
  r.decision.relay_allowed = true;
  r.decision.policy = {
      "relay only between identical model fingerprints (drift.tolerance_steps)",
      "relay only where B needs A (no_need.kv_changes_accuracy)",
      "relay only fresh caches (stale.kv_worse_than_text)",
      "do not relay on conflict "
      "(conflict.kv_worse_than_no_comm)",
      "send text from sender cc: cache map m1 is not shown non-inferior (mapped.retention no; "
      "stale.kv_worse_than_text)"};
  // the typed link: each line's rules name the check they rest on; the line's prose plays no part (the
  // last line names a risk finding but rests on a map check, which is no risk check)
  r.decision.rules.clear();
  for (const char* check : {"drift", "no_need_harm", "freshness", "conflict", "map_cc"})
    r.decision.rules.push_back({.line = r.decision.rules.size(), .check = check});
  auto risk = [](const char* name, verdict v) {
    checklist_item c{.name = name, .passed = v, .reason = "x"};
    c.risk = true;
    return c;
  };
  r.decision.checklist = {risk("no_need_harm", verdict::no),
                          risk("freshness", verdict::no),
                          risk("conflict", verdict::no),
                          risk("drift", verdict::yes),
                          {.name = "map_cc", .passed = verdict::no, .reason = "x"}};
  const auto h = report_html(r, b.records, b.svgs);
  CHECK(html_problem(h).empty());
  CHECK(h.find("Serving policy: 5 rules, 3 of them conditions (a risk shown present)") != std::string::npos);
  const auto ol = h.find("<ol class=\"policy\">");
  REQUIRE(ol != std::string::npos);
  const std::string list = h.substr(ol, h.find("</ol>", ol) - ol);
  CHECK(test::count_of(list, "<li>") == 5);
  CHECK(test::count_of(list, "condition</span>") == 3);
  CHECK(list.find("mapped.retention no; stale.kv_worse_than_text) <span") == std::string::npos);
  // the checklist marks the three risks shown present, not the map check shown "no"
  CHECK(test::count_of(h, "<span class=\"lbl\">a policy condition</span>") == 3);
  // report.md: the same list, numbered, the same count
  const std::string md = report_markdown(r);
  CHECK(md.find("### Serving policy: 5 rules, 3 of them conditions (a risk shown present)") !=
        std::string::npos);
  CHECK(md.find("2. relay only where B needs A \\(no\\_need.kv\\_changes\\_accuracy\\) — condition\n") !=
        std::string::npos);
  CHECK(md.find("5. send text from sender cc") != std::string::npos);
  CHECK(md.find("stale.kv\\_worse\\_than\\_text\\)\n") != std::string::npos);  // line 5: no badge
}

TEST_CASE("report.html: the drill-down shows each trial's query and accepted answers from the task file",
          "[report][html]") {
  const auto& b = html_report();
  // the task file of the records: line i = item i, id "task-<i>", one query per seed; item 2's
  // query is hostile text, item 4's a long token query, item 5's id differs from the records'
  std::size_t items = 0;
  for (const auto& r : b.records) items = std::max<std::size_t>(items, r.item + 1);
  task_file tf;
  tf.path = "tasks.jsonl";
  for (std::size_t i = 0; i < items; ++i) {
    task_entry t;
    t.id = i == 5 ? "renamed" : "task-" + std::to_string(i);
    for (int q = 0; q < 3; ++q) {
      task_query tq;
      tq.query.text = "what is key " + std::to_string(i) + "." + std::to_string(q) + "?";
      tq.answers = {task_text{.text = "v" + std::to_string(i)}, task_text{.text = "V" + std::to_string(i)}};
      t.queries.push_back(std::move(tq));
    }
    if (i == 2) t.queries[0].query.text = "<script>alert(1)</script> & more";
    if (i == 4) {
      t.queries[0].query.text.reset();
      for (int k = 0; k < 20; ++k) t.queries[0].query.tokens.push_back(k + 100);
    }
    tf.tasks.push_back(std::move(t));
  }
  html_options o{.max_item_rows = 100000};
  o.tasks = &tf;
  const auto h = report_html(b.report, b.records, b.svgs, o);
  CHECK(html_problem(h).empty());
  CHECK(h.find("<th>query text</th><th>accepted answers</th>") != std::string::npos);
  CHECK(h.find("<td>what is key 3.1?</td><td>v3 | V3</td>") != std::string::npos);
  CHECK(h.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more") != std::string::npos);
  CHECK(h.find("<script>alert(1)") == std::string::npos);
  CHECK(h.find("tokens 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 … (20 ids)") !=
        std::string::npos);
  CHECK(h.find("come from the task file tasks.jsonl") != std::string::npos);
  // item 5's records name task-5, the file's line 5 is "renamed": not shown, and counted
  std::size_t item5 = 0;
  for (const auto& r : b.records) item5 += r.item == 5 ? 1 : 0;
  CHECK(h.find(std::to_string(item5) + " trial(s) match no line or query of it") != std::string::npos);
  CHECK(h.find("what is key 5.") == std::string::npos);
  // without the file: the note the caller gives
  html_options n;
  n.tasks_note = "the task file 't.jsonl' that design.json names has changed since the audit";
  const auto h2 = report_html(b.report, b.records, b.svgs, n);
  CHECK(h2.find("<th>query text</th>") == std::string::npos);
  CHECK(h2.find("not in the records: the task file &#39;t.jsonl&#39; that design.json names has changed") !=
        std::string::npos);
}

TEST_CASE(
    "report.md: polarity column, labelled intervals, sorted accuracy, links to report.html, written beside "
    "it",
    "[report][html]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("latentaudit_html_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto recs = html_records();
  const auto r = run_audit_report(recs, {.bootstrap_replicates = 200, .seed = 5}, dir);
  auto slurp = [&](const char* name) {
    std::ifstream in(dir / name, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string html = slurp("report.html"), md = slurp("report.md");
  CHECK(html_problem(html).empty());
  for (const auto& f : r.findings)
    CHECK(html.find("id=\"" + finding_anchor(f.id) + "\"") != std::string::npos);
  CHECK(std::filesystem::file_size(dir / "latency_receiver.svg") > 100);
  // report.md: "for relay", the interval's level and method, one short method cell linking report.html
  CHECK(
      md.find("| id | for relay | verdict | statement | estimate | interval | interval is | detectable | n | "
              "method |") != std::string::npos);
  CHECK(md.find("| `stale.kv_worse_than_text` | against | yes |") != std::string::npos);
  CHECK(md.find("90% verdict interval (betting over items)") != std::string::npos);
  CHECK(md.find("95% bootstrap CI | 90% verdict interval (betting)") != std::string::npos);
  CHECK(md.find("(report.html#f-need.kv_beats_no_comm)") != std::string::npos);
  // accuracy by arm: sorted by regime (need, no_need, stale, conflict), then arm
  const auto acc = md.find("## Accuracy by arm");
  const auto acc_end = md.find("\n## ", acc + 1);
  std::vector<std::pair<int, std::string>> keys;
  std::istringstream rows(md.substr(acc, acc_end - acc));
  for (std::string line; std::getline(rows, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, std::regex("^\\| (need|no\\\\_need|stale|conflict) \\| ([^|]+) \\|")))
      continue;
    const std::string rg = m[1];
    std::string arm = m[2];
    arm.erase(std::remove(arm.begin(), arm.end(), '\\'), arm.end());  // md_escape's backslashes
    keys.emplace_back(rg == "need" ? 0 : rg == "stale" ? 2 : rg == "conflict" ? 3 : 1, arm);
  }
  CHECK(keys.size() > 12);
  CHECK(std::is_sorted(keys.begin(), keys.end()));
  // every Markdown list starts after a blank line (or continues a list)
  std::istringstream lines(md);
  std::string prev = "";
  int bad = 0;
  for (std::string line; std::getline(lines, line); prev = line)
    if (line.rfind("- ", 0) == 0 && !prev.empty() && prev.rfind("- ", 0) != 0) {
      ++bad;
      UNSCOPED_INFO("list after: " << prev.substr(0, 100));
    }
  CHECK(bad == 0);
  // the policy's rules read as written ("cache_age_versions >= 1"), no "&gt;" or "&amp;" in the raw file
  audit_report d;
  d.decision.policy = {"relay only fresh caches (cache_age_versions >= 1 & <tag>)"};
  const auto policy = markdown_of(detail::decision_section(d));
  CHECK(policy.find("1. relay only fresh caches \\(cache\\_age\\_versions >= 1 \\& &lt;tag>\\)") !=
        std::string::npos);
  CHECK(policy.find("&gt;") == std::string::npos);
  CHECK(policy.find("&amp;") == std::string::npos);
  std::filesystem::remove_all(dir);
}
