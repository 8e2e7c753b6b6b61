// SPDX-License-Identifier: MIT
// The assembled report on real organism records (the planted truths end to end), on records that
// lack most arms (everything inconclusive, nothing thrown), the decision rule case by case, and
// the files run_audit_report writes.
#include <latentaudit/backend/reference_cpu.hpp>
#include <latentaudit/report.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include <fstream>
#include <map>

#include "support/synthetic_records.hpp"

using namespace latentaudit;

namespace {

const std::string models = std::string(LATENTAUDIT_SOURCE_DIR).append("/models/");

// 120 items × 2 seeds × the 21 default arms on the organisms (about 5000 trials, ~2 s).
const std::vector<trial_record>& organism_records() {
  static const std::vector<trial_record> records = [] {
    auto a = reference_cpu_backend::load(models + "organism-a");
    auto b = reference_cpu_backend::load(models + "organism-b");
    const auto fmt = organism_format::load(models + "organism-a");
    trial_design d{.seed = 404, .items = 120, .seeds = 2};
    const organism_task_options to{.seed = d.seed};
    std::vector<trial_record> out;
    trial_driver<reference_cpu_backend>(a, &b).run(
        d, [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); },
        [&](const trial_record& r) { out.push_back(r); });
    return out;
  }();
  return records;
}

std::map<std::string, const finding*> by_id(const std::vector<finding>& fs) {
  std::map<std::string, const finding*> m;
  for (const auto& f : fs) m[f.id] = &f;
  return m;
}

// Well-formed enough for a browser: one <svg> root with the namespace, balanced, no NaN/inf text.
void check_svg(const std::string& svg) {
  CHECK(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  CHECK(svg.find("</svg>") != std::string::npos);
  for (const char* bad : {"nan", "NaN", "inf"}) CHECK(svg.find(bad) == std::string::npos);
}

}  // namespace

TEST_CASE("report: the organism audit reaches every planted truth and decides to relay") {
  const auto& recs = organism_records();
  REQUIRE(recs.size() == 120u * 2u * 21u);
  const auto r = build_audit_report(recs, {.bootstrap_replicates = 1000, .seed = 3});
  const auto f = by_id(r.findings);
  const std::map<std::string, verdict> planted = {
      {"need.kv_beats_no_comm", verdict::yes},
      {"need.kv_equivalent_to_text", verdict::yes},
      {"need.deranged_beats_no_comm", verdict::no},
      {"need.zeroed_beats_no_comm", verdict::no},
      {"need.cross_model_beats_no_comm", verdict::no},
      {"no_need.kv_changes_accuracy", verdict::no},
      {"noise.tolerance_sigma", verdict::yes},
      {"log.naive_covers_randomized", verdict::no},
      {"log.matching_covers_randomized", verdict::yes},
      {"log.aipw_covers_randomized", verdict::yes},
      {"rollout.before_after_covers_truth", verdict::no},
      {"rollout.did_covers_truth", verdict::yes},
  };
  for (const auto& [id, v] : planted) {
    INFO(id << ": " << (f.count(id) ? f.at(id)->detail : std::string("missing")));
    REQUIRE(f.count(id) == 1);
    CHECK(f.at(id)->answer == v);
  }
  for (const auto& l : link_presets()) CHECK(f.count(cost_finding_id(l.name)) == 1);
  // The tolerance sigma lies where the organism's accuracy collapses (0.5 < sigma <= 1.5).
  CHECK(f.at("noise.tolerance_sigma")->estimate > 0.5);
  CHECK(f.at("noise.tolerance_sigma")->estimate <= 1.5);
  CHECK(r.decision.verdict != "no communication needed");
  CHECK(r.decision.checklist.size() == 5);
  REQUIRE_FALSE(r.decision.monitors.empty());
  CHECK(
      r.decision.monitors.front().stop_at.has_value());  // kv_full − no_comm ≈ 0.97: the monitor stops early

  // report.json: every finding with the required fields, no NaN anywhere.
  const json_value j = report_json(r);
  std::string text;
  append_json(text, j, {.indent = -1});
  CHECK(text.find("nan") == std::string::npos);
  const auto& arr = j.at("findings").as_array();
  CHECK(arr.size() == r.findings.size());
  for (const auto& x : arr)
    for (const char* k : {"id", "verdict", "estimate", "ci_low", "ci_high", "method", "n"})
      CHECK(x.contains(k));
  const auto md = report_markdown(r);
  for (const char* h :
       {"## Decision", "## Findings", "## Accuracy by arm", "## Noise dose-response",
        "## Cost-benefit by link", "## Per-request relay gate", "## Observational demonstrations"})
    CHECK(md.find(h) != std::string::npos);
  const auto svgs = report_svgs(r, recs);
  REQUIRE(svgs.size() == 4);
  for (const auto& [name, svg] : svgs) {
    INFO(name);
    check_svg(svg);
  }
}

