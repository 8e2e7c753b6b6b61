// SPDX-License-Identifier: MIT
// latentaudit: the audit as a library call. An audit_session takes a trial design (its task
// identity set by the caller), the tasks and the engines, and owns the rest of an audit: the arms
// the engine cannot run (restrict_to_engine, budget units), the engine's part of the design
// identity, the records directory (records set, journal, resume, which refuses another design),
// the workers (`--jobs`), the topology (one process; agent A in another process over any
// dist::relay_channel — tcp or MPI —, on either end; a share of a sharded run under an MPI
// launcher, through dist::audit_ranks), the stopping rule (run_until_decided, schedule.json) and the
// report, written once as one set. `latentaudit audit` and `latentaudit relay-peer` parse their
// options, load the engines and call it. docs/design.md "The path of one trial". It lives in the
// runner module, apart from report/: the report builds from records alone, without the driver,
// the workers or the sockets of a relay link (<latentaudit/report.hpp> includes no dist/ header).
#ifndef LATENTAUDIT_RUNNER_AUDIT_SESSION_HPP
#define LATENTAUDIT_RUNNER_AUDIT_SESSION_HPP

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/json.hpp"
#include "../dist/audit_ranks.hpp"
#include "../dist/relay_protocol.hpp"
#include "../dist/shard.hpp"
#include "../dist/transport.hpp"
#include "../report/report.hpp"
#include "../report/until_decided.hpp"
#include "../trial/arm_schedule.hpp"
#include "../trial/design.hpp"
#include "../trial/driver.hpp"
#include "../trial/engine_support.hpp"
#include "../trial/journal.hpp"
#include "../trial/message.hpp"
#include "../trial/task_file.hpp"
#include "../trial/workers.hpp"
#include "../version.hpp"
#include "audit_spec.hpp"

