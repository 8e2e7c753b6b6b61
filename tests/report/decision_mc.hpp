// SPDX-License-Identifier: MIT
// Monte Carlo validation of the audit's decision (issue 25) on clustered synthetic records, shared by
// tests/report/decision_test.cpp ([slow] cases) and benchmarks/bench_verdicts.cpp (the tables of
// docs/audit-report.md "Decision"). Every replicate runs the library's own path: records →
// build_audit_report (core findings, cost, gate, decide) → audit_decision.
//
// A scenario plants one risk that is present (relay harms where B needs nothing, a stale cache
// loses, kv_full is at the non-inferiority margin while its failed relays go missing) and makes the
// other risks easy to show. The error event is "a verdict that lets relay traffic through"
// (decision.relay_allowed) without the policy condition that handles the planted risk (or, for the
// value check, with no condition able to handle it: any relay verdict). The claim is a rate at most
// α = 0.05; the Monte Carlo standard error at the measured rate r over R replicates is
// sqrt(r(1 − r)/R), and a test allows the claim plus 3 standard errors of a rate at α (0.031 at
// R = 50, 0.015 at R = 200).
//
// Records: relay_failure_sim.hpp (items draw a logit shift shared by their seeds and arms, so the
// seeds of an item are correlated); generator seed = scenario seed + replicate.
#ifndef LATENTAUDIT_TESTS_REPORT_DECISION_MC_HPP
#define LATENTAUDIT_TESTS_REPORT_DECISION_MC_HPP

#include <latentaudit/report/report.hpp>
#include <latentaudit/report/until_decided.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "report/relay_failure_sim.hpp"

