// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/detail/decision_sections.hpp (header-only mode includes this file;
// compiled mode compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_DETAIL_IMPL_DECISION_SECTIONS_INL_HPP
#define LATENTAUDIT_REPORT_DETAIL_IMPL_DECISION_SECTIONS_INL_HPP

#include "../../../core/detail/internal_header_check.hpp"

#include "../decision_sections.hpp"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "../../../core/json.hpp"
#include "../../html.hpp"
#include "../../report.hpp"

namespace latentaudit::detail {

namespace {
inline report_column dec_col(std::string header, bool numeric = false) {
  return {std::move(header), {}, numeric};
}
inline report_cell dec_count(std::size_t n) {
  return report_cell::number(static_cast<double>(n), {.spec = "{}"});
}
// A polarity as a badge ("not shown" in the tone "not-shown").
inline report_span dec_badge(relay_polarity p) {
  std::string tone(relay_polarity_name(p));
  for (char& ch : tone)
    if (ch == ' ') ch = '-';
  return report_span::badge(relay_polarity_name(p), std::move(tone));
}
// "a, b, c" of `names`, as data.
inline std::string dec_list(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& c : names) list.append(list.empty() ? "" : ", ").append(c);
  return list;
}
// Whether the checklist item is a risk check shown present: a condition of the policy.
inline bool dec_risk_present(const checklist_item& c) { return c.risk && c.passed == verdict::no; }
// Whether line `line` of the policy is a condition: one of its rules rests on a risk check shown present.
inline bool dec_condition_line(const audit_decision& d, std::size_t line) {
  for (const auto& u : d.rules)
    if (u.line == line)
      for (const auto& c : d.checklist)
        if (c.name == u.check && dec_risk_present(c)) return true;
  return false;
}

// The verdict box: gate, unverified risks, headline, summary, policy, link; returns how many blocks.
inline std::size_t dec_box(const audit_report& r, std::vector<report_block>& b) {
  const audit_decision& D = r.decision;
  const std::size_t first = b.size();
  b.emplace_back(report_paragraph{
      {report_span::prose("Relay gate field "), report_span::code("decision.relay_allowed"),
       report_span::prose(" = "), report_span::code(D.relay_allowed ? "true" : "false"),
       report_span::prose(D.relay_allowed ? " — a pipeline may let relay traffic through."
                                          : " — a pipeline must not let relay traffic through.")},
      false,
      "gate"});
  if (!D.relay_allowed && is_relay_verdict(D.verdict))
    b.emplace_back(report_paragraph{
        {report_span::strong("Not a relay verdict:"), report_span::prose(" the risk check(s) "),
         report_span::data(dec_list(D.unverified)),
         report_span::prose(" were not tested or stayed inconclusive ("),
         report_span::code("decision.relay_allowed"), report_span::prose(" is false).")},
        false,
        "bad"});
  else if (!D.unverified.empty())
    b.emplace_back(report_paragraph{{report_span::prose("Unverified risk checks: "),
                                     report_span::data(dec_list(D.unverified)), report_span::prose(".")},
                                    true});
  for (const auto& h : r.core.headline) {
    report_span s = report_span::strong(markdown_text(h));
    b.emplace_back(report_paragraph{{std::move(s)}});
  }
  b.emplace_back(report_paragraph{{report_span::data(D.summary)}});
  if (!D.policy.empty()) {
    std::size_t conditions = 0;
    report_list l{{}, true, "policy"};
    for (std::size_t i = 0; i < D.policy.size(); ++i) {
      report_text item{report_span::data(D.policy[i])};
      if (dec_condition_line(D, i)) {
        ++conditions;
        item.push_back(report_span::prose(" — "));
        item.push_back(report_span::badge("condition", "against"));
      }
      l.items.push_back(std::move(item));
    }
    b.emplace_back(
        report_heading{{report_span::prose(fmt::format(
                           "Serving policy: {} rule{}{}", D.policy.size(), D.policy.size() == 1 ? "" : "s",
                           conditions == 0 ? std::string()
                                           : fmt::format(", {} of them condition{} (a risk shown present)",
                                                         conditions, conditions == 1 ? "" : "s")))},
                       {},
                       3});
    b.emplace_back(std::move(l));
  }
  if (!D.link.empty())
    b.emplace_back(report_paragraph{
        {report_span::prose("Cost check link: "), report_span::data(D.link), report_span::prose(".")}, true});
  return b.size() - first;
}

// The policy's rules (report.json decision.rules) and their replay on the audit's own requests
// (decision.policy_replay); nothing without rules. The finding's value and interval are written as
// the findings table writes them when the report holds it, else as numbers.
inline void dec_rules(const audit_report& r, std::vector<report_block>& b) {
  const auto& rules = r.decision.rules;
  if (rules.empty()) return;
  const policy_replay& pr = r.decision.replay;
  b.emplace_back(report_heading{{report_span::prose(fmt::format("Serving policy as rules: {} rule{}",
                                                                rules.size(), rules.size() == 1 ? "" : "s"))},
                                "policy-rules",
                                3});
  report_table t;
  t.sortable = false;
  report_text intro = {
      report_span::prose("report.json "),
      report_span::code("decision.rules"),
      report_span::prose(": a serving stack evaluates them in order with "),
      report_span::code("relay_policy"),
      report_span::prose(" (C++), "),
      report_span::code("la.RelayPolicy"),
      report_span::prose(" (Python) or "),
      report_span::code("latentaudit policy"),
      report_span::prose("; the first rule whose conditions all hold fires (docs/serving.md). Each rests "
                         "on a check of the checklist and the finding behind it (its interval as in "
                         "the findings table).")};
  b.emplace_back(report_paragraph{std::move(intro), true});
  t.columns = {dec_col("order", true), dec_col("condition"),
               dec_col("action"),      dec_col("rests on"),
               dec_col("finding"),     dec_col("estimate [interval]"),
               dec_col("verdict"),     dec_col("replayed requests", true)};
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const policy_rule& u = rules[i];
    std::string when;
    for (const auto& k : u.when)
      when += (when.empty() ? "" : " and ") + k.feature + " " + k.op + " " +
              (k.other.empty() ? write_json(k.value) : k.other);
    const finding* f = u.finding.empty() ? nullptr : find_finding(r.findings, u.finding);
    report_text action{report_span::prose(std::string(relay_action_name(u.action)))};
    if (!u.map.empty()) {
      action.push_back(report_span::prose(" "));
      action.push_back(report_span::code(u.map));
    }
    const std::string value =
        !std::isfinite(u.estimate) ? std::string("–")
        : f != nullptr ? finding_value(*f, u.estimate) + " " + finding_interval_text(*f, u.lo, u.hi)
                       : fmt::format("{} [{}, {}]", num(u.estimate), num(u.lo), num(u.hi));
    t.rows.push_back(
        {dec_count(i),
         when.empty() ? report_cell::words("always") : report_cell::of_text({report_span::code(when)}),
         report_cell::of_text(std::move(action)), report_cell::label(u.check),
         u.finding.empty()
             ? report_cell::none()
             : report_cell::code_id(u.finding, f != nullptr ? finding_anchor(u.finding) : std::string()),
         report_cell::words(value), u.verdict.empty() ? report_cell::none() : report_cell::words(u.verdict),
         i < pr.by_rule.size() && pr.note.empty() ? dec_count(pr.by_rule[i]) : report_cell::none()});
  }
  t.notes.push_back(
      pr.note.empty()
          ? report_text{report_span::prose(fmt::format(
                "Policy replay on the audit's own requests (one per (item, seed) unit and sender "
                "arm, answered by the record of the arm the rules choose): {} requests, {} relayed "
                "(relay share {}), accuracy {} ({} of {} resolved requests correct).",
                pr.requests, pr.relayed, num(pr.relay_share), num(pr.accuracy), pr.correct, pr.resolved))}
          : report_text{report_span::prose("Policy replay: not replayed ("), report_span::data(pr.note),
                        report_span::prose(").")});
  b.emplace_back(std::move(t));
}

