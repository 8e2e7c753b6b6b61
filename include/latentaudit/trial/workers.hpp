// SPDX-License-Identifier: MIT
// latentaudit: one design on several trial drivers at once (`latentaudit audit --jobs N`): one
// thread per driver, each with its own engines, taking the design's units from one shared
// schedule. Every random stream derives from (seed, item, arm, replicate), and the records reach
// the sink in the units' order, so the sink sees one driver's run but for the timings; it is
// called by one thread at a time (one writer per journal). docs/design.md "Trials on several
// workers".
#ifndef LATENTAUDIT_TRIAL_WORKERS_HPP
#define LATENTAUDIT_TRIAL_WORKERS_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "design.hpp"
#include "driver.hpp"
#include "record.hpp"
#include "task.hpp"

namespace latentaudit {

/// @brief Runs `design` on every driver of `drivers` at once, one thread each (the first on the
/// calling thread), as trial_driver::run() runs it on one: the units of design.unit_order() are
/// handed out in order, one at a time, to whichever driver is free, so each unit runs exactly
/// once, on one driver, with its arms in the design's order. The records equal a one-driver run's
/// but for their timings (the drivers' engines must be alike: the same model on the same engine,
/// each driver with its own instances, since an engine holds sequence state), and they reach
/// `sink` in the same order, one call at a time: a unit's records are held until every unit before
/// it has been passed on (at most the units the other drivers hold, while they run). `tasks` and
/// `progress` are called under the same lock (a task source need not be thread-safe). On the
/// first exception of any driver no further unit is handed out, the others finish the unit they
/// hold, every finished trial's record is passed on (in unit order, past the gap the failed unit
/// leaves, so no finished work is lost), and the exception is rethrown.
/// @param drivers the drivers (non-null; at least one); drivers that relay over a channel must
///        each hold their own (one channel is one conversation: `audit --jobs N --relay-transport
///        tcp` opens N), two on one channel are refused
/// @param positions the units to run, as positions in design.unit_order(), in the order they are
///        handed out and passed on (e.g. one batch of items of `audit --until-decided`); empty: every
///        unit, in order
/// @param source instead of `positions`: a callable that gives the next position to run, or none
///        when there are no more (e.g. an MPI rank's share, asked for as workers come free: `mpirun
///        … audit --jobs N`); called under the same lock as the sink, so one thread at a time
/// @returns the drivers' statistics summed (worker_wall_s: their wall times); wall_s is this call's
///          wall time
/// @throws invalid_argument for an empty span, a null driver, a position past the units, or both
///         `positions` and `source`; whatever a driver's run() throws
template <class Driver>
driver_stats run_on_workers(std::span<Driver* const> drivers, const trial_design& design,
                            const typename Driver::task_source& tasks,
                            const std::function<void(const trial_record&)>& sink,
                            const std::set<trial_key>& done = {}, const progress_callback& progress = {},
                            std::span<const std::size_t> positions = {}, const unit_schedule& source = {}) {
  constexpr std::string_view fn = "run_on_workers";
  if (drivers.empty()) detail::throw_invalid(fn, "drivers", "must hold at least one driver");
  std::set<const remote_sender*> remotes;
  for (const Driver* d : drivers) {
    if (d == nullptr) detail::throw_invalid(fn, "drivers", "must not hold a null driver");
    if (d->remote_sender_in_use() != nullptr && !remotes.insert(d->remote_sender_in_use()).second)
      detail::throw_invalid(fn, "drivers",
                            "must not relay two drivers through one remote sender (one relay channel is one "
                            "conversation: give each driver its own)");
  }
  if (!tasks) detail::throw_invalid(fn, "tasks", "must be a callable task source");
  if (!sink) detail::throw_invalid(fn, "sink", "must be a callable");
  if (source && !positions.empty())
    detail::throw_invalid(fn, "source", "excludes positions (give one of them)");
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t all_units = design.unit_order().size();
  for (std::size_t p : positions)
    if (p >= all_units)
      detail::throw_invalid(
          fn, "positions",
          "holds position " + std::to_string(p) + " of " + std::to_string(all_units) + " units");
  // units are handed out and passed on by their index k in the run: position positions[k] (or k)
  const std::size_t units = positions.empty() ? all_units : positions.size();
  std::mutex mu;                     // the sink, the task source, the progress sum
  std::atomic<std::size_t> next{0};  // the next index k of the run
  std::atomic<bool> stop{false};     // a driver failed: hand out no more units
  bool source_done = false;          // (under mu) the source said there are no more units
  std::vector<std::uint64_t> finished(drivers.size(), 0);
  std::vector<driver_stats> stats(drivers.size());
  std::vector<std::exception_ptr> failed(drivers.size());
  const std::uint64_t total = design.trials();
  // The reorder buffer (under mu): records of finished units wait for every unit before theirs.
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::size_t> holding(drivers.size(), none);    // the unit each driver runs
  std::map<std::size_t, std::vector<trial_record>> pending;  // records of units not yet passed on
  std::set<std::size_t> finished_units;                      // finished, not yet passed on
  std::size_t next_out = 0;                                  // the next unit to pass on
  auto flush = [&](std::size_t p) {                          // caller holds mu
    if (auto it = pending.find(p); it != pending.end()) {
      for (const auto& r : it->second) sink(r);
      pending.erase(it);
    }
  };
  // Passes on every finished unit from next_out on, in order, and the records so far of the unit
  // that then is the oldest (it may still be running: its later records go straight to the sink);
  // `all`: past gaps too (after the drivers stopped).
  auto pass_on = [&](bool all) {  // caller holds mu
    for (;;) {
      flush(next_out);
      if (finished_units.empty()) break;
      const std::size_t p = *finished_units.begin();
      if (!all && p != next_out) break;
      finished_units.erase(finished_units.begin());
      flush(p);
      next_out = p + 1;
    }
  };
  auto finish_unit = [&](std::size_t w) {  // caller holds mu
    if (holding[w] == none) return;
    finished_units.insert(holding[w]);
    holding[w] = none;
    pass_on(false);
  };
  auto work = [&](std::size_t w) {
    try {
      const unit_schedule schedule = [&]() -> std::optional<std::size_t> {
        {
          const std::lock_guard<std::mutex> lock(mu);
          finish_unit(w);  // the unit this driver ran is complete
        }
        if (stop.load()) return std::nullopt;
        if (source) {  // the next unit from the source: the k-th handed out
          const std::lock_guard<std::mutex> lock(mu);
          if (source_done) return std::nullopt;  // asked once past its end, never again
          const auto p = source();
          if (!p) {
            source_done = true;
            return std::nullopt;
          }
          if (*p >= all_units)
            detail::throw_invalid(
                fn, "source",
                "returned position " + std::to_string(*p) + " of " + std::to_string(all_units) + " units");
          const std::size_t k = next.fetch_add(1);
          holding[w] = k;
          return *p;
        }
        const std::size_t k = next.fetch_add(1);
        if (k >= units) return std::nullopt;
        const std::lock_guard<std::mutex> lock(mu);
        holding[w] = k;
        return positions.empty() ? k : positions[k];
      };
      const typename Driver::task_source locked_tasks = [&](std::uint64_t item, std::uint64_t s) {
        const std::lock_guard<std::mutex> lock(mu);
        return tasks(item, s);
      };
      const auto locked_sink = [&](const trial_record& r) {
        const std::lock_guard<std::mutex> lock(mu);
        if (holding[w] == next_out)
          sink(r);  // the oldest unit still running: nothing before it waits
        else
          pending[holding[w]].push_back(r);
      };
      const progress_callback each = [&](std::uint64_t d, std::uint64_t) {
        if (!progress) return;
        const std::lock_guard<std::mutex> lock(mu);
        finished[w] = d;
        std::uint64_t sum = 0;
        for (auto f : finished) sum += f;
        progress(sum, total);
      };
      stats[w] = drivers[w]->run(design, locked_tasks, locked_sink, done, each, schedule);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mu);
      failed[w] = std::current_exception();
      holding[w] = none;  // its unit did not finish: its finished trials are passed on at the end
      stop.store(true);
    }
  };
  {
    std::vector<std::jthread> threads;
    threads.reserve(drivers.size() - 1);
    for (std::size_t w = 1; w < drivers.size(); ++w) threads.emplace_back(work, w);
    work(0);
  }  // joined
  {
    const std::lock_guard<std::mutex> lock(mu);
    pass_on(true);  // after a failure: the finished units past the gap,
    while (!pending.empty()) flush(pending.begin()->first);  // and the failed units' finished trials
  }
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
  driver_stats out;
  for (const auto& s : stats) out += s;
  out.worker_wall_s = out.wall_s;  // the drivers' wall times summed; this call's wall time below
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_WORKERS_HPP