namespace latentaudit::test {

/// E[expit(logit(p) + s)] for s ~ N(0, sd²): the exact accuracy of an arm planted at p in the
/// simulator (trapezoid rule on ±10 sd, 4001 points; error far below 1e-9).
inline double sim_mean_accuracy(double p, double sd) {
  if (p <= 0.0 || p >= 1.0 || sd == 0.0) return p;
  const int n = 4000;
  const double lo = -10.0 * sd, h = 20.0 * sd / n;
  double s = 0.0, w = 0.0;
  for (int i = 0; i <= n; ++i) {
    const double x = lo + h * i;
    const double k = (i == 0 || i == n ? 0.5 : 1.0) * std::exp(-0.5 * (x / sd) * (x / sd));
    s += k * sim_expit(sim_logit(p) + x);
    w += k;
  }
  return s / w;
}

/// The planted p whose exact accuracy (sim_mean_accuracy) is `target` (bisection).
inline double sim_p_for_accuracy(double target, double sd) {
  double lo = 1e-9, hi = 1.0 - 1e-9;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (sim_mean_accuracy(mid, sd) < target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

/// One decision scenario.
struct decision_scenario {
  std::string name;             ///< printed
  relay_failure_design design;  ///< the records
  /// generator seed of replicate 0; replicate r uses seed + r, and the scenarios' seeds lie 10^4
  /// apart, so no two scenarios share a data set
  std::uint64_t seed = 25010000;
  /// a policy line that handles the planted risk contains this ("" = no condition handles it: any
  /// verdict that lets relay traffic through is an error)
  std::string condition;
  /// further planted risks, each with the policy text of its condition: relay_allowed without any
  /// of them is the error too (the risk family: several risks present at once)
  std::vector<std::string> more_conditions = {};
  /// the finding whose wrong "pass" lets the risk through (counted on its own)
  std::string finding_id;
  verdict finding_error = verdict::no;  ///< the verdict of `finding_id` that is the error
  /// a policy line that must not appear when relay is let through (issue 29: "only through cache
  /// map" when the map is planted at the margin); "" = none. With `condition` empty and this set,
  /// relay_allowed is the error only with such a line.
  std::string forbidden = {};
};

/// Counts of one scenario.
struct decision_mc_result {
  std::size_t reps = 0;
  std::size_t allowed_unhandled = 0;            ///< relay_allowed without the condition: the error
  std::size_t allowed_handled = 0;              ///< relay_allowed with the condition (the risk shown: power)
  std::size_t unverified = 0;                   ///< "relay (unverified)"
  std::size_t relay_family = 0;                 ///< a verdict starting with "relay" (allowed or not)
  std::size_t finding_errors = 0;               ///< finding_id gave finding_error
  std::size_t forbidden_lines = 0;              ///< relay_allowed with the `forbidden` policy line
  std::map<std::string, std::size_t> verdicts;  ///< replicates per decision verdict
  [[nodiscard]] double rate(std::size_t k) const {
    return static_cast<double>(k) / static_cast<double>(reps);
  }
};

/// The audit options of the Monte Carlo (the defaults, fewer bootstrap replicates: the decision
/// reads betting intervals, which do not resample; no observational demonstrations: they are
/// teaching material the decision never reads, and 90 % of a report's time on these records).
inline audit_options decision_mc_options() {
  audit_options o;
  o.bootstrap_replicates = 199;
  o.demonstrations = false;
  o.relay_gate = false;  // the decision does not read gate.* (tested: "the relay gate option ...")
  return o;
}

/// Counts one replicate's decision `d` of scenario `s` into `out` (all but finding_errors).
inline void count_decision(const decision_scenario& s, const audit_decision& d, decision_mc_result& out) {
  ++out.reps;
  auto in_policy = [&d](const std::string& c) {
    for (const auto& p : d.policy)
      if (p.find(c) != std::string::npos) return true;
    return false;
  };
  bool handled = s.condition.empty() ? !s.forbidden.empty() : in_policy(s.condition);
  for (const auto& c : s.more_conditions) handled = handled && in_policy(c);
  const bool forbidden = !s.forbidden.empty() && in_policy(s.forbidden);
  if (forbidden) handled = false;
  if (d.relay_allowed && forbidden) ++out.forbidden_lines;
  if (d.relay_allowed) ++(handled ? out.allowed_handled : out.allowed_unhandled);
  out.unverified += d.verdict == latentaudit::decision_verdict::relay_unverified ? 1 : 0;
  ++out.verdicts[latentaudit::decision_verdict_name(d.verdict)];
  out.relay_family += latentaudit::is_relay_verdict(d.verdict) ? 1 : 0;
}

/// Runs `reps` replicates of scenario `s`.
inline decision_mc_result run_decision_mc(const decision_scenario& s, std::size_t reps) {
  decision_mc_result out;
  for (std::size_t r = 0; r < reps; ++r) {
    const auto recs = simulate_relay_failure(s.design, s.seed + r);
    const auto rep = build_audit_report(recs, decision_mc_options());
    count_decision(s, rep.decision, out);
    for (const auto& f : rep.findings)
      if (f.id == s.finding_id && f.answer == s.finding_error) ++out.finding_errors;
  }
  return out;
}

/// The shared base: every risk but the planted one easy to show (need 150 items, 3 seeds, kv_full
/// and text_full at 99 %, no_comm and an inert cross_model placebo never right; stale and conflict
/// caches that lose by 70 points and more; drift that crosses the margin at 50 steps; no-need items
/// where every arm is right: relay changes nothing).
inline relay_failure_design decision_base_design() {
  relay_failure_design d;
  d.seeds = 3;
  d.item_sd = 0.6;
  d.with_cross_model = true;
  d.need_no_comm = 0.0;
  d.need_kv = d.need_text = 0.99;
  d.no_need_kv = d.no_need_text = d.no_need_no_comm = 1.0;
  d.regime_items = {150, 150, 60, 60};
  return d;
}

/// Issue 25's scenarios: (1) relay costs 10 points on 30 no-need items; (2) a stale cache loses 20
/// points on 15 stale items; (3) kv_full exactly at the non-inferiority margin (5 points below text,
/// exact accuracies under the item effect) on 300 need items, each wrong kv_full record dropped with
/// probability 0.5.
inline std::vector<decision_scenario> decision_scenarios() {
  std::vector<decision_scenario> out;
  {
    decision_scenario s{.name = "no_need harm unshown (30 no-need items, relay -10 points)",
                        .seed = 25010000};
    s.design = decision_base_design();
    s.design.regime_items = {150, 30, 60, 60};
    s.design.no_need_no_comm = 0.95;
    s.design.no_need_text = 0.95;
    s.design.no_need_kv = 0.85;
    s.condition = "where B needs A's information";
    s.finding_id = "no_need.kv_changes_accuracy";
    out.push_back(std::move(s));
  }
  {
    decision_scenario s{.name = "stale loss unshown (15 stale items, relay -20 points)", .seed = 25020000};
    s.design = decision_base_design();
    s.design.regime_items = {150, 150, 15, 60};
    s.design.stale_text = 0.95;
    s.design.stale_kv = 0.75;
    s.condition = "fresh caches";
    s.finding_id = "stale.kv_worse_than_text";
    out.push_back(std::move(s));
  }
  {
    decision_scenario s{
        .name = "failed relays missing (300 need items, kv at the margin, wrong kv dropped 50 %)",
        .seed = 25030000};
    s.design = decision_base_design();
    s.design.regime_items = {300, 150, 60, 60};
    // exact accuracies under the item effect: text 0.95, kv_full 0.90 (the margin)
    s.design.need_text = sim_p_for_accuracy(0.95, s.design.item_sd);
    s.design.need_kv = sim_p_for_accuracy(0.90, s.design.item_sd);
    s.design.drop_wrong_kv = 0.5;
    s.design.drop_regime = "need";
    s.condition = "";
    s.finding_id = "need.kv_noninferior_to_text";
    s.finding_error = verdict::yes;
    out.push_back(std::move(s));
  }
  return out;
}

/// The risk family (issue 28): no-need harm, a stale cache and a conflicting cache, each exactly at
/// the margin (relay 5 points below its reference, exact accuracies under the item effect: no_need
/// kv_full 0.90 against no_comm and text_full 0.95; stale kv_full 0.90 against text_full 0.95;
/// conflict kv_full 0.90 against no_comm 0.95), `items` items each × 3 seeds, every other check easy
/// to show. Each risk is present, so relay_allowed without all three conditions is the error: the
/// familywise claim of the risk family (at most α), where one risk at a time bounds only the sum.
inline decision_scenario decision_risk_family_scenario(std::size_t items, std::uint64_t seed) {
  decision_scenario s{.name = "three risks at the margin at once (" + std::to_string(items) +
                              " no-need, stale and conflict items, relay -5 points each)",
                      .seed = seed};
  s.design = decision_base_design();
  s.design.regime_items = {150, items, items, items};
  const double sd = s.design.item_sd;
  const double p95 = sim_p_for_accuracy(0.95, sd), p90 = sim_p_for_accuracy(0.90, sd);
  s.design.no_need_no_comm = s.design.no_need_text = p95;
  s.design.no_need_kv = p90;
  s.design.stale_text = p95;
  s.design.stale_kv = p90;
  s.design.conflict_no_comm = p95;
  s.design.conflict_kv = p90;
  s.condition = "where B needs A's information";
  s.more_conditions = {"fresh caches", "own prompt already binds"};
  s.finding_id = "no_need.kv_changes_accuracy";
  return s;
}

/// Issue 29, the decision's map path: a kv_mapped arm (a foreign sender's cache through a cache map)
/// exactly at the non-inferiority margin against kv_full (its exact need-regime accuracy 5 points
/// below kv_full's under the item effect) on the base design, whose other risks are shown present.
/// A policy line relaying that sender "only through cache map" is the error (at most α). With
/// `with_risks`, the three risks of decision_risk_family_scenario are at the margin too: relay
/// without all three conditions, or through the map, is the error — the family's claim over all
/// four absence and non-inferiority claims.
inline decision_scenario decision_map_scenario(bool with_risks, std::uint64_t seed) {
  decision_scenario s =
      with_risks ? decision_risk_family_scenario(320, seed) : decision_scenario{.seed = seed};
  if (!with_risks) s.design = decision_base_design();
  s.name = with_risks ? "a cache map and three risks at the margin at once (map -5 points against kv_full on "
                        "150 need items)"
                      : "a cache map at the margin (kv_mapped -5 points against kv_full, 150 need items)";
  const double sd = s.design.item_sd;
  s.design.mapped_need = sim_p_for_accuracy(sim_mean_accuracy(s.design.need_kv, sd) - 0.05, sd);
  s.forbidden = "only through cache map";
  s.finding_id = "mapped.noninferior_to_same_model";
  s.finding_error = verdict::yes;
  return s;
}

/// Issue 29, missing records on the map path: the map at the margin as in decision_map_scenario,
/// each wrong kv_mapped record dropped with probability 0.5 (a stack that loses the map's failed
/// relays: on the complete units the map looks 3 points better than it is). The map's finding is
/// decided on the worst-case bounds; relaying through the map is the error (at most α).
inline decision_scenario decision_map_missing_scenario() {
  decision_scenario s = decision_map_scenario(false, 29040000);
  s.name = "a cache map at the margin whose failed relays go missing (wrong kv_mapped dropped 50 %)";
  s.design.drop_wrong_kv = 0.5;
  s.design.drop_arm = "kv_mapped";
  return s;
}

/// Issue 29, the power of the map path: kv_mapped at kv_full's accuracy on the base design; the
/// share of replicates whose policy relays that sender through its map is the power (the
/// decision_mc_result's forbidden_lines; no error is possible).
inline decision_scenario decision_map_power_scenario() {
  decision_scenario s{.name = "a cache map as good as same-model relay (power of the map path)",
                      .seed = 29020000};
  s.design = decision_base_design();
  s.design.mapped_need = s.design.need_kv;
  s.forbidden = "only through cache map";
  s.finding_id = "mapped.noninferior_to_same_model";
  s.finding_error = verdict::yes;
  return s;
}

/// A small design (issue 28): 30 need and 30 no-need items × 2 seeds, no stale, conflict or drift
/// items, exact need-regime accuracies no_comm `nc`, text_full `tx`, kv_full `kv` under the item
/// effect (sd 0.6); no-need items where every arm is right.
inline relay_failure_design decision_small_design(double nc, double tx, double kv) {
  relay_failure_design d;
  d.seeds = 2;
  d.item_sd = 0.6;
  d.with_stale = d.with_conflict = d.with_drift = d.with_attention = false;
  d.regime_items = {30, 30, 0, 0};
  d.need_no_comm = sim_p_for_accuracy(nc, d.item_sd);
  d.need_text = sim_p_for_accuracy(tx, d.item_sd);
  d.need_kv = sim_p_for_accuracy(kv, d.item_sd);
  d.no_need_kv = d.no_need_text = d.no_need_no_comm = 1.0;
  return d;
}

/// The nulls of the decision's fixed sequence on the small design (issue 28: the positive control
/// and dependency are tested at full α): (1) dependency null, kv_full exactly at no_comm's
/// accuracy (0.30) with text at 0.70: "need.kv_beats_no_comm" yes is the error; (2) the positive
/// control's null, text_full and kv_full at no_comm's accuracy: "need.text_beats_no_comm" yes is
/// the error (and then any finding after it). No condition handles either: any relay verdict is an
/// error too.
inline std::vector<decision_scenario> decision_sequence_scenarios() {
  struct row {
    const char* name;
    std::uint64_t seed;
    double nc, tx, kv;
    const char* finding;
  };
  const row rows[] = {
      {"dependency null (30 need items x 2 seeds, kv = no_comm = 0.30, text 0.70)", 28010000, 0.30, 0.70,
       0.30, "need.kv_beats_no_comm"},
      {"positive-control null (30 need items x 2 seeds, text = kv = no_comm = 0.30)", 28020000, 0.30, 0.30,
       0.30, "need.text_beats_no_comm"},
  };
  std::vector<decision_scenario> out;
  for (const auto& r : rows) {
    decision_scenario s{.name = r.name, .seed = r.seed};
    s.design = decision_small_design(r.nc, r.tx, r.kv);
    s.finding_id = r.finding;
    s.finding_error = verdict::yes;
    out.push_back(std::move(s));
  }
  return out;
}

/// The small design's power (issue 28's held-out scenario): a true +30-point relay benefit, text
/// and kv_full at 0.60, no_comm at 0.30, 30 need items × 2 seeds; "need.kv_beats_no_comm" yes
/// (which needs the positive control shown first) is the power.
inline decision_scenario decision_small_power_scenario() {
  decision_scenario s{
      .name = "dependency +30 points (30 need items x 2 seeds, no_comm 0.30, text = kv = 0.60)",
      .seed = 28030000};
  s.design = decision_small_design(0.30, 0.60, 0.60);
  s.finding_id = "need.kv_beats_no_comm";
  s.finding_error = verdict::yes;  // the right answer here: counted as the dependency check's power
  return s;
}

/// The power scenario: the base design, every risk easy to show (stale, conflict and drift shown
/// present, no-need harm and the foreign cache shown absent). The decision should be "relay with
/// conditions" with the freshness, conflict and drift conditions.
inline decision_scenario decision_power_scenario() {
  decision_scenario s{.name = "every risk shown (power)", .seed = 25040000};
  s.design = decision_base_design();
  s.condition = "fresh caches";
  s.finding_id = "need.kv_noninferior_to_text";
  s.finding_error = verdict::yes;  // here the right answer: counted as the value check's power
  return s;
}

/// Counts of one scenario run with the stopping rule of `audit --until-decided`.
struct stopped_mc_result {
  decision_mc_result decision;     ///< the decision at the stop (the error counts as run_decision_mc's)
  std::size_t items_run = 0;       ///< items behind the stopped decisions, summed over replicates
  std::size_t items_planned = 0;   ///< the designs' items, summed over replicates
  std::size_t stopped_early = 0;   ///< replicates settled before the last look
  std::size_t same_as_fixed = 0;   ///< replicates whose stopped verdict equals the full design's
  std::size_t trials_run = 0;      ///< trials the schedule ran (arms stopped one by one), summed
  std::size_t trials_planned = 0;  ///< the designs' trials, summed over replicates
  [[nodiscard]] double share_of_items() const {
    return static_cast<double>(items_run) / static_cast<double>(items_planned);
  }
  [[nodiscard]] double share_of_trials() const {
    return static_cast<double>(trials_run) / static_cast<double>(trials_planned);
  }
};

/// Replicates of scenario `s` under the stopping rule of `audit --until-decided`, as the CLI runs
/// it: the items in an order fixed before any outcome (the simulator's items relabelled by a
/// permutation drawn from stream (seed + r, 0, 0x5E9, 0), so the regimes interleave as the
/// organism's do; the CLI runs item order), looked at after every batch of items with the report's
/// decision on the records so far (audit_options::horizon = the design's items N, `looks` looks of
/// batch = ⌈N/looks⌉ items, each arm stopped on a regime's later batches once every finding that
/// reads it is decided (arm_cells_to_run; the records of the trials it left out dropped and the
/// schedule given to the report, as `audit --until-decided` does),
/// decision_mc_options otherwise), stopped at the first settled decision (decision_settled) or the
/// last look. The error counts are those of the decision at the stop; the full design's decision
/// on the same records gives same_as_fixed.
inline stopped_mc_result run_stopped_decision_mc(const decision_scenario& s, std::size_t reps,
                                                 std::size_t looks) {
  stopped_mc_result out;
  for (std::size_t r = 0; r < reps; ++r) {
    auto recs = simulate_relay_failure(s.design, s.seed + r);
    std::uint64_t n = 0;
    for (const auto& x : recs) n = std::max<std::uint64_t>(n, x.item + 1);
    std::vector<std::uint64_t> label(n);
    for (std::uint64_t i = 0; i < n; ++i) label[i] = i;
    auto g = make_stream({s.seed + r, 0, 0x5E9, 0});
    for (std::size_t i = label.size(); i > 1; --i)
      std::swap(label[i - 1],
                label[std::min<std::size_t>(i - 1, uniform_index(g, static_cast<std::uint32_t>(i)))]);
    for (auto& x : recs) x.item = label[x.item];
    const std::size_t batch = static_cast<std::size_t>((n + looks - 1) / looks);
    auto o = decision_mc_options();
    o.horizon = n;
    o.looks = looks;
    std::map<std::string, std::set<std::uint64_t>> by_regime;  // the design's items per regime
    for (const auto& x : recs) by_regime[x.regime].insert(x.item);
    for (const auto& [name, items] : by_regime) o.regime_horizon[name] = items.size();
    audit_decision d;
    // the library's loop (report/until_decided.hpp), as the CLI runs it: a batch "runs" by
    // exposing the simulated records of its scheduled trials
    until_decided_plan plan{
        .batch_items = batch, .looks = (n + batch - 1) / batch, .item_regime = std::vector<std::string>(n)};
    std::set<std::string> arms;
    for (const auto& x : recs) {
      plan.item_regime[x.item] = x.regime;
      plan.seeds = std::max<std::uint64_t>(plan.seeds, x.seed + 1);
      arms.insert(x.arm);
    }
    plan.arms.assign(arms.begin(), arms.end());
    std::vector<trial_record> seen;
    const auto res = run_until_decided(
        plan, o,
        [&](std::size_t k, const arm_schedule& schedule) -> const std::vector<trial_record>& {
          for (const auto& x : recs)
            if (x.item / batch == k && schedule.runs(x.item, arm_cell{x.regime, x.arm})) seen.push_back(x);
          return seen;
        },
        [](const arm_schedule&, const std::set<arm_cell>&) {},
        [&](std::size_t, const audit_report& report, std::size_t) { d = report.decision; });
    const std::size_t k = res.looks_taken;
    out.trials_run += seen.size();
    out.trials_planned += recs.size();
    const std::size_t run = std::min<std::size_t>(k * batch, n);
    out.items_run += run;
    out.items_planned += n;
    out.stopped_early += k < plan.looks ? 1 : 0;
    const auto fixed = build_audit_report(recs, decision_mc_options()).decision;
    out.same_as_fixed += fixed.verdict == d.verdict ? 1 : 0;
    count_decision(s, d, out.decision);
  }
  return out;
}

/// Every scenario of the decision's tables (benchmarks/bench_verdicts.cpp): the unshown risks, the
/// fixed sequence's nulls, the risk family at the margin, and the two power scenarios.
inline std::vector<decision_scenario> decision_table_scenarios() {
  auto out = decision_scenarios();
  for (auto& s : decision_sequence_scenarios()) out.push_back(std::move(s));
  out.push_back(decision_risk_family_scenario(320, 28040000));
  out.push_back(decision_power_scenario());
  out.push_back(decision_small_power_scenario());
  out.push_back(decision_map_scenario(false, 29010000));  // issue 29: the map path
  out.push_back(decision_map_scenario(true, 29030000));
  out.push_back(decision_map_power_scenario());
  out.push_back(decision_map_missing_scenario());
  return out;
}

/// One line of the Monte Carlo table: rates and the verdicts seen.
inline std::string decision_mc_line(const decision_scenario& s, const decision_mc_result& m) {
  std::string v;
  for (const auto& [name, k] : m.verdicts) v += (v.empty() ? "" : ", ") + name + " " + std::to_string(k);
  return s.name + " (seed " + std::to_string(s.seed) + ", " + std::to_string(m.reps) +
         " reps): relay allowed without the condition " + std::to_string(m.rate(m.allowed_unhandled)) +
         ", with it " + std::to_string(m.rate(m.allowed_handled)) + "; " + s.finding_id + " " +
         verdict_name(s.finding_error) + " " + std::to_string(m.rate(m.finding_errors)) + "; verdicts: " + v;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_REPORT_DECISION_MC_HPP
