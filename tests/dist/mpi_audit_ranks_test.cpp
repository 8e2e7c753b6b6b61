// SPDX-License-Identifier: MIT
// dist::mpi_audit_ranks (dist/mpi_audit_ranks.hpp) without the CLI: tests/dist/mpi_audit_ranks_probe.cpp
// in two ranks of `mpirun -np 2` (--oversubscribe; Open MPI's permission to run as root set in the
// command's environment only; leak checking off for the ranks, as in transport_mpi_test.cpp).
#include <cstdlib>
#include <string>

#include "support/cli_runner.hpp"

TEST_CASE(
    "mpi_audit_ranks: a failing step or body stops every rank with the failing rank's message and code") {
  const auto dir = latentaudit::test::cli_work_dir();
  const std::string out = (dir / "mpi_audit_ranks.out").string(),
                    err = (dir / "mpi_audit_ranks.err").string();
  const std::string cmd = std::string(
                              "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                              "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" '") +
                          LATENTAUDIT_MPIEXEC + "' --oversubscribe --bind-to none -np 2 '" +
                          LATENTAUDIT_MPI_AUDIT_RANKS_PROBE + "' </dev/null >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  const std::string o = latentaudit::test::slurp_file(out), e = latentaudit::test::slurp_file(err);
  INFO("stdout: " << o << "\nstderr: " << e);
  CHECK(status == 0);
  CHECK(o.find("ok rank 0") != std::string::npos);
  CHECK(o.find("ok rank 1") != std::string::npos);
  // rank 0 prints the agreed failure of run(), naming rank 1, with the internal code's wording
  CHECK(e.find("latentaudit: internal error: rank 1: a bug") != std::string::npos);
}
