// SPDX-License-Identifier: MIT
// latentaudit: dist::audit_ranks over MPI — one process's part of a sharded audit under an MPI
// launcher (`mpirun -np N latentaudit audit`): its rank, the agreements with the other ranks (any
// rank's failure stops every rank with that rank's message), the journal of its own records file,
// its share of the units (dynamic, interleaved or block) and the figures of the run; and the links
// of a relay over MPI. docs/distributed.md.
//
// Needs <mpi.h> and libmpi, like dist/mpi_runtime.hpp (the CMake target latentaudit::mpi); it is
// included by no other header of the library. The CLI's `audit` uses it (tools/cli/audit_shard.cpp).
#ifndef LATENTAUDIT_DIST_MPI_AUDIT_RANKS_HPP
#define LATENTAUDIT_DIST_MPI_AUDIT_RANKS_HPP

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/resource.h>

#include "../core/error.hpp"
#include "../core/hash.hpp"
#include "../core/json.hpp"
#include "../trial/design.hpp"
#include "../trial/driver.hpp"
#include "../trial/journal.hpp"
#include "audit_ranks.hpp"
#include "mpi_runtime.hpp"
#include "shard.hpp"
#include "transport.hpp"
#include "transport_mpi.hpp"

namespace latentaudit::dist {

namespace detail {

// The CPU seconds (user + system, every thread) this process has used.
inline double process_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The SHA-256 of this program's file (/proc/self/exe), 64 hex digits; "" where it cannot be read.
inline std::string executable_hash() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  if (!in) return {};
  sha256 h;
  std::vector<char> buf(std::size_t{1} << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n == 0) break;
    h.update(std::as_bytes(std::span(buf.data(), n)));
  }
  if (in.bad()) return {};
  return to_hex(h.finish());
}

// Tags of the dynamic schedule's messages: a request (one byte: 0 ok, 1 this rank failed) and
// rank 0's reply (an int64: the next position, or -1: no more).
inline constexpr int tag_request = 0x1A01;
inline constexpr int tag_reply = 0x1A02;

// The units of one rank: a static share, or positions handed out by rank 0 on request (rank 0
// answers between its own units; each other rank keeps one request in flight, so it has its next
// position when it finishes a unit).
class unit_dispenser {
 public:
  unit_dispenser(const communicator& c, shard_schedule scheme, std::size_t units)
      : c_(c), scheme_(scheme), units_(units) {}

  std::optional<std::size_t> next() {
    if (scheme_ != shard_schedule::dynamic) {
      while (static_next_ < units_) {
        const std::size_t p = static_next_++;
        if (static_owner(scheme_, p, units_, c_.size()) == c_.rank()) return count(p);
      }
      return std::nullopt;
    }
    if (c_.rank() == 0) {
      serve();
      if (stopping_ || next_ >= units_) return std::nullopt;
      return count(next_++);
    }
    if (finished_) return std::nullopt;
    if (!pending_) post(0);
    const std::int64_t got = take_reply();
    if (got < 0) {
      finished_ = true;
      return std::nullopt;
    }
    post(0);  // ask for the next one while this one runs
    return count(static_cast<std::size_t>(got));
  }

  // Rank 0, after its own share: answers "no more" until every other rank has had it.
  void finish() {
    if (scheme_ != shard_schedule::dynamic || c_.rank() != 0) return;
    while (stops_sent_ < c_.size() - 1) {
      if (!serve()) std::this_thread::sleep_for(polite_poll_interval);
    }
  }

  // This rank failed: rank 0 stops handing out units and still answers everyone; another rank
  // collects its reply in flight and tells rank 0.
  void abandon() {
    if (scheme_ != shard_schedule::dynamic) return;
    if (c_.rank() == 0) {
      stopping_ = true;
      finish();
      return;
    }
    if (finished_) return;
    if (pending_ && take_reply() < 0) {
      finished_ = true;
      return;
    }
    post(1);
    (void)take_reply();
    finished_ = true;
  }

  [[nodiscard]] std::uint64_t units_run() const noexcept { return run_; }
  [[nodiscard]] double wait_s() const noexcept { return wait_s_; }

  std::size_t count(std::size_t p) {
    ++run_;
    return p;
  }