namespace latentaudit {

/// @brief Makes the engines of one more worker (`--jobs N`: called N - 1 times before any trial).
template <class Engine, class Partner = Engine>
using audit_worker_factory = std::function<std::unique_ptr<audit_engines<Engine, Partner>>()>;

/// @brief Which end of the relay this process plays.
enum class audit_role {
  agent_b,  ///< the audit: B's trials, the journal and the report (A here or over `channel`)
  agent_a,  ///< agent A in another process: serves the sender's half of B's relays over `channel`
};

/// @brief Where the audit's processes are and how they talk.
struct audit_topology {
  audit_role role = audit_role::agent_b;  ///< this process's end of the relay
  /// worker w's conversation with agent A (as B) or B (as A) in another process — a tcp or MPI
  /// dist::relay_channel, one conversation per worker —; empty: A runs in this process. Called
  /// once per worker, after the design's identity is fixed (`design.design_hash()`).
  std::function<dist::relay_channel&(unsigned worker, const trial_design& design)> channel;
  /// worker w's key of the relays' wire HMAC tag (the authenticated tcp channel's); empty: the
  /// driver's own (derived from the seed)
  std::function<std::span<const std::byte>(unsigned worker)> relay_key;
  /// after B's last trial, before its journal closes (a tcp link's end)
  std::function<void()> after_trials;
  /// agent A: worker 0's greeting when the caller read it already (dist::receive_hello), to run the
  /// design it carries (dist::design_of_hello); null: each conversation's greeting is read here
  json_value received_hello;
  dist::audit_ranks* ranks = nullptr;  ///< under an MPI launcher (not owned); null: one process
  /// the two ranks are agent B (rank 0) and agent A (rank 1) of a relay over MPI, not shards
  bool ranks_relay = false;
  dist::shard_schedule scheme = dist::shard_schedule::interleaved;  ///< a sharded run's units
};

/// @brief The options of an audit_session.
struct audit_session_options {
  std::filesystem::path out = "audit-out";  ///< the records directory: records, design.json, report
  /// the directory's lock, if the caller took it already (to check the directory under it); else
  /// the session takes it (agent B of a one-process or relay run, rank 0 of a sharded one)
  std::optional<directory_lock> lock;
  bool resume = false;                    ///< continue the records in `out` (a different design is refused)
  bool durable = false;                   ///< fsync each record (record_journal)
  bool trials_only = false;               ///< journal the trials, write no report
  unsigned jobs = 1;                      ///< workers, each with its own engines (run_on_workers)
  std::string engine_name = "reference";  ///< the design identity's engine ("reference", "llama.cpp")
  /// arms the caller already left out (e.g. a drifted sender of another cache shape), with reasons
  std::vector<skipped_arm> arms_unavailable;
  message_options messages;  ///< the message arms' options (`detokenize`: the records' message text)
  /// stop when decided: items per batch (0: the whole design at once, no looks)
  std::uint64_t batch_items = 0;
  /// stop when decided: each task's regime ("need", ...), task i = item i; its counts per regime tune
  /// the intervals (audit_options::regime_horizon)
  std::vector<std::string> item_regime;
  audit_options report;  ///< the report's options (design arms, horizon, engine, unavailable arms: set here)
  /// the tasks for report.html's drill-down, asked for after the trials (not held through them)
  std::function<std::shared_ptr<const task_file>(const trial_design& design, std::string& note)> report_tasks;
  /// trials done (resumed ones included) and total, and those resumed
  std::function<void(std::uint64_t done, std::uint64_t total, std::uint64_t resumed)> progress;
  /// stop when decided: after look k of `looks` on `items` items, its report and the (regime, arm)
  /// cells still running of `cells_all`
  std::function<void(std::size_t k, std::size_t looks, std::uint64_t items, const audit_report& look,
                     std::size_t cells, std::size_t cells_all)>
      on_look;
  std::function<void(std::size_t records)> before_report;  ///< the report's analysis starts
  audit_topology topology;                                 ///< where the processes are
};

/// @brief What an audit_session ran and found.
struct audit_session_result {
  trial_design design;                        ///< the design as run (restricted, its identity fixed)
  std::vector<skipped_arm> arms_unavailable;  ///< every arm left out, with its reason
  driver_stats stats;                         ///< this process's trials
  /// false where another process summarises (agent A; a rank > 0 of a sharded run)
  bool summarises = true;
  json_value shard;                    ///< a sharded run's figures (audit_ranks::finish), on rank 0
  json_value until_decided;            ///< stop when decided: what the rule did (null otherwise)
  std::optional<audit_report> report;  ///< the report (not with trials_only)
  std::size_t records = 0;             ///< records the report read
  std::map<std::string, std::string> metrics_unavailable;  ///< metrics the engine could not measure
  double analysis_s = 0.0;                                 ///< seconds of the report's analysis
};

namespace detail {

/// @brief The summary of a stopped run (`audit --until-decided`'s "until_decided").
inline json_value until_decided_summary(const until_decided_result& res, std::uint64_t batch_items,
                                        std::size_t looks, const trial_design& d, std::size_t records) {
  json_value s = json_value::object();
  s.set("batch_items", static_cast<double>(batch_items));
  s.set("looks_planned", static_cast<double>(looks));
  s.set("looks_taken", static_cast<double>(res.looks_taken));
  s.set("items_planned", static_cast<double>(d.items));
  s.set("items_run", static_cast<double>(std::min<std::uint64_t>(res.looks_taken * batch_items, d.items)));
  s.set("trials_planned", static_cast<double>(d.trials()));
  s.set("trials_scheduled", static_cast<double>(res.trials_scheduled));
  s.set("trials_left_out", static_cast<double>(res.trials_left_out));
  s.set("trials_in_records", static_cast<double>(records));
  s.set("settled", res.settled);
  s.set("decision_at_stop", res.verdict);
  return s;
}

}  // namespace detail

/// @brief One audit: the design, its options, and run() on the engines. See the file comment.
class audit_session {
 public:
  /// @brief The session of `design` (its arms, items, seeds, seed and the task part of its identity:
  /// task_source, task_hash, task_options, options) under `options`.
  /// @throws invalid_argument if the options contradict the topology (stopping when decided runs in
  ///         one process; agent A keeps no journal).
  explicit audit_session(trial_design design, audit_session_options options = {})
      : d_(std::move(design)), o_(std::move(options)) {
    check_options();
  }

