// SPDX-License-Identifier: MIT
// One rank's part of a sharded audit (audit_shard.hpp, docs/distributed.md).
#include "audit_shard.hpp"

#include <latentaudit/core/hash.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <new>
#include <span>
#include <thread>

#include <sys/resource.h>

#include "cli.hpp"

#if LATENTAUDIT_HAVE_MPI
#include <latentaudit/dist/mpi_runtime.hpp>
#include <latentaudit/dist/transport_mpi.hpp>
#endif

namespace latentaudit::cli {

#if LATENTAUDIT_HAVE_MPI

namespace {

// The CPU seconds (user + system, every thread) this process has used.
double process_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The SHA-256 of this program's file (/proc/self/exe), 64 hex digits; "" where it cannot be read.
std::string executable_hash() {
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

// An exception as (exit code, message), the way main() maps them.
std::pair<int, std::string> classify(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const usage_error& x) {
    return {exit_bad_input, x.what()};
  } catch (const latentaudit::error& x) {
    return {exit_bad_input, x.what()};
  } catch (const std::bad_alloc&) {
    return {exit_internal, "out of memory"};
  } catch (const std::exception& x) {
    return {exit_internal, x.what()};
  } catch (...) {
    return {exit_internal, "unknown exception"};
  }
}

// Tags of the dynamic schedule's messages: a request (one byte: 0 ok, 1 this rank failed) and
// rank 0's reply (an int64: the next position, or -1: no more).
constexpr int tag_request = 0x1A01;
constexpr int tag_reply = 0x1A02;

// The units of one rank: a static share, or positions handed out by rank 0 on request (rank 0
// answers between its own units; each other rank keeps one request in flight, so it has its next
// position when it finishes a unit).
class unit_dispenser {
 public:
  unit_dispenser(const dist::communicator& c, dist::shard_schedule scheme, std::size_t units)
      : c_(c), scheme_(scheme), units_(units) {}

