// SPDX-License-Identifier: MIT
// The assembled report on real organism records (the planted truths end to end), on records that
// lack most arms (everything inconclusive, nothing thrown), the decision rule case by case, and
// the files run_audit_report writes.
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/report.hpp>
#include <latentaudit/report/detail/core_sections.hpp>
#include <latentaudit/report/detail/report_sections.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <variant>

#include "support/organism_records.hpp"
#include "support/sanitizer.hpp"
#include "support/synthetic_records.hpp"

using namespace latentaudit;

namespace {

// 120 items × 2 seeds × the 21 default arms on the organisms (about 5000 trials, ~2 s); 30 items
// under the sanitizer, where only the structural checks run (support/sanitizer.hpp).
constexpr std::uint64_t organism_items = test::full_or_sanitized<std::uint64_t>(120, 30);
const std::vector<trial_record>& organism_records() {
  static const std::vector<trial_record> records = testing::run_organism_records(404, organism_items, 2);
  return records;
}

std::map<std::string, const finding*> by_id(const std::vector<finding>& fs) {
  std::map<std::string, const finding*> m;
  for (const auto& f : fs) m[f.id] = &f;
  return m;
}

// Well-formed enough for a browser: one <svg> root with the namespace, balanced, no NaN/inf text.
void check_report_svg(const std::string& svg) {
  CHECK(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  CHECK(svg.find("</svg>") != std::string::npos);
  for (const char* bad : {"nan", "NaN", "inf"}) CHECK(svg.find(bad) == std::string::npos);
}

}  // namespace

TEST_CASE("report: the organism audit reaches every planted truth and decides to relay") {
  const auto& recs = organism_records();
  REQUIRE(recs.size() == organism_items * 2u * 21u);
  const auto r = build_audit_report(recs, {.bootstrap_replicates = 1000, .seed = 3});
  const auto f = by_id(r.findings);
  const std::map<std::string, verdict> planted = {
      {"need.text_beats_no_comm", verdict::yes},
      {"need.kv_beats_no_comm", verdict::yes},
      {"noise.tolerance_sigma", verdict::yes},
  };
  for (const auto& [id, v] : planted) {
    INFO(id << ": " << (f.count(id) ? f.at(id)->detail : std::string("missing")));
    REQUIRE(f.count(id) == 1);
    if (test::full_sample) CHECK(f.at(id)->answer == v);
  }
  // The observational coverage checks are demonstrations (true by construction), never findings.
  const auto demo = by_id(r.demonstrations);
  const std::map<std::string, verdict> demonstrated = {
      {"log.naive_covers_randomized", verdict::no}, {"log.matching_covers_randomized", verdict::yes},
      {"log.aipw_covers_randomized", verdict::yes}, {"rollout.before_after_covers_truth", verdict::no},
      {"rollout.did_covers_truth", verdict::yes},
  };
  CHECK(r.demonstrations.size() == demonstrated.size());
  for (const auto& [id, v] : demonstrated) {
    INFO(id << ": " << (demo.count(id) ? demo.at(id)->detail : std::string("missing")));
    REQUIRE(demo.count(id) == 1);
    if (test::full_sample) CHECK(demo.at(id)->answer == v);
    CHECK(f.count(id) == 0);
  }
  // About 60 need items: the 90 % betting interval cannot exclude a 5-point difference with so few
  // items (about 115 concordant items would), so the placebo, no-need and value findings are "no" or
  // "inconclusive" but never the wrong answer (the default 300-item design reaches them; docs).
  for (const char* id : {"need.deranged_beats_no_comm", "need.zeroed_beats_no_comm",
                         "need.cross_model_beats_no_comm", "no_need.kv_changes_accuracy"}) {
    REQUIRE(f.count(id) == 1);
    INFO(id << ": " << f.at(id)->detail);
    if (test::full_sample) CHECK(f.at(id)->answer != verdict::yes);
  }
  for (const char* id : {"need.kv_noninferior_to_text", "need.kv_equivalent_to_text"}) {
    REQUIRE(f.count(id) == 1);
    INFO(id << ": " << f.at(id)->detail);
    if (test::full_sample) CHECK(f.at(id)->answer != verdict::no);
  }
  // One cost statement plus the records' link; other links only where their verdict differs.
  CHECK(f.count("cost.relay_pays") == 1);
  CHECK(f.count(finding_id(finding_kind::cost_relay_pays_on_link, {.link = "pcie4"})) == 1);
  // The tolerance sigma lies where the organism's accuracy collapses (0.25 < sigma <= 1.5; 0.41
  // here since organism-a learned to recite on 2026-12-02, above 0.5 before: its cache is less
  // tolerant of noise, models/organism-a/README.md).
  if (test::full_sample) {
    CHECK(f.at("noise.tolerance_sigma")->estimate > 0.25);
    CHECK(f.at("noise.tolerance_sigma")->estimate <= 1.5);
    CHECK(std::string(latentaudit::decision_verdict_name(r.decision.verdict)) != "no communication needed");
  }
  CHECK(r.decision.checklist.size() == 11);
  REQUIRE_FALSE(r.decision.monitors.empty());
  if (test::full_sample)  // kv_full − no_comm ≈ 0.97: the monitor stops early
    CHECK(r.decision.monitors.front().stop_at.has_value());

  // report.json: every finding with the required fields, no NaN anywhere.
  const json_value j = report_json(r);
  std::string text;
  append_json(text, j, {.indent = -1});
  CHECK(text.find("nan") == std::string::npos);
  const auto& arr = j.at("findings").as_array();
  CHECK(arr.size() == r.findings.size());
  for (const auto& x : arr) {
    for (const char* k : {"id", "verdict", "estimate", "ci_low", "ci_high", "method", "n"})
      CHECK(x.contains(k));
    const std::string id = x.at("id").as_string();
    CHECK(id.rfind("log.", 0) == std::string::npos);
    CHECK(id.rfind("rollout.", 0) == std::string::npos);
  }
  CHECK(j.at("demonstrations").as_array().size() == r.demonstrations.size());
  const auto md = report_markdown(r);
  for (const char* h : {"## Decision", "## Findings", "## Accuracy by arm", "## Noise dose-response",
                        "## Cost-benefit by link", "## Per-request relay gate",
                        "## Teaching demonstrations — true by construction, not findings"})
    CHECK(md.find(h) != std::string::npos);
  const auto svgs = report_svgs(r);
  REQUIRE(svgs.size() == 5);  // forest, dose_response, frontier, latency_receiver, latency
  for (const auto& [name, svg] : svgs) {
    INFO(name);
    check_report_svg(svg);
  }
  // each file is its section's figure drawn from the data the model carries, and only that
  std::map<std::string, std::string> drawn;
  for (const auto& s : {detail::effects_section(r), detail::noise_section(r), detail::frontier_section(r),
                        detail::cost_section(r)})
    for (const auto& b : s.blocks)
      if (const auto* f = std::get_if<report_figure>(&b)) {
        INFO(f->file);
        REQUIRE_FALSE(std::holds_alternative<std::monostate>(f->plot));
        drawn[f->file] = *svg_of(f->plot);
      }
  CHECK(drawn.size() == svgs.size());
  for (const auto& [name, svg] : svgs) CHECK(drawn.at(name) == svg);
  CHECK_FALSE(svg_of(plot_spec{}).has_value());
  // the latency figures' bars are the records' stage means per arm (need regime, label order)
  std::map<std::string, std::pair<double, double>> b_prefill;  // arm: (sum, n)
  for (const auto& rec : recs)
    if (rec.regime == "need" || rec.regime.empty()) {
      b_prefill[rec.arm].first += rec.latency.b_prefill_s;
      b_prefill[rec.arm].second += 1;
    }
  REQUIRE(r.core.stage_latency.size() == b_prefill.size());
  const auto cost = detail::cost_section(r);
  const auto* bars = [&]() -> const bars_figure* {
    for (const auto& b : cost.blocks)
      if (const auto* f = std::get_if<report_figure>(&b); f != nullptr && f->file == "latency.svg")
        return std::get_if<bars_figure>(&f->plot);
    return nullptr;
  }();
  REQUIRE(bars != nullptr);
  REQUIRE(bars->bars.size() == b_prefill.size());
  auto it = b_prefill.begin();
  for (const auto& bar : bars->bars) {
    INFO(bar.label);
    CHECK(bar.label == it->first);
    REQUIRE(bar.segments.size() == latency_stage_names.size());
    CHECK(bar.segments[7].name == "B prefill");
    CHECK_THAT(bar.segments[7].value,
               Catch::Matchers::WithinRel(1e6 * it->second.first / it->second.second, 1e-12));
    ++it;
  }
}

TEST_CASE("report: records with two arms only give inconclusive findings, never an error") {
  test::synthetic_settings s;
  s.items = 30;
  s.arms = {"no_comm", "kv_full"};
  const auto recs = test::synthetic_records(s);
  const auto r = build_audit_report(recs, {.bootstrap_replicates = 200});
  const auto f = by_id(r.findings);
  // Without a text arm there is no positive control: kv_full beats no_comm, but the finding is gated.
  CHECK(f.at("need.text_beats_no_comm")->n == 0);
  CHECK(f.at("need.kv_beats_no_comm")->answer == verdict::inconclusive);
  CHECK(f.at("need.kv_beats_no_comm")->detail.find("would read yes") != std::string::npos);
  for (const char* id :
       {"need.kv_noninferior_to_text", "need.kv_equivalent_to_text", "need.deranged_beats_no_comm",
        "noise.tolerance_sigma", "cost.relay_pays_on_pcie4"}) {
    INFO(id);
    CHECK(f.at(id)->answer == verdict::inconclusive);
    CHECK(f.at(id)->n == 0);
  }
  CHECK(r.decision.verdict == latentaudit::decision_verdict::inconclusive);
  for (const auto& [name, svg] : report_svgs(r)) check_report_svg(svg);
}

namespace {

finding fnd(std::string id, verdict v, double est = 0.5, double lo = 0.4, double hi = 0.6) {
  return {.id = std::move(id), .answer = v, .estimate = est, .ci_low = lo, .ci_high = hi, .n = 10};
}

// The findings decide() reads: positive control, dependency, value (non-inferiority), cost, and
// (with `risks`) the five risk findings, each shown absent.
std::vector<finding> decision_findings(verdict dep, verdict value, verdict cost,
                                       verdict control = verdict::yes, bool risks = true) {
  std::vector<finding> fs = {fnd("need.text_beats_no_comm", control), fnd("need.kv_beats_no_comm", dep),
                             fnd("need.kv_noninferior_to_text", value, 0, -0.01, 0.01),
                             fnd("cost.relay_pays_on_pcie4", cost, 1e-4, 5e-5, 2e-4)};
  if (risks)
    for (const char* id :
         {"no_need.kv_changes_accuracy", "stale.kv_worse_than_text", "conflict.kv_worse_than_no_comm",
          "drift.tolerance_steps", "need.cross_model_beats_no_comm"})
      fs.push_back(fnd(id, verdict::no, 0.0, -0.02, 0.02));
  // the risk family's absence claims carry their one-sided p of "relay loses the margin" (decide()
  // adjusts them by Holm): small here, so each "no" stands
  for (auto& f : fs)
    if (f.id == "no_need.kv_changes_accuracy" || f.id == "stale.kv_worse_than_text" ||
        f.id == "conflict.kv_worse_than_no_comm")
      f.noninferiority_p = 1e-4;
  return fs;
}

// Replaces the finding `id` of fs (or appends it).
void set_finding(std::vector<finding>& fs, const finding& f) {
  for (auto& x : fs)
    if (x.id == f.id) {
      x = f;
      return;
    }
  fs.push_back(f);
}

const checklist_item& check_named(const audit_decision& d, const std::string& name) {
  for (const auto& c : d.checklist)
    if (c.name == name) return c;
  FAIL("no check " << name);
  return d.checklist.front();
}

trial_record same_model_kv() {
  trial_record kv;
  kv.arm = kv.arm_kind = "kv_full";
  kv.sender_fingerprint = kv.receiver_fingerprint = "m:1";
  return kv;
}

}  // namespace

TEST_CASE("decision: the checklist rule") {
  const auto make = [](verdict dep, verdict value, verdict cost) {
    return decision_findings(dep, value, cost);
  };
  const trial_record kv = same_model_kv();
  const std::vector<trial_record> same{kv};
  const auto relay = decide(make(verdict::yes, verdict::yes, verdict::yes), same);
  CHECK(relay.verdict == latentaudit::decision_verdict::relay);
  CHECK(relay.relay_allowed);
  CHECK(relay.unverified.empty());
  CHECK(relay.checklist.size() == 11);
  const char* names[] = {"positive_control", "dependency", "homogeneity", "value", "cost",
                         "no_need_harm",     "freshness",  "conflict",    "drift", "cross_model",
                         "monitor"};
  for (std::size_t i = 0; i < 11; ++i) CHECK(relay.checklist[i].name == names[i]);
  // no stale, conflict or drift findings: those checks are "not tested", and the verdict is
  // "relay (unverified)", which lets no traffic through and names them
  const auto untested =
      decide(decision_findings(verdict::yes, verdict::yes, verdict::yes, verdict::yes, false), same);
  CHECK(untested.verdict == latentaudit::decision_verdict::relay_unverified);
  CHECK_FALSE(untested.relay_allowed);
  CHECK(untested.unverified ==
        std::vector<std::string>{"no_need_harm", "freshness", "conflict", "drift", "cross_model"});
  CHECK(check_named(untested, "freshness").passed == verdict::inconclusive);
  CHECK(check_named(untested, "freshness").reason.find("not tested") != std::string::npos);
  CHECK(untested.summary.find("freshness, conflict, drift") != std::string::npos);
  // Dependency "no" while text beats no_comm: B needs A's information and only text carries it.
  CHECK(decide(make(verdict::no, verdict::yes, verdict::yes), same).verdict ==
        latentaudit::decision_verdict::text);
  CHECK(decide(make(verdict::yes, verdict::no, verdict::yes), same).verdict ==
        latentaudit::decision_verdict::text);
  CHECK(decide(make(verdict::yes, verdict::yes, verdict::no), same).verdict ==
        latentaudit::decision_verdict::text);
  CHECK(decide(make(verdict::yes, verdict::inconclusive, verdict::yes), same).verdict ==
        latentaudit::decision_verdict::inconclusive);
  auto other = kv;
  other.sender_fingerprint = "m:2";  // a same-model arm relaying a foreign cache breaks homogeneity
  const auto d = decide(make(verdict::yes, verdict::yes, verdict::yes), std::vector<trial_record>{other});
  CHECK(d.verdict == latentaudit::decision_verdict::inconclusive);
  CHECK(check_named(d, "homogeneity").passed == verdict::no);
  // The cost check follows the records' link.
  auto fast = kv;
  fast.link = "nvlink4";
  CHECK(check_named(decide(make(verdict::yes, verdict::yes, verdict::yes), std::vector<trial_record>{fast}),
                    "cost")
            .passed == verdict::inconclusive);
  CHECK(decide(make(verdict::yes, verdict::yes, verdict::yes), std::vector<trial_record>{fast},
               {.link = "pcie4"})
            .verdict == latentaudit::decision_verdict::relay);
  // The value check reads the non-inferiority finding, not the equivalence one.
  auto fs = make(verdict::yes, verdict::yes, verdict::yes);
  fs.push_back(fnd("need.kv_equivalent_to_text", verdict::no, 0.3, 0.2, 0.4));
  CHECK(decide(fs, same).verdict == latentaudit::decision_verdict::relay);
}

TEST_CASE("decision: the positive control gates the verdict") {
  const std::vector<trial_record> same{same_model_kv()};
  for (const verdict control : {verdict::no, verdict::inconclusive}) {
    // Even with dependency "no" (which alone used to mean "no communication needed").
    for (const verdict dep : {verdict::yes, verdict::no}) {
      const auto d = decide(decision_findings(dep, verdict::yes, verdict::yes, control), same);
      CHECK(d.verdict == latentaudit::decision_verdict::inconclusive);
      CHECK(d.summary.rfind(positive_control_reason, 0) == 0);
      CHECK(check_named(d, "positive_control").passed == control);
    }
  }
  // An absent control is not "yes".
  auto fs = decision_findings(verdict::yes, verdict::yes, verdict::yes);
  fs.erase(fs.begin());
  CHECK(decide(fs, same).verdict == latentaudit::decision_verdict::inconclusive);
  CHECK_FALSE(decide(fs, same).relay_allowed);
}

TEST_CASE("decision: the truth table of the risk checks (docs/audit-report.md \"Decision\")") {
  const std::vector<trial_record> same{same_model_kv()};
  // Each risk finding alone, the others shown absent: shown present -> a condition; not shown or
  // not tested -> "relay (unverified)" naming it; shown absent -> "relay".
  struct row {
    const char* id;
    const char* check;
    finding present;  // the finding that shows the risk
  };
  const row rows[] = {
      {"no_need.kv_changes_accuracy", "no_need_harm",
       fnd("no_need.kv_changes_accuracy", verdict::yes, -0.1, -0.15, -0.05)},
      {"stale.kv_worse_than_text", "freshness",
       fnd("stale.kv_worse_than_text", verdict::yes, -0.5, -0.6, -0.4)},
      {"conflict.kv_worse_than_no_comm", "conflict",
       fnd("conflict.kv_worse_than_no_comm", verdict::yes, -0.5, -0.6, -0.4)},
      {"drift.tolerance_steps", "drift", fnd("drift.tolerance_steps", verdict::yes, 50, 40, 60)},
  };
  for (const auto& r : rows) {
    INFO(r.id);
    auto fs = decision_findings(verdict::yes, verdict::yes, verdict::yes);
    set_finding(fs, r.present);
    auto d = decide(fs, same);
    CHECK(d.verdict == latentaudit::decision_verdict::relay_with_conditions);
    CHECK(d.relay_allowed);
    CHECK(check_named(d, r.check).passed == verdict::no);
    for (const verdict v : {verdict::inconclusive}) {
      auto g = fs;
      auto f = r.present;
      f.answer = v;
      set_finding(g, f);
      d = decide(g, same);
      CHECK(d.verdict == latentaudit::decision_verdict::relay_unverified);
      CHECK_FALSE(d.relay_allowed);
      CHECK(d.unverified == std::vector<std::string>{r.check});
      CHECK(d.summary.find(r.check) != std::string::npos);
      // not tested at all (the finding absent, or n = 0): the same
      std::erase_if(g, [&](const finding& x) { return x.id == r.id; });
      d = decide(g, same);
      CHECK(d.verdict == latentaudit::decision_verdict::relay_unverified);
      CHECK(d.unverified == std::vector<std::string>{r.check});
    }
  }
  // cross_model inconclusive: unverified; shown helping: homogeneity fails (inconclusive verdict)
  auto fs = decision_findings(verdict::yes, verdict::yes, verdict::yes);
  set_finding(fs, fnd("need.cross_model_beats_no_comm", verdict::inconclusive, 0.03, -0.01, 0.07));
  auto d = decide(fs, same);
  CHECK(d.verdict == latentaudit::decision_verdict::relay_unverified);
  CHECK(d.unverified == std::vector<std::string>{"cross_model"});
  set_finding(fs, fnd("need.cross_model_beats_no_comm", verdict::yes, 0.3, 0.2, 0.4));
  d = decide(fs, same);
  CHECK(d.verdict == latentaudit::decision_verdict::inconclusive);
  CHECK_FALSE(d.relay_allowed);
  // a shown condition and an unverified risk together: unverified, the condition kept in the policy
  fs = decision_findings(verdict::yes, verdict::yes, verdict::yes);
  set_finding(fs, fnd("stale.kv_worse_than_text", verdict::yes, -0.5, -0.6, -0.4));
  set_finding(fs, fnd("conflict.kv_worse_than_no_comm", verdict::inconclusive, -0.02, -0.08, 0.03));
  d = decide(fs, same);
  CHECK(d.verdict == latentaudit::decision_verdict::relay_unverified);
  CHECK(d.unverified == std::vector<std::string>{"conflict"});
  CHECK(d.policy.front().find("identical model fingerprints") != std::string::npos);
  CHECK(d.policy.at(1).find("fresh caches") != std::string::npos);
  // a verdict that is not a relay never lets traffic through
  for (const auto& v : {decide(decision_findings(verdict::no, verdict::yes, verdict::yes), same),
                        decide(decision_findings(verdict::yes, verdict::no, verdict::yes), same),
                        decide(decision_findings(verdict::yes, verdict::inconclusive, verdict::yes), same)})
    CHECK_FALSE(v.relay_allowed);
}

TEST_CASE(
    "decision: every record wrong -> positive control fails -> inconclusive, not 'no communication needed'") {
  test::synthetic_settings s;
  s.items = 300;
  auto recs = test::synthetic_records(s);
  for (auto& r : recs) r.correct = false;
  const auto r = build_audit_report(recs, {.bootstrap_replicates = 200});
  const auto f = by_id(r.findings);
  CHECK(f.at("need.text_beats_no_comm")->answer != verdict::yes);
  for (const auto& x : r.findings) {
    if (x.id.rfind("need.", 0) != 0 && x.id.rfind("no_need.", 0) != 0 && x.id.rfind("cost.", 0) != 0)
      continue;
    if (x.id == "need.text_beats_no_comm") continue;
    INFO(x.id << ": " << x.detail);
    CHECK(x.answer == verdict::inconclusive);
    CHECK(x.detail.rfind(positive_control_reason, 0) == 0);
  }
  for (const auto& x : r.cost.findings) CHECK(x.answer == verdict::inconclusive);
  CHECK(r.decision.verdict == latentaudit::decision_verdict::inconclusive);
  CHECK(std::string(latentaudit::decision_verdict_name(r.decision.verdict)) != "no communication needed");
  CHECK(r.decision.summary.rfind(positive_control_reason, 0) == 0);
}

TEST_CASE("decision: kv_full better than text_full by 0.3 relays (non-inferiority), not 'send text'") {
  // 400 items (200 need) × 3 seeds of the synthetic records (kv_full pays on pcie4); in the need
  // regime text_full is right on 60 % of the items, kv_full on 90 %.
  test::synthetic_settings s;
  s.items = 400;
  auto recs = test::synthetic_records(s);
  for (auto& r : recs) {
    if (r.arm == "kv_full") r.sender_fingerprint = r.receiver_fingerprint = "m:1";  // homogeneity holds
    if (r.regime != "need") continue;
    const auto k = (r.item / 2) % 10;
    if (r.arm == "text_full") r.correct = k < 6;
    if (r.arm == "kv_full") r.correct = k < 9;
  }
  const auto r = build_audit_report(recs, {.bootstrap_replicates = 200});
  const auto f = by_id(r.findings);
  INFO(f.at("need.kv_noninferior_to_text")->detail);
  CHECK(f.at("need.kv_noninferior_to_text")->answer == verdict::yes);
  CHECK(f.at("need.kv_noninferior_to_text")->estimate == Approx(0.3));
  CHECK(f.at("need.kv_equivalent_to_text")->answer == verdict::no);  // the old TOST id: not equivalent
  INFO(f.at("cost.relay_pays_on_pcie4")->detail);
  CHECK(f.at("cost.relay_pays_on_pcie4")->answer == verdict::yes);
  INFO(r.decision.summary);
  // relay, not text; the synthetic records test no stale, conflict, drift or cross-model risk, so
  // the relay is unverified and names them
  CHECK(r.decision.verdict == latentaudit::decision_verdict::relay_unverified);
  CHECK_FALSE(r.decision.relay_allowed);
  for (const char* c : {"freshness", "conflict", "drift"})
    CHECK(std::find(r.decision.unverified.begin(), r.decision.unverified.end(), c) !=
          r.decision.unverified.end());
}

TEST_CASE("decision: no-need harm, cross-model homogeneity, missing intervals") {
  const std::vector<trial_record> same{same_model_kv()};
  // Relaying where B needs nothing lowers accuracy: not plain "relay".
  auto fs = decision_findings(verdict::yes, verdict::yes, verdict::yes);
  set_finding(fs, fnd("no_need.kv_changes_accuracy", verdict::yes, -0.1, -0.15, -0.05));
  auto d = decide(fs, same);
  CHECK(d.verdict == latentaudit::decision_verdict::relay_with_conditions);
  REQUIRE(d.policy.size() == 2);  // every relay policy starts with the fingerprint rule
  CHECK(d.policy[0].find("identical model fingerprints") != std::string::npos);
  CHECK(d.policy[1].find("relay only where B needs A's information") != std::string::npos);
  CHECK(check_named(d, "no_need_harm").passed == verdict::no);
  // absence claims carry their noninferiority p (the risk family's Holm reads it)
  auto with_p = [](finding f) {
    f.noninferiority_p = 1e-4;
    return f;
  };
  set_finding(fs,
              with_p(fnd("no_need.kv_changes_accuracy", verdict::yes, 0.1, 0.05, 0.15)));  // a gain: relay
  CHECK(decide(fs, same).verdict == latentaudit::decision_verdict::relay);
  set_finding(fs, with_p(fnd("no_need.kv_changes_accuracy", verdict::no, 0.0, -0.02, 0.02)));
  d = decide(fs, same);
  CHECK(d.verdict == latentaudit::decision_verdict::relay);
  CHECK(check_named(d, "no_need_harm").passed == verdict::yes);
  // A foreign model's cache helps: homogeneity fails (the header's rule).
  set_finding(fs, fnd("need.cross_model_beats_no_comm", verdict::yes, 0.3, 0.2, 0.4));
  d = decide(fs, same);
  CHECK(check_named(d, "homogeneity").passed == verdict::no);
  CHECK(d.verdict == latentaudit::decision_verdict::inconclusive);
  set_finding(fs, fnd("need.cross_model_beats_no_comm", verdict::inconclusive, 0.3, 0.2, 0.4));
  CHECK(decide(fs, same).verdict == latentaudit::decision_verdict::relay_unverified);
  // A finding without an interval: "no interval", never "[nan, nan]".
  auto nan = decision_findings(verdict::yes, verdict::yes, verdict::yes);
  nan[1].ci_low = nan[1].ci_high = std::nan("");
  d = decide(nan, same);
  const auto& reason = check_named(d, "dependency").reason;
  INFO(reason);
  CHECK(reason.find("no interval") != std::string::npos);
  CHECK(reason.find("nan") == std::string::npos);
}

TEST_CASE("report: run_audit_report writes report.md, report.json, report.html and the SVGs") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("latentaudit_report_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  test::synthetic_settings s;
  s.items = 20;
  const auto recs = test::synthetic_records(s);
  const auto r = run_audit_report(recs, {.bootstrap_replicates = 200}, dir);
  for (const char* name : {"report.md", "report.json", "report.html", "forest.svg", "dose_response.svg",
                           "frontier.svg", "latency_receiver.svg", "latency.svg"}) {
    INFO(name);
    CHECK(std::filesystem::file_size(dir / name) > 100);
  }
  std::ifstream in(dir / "report.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(parse_json(text).at("findings").size() == r.findings.size());
  std::filesystem::remove_all(dir);
}