  /// @brief The session of the audit `spec` declares under `options`: run() builds its design on the
  /// engines (build_audit_design: the design, its whole identity, the arms left out, the matched
  /// cache maps every driver relays through). The spec's engine name, stopping rule (batch_items,
  /// item_regime), messages (`options.messages.detokenize` kept), report options and workers
  /// (topology.jobs) replace the options'.
  /// @throws invalid_argument naming the spec's field (audit_design_arms; `spec.topology.relay` when the
  ///         options' topology has no channels to agent A for the relay it names, or has them for
  ///         none) or as the other constructor.
  explicit audit_session(audit_spec spec, audit_session_options options = {})
      : d_(audit_design_arms(spec).design), o_(std::move(options)) {
    o_.engine_name = spec.engine;
    o_.batch_items = spec.batch_items;
    o_.item_regime = spec.item_regime;
    o_.report = spec.report;
    o_.jobs = spec.topology.jobs;
    if ((spec.topology.relay != audit_relay_transport::none) != static_cast<bool>(o_.topology.channel))
      detail::throw_invalid("audit_session", "spec.topology.relay",
                            spec.topology.relay == audit_relay_transport::none
                                ? "names no relay, but options.topology has channels to agent A"
                                : "names a relay, but options.topology has no channels to agent A");
    if (spec.topology.relay == audit_relay_transport::mpi && o_.topology.ranks == nullptr)
      detail::throw_invalid("audit_session", "spec.topology.relay",
                            "a relay over MPI needs options.topology.ranks");
    message_options m = spec.messages.value_or(message_options{});
    if (!m.detokenize) m.detokenize = o_.messages.detokenize;
    o_.messages = std::move(m);
    spec_ = std::move(spec);
    check_options();
  }

 private:
  void check_options() const {
    constexpr std::string_view fn = "audit_session";
    const auto& t = o_.topology;
    if (o_.jobs == 0) detail::throw_invalid(fn, "options.jobs", "must be >= 1");
    if (o_.batch_items != 0 && (t.channel || t.ranks != nullptr))
      detail::throw_invalid(fn, "options.batch_items", "(stop when decided) runs in one process");
    if (o_.batch_items != 0 && o_.item_regime.size() < d_.items)
      detail::throw_invalid(fn, "options.item_regime", "must name every item's regime");
    if (t.role == audit_role::agent_a && !t.channel)
      detail::throw_invalid(fn, "options.topology.channel", "agent A needs its channels to agent B");
    if (t.ranks_relay && t.ranks == nullptr)
      detail::throw_invalid(fn, "options.topology.ranks", "a relay over MPI needs its ranks");
  }