  std::optional<std::size_t> next() {
    if (scheme_ != dist::shard_schedule::dynamic) {
      while (static_next_ < units_) {
        const std::size_t p = static_next_++;
        if (dist::static_owner(scheme_, p, units_, c_.size()) == c_.rank()) return count(p);
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
    if (scheme_ != dist::shard_schedule::dynamic || c_.rank() != 0) return;
    while (stops_sent_ < c_.size() - 1) {
      if (!serve()) std::this_thread::sleep_for(dist::polite_poll_interval);
    }
  }

  // This rank failed: rank 0 stops handing out units and still answers everyone; another rank
  // collects its reply in flight and tells rank 0.
  void abandon() {
    if (scheme_ != dist::shard_schedule::dynamic) return;
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
    if (scheme_ == dist::shard_schedule::dynamic && c_.rank() == 0) (void)serve();
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
    dist::check_mpi(MPI_Irecv(&reply_, 1, MPI_INT64_T, 0, tag_reply, c_.native(), &req_), "MPI_Irecv");
    pending_ = true;
  }

  std::int64_t take_reply() {
    const auto t = std::chrono::steady_clock::now();
    dist::communicator::wait(req_, "MPI_Irecv (dynamic schedule)");
    wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    pending_ = false;
    return reply_;
  }

  const dist::communicator& c_;
  dist::shard_schedule scheme_;
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

}  // namespace

struct audit_shard::impl {
  // calls from several threads where MPI allows them: at once (--jobs N over --relay-transport mpi:
  // N conversations), else one at a time (--jobs N per rank: the workers ask for units and journal
  // under one lock), else only the main thread's
  dist::mpi_runtime runtime{MPI_THREAD_MULTIPLE, MPI_THREAD_FUNNELED};
  dist::communicator world = runtime.world();
  bool agreed = false;  // a failure was agreed on: do not agree again
  bool closed = false;  // past the last agreement: fail alone
  dist::shard_schedule scheme = dist::shard_schedule::dynamic;
  std::uint64_t units = 0;
  double trials_wall_s = 0, wait_s = 0, cpu_s = 0;
  unit_dispenser* dispenser = nullptr;  // during run_trials
};

audit_shard::audit_shard(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
audit_shard::~audit_shard() = default;

std::unique_ptr<audit_shard> audit_shard::from_launch() {
  if (!dist::mpi_launch_from_env()) return nullptr;
  return std::unique_ptr<audit_shard>(new audit_shard(std::make_unique<impl>()));
}

int audit_shard::rank() const noexcept { return impl_->world.rank(); }
bool audit_shard::serialized_threads() const noexcept {
  return impl_->runtime.thread_level() >= MPI_THREAD_SERIALIZED;
}
bool audit_shard::concurrent_threads() const noexcept {
  return impl_->runtime.thread_level() >= MPI_THREAD_MULTIPLE;
}
int audit_shard::size() const noexcept { return impl_->world.size(); }

int audit_shard::run(const std::function<int()>& body) {
  auto& w = impl_->world;
  std::exception_ptr caught;
  try {
    return body();
  } catch (const dist::mpi_error& e) {
    // MPI itself failed: the ranks can no longer agree, so the job is torn down.
    std::fprintf(stderr, "latentaudit: error: rank %d: %s\n", w.rank(), e.what());
    dist::abort_job(w, exit_internal);
  } catch (const dist::rank_failure& e) {
    if (w.rank() == 0)
      std::fprintf(stderr, "latentaudit: %s rank %d: %s\n",
                   e.code() == exit_internal ? "internal error:" : "error:", e.rank(), e.what());
    return e.code();
  } catch (...) {
    caught = std::current_exception();
  }
  auto [code, msg] = classify(caught);
  std::replace(msg.begin(), msg.end(), '\n', ' ');
  if (impl_->closed || impl_->agreed) {  // the others have gone: this rank fails alone
    std::fprintf(stderr, "latentaudit: %s rank %d: %s\n",
                 code == exit_internal ? "internal error:" : "error:", w.rank(), msg.c_str());
    return code;
  }
  try {
    const auto o = dist::agree(w, msg, code);
    if (w.rank() == 0)
      std::fprintf(stderr, "latentaudit: %s rank %d: %s\n",
                   o.code == exit_internal ? "internal error:" : "error:", o.rank, o.message.c_str());
    return o.code;
  } catch (const dist::mpi_error& e) {
    std::fprintf(stderr, "latentaudit: error: rank %d: %s\n", w.rank(), e.what());
    dist::abort_job(w, exit_internal);
  }
}

void audit_shard::step(const std::function<void()>& step) {
  std::optional<std::string> failure;
  int code = exit_ok;
  try {
    step();
  } catch (const dist::mpi_error&) {
    throw;
  } catch (...) {
    auto [c, m] = classify(std::current_exception());
    code = c;
    failure = std::move(m);
  }
  const auto o = dist::agree(impl_->world, failure, code);
  if (!o.ok) {
    impl_->agreed = true;
    throw dist::rank_failure(o);
  }
}

void audit_shard::agree_design(const trial_design& d) {
  const std::string exe = executable_hash();
  step([] {});
  std::string root = write_json(d.to_json()), root_hash = d.design_hash(), root_exe = exe;
  impl_->world.broadcast(root, 0);
  impl_->world.broadcast(root_hash, 0);
  impl_->world.broadcast(root_exe, 0);
  step([&] {
    // The same program on every rank: another build of the same version may compute other
    // floating-point results (e.g. -march=native), and records must not depend on the rank.
    if (exe != root_exe)
      throw usage_error("audit: the ranks run different latentaudit binaries (SHA-256 " +
                        root_exe.substr(0, 16) + "... on rank 0, " + exe.substr(0, 16) +
                        "... here); install one build on every node");
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
    throw usage_error(
        "audit: the ranks disagree on the design before any trial (different binaries, options or "
        "model files?): design hash " +
        root_hash.substr(0, 16) + "... on rank 0, " + d.design_hash().substr(0, 16) + "... here; " +
        (diff.empty() ? std::string("the design JSON differs") : diff + " (rank 0's value first)"));
  });
}

std::set<trial_key> audit_shard::open_journal(std::optional<record_journal>& slot,
                                              const std::filesystem::path& out, const trial_design& d,
                                              bool resume, bool durable) {
  const int n = size();
  std::set<std::string> owned;
  for (int r = 0; r < n; ++r) owned.insert(dist::rank_records_name(r));
  // Each rank parses each records file once: rank 0 reads the set to prepare it (sealing changes no
  // record), the others once rank 0 is done; the keys and this rank's journal take that read.
  dist::records_set_contents set;
  step([&] {  // rank 0 holds the directory's lock (taken by the caller)
    if (rank() != 0) return;
    set = dist::read_records_set_contents(out);
    dist::prepare_records_set(set, out, d, resume, owned);
  });
  std::set<trial_key> done;
  step([&] {  // nobody writes yet
    if (rank() != 0) set = dist::read_records_set_contents(out);
    done = set.keys();
  });
  step([&] {
    directory_lock own(out, "--out", dist::rank_lock_name(rank()));
    const std::string name = dist::rank_records_name(rank());
    slot.emplace(std::move(own), d, resume, durable, name, set.find(name));
  });
  return done;
}

driver_stats audit_shard::run_trials(const trial_design& d, dist::shard_schedule scheme,
                                     const std::function<driver_stats(const unit_schedule&)>& run) {
  auto& w = impl_->world;
  impl_->scheme = scheme;
  const std::size_t units = static_cast<std::size_t>(d.items * d.seeds);
  unit_dispenser disp(w, scheme, units);
  impl_->dispenser = &disp;
  const double cpu0 = process_cpu_s();
  const auto t0 = std::chrono::steady_clock::now();
  driver_stats stats;
  std::optional<std::string> failure;
  int code = exit_ok;
  try {
    stats = run([&] { return disp.next(); });
    disp.finish();
  } catch (const dist::mpi_error&) {
    throw;
  } catch (...) {
    auto [c, m] = classify(std::current_exception());
    code = c;
    failure = std::move(m);
    disp.abandon();
  }
  impl_->dispenser = nullptr;
  impl_->trials_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  impl_->cpu_s = process_cpu_s() - cpu0;
  impl_->wait_s = disp.wait_s();
  impl_->units = disp.units_run();
  // The ranks that finish early wait here without spinning, then agree.
  w.polite_barrier();
  const auto o = dist::agree(w, failure, code);
  if (!o.ok) {
    impl_->agreed = true;
    throw dist::rank_failure(o);
  }
  return stats;
}

void audit_shard::poll() {
  if (impl_->dispenser != nullptr) impl_->dispenser->poll();
}

std::unique_ptr<dist::relay_channel> audit_shard::relay_link(int peer, double timeout_s,
                                                             unsigned conversation) const {
  // conversation k on tags 0x4C41 + 2k and + 1 (the transport's length and payload tags)
  return std::make_unique<dist::mpi_transport>(impl_->world, peer,
                                               dist::transport_options{.timeout_s = timeout_s},
                                               0x4C41 + 2 * static_cast<int>(conversation));
}

json_value audit_shard::finish(const driver_stats& local) {
  auto& w = impl_->world;
  step([] {});  // every rank closed its journal: rank 0 reads complete files
  json_value mine = json_value::object();
  mine.set("units", static_cast<double>(impl_->units));
  mine.set("trials", static_cast<double>(local.trials));
  mine.set("trials_wall_s", impl_->trials_wall_s);
  mine.set("busy_s", impl_->trials_wall_s - impl_->wait_s);
  mine.set("wait_s", impl_->wait_s);
  mine.set("cpu_s", impl_->cpu_s);
  const auto all = w.allgather(write_json(mine));
  impl_->closed = true;
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
  j.set("ranks", static_cast<double>(w.size()));
  j.set("schedule", std::string(dist::schedule_name(impl_->scheme)));
  j.set("mpi", dist::mpi_runtime::library_version());
  j.set("trials_run", trials);
  j.set("trials_wall_s", max_wall);
  j.set("cpu_s", cpu);
  // max / mean busy time: 1 is perfect balance; the makespan is at least mean busy x imbalance.
  j.set("imbalance", sum_busy > 0 ? max_busy / (sum_busy / static_cast<double>(w.size())) : 1.0);
  j.set("per_rank", std::move(ranks));
  return j;
}

#else  // built without MPI: no shard ever exists

struct audit_shard::impl {};

audit_shard::audit_shard(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
audit_shard::~audit_shard() = default;

std::unique_ptr<audit_shard> audit_shard::from_launch() {
  if (const auto l = dist::mpi_launch_from_env())
    throw usage_error("audit: started by an MPI launcher as one of " +
                      (l->world_size > 1 ? std::to_string(l->world_size) : std::string("several")) +
                      " processes (" + l->variable +
                      "), but this latentaudit was built without MPI: each process would run the whole "
                      "audit into the same directory. Rebuild with MPI (libopenmpi-dev; CMake option "
                      "LATENTAUDIT_MPI=ON) or run one process");
  return nullptr;
}

namespace {
[[noreturn]] void no_mpi() { throw std::logic_error("audit_shard: this latentaudit was built without MPI"); }
}  // namespace

int audit_shard::rank() const noexcept { return 0; }
bool audit_shard::serialized_threads() const noexcept { return false; }
bool audit_shard::concurrent_threads() const noexcept { return false; }
int audit_shard::size() const noexcept { return 1; }
int audit_shard::run(const std::function<int()>&) { no_mpi(); }
void audit_shard::step(const std::function<void()>&) { no_mpi(); }
void audit_shard::agree_design(const trial_design&) { no_mpi(); }
std::set<trial_key> audit_shard::open_journal(std::optional<record_journal>&, const std::filesystem::path&,
                                              const trial_design&, bool, bool) {
  no_mpi();
}
driver_stats audit_shard::run_trials(const trial_design&, dist::shard_schedule,
                                     const std::function<driver_stats(const unit_schedule&)>&) {
  no_mpi();
}
void audit_shard::poll() { no_mpi(); }
std::unique_ptr<dist::relay_channel> audit_shard::relay_link(int, double, unsigned) const { no_mpi(); }
json_value audit_shard::finish(const driver_stats&) { no_mpi(); }

#endif

}  // namespace latentaudit::cli