  // Rank 0 between two trials: answers the requests that have arrived.
  void poll() {
    if (scheme_ == shard_schedule::dynamic && c_.rank() == 0) (void)serve();
  }

 private:
  // Rank 0: answers every request that has arrived; whether there was one.
  bool serve() {
    bool any = false;
    while (auto m = c_.try_receive(MPI_ANY_SOURCE, tag_request)) {
      any = true;
      if (m->bytes.empty() || m->bytes[0] != std::byte{0}) stopping_ = true;
      std::int64_t answer = -1;
      if (!stopping_ && next_ < units_) answer = static_cast<std::int64_t>(next_++);
      if (answer < 0) ++stops_sent_;
      c_.send(std::as_bytes(std::span(&answer, 1)), m->source, tag_reply);
    }
    return any;
  }

  void post(int status) {
    const std::byte b{static_cast<unsigned char>(status)};
    c_.send(std::span(&b, 1), 0, tag_request);
    check_mpi(MPI_Irecv(&reply_, 1, MPI_INT64_T, 0, tag_reply, c_.native(), &req_), "MPI_Irecv");
    pending_ = true;
  }

  std::int64_t take_reply() {
    const auto t = std::chrono::steady_clock::now();
    communicator::wait(req_, "MPI_Irecv (dynamic schedule)");
    wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    pending_ = false;
    return reply_;
  }

  const communicator& c_;
  shard_schedule scheme_;
  std::size_t units_;
  std::size_t static_next_ = 0;
  // rank 0
  std::size_t next_ = 0;
  int stops_sent_ = 0;
  bool stopping_ = false;
  // other ranks
  bool pending_ = false, finished_ = false;
  MPI_Request req_ = MPI_REQUEST_NULL;
  std::int64_t reply_ = -1;
  // all
  std::uint64_t run_ = 0;
  double wait_s_ = 0;
};

}  // namespace detail

/// @brief How an mpi_audit_ranks words and numbers failures: the exit codes, the classification
/// of a rank's exception and the role of the output directory in its lock's messages.
struct mpi_audit_options {
  /// @brief An exception as (exit code, message): a front end maps its own exception types (e.g. a
  /// CLI's usage errors); empty: mpi_audit_ranks::default_classify with the codes below.
  std::function<std::pair<int, std::string>(std::exception_ptr)> classify;
  /// @brief The exit code of a latentaudit::error (bad input or data).
  int bad_input_code = 2;
  /// @brief The exit code of any other exception, and of a job torn down because MPI failed.
  int internal_code = 3;
  /// @brief The output directory's role in the messages of its rank locks (directory_lock's `what`).
  std::string out_label = "--out";
};

/// @brief One process's part of a sharded audit over MPI (dist::audit_ranks): its rank, the
/// agreements with the other ranks (any rank's failure stops every rank with that rank's message),
/// the journal of its own records file, its share of the units and the figures of the run, and the
/// links of a relay over MPI. It initialises MPI (dist::mpi_runtime) for its lifetime: at most one
/// per process.
class mpi_audit_ranks final : public audit_ranks {
 public:
  /// @brief Initialises MPI (MPI_THREAD_MULTIPLE requested, MPI_THREAD_FUNNELED at least).
  /// @throws mpi_error if MPI cannot be initialised at that level.
  explicit mpi_audit_ranks(mpi_audit_options o = {}) : opt_(std::move(o)) {}
  mpi_audit_ranks(const mpi_audit_ranks&) = delete;
  mpi_audit_ranks& operator=(const mpi_audit_ranks&) = delete;
  ~mpi_audit_ranks() override = default;

  /// @brief An exception as (exit code, message) with `o`'s codes: latentaudit::error is
  /// bad_input_code with its message; std::bad_alloc is internal_code, "out of memory"; any other
  /// is internal_code with its message ("unknown exception" if it is no std::exception).
  [[nodiscard]] static std::pair<int, std::string> default_classify(std::exception_ptr e,
                                                                    const mpi_audit_options& o) {
    try {
      std::rethrow_exception(e);
    } catch (const latentaudit::error& x) {
      return {o.bad_input_code, x.what()};
    } catch (const std::bad_alloc&) {
      return {o.internal_code, "out of memory"};
    } catch (const std::exception& x) {
      return {o.internal_code, x.what()};
    } catch (...) {
      return {o.internal_code, "unknown exception"};
    }
  }