 public:
  /// @brief Runs the audit on `first`'s engines (and `--jobs - 1` more from `make_worker`), the tasks
  /// from `tasks`; `configure(driver)` is called on every driver (e.g. to add cache maps). Returns
  /// what it ran and, where this process summarises, the report (also written to `out`).
  /// @throws invalid_argument on a second call: a session runs once (its lock went to the journal and
  ///         its design is restricted); another run, a resume included, is another session.
  /// @throws error subclasses: a resume of another design, a journal or engine failure, a
  ///         relay peer's failure (named), a look's analysis failure.
  template <class Engine, class Partner, class Configure>
  audit_session_result run(const task_file_source& tasks, audit_engines<Engine, Partner>& first,
                           const std::type_identity_t<audit_worker_factory<Engine, Partner>>& make_worker,
                           Configure&& configure) {
    using driver_type = trial_driver<Engine, Partner>;
    if (ran_)
      detail::throw_invalid("audit_session::run", "run",
                            "a session runs once: make another session for another run or a resume");
    ran_ = true;
    audit_session_result res;
    restrict(first, tasks);
    res.arms_unavailable = o_.arms_unavailable;
    auto& t = o_.topology;
    // the drivers, one per worker: B's trials or A's half, each on its own engines
    std::vector<std::unique_ptr<audit_engines<Engine, Partner>>> workers;
    std::vector<std::unique_ptr<driver_type>> drivers;
    auto add_driver = [&](audit_engines<Engine, Partner>& e) {
      drivers.push_back(std::make_unique<driver_type>(e.engine, e.partner ? &*e.partner : nullptr));
      for (auto& [name, s] : e.senders) drivers.back()->add_sender(name, s);
      drivers.back()->set_message_options(o_.messages);
      maps_.add_to(*drivers.back());  // the spec's matched cache maps (kv_mapped arms)
      configure(*drivers.back());
    };
    add_driver(first);
    const unsigned n = o_.jobs;
    for (unsigned w = 1; w < n; ++w) {
      if (!make_worker) detail::throw_invalid("audit_session::run", "make_worker", "needed for jobs > 1");
      workers.push_back(make_worker());
      add_driver(*workers.back());
    }
    if (t.role == audit_role::agent_a) {
      if (t.ranks != nullptr) {  // rank 1 of a relay over MPI: the same design, then B opens its journal
        t.ranks->agree_design(d_);
        t.ranks->step([] {});
      }
      res.stats = serve(drivers, tasks);
      if (t.ranks != nullptr) (void)t.ranks->finish(res.stats);
      res.design = d_;
      res.summarises = false;
      return res;
    }
    std::optional<record_journal> journal;
    std::vector<trial_record> seen;  // stop when decided: every record so far (a resume's, read on open)
    std::set<trial_key> skip = open_records(journal, seen);  // the keys done; stopped cells join them
    const std::uint64_t resumed = skip.size();
    // worker w's link to agent A in another process
    std::deque<dist::channel_sender> remotes;
    for (unsigned w = 0; w < n; ++w) {
      if (!t.channel) break;
      drivers[w]->set_remote_sender(&remotes.emplace_back(t.channel(w, d_)));
      if (t.relay_key) drivers[w]->set_relay_key(t.relay_key(w));
    }
    std::uint64_t base = 0;  // stop when decided: the trials of the batches before this one
    const auto task_of = [&](std::uint64_t item, std::uint64_t s) { return tasks.task(item, s, d_.seed); };
    const auto sink = [&](const trial_record& rec) {
      journal->append(rec);
      if (o_.batch_items != 0) {
        seen.push_back(rec);
        seen.back().policy = json_value();
      }
      if (t.ranks != nullptr) t.ranks->poll();
    };
    const auto progress = [&](std::uint64_t done, std::uint64_t total) {
      if (o_.progress) o_.progress(base + done, total, resumed);
    };
    std::vector<driver_type*> all;
    for (auto& dr : drivers) all.push_back(dr.get());
    // the units at `positions` of the design's unit order (all: empty), or those `source` hands out
    auto run_units = [&](std::span<const std::size_t> positions, const unit_schedule& source) {
      if (n > 1)
        return run_on_workers<driver_type>(all, d_, task_of, sink, skip, progress, positions, source);
      if (positions.empty()) return drivers[0]->run(d_, task_of, sink, skip, progress, source);
      std::size_t k = 0;
      return drivers[0]->run(d_, task_of, sink, skip, progress,
                             unit_schedule([&]() -> std::optional<std::size_t> {
                               if (k == positions.size()) return std::nullopt;
                               return positions[k++];
                             }));
    };
    if (o_.batch_items != 0) {
      res.stats = run_until_decided_here(run_units, skip, seen, base, res.until_decided);
    } else if (t.ranks != nullptr && !t.ranks_relay) {  // sharded: this rank's units
      res.stats =
          t.ranks->run_trials(d_, t.scheme, [&](const unit_schedule& mine) { return run_units({}, mine); });
    } else {
      try {
        res.stats = run_units({}, {});
      } catch (...) {  // a relay over MPI: release agent A ("done") so that both ranks agree on this failure
        if (t.ranks_relay)
          for (unsigned w = 0; w < n && t.channel; ++w) {
            try {
              dist::detail::send_control(t.channel(w, d_), json_value::object({{"op", "done"}}));
            } catch (const std::exception&) {
            }
          }
        throw;
      }
    }
    if (t.after_trials) t.after_trials();
    journal->close();  // cuts the file's zero padding
    if (t.ranks != nullptr) {
      json_value sj = t.ranks->finish(res.stats);
      if (!t.ranks_relay) res.shard = std::move(sj);
      if (t.ranks->rank() != 0) {
        res.summarises = false;
        res.design = d_;
        return res;
      }
    }
    if (!o_.trials_only) write_report(res);
    res.design = d_;
    return res;
  }

