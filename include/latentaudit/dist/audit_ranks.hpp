// SPDX-License-Identifier: MIT
// latentaudit: the processes of an audit under an MPI launcher, as the library's audit_session
// (runner/audit_session.hpp) sees them — a share of a sharded audit, or the two ends of a relay
// over MPI. The interface has no MPI types; dist/mpi_audit_ranks.hpp implements it over MPI, a
// test in one process. docs/distributed.md.
#ifndef LATENTAUDIT_DIST_AUDIT_RANKS_HPP
#define LATENTAUDIT_DIST_AUDIT_RANKS_HPP

#include <filesystem>
#include <functional>
#include <optional>
#include <set>

#include "../core/json.hpp"
#include "../trial/design.hpp"
#include "../trial/driver.hpp"
#include "../trial/journal.hpp"
#include "shard.hpp"

namespace latentaudit::dist {

/// @brief The other processes of an audit run under an MPI launcher, as the session sees them: a
/// share of a sharded audit (each rank its units and its own records file, rank 0 the report) or
/// the two ranks of a relay over MPI (rank 0 agent B, rank 1 agent A). Collective calls are made
/// by every rank in the same order. dist::mpi_audit_ranks (dist/mpi_audit_ranks.hpp) implements it
/// over dist/shard.hpp and MPI; a test can implement it in one process.
class audit_ranks {
 public:
  audit_ranks() = default;
  audit_ranks(const audit_ranks&) = delete;
  audit_ranks& operator=(const audit_ranks&) = delete;
  virtual ~audit_ranks() = default;
  /// @brief This rank, in [0, size()).
  [[nodiscard]] virtual int rank() const noexcept = 0;
  /// @brief Runs `step` on every rank, then agrees: throws on every rank if any rank's step failed.
  virtual void step(const std::function<void()>& step) = 0;
  /// @brief Checks that every rank runs the same design (its design_hash); collective.
  virtual void agree_design(const trial_design& d) = 0;
  /// @brief Opens this rank's journal in `out` after rank 0 prepared the records set; returns the
  /// keys done in the whole set. Collective.
  virtual std::set<trial_key> open_journal(std::optional<record_journal>& slot,
                                           const std::filesystem::path& out, const trial_design& d,
                                           bool resume, bool durable) = 0;
  /// @brief Runs this rank's share: `run(schedule)` runs the units the schedule hands out.
  /// Collective.
  virtual driver_stats run_trials(const trial_design& d, dist::shard_schedule scheme,
                                  const std::function<driver_stats(const unit_schedule&)>& run) = 0;
  /// @brief Between two trials (the journal's sink calls it).
  virtual void poll() = 0;
  /// @brief After every rank closed its journal: the run's figures, on every rank. Collective.
  virtual json_value finish(const driver_stats& local) = 0;
};

}  // namespace latentaudit::dist

#endif  // LATENTAUDIT_DIST_AUDIT_RANKS_HPP
