// SPDX-License-Identifier: MIT
// One arm resolver for every analysis (report/detail/arm_roles.hpp): records whose arms are
// relabelled but keep their arm_kind give the same findings, demonstrations, gate and monitor as
// the canonical labels; two arms of one kind give a warning naming both; and with a single item no
// cost or gate finding says "yes" (the betting intervals over items cannot exclude anything).
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/report.hpp>
#include <latentaudit/report/detail/arm_roles.hpp>
#include <latentaudit/trial.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "support/organism_records.hpp"
#include "support/sanitizer.hpp"
#include "support/synthetic_records.hpp"

using namespace latentaudit;

namespace {

// 60 items × 2 seeds × the 21 default arms on the organisms (about 2500 trials, ~1 s).
const std::vector<trial_record>& roles_organism_records() {
  static const std::vector<trial_record> records =
      testing::run_organism_records(505, test::full_or_sanitized<std::uint64_t>(60, 20), 2);
  return records;
}

// The role arms under other labels; arm_kind kept (filled from the label where it was empty).
const std::map<std::string, std::string> relabel = {
    {"no_comm", "baseline"}, {"text_full", "my_text"}, {"kv_full", "my_kv"},      {"deranged", "placebo_d"},
    {"zeroed", "placebo_z"}, {"random", "placebo_r"},  {"cross_model", "foreign"}};

std::vector<trial_record> relabelled(std::vector<trial_record> rs) {
  for (auto& r : rs) {
    const auto it = relabel.find(r.arm);
    if (it == relabel.end()) continue;
    if (r.arm_kind.empty()) r.arm_kind = r.arm;
    r.arm = it->second;
  }
  return rs;
}

bool same_number(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void check_same_findings(const std::vector<finding>& a, const std::vector<finding>& b, const char* what) {
  INFO(what);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].id << ": " << a[i].detail << " | " << b[i].detail);
    CHECK(a[i].id == b[i].id);
    CHECK(a[i].answer == b[i].answer);
    CHECK(same_number(a[i].estimate, b[i].estimate));
    CHECK(same_number(a[i].ci_low, b[i].ci_low));
    CHECK(same_number(a[i].ci_high, b[i].ci_high));
    CHECK(a[i].n == b[i].n);
  }
}

}  // namespace

TEST_CASE("arm roles: by label, then by arm_kind, ties to the first label in sorted order", "[arm_roles]") {
  test::synthetic_settings s;
  s.items = 4;
  s.arms = {"no_comm", "text_full", "kv_b", "kv_a"};  // kv_a and kv_b both get arm_kind kv_full
  const auto recs = test::synthetic_records(s);
  std::vector<std::string> w;
  const auto roles = detail::resolve_arm_roles(recs, w);
  CHECK(roles.of(arm_kind::no_comm) == "no_comm");
  CHECK(roles.of(arm_kind::text_full) == "text_full");
  CHECK(roles.of(arm_kind::kv_full) == "kv_a");  // sorted order, not first-seen order
  CHECK(roles.of(arm_kind::deranged).empty());
  CHECK(roles.of(arm_kind::kv_policy).empty());  // no role: never resolved
  REQUIRE(w.size() == 1);
  CHECK(w[0].find("'kv_a'") != std::string::npos);
  CHECK(w[0].find("'kv_b'") != std::string::npos);
  // A label beats a kind: with an arm labelled kv_full, the others of that kind play no role.
  auto recs2 = recs;
  for (auto& r : recs2)
    if (r.arm == "kv_b") r.arm = "kv_full";
  std::vector<std::string> w2;
  CHECK(detail::resolve_arm_roles(recs2, w2).of(arm_kind::kv_full) == "kv_full");
  CHECK(w2.empty());
  // An empty arm_kind is the kind of the label.
  auto recs3 = recs;
  for (auto& r : recs3) r.arm_kind.clear();
  std::vector<std::string> w3;
  CHECK(detail::resolve_arm(recs3, "kv_full", w3).empty());
  CHECK(detail::resolve_arm_or_name(recs3, "kv_full", w3) == "kv_full");
  CHECK(detail::resolve_arm(recs3, "no_comm", w3) == "no_comm");
  CHECK(w3.empty());
}

TEST_CASE("arm roles: two arms of kind kv_full give a warning naming both, in the report", "[arm_roles]") {
  test::synthetic_settings s;
  s.items = 40;
  s.seeds = 2;
  s.arms = {"no_comm", "text_full", "relay_one", "relay_two"};
  const auto recs = test::synthetic_records(s);
  const auto r = build_audit_report(recs, {.bootstrap_replicates = 200});
  std::size_t naming_both = 0;
  for (const auto& w : r.core.warnings)
    naming_both += w.find("'relay_one'") != std::string::npos && w.find("'relay_two'") != std::string::npos;
  CHECK(naming_both == 1);
  // The role is played (by relay_one), not left empty: the dependency finding rests on pairs.
  for (const auto& f : r.findings)
    if (f.id == "need.kv_beats_no_comm") CHECK(f.n > 0);
  REQUIRE_FALSE(r.decision.monitors.empty());
  CHECK(r.decision.monitors.front().contrast == "relay_one - no_comm");
}