  /// @brief run() without a per-driver configuration.
  template <class Engine, class Partner>
  audit_session_result run(
      const task_file_source& tasks, audit_engines<Engine, Partner>& first,
      const std::type_identity_t<audit_worker_factory<Engine, Partner>>& make_worker = {}) {
    return run(tasks, first, make_worker, [](auto&) {});
  }

  /// @brief The design as it stands (after run(): restricted to the engine, its identity fixed).
  [[nodiscard]] const trial_design& design() const noexcept { return d_; }

 private:
  // The arms the engine (and the tasks) cannot run are left out with their reasons; the identity
  // names the engine, its models, the arms left out and the stopping rule; the design is checked.
  template <class Engine, class Partner>
  void restrict(const audit_engines<Engine, Partner>& first, const task_file_source& tasks) {
    if (spec_) {  // the one builder: the design, its whole identity, the arms left out, the maps
      audit_design built = build_audit_design(*spec_, first, tasks);
      d_ = std::move(built.design);
      o_.arms_unavailable = std::move(built.arms_unavailable);
      maps_ = std::move(built.maps);
      return;
    }
    detail::restrict_audit_design(d_, o_.arms_unavailable, first, tasks, o_.engine_name, o_.batch_items,
                                  o_.item_regime);
  }

  [[nodiscard]] std::size_t looks() const noexcept {
    return o_.batch_items == 0 ? 1
                               : static_cast<std::size_t>((d_.items + o_.batch_items - 1) / o_.batch_items);
  }

  // the tasks of each regime (stop when decided tunes each regime's intervals for them)
  [[nodiscard]] std::map<std::string, std::size_t> regime_items() const {
    std::map<std::string, std::size_t> m;
    for (const auto& g : o_.item_regime) ++m[g];
    return m;
  }

  // Agent B's records directory: the lock, the records set, the journal (a resume compares the
  // design), or this rank's journal of a sharded run; returns the keys already done and, stopping
  // when decided, puts the records already there into `seen`. Each records file is parsed once
  // (read_records_set_contents), its records handed to the checks, the journal and the keys.
  std::set<trial_key> open_records(std::optional<record_journal>& journal, std::vector<trial_record>& seen) {
    auto& t = o_.topology;
    const bool holds_dir = t.ranks == nullptr || t.ranks->rank() == 0;
    if (holds_dir && !o_.lock) o_.lock.emplace(o_.out, "audit records directory");
    if (t.ranks != nullptr && !t.ranks_relay) {
      t.ranks->agree_design(d_);
      return t.ranks->open_journal(journal, o_.out, d_, o_.resume, o_.durable);
    }
    dist::records_set_contents set;
    const auto open = [&] {  // a sharded run's files are sealed and checked; records.jsonl is the journal's
      set = dist::read_records_set_contents(o_.out);
      dist::prepare_records_set(set, o_.out, d_, o_.resume, {"records.jsonl"});
      journal.emplace(std::move(*o_.lock), d_, o_.resume, o_.durable, "records.jsonl",
                      set.find("records.jsonl"));
    };
    if (t.ranks_relay) {  // both ranks: the same design; then B opens its journal
      t.ranks->agree_design(d_);
      t.ranks->step(open);
    } else {
      open();
    }
    std::set<trial_key> keys = set.keys();
    if (o_.batch_items != 0) seen = set.take_records({.policy = false});
    return keys;
  }