  /// @brief This rank, in [0, size()).
  [[nodiscard]] int rank() const noexcept override { return world_.rank(); }
  /// @brief The number of ranks.
  [[nodiscard]] int size() const noexcept { return world_.size(); }
  /// @brief Whether MPI lets several threads call it, one at a time (MPI_THREAD_SERIALIZED or
  /// more): what several workers per rank need.
  [[nodiscard]] bool serialized_threads() const noexcept {
    return runtime_.thread_level() >= MPI_THREAD_SERIALIZED;
  }
  /// @brief Whether MPI lets several threads call it at once (MPI_THREAD_MULTIPLE): what several
  /// workers over a relay on MPI need (one conversation between the two ranks per worker).
  [[nodiscard]] bool concurrent_threads() const noexcept {
    return runtime_.thread_level() >= MPI_THREAD_MULTIPLE;
  }

  /// @brief Runs `body` (this rank's whole audit) and returns its exit code. An exception that
  /// leaves it is agreed on with the other ranks (dist::agree) unless that already happened; every
  /// rank then returns the failing rank's exit code and rank 0 prints its message, naming the
  /// rank, as one line on stderr ("latentaudit: error: rank R: ..."). If MPI itself fails the job
  /// is aborted (dist::abort_job) with internal_code.
  int run(const std::function<int()>& body) {
    std::exception_ptr caught;
    try {
      return body();
    } catch (const mpi_error& e) {
      // MPI itself failed: the ranks can no longer agree, so the job is torn down.
      std::fprintf(stderr, "latentaudit: error: rank %d: %s\n", world_.rank(), e.what());
      abort_job(world_, opt_.internal_code);
    } catch (const rank_failure& e) {
      if (world_.rank() == 0) print_failure(e.code(), e.rank(), e.what());
      return e.code();
    } catch (...) {
      caught = std::current_exception();
    }
    auto [code, msg] = classify(caught);
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    if (closed_ || agreed_) {  // the others have gone: this rank fails alone
      print_failure(code, world_.rank(), msg.c_str());
      return code;
    }
    try {
      const auto o = agree(world_, msg, code);
      if (world_.rank() == 0) print_failure(o.code, o.rank, o.message.c_str());
      return o.code;
    } catch (const mpi_error& e) {
      std::fprintf(stderr, "latentaudit: error: rank %d: %s\n", world_.rank(), e.what());
      abort_job(world_, opt_.internal_code);
    }
  }

  /// @brief Runs `step` on every rank, then agrees: returns on every rank when every rank's step
  /// succeeded, else throws (every rank) the failure of the lowest failing rank (rank_failure).
  /// @throws mpi_error if MPI itself fails.
  void step(const std::function<void()>& step) override {
    std::optional<std::string> failure;
    int code = 0;
    try {
      step();
    } catch (const mpi_error&) {
      throw;
    } catch (...) {
      auto [c, m] = classify(std::current_exception());
      code = c;
      failure = std::move(m);
    }
    const auto o = agree(world_, failure, code);
    if (!o.ok) {
      agreed_ = true;
      throw rank_failure(o);
    }
  }

  /// @brief Checks that every rank runs the same program (the SHA-256 of /proc/self/exe) and the
  /// same design (design_hash over the whole identity: the binary's version, engine, model and
  /// partner fingerprints, task hash and options) before any trial; a rank that differs fails
  /// naming the first differing field. Collective.
  /// @throws rank_failure (every rank) if they differ.
  void agree_design(const trial_design& d) override {
    const std::string exe = detail::executable_hash();
    step([] {});
    std::string root = write_json(d.to_json()), root_hash = d.design_hash(), root_exe = exe;
    world_.broadcast(root, 0);
    world_.broadcast(root_hash, 0);
    world_.broadcast(root_exe, 0);
    step([&] { check_same_design(d, exe, root, root_hash, root_exe); });
  }

