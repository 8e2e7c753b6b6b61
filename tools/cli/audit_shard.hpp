// SPDX-License-Identifier: MIT
// `mpirun -np N latentaudit audit`: one rank's part of a sharded audit (docs/distributed.md).
// Over MPI it is the library's dist::mpi_audit_ranks (dist/mpi_audit_ranks.hpp, used by
// audit_shard.cpp, compiled with MPI where CMake found it); this interface has no MPI types, so
// cmd_audit.cpp builds the same with and without MPI.
#ifndef LATENTAUDIT_CLI_AUDIT_SHARD_HPP
#define LATENTAUDIT_CLI_AUDIT_SHARD_HPP

#include <latentaudit/core/json.hpp>
#include <latentaudit/dist/audit_ranks.hpp>
#include <latentaudit/dist/shard.hpp>
#include <latentaudit/dist/transport.hpp>
#include <latentaudit/trial/design.hpp>
#include <latentaudit/trial/driver.hpp>
#include <latentaudit/trial/journal.hpp>
#include <latentaudit/trial/link.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace latentaudit::cli {

/// @brief This process's part of a sharded audit (the library's dist::mpi_audit_ranks with the
/// CLI's exit codes, a usage_error being bad input): its rank, the agreements with the other ranks
/// (any rank's failure stops every rank with that rank's message), the journal of its own records
/// file, its share of the units and the figures of the run.
class audit_shard final : public dist::audit_ranks {
 public:
  /// @brief The shard of a process that an MPI launcher started as one of several (initialising
  /// MPI), else nullptr (a one-process audit).
  /// @throws usage_error if an MPI launcher started several processes but this CLI was built
  ///         without MPI (they would run N whole audits into one directory).
  static std::unique_ptr<audit_shard> from_launch();
  ~audit_shard() override;
  audit_shard(const audit_shard&) = delete;
  audit_shard& operator=(const audit_shard&) = delete;

  /// @brief This rank, in [0, size()).
  [[nodiscard]] int rank() const noexcept override;
  /// @brief The number of ranks.
  [[nodiscard]] int size() const noexcept;
  /// @brief Whether MPI lets several threads call it, one at a time (MPI_THREAD_SERIALIZED or
  /// more): what `--jobs N` under mpirun needs.
  [[nodiscard]] bool serialized_threads() const noexcept;
  /// @brief Whether MPI lets several threads call it at once (MPI_THREAD_MULTIPLE): what `--jobs N`
  /// over `--relay-transport mpi` needs (N conversations between the two ranks, each on its thread).
  [[nodiscard]] bool concurrent_threads() const noexcept;

  /// @brief Runs `body` (this rank's whole audit) and returns its exit code. An exception that
  /// leaves it is agreed on with the other ranks (dist::agree) unless that already happened; every
  /// rank then returns the failing rank's exit code and rank 0 prints its message, naming the
  /// rank, as one line on stderr.
  int run(const std::function<int()>& body);

  /// @brief Runs `step` on every rank, then agrees: returns on every rank when every rank's step
  /// succeeded, else throws (every rank) the failure of the lowest failing rank.
  void step(const std::function<void()>& step) override;

  /// @brief Checks that every rank runs the same design (design_hash over the whole identity: the
  /// binary's version, engine, model and partner fingerprints, task hash and options) before any
  /// trial; a rank that differs fails naming the first differing field. Collective.
  void agree_design(const trial_design& d) override;

  /// @brief Opens this rank's journal (records.<rank>.jsonl under its own lock) in `out`, after
  /// rank 0, which holds the directory's lock, has prepared the directory's records set
  /// (dist::prepare_records_set). Returns the keys done in the whole set (every file of every
  /// earlier run, whatever its number of ranks), which the driver skips. Collective.
  std::set<trial_key> open_journal(std::optional<record_journal>& slot, const std::filesystem::path& out,
                                   const trial_design& d, bool resume, bool durable) override;

  /// @brief Runs this rank's share of the trials: `run(schedule)` must call trial_driver::run with
  /// the schedule it is given. `scheme` is block, interleaved or dynamic. A failure on this rank
  /// stops the others' share at their next unit (dynamic) or at the end (static), then every rank
  /// fails with its message. Collective.
  driver_stats run_trials(const trial_design& d, dist::shard_schedule scheme,
                          const std::function<driver_stats(const unit_schedule&)>& run) override;

  /// @brief Between two trials (the journal's sink calls it): rank 0 of a dynamic schedule answers
  /// the requests for units that have arrived, so a rank waits at most about one trial, not one
  /// unit, for its next unit. Elsewhere nothing.
  void poll() override;

  /// @brief Conversation `conversation` of the relay link of `audit --relay-transport mpi`
  /// (dist::mpi_transport on its own pair of tags) from this rank to `peer`, each wait bounded by
  /// `timeout_s`. No communication happens until it is used.
  /// @throws invalid_argument if `peer` is this rank or not a rank.
  [[nodiscard]] std::unique_ptr<dist::relay_channel> relay_link(int peer, double timeout_s,
                                                                unsigned conversation = 0) const;

  /// @brief After every rank closed its journal: the figures of the sharded trials (per-rank
  /// units, trials, busy, waiting and CPU seconds, the imbalance) for the summary, on every rank.
  /// Collective; the last one: after it a rank fails alone (rank 0's report).
  json_value finish(const driver_stats& local) override;

 private:
  struct impl;
  explicit audit_shard(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_CLI_AUDIT_SHARD_HPP