TEST_CASE("report: records with two arms only give inconclusive findings, never an error") {
  test::synthetic_settings s;
  s.items = 30;
  s.arms = {"no_comm", "kv_full"};
  const auto recs = test::synthetic_records(s);
  const auto r = build_audit_report(recs, {.bootstrap_replicates = 200});
  const auto f = by_id(r.findings);
  CHECK(f.at("need.kv_beats_no_comm")->answer == verdict::yes);
  for (const char* id : {"need.kv_equivalent_to_text", "need.deranged_beats_no_comm", "noise.tolerance_sigma",
                         "cost.relay_pays_on_pcie4"}) {
    INFO(id);
    CHECK(f.at(id)->answer == verdict::inconclusive);
    CHECK(f.at(id)->n == 0);
  }
  CHECK(r.decision.verdict == "inconclusive");
  for (const auto& [name, svg] : report_svgs(r, recs)) check_svg(svg);
}

TEST_CASE("decision: the checklist rule") {
  auto make = [](verdict dep, verdict value, verdict cost) {
    return std::vector<finding>{{.id = "need.kv_beats_no_comm",
                                 .answer = dep,
                                 .estimate = 0.5,
                                 .ci_low = 0.4,
                                 .ci_high = 0.6,
                                 .n = 10},
                                {.id = "need.kv_equivalent_to_text",
                                 .answer = value,
                                 .estimate = 0,
                                 .ci_low = -0.01,
                                 .ci_high = 0.01,
                                 .n = 10},
                                {.id = "cost.relay_pays_on_pcie4",
                                 .answer = cost,
                                 .estimate = 1e-4,
                                 .ci_low = 5e-5,
                                 .ci_high = 2e-4,
                                 .n = 10}};
  };
  trial_record kv;
  kv.arm = kv.arm_kind = "kv_full";
  kv.sender_fingerprint = kv.receiver_fingerprint = "m:1";
  const std::vector<trial_record> same{kv};
  CHECK(decide(make(verdict::yes, verdict::yes, verdict::yes), same).verdict == "relay");
  CHECK(decide(make(verdict::no, verdict::yes, verdict::yes), same).verdict == "no communication needed");
  CHECK(decide(make(verdict::yes, verdict::no, verdict::yes), same).verdict == "send text");
  CHECK(decide(make(verdict::yes, verdict::yes, verdict::no), same).verdict == "send text");
  CHECK(decide(make(verdict::yes, verdict::inconclusive, verdict::yes), same).verdict == "inconclusive");
  auto other = kv;
  other.sender_fingerprint = "m:2";  // a same-model arm relaying a foreign cache breaks homogeneity
  const auto d = decide(make(verdict::yes, verdict::yes, verdict::yes), std::vector<trial_record>{other});
  CHECK(d.verdict == "inconclusive");
  CHECK(d.checklist[1].passed == verdict::no);
  // The cost check follows the records' link.
  auto fast = kv;
  fast.link = "nvlink4";
  CHECK(decide(make(verdict::yes, verdict::yes, verdict::yes), std::vector<trial_record>{fast})
            .checklist[3]
            .passed == verdict::inconclusive);
  CHECK(decide(make(verdict::yes, verdict::yes, verdict::yes), std::vector<trial_record>{fast},
               {.link = "pcie4"})
            .verdict == "relay");
}

TEST_CASE("report: run_audit_report writes report.md, report.json and four SVGs") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("latentaudit_report_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  test::synthetic_settings s;
  s.items = 20;
  const auto recs = test::synthetic_records(s);
  const auto r = run_audit_report(recs, {.bootstrap_replicates = 200}, dir);
  for (const char* name :
       {"report.md", "report.json", "forest.svg", "dose_response.svg", "frontier.svg", "latency.svg"}) {
    INFO(name);
    CHECK(std::filesystem::file_size(dir / name) > 100);
  }
  std::ifstream in(dir / "report.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(parse_json(text).at("findings").size() == r.findings.size());
  std::filesystem::remove_all(dir);
}