// The checklist, with what each outcome means for relay.
inline report_table dec_checklist(const audit_decision& D) {
  report_table t;
  t.sortable = false;
  t.caption = {report_span::prose(
      "Each check in the decision's fixed order; \"for relay\" says what its outcome means for relaying the "
      "cache (on a risk check, \"against\" becomes a condition of the policy when the decision relays with "
      "conditions).")};
  t.columns = {dec_col("check"), dec_col("passed"), dec_col("for relay"), dec_col("reason")};
  for (const auto& c : D.checklist) {
    const auto pol = c.passed == verdict::yes  ? relay_polarity::supports
                     : c.passed == verdict::no ? relay_polarity::against
                                               : relay_polarity::not_shown;
    report_text rel{dec_badge(pol)};
    if (dec_risk_present(c) && D.relay_allowed) {
      rel.push_back(report_span::prose(" — "));
      rel.push_back(report_span::small("a policy condition"));
    }
    t.rows.push_back({report_cell::label(c.name), report_cell::of_verdict(c.passed),
                      report_cell::of_text(std::move(rel)), report_cell::label(c.reason)});
  }
  return t;
}

// The sequential monitors replayed on the need-regime items.
inline report_table dec_monitors(const audit_decision& D) {
  report_table t;
  t.sortable = false;
  t.caption = {
      report_span::prose("Sequential monitor (item-level betting, always-valid) replayed over the "
                         "need-regime items in id order, "
                         "one observation per item (its mean difference over seeds):")};
  t.columns = {dec_col("contrast"), dec_col("items", true), dec_col("mean", true), dec_col("always-valid CI"),
               dec_col("stops at item")};
  for (const auto& mo : D.monitors)
    t.rows.push_back(
        {report_cell::label(mo.contrast), dec_count(mo.result.n),
         report_cell::of_text({report_span::prose(points_text(mo.result.mean))}, mo.result.mean),
         report_cell::words(mo.result.ready ? points_interval_text(mo.result.ci_low, mo.result.ci_high)
                                            : "not ready"),
         report_cell::words(mo.stop_at ? std::to_string(*mo.stop_at) : "never")});
  return t;
}