  /// @brief Opens this rank's journal (records.<rank>.jsonl under its own lock) in `out`, after
  /// rank 0, which holds the directory's lock, has prepared the directory's records set
  /// (dist::prepare_records_set). Returns the keys done in the whole set (every file of every
  /// earlier run, whatever its number of ranks), which the driver skips. Collective.
  std::set<trial_key> open_journal(std::optional<record_journal>& slot, const std::filesystem::path& out,
                                   const trial_design& d, bool resume, bool durable) override {
    const int n = size();
    std::set<std::string> owned;
    for (int r = 0; r < n; ++r) owned.insert(rank_records_name(r));
    // Each rank parses each records file once: rank 0 reads the set to prepare it (sealing changes
    // no record), the others once rank 0 is done; the keys and this rank's journal take that read.
    records_set_contents set;
    step([&] {  // rank 0 holds the directory's lock (taken by the caller)
      if (rank() != 0) return;
      set = read_records_set_contents(out);
      prepare_records_set(set, out, d, resume, owned);
    });
    std::set<trial_key> done;
    step([&] {  // nobody writes yet
      if (rank() != 0) set = read_records_set_contents(out);
      done = set.keys();
    });
    step([&] {
      directory_lock own(out, opt_.out_label, rank_lock_name(rank()));
      const std::string name = rank_records_name(rank());
      slot.emplace(std::move(own), d, resume, durable, name, set.find(name));
    });
    return done;
  }

  /// @brief Runs this rank's share of the trials: `run(schedule)` must call trial_driver::run with
  /// the schedule it is given. `scheme` is block, interleaved or dynamic. A failure on this rank
  /// stops the others' share at their next unit (dynamic) or at the end (static), then every rank
  /// fails with its message. Collective.
  driver_stats run_trials(const trial_design& d, shard_schedule scheme,
                          const std::function<driver_stats(const unit_schedule&)>& run) override {
    scheme_ = scheme;
    const std::size_t units = static_cast<std::size_t>(d.items * d.seeds);
    detail::unit_dispenser disp(world_, scheme, units);
    dispenser_ = &disp;
    const double cpu0 = detail::process_cpu_s();
    const auto t0 = std::chrono::steady_clock::now();
    driver_stats stats;
    std::optional<std::string> failure;
    int code = 0;
    try {
      stats = run([&] { return disp.next(); });
      disp.finish();
    } catch (const mpi_error&) {
      dispenser_ = nullptr;
      throw;
    } catch (...) {
      auto [c, m] = classify(std::current_exception());
      code = c;
      failure = std::move(m);
      disp.abandon();
    }
    dispenser_ = nullptr;
    trials_wall_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cpu_s_ = detail::process_cpu_s() - cpu0;
    wait_s_ = disp.wait_s();
    units_ = disp.units_run();
    // The ranks that finish early wait here without spinning, then agree.
    world_.polite_barrier();
    const auto o = agree(world_, failure, code);
    if (!o.ok) {
      agreed_ = true;
      throw rank_failure(o);
    }
    return stats;
  }

  /// @brief Between two trials (the journal's sink calls it): rank 0 of a dynamic schedule answers
  /// the requests for units that have arrived, so a rank waits at most about one trial, not one
  /// unit, for its next unit. Elsewhere nothing.
  void poll() override {
    if (dispenser_ != nullptr) dispenser_->poll();
  }

  /// @brief Conversation `conversation` of a relay over MPI (dist::mpi_transport on its own pair of
  /// tags, 0x4C41 + 2 * conversation and + 1) from this rank to `peer`, each wait bounded by
  /// `timeout_s`. No communication happens until it is used.
  /// @throws invalid_argument if `peer` is this rank or not a rank.
  [[nodiscard]] std::unique_ptr<relay_channel> relay_link(int peer, double timeout_s,
                                                          unsigned conversation = 0) const {
    return std::make_unique<mpi_transport>(world_, peer, transport_options{.timeout_s = timeout_s},
                                           0x4C41 + 2 * static_cast<int>(conversation));
  }

