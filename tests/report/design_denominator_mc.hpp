// SPDX-License-Identifier: MIT
// Monte Carlo of issue 52's scenarios on clustered synthetic records (relay_failure_sim.hpp, the
// library's own path records → build_audit_report → decide), shared by
// tests/report/design_denominator_test.cpp:
// - "the design is the denominator": kv_full exactly at the non-inferiority margin (need text 0.95,
//   kv_full 0.90, exact accuracies under the item effect) on K need items × 3 seeds, and a stack
//   that loses the whole (item, seed) unit — every arm's record — with its failed relay (each wrong
//   kv_full record's unit dropped with probability 0.5). Without the design the units missing in
//   every arm are invisible; with it (audit_options::design_items/design_seeds) they are missing in
//   every arm and bounded (worst case). Any relay verdict is an error (no condition handles it).
// - "the estimand a deployment needs": 150 need items × 5 seeds where kv_full loses 7.2 points and
//   150 need items × 1 seed where kv_full = text_full (complete records): the mean over items is
//   −3.6 points (inside the margin), the mean over requests −6.0 (beyond it). Any relay verdict is
//   an error.
// The rate's Monte Carlo standard error over R replicates is sqrt(r(1 − r)/R); a test allows the
// claim α = 0.05 plus 3 standard errors of a rate at α.
#ifndef LATENTAUDIT_TESTS_REPORT_DESIGN_DENOMINATOR_MC_HPP
#define LATENTAUDIT_TESTS_REPORT_DESIGN_DENOMINATOR_MC_HPP

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "report/decision_mc.hpp"

namespace latentaudit::test {

/// The vanished-units scenario at `need_items` need items (150 or 300), seed `seed`.
inline decision_scenario vanished_units_scenario(std::size_t need_items, std::uint64_t seed) {
  decision_scenario s{.name = "units lost with their failed relay (" + std::to_string(need_items) +
                              " need items x 3 seeds, kv at the margin, the unit of a wrong kv dropped 50 %)",
                      .seed = seed};
  s.design = decision_base_design();
  s.design.regime_items = {need_items, 150, 60, 60};
  s.design.need_text = sim_p_for_accuracy(0.95, s.design.item_sd);
  s.design.need_kv = sim_p_for_accuracy(0.90, s.design.item_sd);
  s.design.drop_wrong_kv = 0.5;
  s.design.drop_regime = "need";
  s.design.drop_unit = true;
  s.condition = "";
  s.finding_id = "need.kv_noninferior_to_text";
  s.finding_error = verdict::yes;
  return s;
}

/// The power of the vanished-units path: kv_full as accurate as text_full (0.95 exact) on
/// `need_items` need items x 3 seeds, the unit of a wrong kv_full record dropped with probability
/// 0.5; relay allowed (with the base design's conditions) is the power.
inline decision_scenario vanished_units_power_scenario(std::size_t need_items, std::uint64_t seed) {
  decision_scenario s = vanished_units_scenario(need_items, seed);
  s.name = "units lost with their failed relay, kv as good as text (" + std::to_string(need_items) +
           " need items x 3 seeds, power)";
  s.design.need_kv = s.design.need_text;
  s.condition = "fresh caches";
  return s;
}

/// The estimand scenario: 150 need items x 5 seeds (the even items) where kv_full loses 7.2 points
/// against text_full (0.95 exact) and 150 need items x 1 seed (the odd items) where kv_full = text_full;
/// complete records. Mean over items −3.6 points, mean over requests −6.0: any relay verdict is an
/// error. With `power`, kv_full = text_full on every item (relay allowed is the power).
inline decision_scenario estimand_scenario(bool power, std::uint64_t seed) {
  decision_scenario s{
      .name = power ? std::string("unequal seeds, kv as good as text (150 need items x 5 seeds, 150 "
                                  "x 1 seed, power)")
                    : std::string("items with more queries lose more (150 need items x 5 seeds at "
                                  "-7.2 points, 150 x 1 seed at 0)"),
      .seed = seed};
  s.design = decision_base_design();
  s.design.regime_items = {300, 150, 60, 60};
  s.design.seeds = 5;
  s.design.odd_item_seeds = 1;
  const double sd = s.design.item_sd;
  s.design.need_text = sim_p_for_accuracy(0.95, sd);
  s.design.need_kv = power ? s.design.need_text : sim_p_for_accuracy(0.95 - 0.072, sd);
  s.design.odd_item_need_kv = s.design.need_text;
  s.condition = power ? "fresh caches" : "";
  s.finding_id = "need.kv_noninferior_to_text";
  s.finding_error = verdict::yes;
  return s;
}

/// The design of a simulated data set: its items (all regimes), seeds and each item's regime
/// (relay_failure_sim numbers the items regime by regime: need, no_need, stale, conflict).
inline void give_design(const relay_failure_design& d, audit_options& o) {
  const char* names[] = {"need", "no_need", "stale", "conflict"};
  const bool with[] = {true, true, d.with_stale, d.with_conflict};
  o.design_item_regime.clear();
  for (std::size_t g = 0; g < 4; ++g) {
    if (!with[g]) continue;
    const std::size_t n = d.regime_items.empty() ? d.items_per_regime : d.regime_items.at(g);
    for (std::size_t i = 0; i < n; ++i) o.design_item_regime.emplace_back(names[g]);
  }
  o.design_items = o.design_item_regime.size();
  o.design_seeds = std::max(d.seeds, d.odd_item_seeds);
}

/// Runs `reps` replicates of `s`, with the design given to the report or not.
inline decision_mc_result run_design_mc(const decision_scenario& s, std::size_t reps, bool with_design) {
  decision_mc_result out;
  for (std::size_t r = 0; r < reps; ++r) {
    const auto recs = simulate_relay_failure(s.design, s.seed + r);
    auto o = decision_mc_options();
    if (with_design) give_design(s.design, o);
    const auto rep = build_audit_report(recs, o);
    count_decision(s, rep.decision, out);
    for (const auto& f : rep.findings)
      if (f.id == s.finding_id && f.answer == s.finding_error) ++out.finding_errors;
  }
  return out;
}

/// MC standard error of a rate r over R replicates.
inline double mc_se(double r, std::size_t reps) {
  return std::sqrt(r * (1.0 - r) / static_cast<double>(reps));
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_REPORT_DESIGN_DENOMINATOR_MC_HPP