// The relay switch replayed with a change point.
inline report_text dec_switch(const switch_replay& s) {
  if (!s.available)
    return {report_span::prose("Relay switch: "), report_span::data(s.note), report_span::prose(".")};
  report_text t{report_span::prose(fmt::format(
      "Relay switch (one-sided betting, always valid) replayed over {} items ({} stale, {} conflict): ",
      s.items, s.stale_items, s.conflict_items))};
  if (s.off_at) {
    t.push_back(report_span::prose("turned relay "));
    t.push_back(report_span::strong("off"));
    t.push_back(report_span::prose(
        fmt::format(" at item {} (change point after item {}; against ", *s.off_at, s.change_point)));
    t.push_back(report_span::data(s.off_reason));
    t.push_back(report_span::prose(")"));
  } else {
    t.push_back(report_span::prose(fmt::format(
        "did not turn relay off within {} items (change point after item {})", s.items, s.change_point)));
  }
  t.push_back(report_span::prose(". Order: "));
  t.push_back(report_span::data(s.note));
  t.push_back(report_span::prose(". Guarantee: "));
  t.push_back(report_span::data(s.guarantee));
  t.push_back(report_span::prose("."));
  return t;
}
}  // namespace

LATENTAUDIT_INLINE report_section decision_section(const audit_report& r) {
  const audit_decision& D = r.decision;
  report_section s;
  s.id = "decision";
  s.title = std::string("Decision: ") + decision_verdict_name(D.verdict);
  s.heading = {report_span::prose("Decision: "), report_span::strong(decision_verdict_name(D.verdict))};
  s.box_style = D.relay_allowed ? "decision allowed" : "decision blocked";
  s.boxed = dec_box(r, s.blocks);
  dec_rules(r, s.blocks);
  if (!r.core.input_warnings.empty()) {
    s.blocks.emplace_back(report_heading{{report_span::prose("Input")}, {}, 3});
    report_list l;
    for (const auto& w : r.core.input_warnings) l.items.push_back({report_span::data(w)});
    s.blocks.emplace_back(std::move(l));
  }
  s.blocks.emplace_back(report_heading{{report_span::prose("Checklist")}, {}, 3});
  // a table's caption as a note above it (report.md: the same paragraph)
  const auto with_note = [&s](report_table t) {
    s.blocks.emplace_back(report_paragraph{std::move(t.caption), true});
    t.caption.clear();
    s.blocks.emplace_back(std::move(t));
  };
  with_note(dec_checklist(D));
  if (!D.monitors.empty()) with_note(dec_monitors(D));
  s.blocks.emplace_back(report_paragraph{dec_switch(D.relay_switch)});
  return s;
}