  /// @brief After every rank closed its journal: the figures of the sharded trials (per-rank
  /// units, trials, busy, waiting and CPU seconds, the imbalance) for the summary, on every rank.
  /// Collective; the last one: after it a rank fails alone (rank 0's report).
  json_value finish(const driver_stats& local) override {
    step([] {});  // every rank closed its journal: rank 0 reads complete files
    json_value mine = json_value::object();
    mine.set("units", static_cast<double>(units_));
    mine.set("trials", static_cast<double>(local.trials));
    mine.set("trials_wall_s", trials_wall_s_);
    mine.set("busy_s", trials_wall_s_ - wait_s_);
    mine.set("wait_s", wait_s_);
    mine.set("cpu_s", cpu_s_);
    const auto all = world_.allgather(write_json(mine));
    closed_ = true;
    json_value ranks = json_value::array_type{};
    double max_busy = 0, sum_busy = 0, max_wall = 0, cpu = 0, trials = 0;
    for (const auto& s : all) {
      json_value r = parse_json(s);
      const double b = r.find("busy_s")->as_number();
      max_busy = std::max(max_busy, b);
      sum_busy += b;
      max_wall = std::max(max_wall, r.find("trials_wall_s")->as_number());
      cpu += r.find("cpu_s")->as_number();
      trials += r.find("trials")->as_number();
      ranks.push_back(std::move(r));
    }
    json_value j = json_value::object();
    j.set("ranks", static_cast<double>(world_.size()));
    j.set("schedule", std::string(schedule_name(scheme_)));
    j.set("mpi", mpi_runtime::library_version());
    j.set("trials_run", trials);
    j.set("trials_wall_s", max_wall);
    j.set("cpu_s", cpu);
    // max / mean busy time: 1 is perfect balance; the makespan is at least mean busy x imbalance.
    j.set("imbalance", sum_busy > 0 ? max_busy / (sum_busy / static_cast<double>(world_.size())) : 1.0);
    j.set("per_rank", std::move(ranks));
    return j;
  }

 private:
  std::pair<int, std::string> classify(std::exception_ptr e) const {
    return opt_.classify ? opt_.classify(e) : default_classify(e, opt_);
  }

  void print_failure(int code, int rank, const char* message) const {
    std::fprintf(stderr, "latentaudit: %s rank %d: %s\n",
                 code == opt_.internal_code ? "internal error:" : "error:", rank, message);
  }

  // Inside agree_design's second step: throws (this rank's failure) if this rank's program or
  // design differs from rank 0's.
  static void check_same_design(const trial_design& d, const std::string& exe, const std::string& root,
                                const std::string& root_hash, const std::string& root_exe) {
    // The same program on every rank: another build of the same version may compute other
    // floating-point results (e.g. -march=native), and records must not depend on the rank.
    if (exe != root_exe)
      LATENTAUDIT_THROW(error("audit: the ranks run different latentaudit binaries (SHA-256 " +
                              root_exe.substr(0, 16) + "... on rank 0, " + exe.substr(0, 16) +
                              "... here); install one build on every node"));
    if (d.design_hash() == root_hash) return;
    std::string diff;
    try {
      diff = design_difference(parse_json(root, {.max_depth = 16, .max_bytes = std::size_t{1} << 20}),
                               d.to_json());
    } catch (const error& e) {
      diff = e.what();
    }
    std::replace(diff.begin(), diff.end(), '\n', ' ');
    // design_difference words it as "<recorded> in the records' design, <now> now"
    LATENTAUDIT_THROW(
        error("audit: the ranks disagree on the design before any trial (different binaries, options or "
              "model files?): design hash " +
              root_hash.substr(0, 16) + "... on rank 0, " + d.design_hash().substr(0, 16) + "... here; " +
              (diff.empty() ? std::string("the design JSON differs") : diff + " (rank 0's value first)")));
  }

  mpi_audit_options opt_;
  // calls from several threads where MPI allows them: at once (several relay conversations), else
  // one at a time (several workers per rank ask for units and journal under one lock), else only
  // the main thread's
  mpi_runtime runtime_{MPI_THREAD_MULTIPLE, MPI_THREAD_FUNNELED};
  communicator world_ = runtime_.world();
  bool agreed_ = false;  // a failure was agreed on: do not agree again
  bool closed_ = false;  // past the last agreement: fail alone
  shard_schedule scheme_ = shard_schedule::dynamic;
  std::uint64_t units_ = 0;
  double trials_wall_s_ = 0, wait_s_ = 0, cpu_s_ = 0;
  detail::unit_dispenser* dispenser_ = nullptr;  // during run_trials
};

}  // namespace latentaudit::dist

#endif  // LATENTAUDIT_DIST_MPI_AUDIT_RANKS_HPP