TEST_CASE("arm roles: relabelled arms that keep their arm_kind give the same findings in every analysis",
          "[arm_roles]") {
  const auto& canon = roles_organism_records();
  const auto moved = relabelled(canon);
  const audit_options o{.bootstrap_replicates = 400, .seed = 7};
  const auto a = build_audit_report(canon, o);
  const auto b = build_audit_report(moved, o);
  check_same_findings(a.core.findings, b.core.findings, "effects and decomposition");
  check_same_findings(a.cost.findings, b.cost.findings, "cost");
  check_same_findings(a.gate.findings, b.gate.findings, "gate");
  check_same_findings(a.demonstrations, b.demonstrations, "observational demonstrations");
  check_same_findings(a.findings, b.findings, "all findings");
  // The roles were found: the planted dependency is there under both labellings.
  for (const auto& f : b.findings)
    if (f.id == "need.kv_beats_no_comm" && test::full_sample) CHECK(f.answer == verdict::yes);
  // The decision and its monitor replays.
  CHECK(a.decision.verdict == b.decision.verdict);
  REQUIRE(a.decision.checklist.size() == b.decision.checklist.size());
  for (std::size_t i = 0; i < a.decision.checklist.size(); ++i) {
    INFO(a.decision.checklist[i].name);
    CHECK(a.decision.checklist[i].passed == b.decision.checklist[i].passed);
  }
  REQUIRE(a.decision.monitors.size() == 2);
  REQUIRE(b.decision.monitors.size() == 2);
  CHECK(b.decision.monitors[0].contrast == "my_kv - baseline");
  CHECK(b.decision.monitors[1].contrast == "my_kv - my_text");
  for (std::size_t i = 0; i < 2; ++i) {
    const auto &ma = a.decision.monitors[i], &mb = b.decision.monitors[i];
    CHECK(ma.pairs == mb.pairs);
    CHECK(ma.stop_at == mb.stop_at);
    CHECK(ma.result.n == mb.result.n);
    CHECK(same_number(ma.result.p_value, mb.result.p_value));
  }
  // The analyses called on their own, with default options, resolve the same way.
  check_same_findings(cost_benefit_analysis(canon, {}).findings, cost_benefit_analysis(moved, {}).findings,
                      "cost_benefit_analysis alone");
  check_same_findings(fit_relay_gate(canon, {}).findings, fit_relay_gate(moved, {}).findings,
                      "fit_relay_gate alone");
  check_same_findings(observational_analysis(canon, {}).findings, observational_analysis(moved, {}).findings,
                      "observational_analysis alone");
  const auto da = decide(a.findings, canon), db = decide(b.findings, moved);
  REQUIRE(da.monitors.size() == db.monitors.size());
  for (std::size_t i = 0; i < da.monitors.size(); ++i)
    CHECK(da.monitors[i].stop_at == db.monitors[i].stop_at);
}

TEST_CASE("arm kinds: records without arm_kind and doses give the findings their labels name",
          "[arm_roles]") {
  // Another stack's records may carry only the labels: the report classifies each arm by the kind
  // and doses parse_arm reads in its label (trial/arm.hpp record_arm_kind), never by a prefix of
  // its own, so the noise and drift dose-responses, the frontier and the placebos are the same.
  const auto& canon = roles_organism_records();
  auto bare = canon;
  for (auto& r : bare) {
    r.arm_kind.clear();
    r.noise_sigma.reset();
    r.drift_steps.reset();
    r.budget.reset();
  }
  const audit_options o{.bootstrap_replicates = 400, .seed = 7};
  const auto a = build_audit_report(canon, o);
  const auto b = build_audit_report(bare, o);
  check_same_findings(a.findings, b.findings, "all findings");
  CHECK(a.decision.verdict == b.decision.verdict);
  REQUIRE(a.core.noise.curve.size() == b.core.noise.curve.size());
  CHECK(a.core.noise.curve.size() >= 6);
  // a label latentaudit cannot read plays no role and is on no dose-response or frontier
  auto foreign = bare;
  for (auto& r : foreign)
    if (r.arm == "kv_noise_0.5") r.arm = "noisy_relay";
  const auto c = build_audit_report(foreign, o);
  CHECK(c.core.noise.curve.size() + 1 == a.core.noise.curve.size());
}

TEST_CASE("arm roles: with one item no cost or gate finding says yes", "[arm_roles]") {
  // One need item (item 0; the synthetic relay pays on every link and is as accurate as text) with
  // 3 or 40 seeds: the seeds of one item are one observation, and the betting intervals over one
  // item cannot exclude the margin or zero, so every cost and gate verdict is inconclusive or no.
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    for (std::size_t seeds : {3u, 40u}) {
      INFO("generator seed " << seed << ", seeds " << seeds);
      test::synthetic_settings s;
      s.items = 1;
      s.seeds = seeds;
      s.seed = seed;
      s.arms = {"no_comm", "text_full", "kv_full"};
      const auto recs = test::synthetic_records(s);
      const auto cost = cost_benefit_analysis(recs, {.bootstrap_replicates = 200});
      REQUIRE_FALSE(cost.findings.empty());
      for (const auto& f : cost.findings) {
        INFO(f.id << ": " << f.detail);
        CHECK(f.answer != verdict::yes);
      }
      for (const auto& f : fit_relay_gate(recs, {.bootstrap_replicates = 200}).findings) {
        INFO(f.id << ": " << f.detail);
        CHECK(f.answer != verdict::yes);
      }
    }
  }
}