LATENTAUDIT_INLINE report_section findings_section(const audit_report& r) {
  const double alpha = r.options.alpha;
  report_section s;
  s.id = "findings";
  s.title = "Findings";
  s.blocks.emplace_back(report_paragraph{
      {report_span::prose(fmt::format(
          "\"for relay\": what the verdict means for relaying the cache (supports / against / not shown; "
          "context: descriptive). The paired contrasts' interval is the {:g}% verdict interval (betting over "
          "items) the verdict reads, wider than the {:g}% bootstrap CI of the paired-effects table; cost "
          "findings are receiver milliseconds saved. \"detectable\": how far past its threshold the true "
          "difference must lie for the finding to show its claim with 80 % power at its size (or the margin "
          "its absence claim reaches), an approximation (docs/audit-report.md). The method's full text: "
          "report.html (linked) and report.json.",
          100.0 * (1.0 - 2.0 * alpha), 100.0 * (1.0 - alpha)))},
      true});
  report_table t;
  t.columns = {dec_col("id"),          dec_col("for relay"),        dec_col("verdict"),
               dec_col("statement"),   dec_col("estimate", true),   dec_col("interval", true),
               dec_col("interval is"), dec_col("detectable", true), dec_col("n", true),
               dec_col("method")};
  report_list details;
  for (const auto& f : r.findings) {
    const std::string anchor = finding_anchor(f.id);
    report_cell id = report_cell::code_id(f.id);
    id.breakable = true;
    report_text iv{report_span::prose(finding_interval_text(f, f.ci_low, f.ci_high))};
    t.rows.push_back(
        {std::move(id), report_cell::of_text({dec_badge(finding_polarity(f))}),
         report_cell::of_verdict(f.answer), report_cell::label(finding_statement(f)),
         report_cell::of_text({report_span::prose(finding_value(f, f.estimate))}, f.estimate),
         report_cell::of_text(std::move(iv), f.ci_low), report_cell::words(finding_interval_label(f, alpha)),
         report_cell::of_text({report_span::prose(finding_magnitude_text(f, f.minimum_detectable_effect))},
                              f.minimum_detectable_effect),
         dec_count(f.n),
         report_cell::of_details({report_span::data(finding_method_short(f))},
                                 {{report_span::prose("Method: "), report_span::data(f.method)}}, anchor)});
    t.row_ids.push_back(anchor);
    if (!f.detail.empty())
      details.items.push_back(
          {report_span::code(f.id), report_span::prose(": "), report_span::data(f.detail)});
  }
  s.blocks.emplace_back(std::move(t));
  s.blocks.emplace_back(std::move(details));
  return s;
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_REPORT_DETAIL_IMPL_DECISION_SECTIONS_INL_HPP
