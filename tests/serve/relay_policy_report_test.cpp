// SPDX-License-Identifier: MIT
// report.md and report.html show the policy's rules and their replay (issue 54: report.json had them
// alone): one table row per rule in evaluation order — its conditions, action, the check and finding
// it rests on with the finding's interval, the requests of the replay it decided — and the replay's
// requests, relay share and accuracy, each equal to report.json's (synthetic clustered records with a
// cache map, seed 5401: the path "relay with conditions").
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "latentaudit/config.hpp"  // before the internal detail/markdown_text.hpp
#include "latentaudit/report/detail/markdown_text.hpp"
#include "latentaudit/report/html.hpp"
#include "latentaudit/report/report.hpp"
#include "latentaudit/serve/relay_policy.hpp"
#include "report/decision_mc.hpp"
#include "report/relay_failure_sim.hpp"

namespace la = latentaudit;

TEST_CASE("report.md and report.html: the decision's rules and the policy replay (seed 5401)",
          "[serve][relay_policy][report]") {
  auto d = la::test::decision_base_design();
  d.mapped_need = 0.99;
  const auto recs = la::test::simulate_relay_failure(d, 5401);
  const auto r = la::build_audit_report(recs, la::test::decision_mc_options());
  REQUIRE(la::report_json(r).at("decision").at("verdict").as_string() == "relay with conditions");
  const auto& rules = r.decision.rules;
  REQUIRE(rules.size() >= 4);
  const auto& pr = r.decision.replay;
  REQUIRE(pr.note.empty());
  const std::string md = la::report_markdown(r);
  const std::string html = la::report_html(r, recs, {});
  INFO(md.substr(md.find("Serving policy as rules"), 3000));
  CHECK(
      md.find("| order | condition | action | rests on | finding | estimate [interval] | verdict | replayed "
              "requests |") != std::string::npos);
  CHECK(html.find("id=\"policy-rules\"") != std::string::npos);
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const auto& u = rules[i];
    std::string when;
    for (const auto& c : u.when)
      when += (when.empty() ? "" : " and ") + c.feature + " " + c.op + " " +
              (c.other.empty() ? la::write_json(c.value) : c.other);
    // the row: order, condition, action (and map), check, finding
    // (a condition with < or > is escaped text rather than a code span: markdown_code)
    std::string row = "| " + std::to_string(i) + " | " +
                      (when.empty() ? "always" : la::detail::markdown_code(when)) + " | " +
                      std::string(la::relay_action_name(u.action));
    if (!u.map.empty()) row += " " + la::detail::markdown_code(u.map);
    row += " | " + la::detail::md_escape(u.check) + " | " +
           (u.finding.empty() ? "–" : la::detail::markdown_code(u.finding)) + " | ";
    INFO("rule " << i << ": " << row);
    CHECK(md.find(row) != std::string::npos);
    // the replay's count of this rule ends the row
    const auto at = md.find(row);
    if (at != std::string::npos) {
      const auto end = md.find('\n', at);
      CHECK(md.substr(at, end - at).ends_with("| " + std::to_string(pr.by_rule[i]) + " |"));
    }
    // the finding's interval as the findings table writes it
    for (const auto& f : r.findings)
      if (f.id == u.finding && std::isfinite(u.estimate)) {
        const std::string value =
            la::detail::finding_value(f, u.estimate) + " " + la::detail::finding_interval_text(f, u.lo, u.hi);
        CHECK(md.find(row + value + " | " + u.verdict + " |") != std::string::npos);
        CHECK(html.find(la::detail::html_escape(value)) != std::string::npos);
      }
    if (!when.empty())
      CHECK(html.find("<code>" + la::detail::html_escape(when) + "</code>") != std::string::npos);
  }
  const std::string replay =
      fmt::format("{} requests, {} relayed (relay share {}), accuracy {} ({} of {}", pr.requests, pr.relayed,
                  la::detail::num(pr.relay_share), la::detail::num(pr.accuracy), pr.correct, pr.resolved);
  CHECK(md.find(replay) != std::string::npos);
  CHECK(html.find(replay) != std::string::npos);
  // the numbers are report.json's
  const auto js = la::report_json(r).at("decision").at("policy_replay");
  CHECK(js.at("requests").as_number() == static_cast<double>(pr.requests));
  CHECK(js.at("relay_share").as_number() == pr.relay_share);
  // without rules, neither renderer writes the section
  auto none = r;
  none.decision.rules.clear();
  CHECK(la::report_markdown(none).find("Serving policy as rules") == std::string::npos);
  CHECK(la::report_html(none, recs, {}).find("id=\"policy-rules\"") == std::string::npos);
}