  // Agent A: every worker's conversation served on its own thread with its own driver, the tasks
  // behind one lock; the first failure rethrown once every conversation ended (B stops its workers,
  // whose "done" ends the others).
  template <class Driver>
  driver_stats serve(std::vector<std::unique_ptr<Driver>>& drivers, const task_file_source& tasks) {
    auto& t = o_.topology;
    const std::size_t n = drivers.size();
    std::mutex tasks_mu;
    const auto task_of = [&](std::uint64_t item, std::uint64_t s) {
      const std::lock_guard<std::mutex> hold(tasks_mu);
      return tasks.task(item, s, d_.seed);
    };
    std::vector<dist::relay_channel*> links;
    for (std::size_t w = 0; w < n; ++w) {
      links.push_back(&t.channel(static_cast<unsigned>(w), d_));
      if (t.relay_key) drivers[w]->set_relay_key(t.relay_key(static_cast<unsigned>(w)));
    }
    std::vector<driver_stats> stats(n);
    std::vector<std::exception_ptr> failed(n);
    auto one = [&](std::size_t w) {
      try {
        const json_value* hello = w == 0 && !t.received_hello.is_null() ? &t.received_hello : nullptr;
        stats[w] = dist::serve_sender(*drivers[w], d_, task_of, *links[w], hello);
      } catch (...) {
        failed[w] = std::current_exception();
      }
    };
    std::vector<std::thread> threads;
    for (std::size_t w = 1; w < n; ++w) threads.emplace_back(one, w);
    one(0);
    for (auto& th : threads) th.join();
    for (const auto& e : failed)
      if (e) std::rethrow_exception(e);
    driver_stats total;
    for (const auto& s : stats) total += s;
    return total;
  }

  // Stop when decided (docs/audit-report.md, "An audit that stops when it has decided"): the
  // library's loop on this session's drivers. Before each batch `out`/schedule.json gets the trials
  // it schedules and the trials of the cells the last look stopped go into `skip`; each look reads
  // every record so far in the order of a one-process run (on a resume the loop ignores records of
  // later batches, so the run stops — and stops each arm — where the first run did).
  template <class RunUnits>
  driver_stats run_until_decided_here(RunUnits& run_units, std::set<trial_key>& skip,
                                      const std::vector<trial_record>& seen, std::uint64_t& base,
                                      json_value& summary) {
    const auto units = d_.unit_order();
    const std::size_t nlooks = looks();
    std::vector<std::vector<std::size_t>> batches(nlooks);
    for (std::size_t p = 0; p < units.size(); ++p)
      batches[static_cast<std::size_t>(units[p].first / o_.batch_items)].push_back(p);
    until_decided_plan plan{.batch_items = o_.batch_items,
                            .looks = nlooks,
                            .item_regime = {o_.item_regime.begin(),
                                            o_.item_regime.begin() + static_cast<std::ptrdiff_t>(d_.items)},
                            .seeds = d_.seeds};
    for (const auto& a : d_.arms) plan.arms.push_back(a.label);
    audit_options look = o_.report;
    look.horizon = static_cast<std::size_t>(d_.items);
    look.looks = nlooks;
    look.regime_horizon = regime_items();
    look.relay_gate = false;
    look.demonstrations = false;
    look.design_arms = plan.arms;
    driver_stats total;
    // A resume replays the looks, so the schedule grows again from one batch; schedule.json keeps
    // the first run's (the same trials, by determinism) until the replay passes it, so that a resume
    // cut during the replay never leaves a schedule shorter than the records it sits beside.
    const auto schedule_file = o_.out / "schedule.json";
    std::uint64_t on_disk = 0;
    std::optional<arm_schedule> disk;  // a resume's schedule.json, checked against the replay
    if (o_.resume && std::filesystem::exists(schedule_file)) {
      try {
        disk = read_arm_schedule(schedule_file, d_.items, {plan.arms.begin(), plan.arms.end()});
        on_disk = disk->batches;
      } catch (const error&) {  // unreadable: rewritten from the first batch on
      }
    }
    // The journal decides: the replay rebuilds each batch's schedule from records.jsonl; a
    // schedule.json that says otherwise (another batch size, a cell run or left out elsewhere,
    // more batches than the run scheduled) is a contradiction, refused naming both files.
    const auto contradiction = [&](const std::string& why) {
      LATENTAUDIT_THROW(invalid_argument("audit --resume: '" + schedule_file.string() + "' contradicts '" +
                                         (o_.out / "records.jsonl").string() + "': " + why +
                                         " (remove schedule.json to rebuild it from the journal)"));
    };
    const auto check_disk = [&](const arm_schedule& replay) {
      if (!disk || replay.batches > disk->batches) return;
      if (disk->batch_items != replay.batch_items)
        contradiction("its batches hold " + std::to_string(disk->batch_items) + " items, the journal's " +
                      std::to_string(replay.batch_items));
      if (arm_schedule_prefix(*disk, replay.batches).partial != replay.partial)
        contradiction("batch " + std::to_string(replay.batches) +
                      " leaves out other (regime, arm) cells than the journal's records decide");
    };
    std::vector<trial_record> records;  // a look's records, in the order of a one-process run
    const std::size_t cells_all = regime_items().size() * d_.arms.size();
    const auto res = latentaudit::run_until_decided(
        plan, look,
        [&](std::size_t k, const arm_schedule&) -> const std::vector<trial_record>& {
          total += run_units(batches[k], unit_schedule{});
          base += batches[k].size() * d_.arms.size();
          records = seen;
          dist::order_as_executed(records, d_);
          return records;
        },
        [&](const arm_schedule& schedule, const std::set<arm_cell>& left_out) {
          check_disk(schedule);
          if (schedule.batches > on_disk) write_arm_schedule(schedule_file, schedule);
          const std::size_t k = schedule.batches - 1;
          for (const std::size_t p : batches[k]) {
            const auto [item, s] = units[p];
            for (const auto& a : d_.arms)
              if (left_out.count(arm_cell{o_.item_regime[item], a.label}) != 0)
                skip.insert(trial_key{item, s, a.label});
          }
        },
        [&](std::size_t k, const audit_report& report, std::size_t cells) {
          if (o_.on_look)
            o_.on_look(k, nlooks, std::min<std::uint64_t>(k * o_.batch_items, d_.items), report,
                       decision_settled(report.decision) ? 0 : cells, cells_all);
        });
    if (disk && disk->batches > res.schedule.batches)
      contradiction("it schedules " + std::to_string(disk->batches) +
                    " batches, the journal's run stops after " + std::to_string(res.schedule.batches));
    schedule_ = res.schedule;
    summary = detail::until_decided_summary(res, o_.batch_items, nlooks, d_, seen.size());
    total.skipped -= res.trials_left_out;  // the drivers skip them as done: they are not a resume's
    return total;
  }

