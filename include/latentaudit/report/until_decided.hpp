// SPDX-License-Identifier: MIT
// latentaudit: an audit that stops when it has decided (`latentaudit audit --until-decided`), as a
// library loop any trial runner can drive: the design's items in batches, in item order; after each
// batch the report's decision on the records so far (every betting limit a confidence sequence
// tuned for the design's items); between looks each (regime, arm) cell runs on the next batch only
// while a finding that reads it or an open check of the decision is undecided (arm_cells_to_run);
// a stop at the first settled decision (decision_settled) or after the last batch. The CLI runs it
// on its trial drivers, the decision's Monte Carlo (tests/report/decision_mc.hpp) on simulated
// records: one rule, one implementation. docs/audit-report.md "An audit that stops when it has
// decided".
#ifndef LATENTAUDIT_REPORT_UNTIL_DECIDED_HPP
#define LATENTAUDIT_REPORT_UNTIL_DECIDED_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../trial/arm_schedule.hpp"
#include "../trial/record.hpp"
#include "decision.hpp"
#include "report.hpp"

namespace latentaudit {

/// @brief The design an audit stopped when decided runs: its items (item i in batch i /
/// batch_items, at most `looks` batches), each item's regime (known before any trial: a regime is
/// the task's), its seeds and its arm labels.
struct until_decided_plan {
  std::size_t batch_items = 0;           ///< items between two looks (≥ 1)
  std::size_t looks = 0;                 ///< batches: ⌈items / batch_items⌉
  std::vector<std::string> item_regime;  ///< per item: "need", "no_need", "stale" or "conflict"
  std::uint64_t seeds = 1;               ///< seeds per item (each (item, seed, arm) is one trial)
  std::vector<std::string> arms;         ///< the design's arm labels
};

/// @brief Where an audit stopped when decided stopped (the CLI summary's `until_decided`).
struct until_decided_result {
  arm_schedule schedule;                 ///< the trials each batch scheduled (schedule.json)
  std::size_t looks_taken = 0;           ///< batches run, each followed by a look
  bool settled = false;                  ///< stopped on a settled decision (else after the last batch)
  std::string verdict = "inconclusive";  ///< the decision at the stop
  std::uint64_t trials_scheduled = 0;    ///< trials of the batches run that the schedule gave
  std::uint64_t trials_left_out = 0;     ///< trials of those batches it left out (stopped cells)
};

/// @brief Runs `plan` batch by batch until the decision is settled.
///
/// Before batch k the schedule gains the batch, leaving out the cells the last look stopped, and
/// `on_schedule(schedule, left_out)` is called (the CLI writes schedule.json, and its drivers skip
/// the left-out trials); then `run_batch(k, schedule)` runs the batch's scheduled trials and returns
/// every record so far (records of later items are ignored, so a resume that already holds them
/// looks as the first run did). The look: build_audit_report on the records of batches ≤ k with
/// `look` (horizon, looks and regime_horizon as given; the schedule set here); `on_look(k + 1,
/// report, cells_running)` is told what it decided.
/// @param look the report options of every look (the caller sets horizon = the design's items,
///        looks, regime_horizon; relay_gate and demonstrations off, as the decision reads neither)
/// @throws invalid_argument for a plan without items, arms or seeds, whose looks do not cover its
///         items, or with an item of another regime; whatever run_batch or the report throws
template <class RunBatch, class OnSchedule, class OnLook>
until_decided_result run_until_decided(const until_decided_plan& plan, audit_options look,
                                       RunBatch&& run_batch, OnSchedule&& on_schedule, OnLook&& on_look) {
  constexpr std::string_view fn = "run_until_decided";
  const std::size_t n = plan.item_regime.size();
  if (n == 0 || plan.arms.empty() || plan.seeds == 0)
    detail::throw_invalid(fn, "plan", "must hold items, arms and seeds");
  if (plan.batch_items == 0 || plan.looks != (n + plan.batch_items - 1) / plan.batch_items)
    detail::throw_invalid(fn, "plan.looks", "must be the batches of plan.batch_items that cover the items");
  for (const auto& g : plan.item_regime)
    if (g != "need" && g != "no_need" && g != "stale" && g != "conflict")
      detail::throw_invalid(fn, "plan.item_regime",
                            "must name need, no_need, stale or conflict, got '" + g + "'");
  std::set<arm_cell> cells;  // the design's cells: every regime of its items × every arm
  for (const auto& g : plan.item_regime)
    for (const auto& a : plan.arms) cells.insert(arm_cell{g, a});
  until_decided_result out;
  out.schedule = arm_schedule{.batch_items = plan.batch_items};
  std::set<arm_cell> to_run = cells;
  while (out.looks_taken < plan.looks && !out.settled) {
    const std::size_t k = out.looks_taken;
    std::set<arm_cell> left_out;
    for (const auto& c : cells)
      if (to_run.count(c) == 0) left_out.insert(c);
    out.schedule.add_batch(left_out);
    on_schedule(static_cast<const arm_schedule&>(out.schedule),
                static_cast<const std::set<arm_cell>&>(left_out));
    const std::size_t end = std::min(n, (k + 1) * plan.batch_items);
    for (std::size_t i = k * plan.batch_items; i < end; ++i)
      for (const auto& a : plan.arms)
        (left_out.count(arm_cell{plan.item_regime[i], a}) != 0 ? out.trials_left_out
                                                               : out.trials_scheduled) += plan.seeds;
    const std::vector<trial_record>& all = run_batch(k, static_cast<const arm_schedule&>(out.schedule));
    ++out.looks_taken;
    std::vector<trial_record> records;  // this look's: the records of the batches run so far
    for (const auto& r : all)
      if (r.item < end) records.push_back(r);
    look.schedule = out.schedule;
    const auto report = build_audit_report(records, look);
    out.verdict = decision_verdict_name(report.decision.verdict);
    out.settled = decision_settled(report.decision);
    to_run = arm_cells_to_run(report.findings, report.decision);
    std::size_t running = 0;
    for (const auto& c : cells) running += to_run.count(c);
    on_look(out.looks_taken, static_cast<const audit_report&>(report), running);
  }
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_UNTIL_DECIDED_HPP
