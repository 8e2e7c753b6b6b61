// SPDX-License-Identifier: MIT
// One rank's part of a sharded audit (audit_shard.hpp, docs/distributed.md): the library's
// dist::mpi_audit_ranks with the CLI's exit codes, or, built without MPI, the refusal to run under
// an MPI launcher.
#include "audit_shard.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "cli.hpp"

#if LATENTAUDIT_HAVE_MPI
#include <latentaudit/dist/mpi_audit_ranks.hpp>
#endif

namespace latentaudit::cli {

#if LATENTAUDIT_HAVE_MPI

// The library's MPI ranks (dist/mpi_audit_ranks.hpp), with the CLI's exit codes; a usage error is
// bad input, like main() maps it.
struct audit_shard::impl {
  dist::mpi_audit_ranks ranks{dist::mpi_audit_options{
      .classify = [](std::exception_ptr e) -> std::pair<int, std::string> {
        const dist::mpi_audit_options codes{.bad_input_code = exit_bad_input, .internal_code = exit_internal};
        try {
          std::rethrow_exception(e);
        } catch (const usage_error& x) {
          return {exit_bad_input, x.what()};
        } catch (...) {
          return dist::mpi_audit_ranks::default_classify(std::current_exception(), codes);
        }
      },
      .bad_input_code = exit_bad_input,
      .internal_code = exit_internal,
      .out_label = "--out"}};
};

audit_shard::audit_shard(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
audit_shard::~audit_shard() = default;

std::unique_ptr<audit_shard> audit_shard::from_launch() {
  if (!dist::mpi_launch_from_env()) return nullptr;
  return std::unique_ptr<audit_shard>(new audit_shard(std::make_unique<impl>()));
}

int audit_shard::rank() const noexcept { return impl_->ranks.rank(); }
bool audit_shard::serialized_threads() const noexcept { return impl_->ranks.serialized_threads(); }
bool audit_shard::concurrent_threads() const noexcept { return impl_->ranks.concurrent_threads(); }
int audit_shard::size() const noexcept { return impl_->ranks.size(); }
int audit_shard::run(const std::function<int()>& body) { return impl_->ranks.run(body); }
void audit_shard::step(const std::function<void()>& step) { impl_->ranks.step(step); }
void audit_shard::agree_design(const trial_design& d) { impl_->ranks.agree_design(d); }

std::set<trial_key> audit_shard::open_journal(std::optional<record_journal>& slot,
                                              const std::filesystem::path& out, const trial_design& d,
                                              bool resume, bool durable) {
  return impl_->ranks.open_journal(slot, out, d, resume, durable);
}

driver_stats audit_shard::run_trials(const trial_design& d, dist::shard_schedule scheme,
                                     const std::function<driver_stats(const unit_schedule&)>& run) {
  return impl_->ranks.run_trials(d, scheme, run);
}

void audit_shard::poll() { impl_->ranks.poll(); }

std::unique_ptr<dist::relay_channel> audit_shard::relay_link(int peer, double timeout_s,
                                                             unsigned conversation) const {
  return impl_->ranks.relay_link(peer, timeout_s, conversation);
}

json_value audit_shard::finish(const driver_stats& local) { return impl_->ranks.finish(local); }

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