  // The report on every records file of `out`, in the order of a one-process run, written once as
  // one set (report.md, report.json, report.html, the plots).
  void write_report(audit_session_result& res) {
    // without each record's policy object, which no analysis reads (~0.5 KB a record)
    auto records = dist::read_records_set(dist::records_files(o_.out), {.policy = false});
    dist::order_as_executed(records, d_);
    const auto ta = std::chrono::steady_clock::now();
    audit_options aopt = o_.report;
    for (const auto& a : d_.arms) aopt.design_arms.push_back(a.label);  // completeness over the design
    if (o_.batch_items != 0) {  // the intervals as confidence sequences over the budget
      aopt.horizon = static_cast<std::size_t>(d_.items);
      aopt.looks = looks();
      aopt.regime_horizon = regime_items();
      aopt.schedule = schedule_;
    } else if (static_cast<long double>(d_.items) * static_cast<long double>(d_.seeds) <=
               4.0L * static_cast<long double>(records.size()) + 1024.0L) {
      // the design is the denominator: a unit no record holds is missing in every arm (bounded)
      aopt.design_items = d_.items;
      aopt.design_seeds = d_.seeds;
      if (o_.item_regime.size() >= d_.items) aopt.design_item_regime = o_.item_regime;
    }
    aopt.engine = o_.engine_name;  // the report's "Unavailable on this engine" section
    for (const auto& x : o_.arms_unavailable) aopt.arms_unavailable.emplace_back(x.arm, x.reason);
    if (o_.before_report) o_.before_report(records.size());
    if (o_.report_tasks) aopt.tasks = o_.report_tasks(d_, aopt.tasks_note);
    res.report = run_audit_report(records, aopt, o_.out);
    res.records = records.size();
    for (const auto& r : records)
      for (const auto& u : r.unavailable) res.metrics_unavailable.emplace(u.metric, u.reason);
    res.analysis_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - ta).count();
  }

  trial_design d_;
  audit_session_options o_;
  std::optional<audit_spec> spec_;  // the spec the design is built from (the spec constructor)
  audit_matched_maps maps_;         // its matched cache maps
  arm_schedule schedule_;           // stop when decided: the trials each batch scheduled
  bool ran_ = false;                // run() was called (a session runs once)
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_RUNNER_AUDIT_SESSION_HPP
