// SPDX-License-Identifier: MIT
// The mpi relay transport (dist/transport_mpi.hpp) between two ranks of `mpirun -np 2`
// (--oversubscribe; Open MPI's permission to run as root set in mpirun's environment only), through
// tests/dist/mpi_relay_probe.cpp: agent A on rank 1 serves the relays of a small design run on rank 0,
// whose records equal the in-process run's but for timings and carry transfer_measured_s; frames of
// 1 kB to 8 MB cross whole (their times are printed: measured vs the modeled link); a 10 GB length
// announcement is refused before allocation.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "support/cli_runner.hpp"

extern char** environ;

namespace {

// Runs `mpirun -np 2 probe words...`; returns (exit status, stdout).
std::pair<int, std::string> run_probe(const std::vector<std::string>& words, const std::string& tag) {
  std::vector<std::string> w = {
      LATENTAUDIT_MPIEXEC, "--oversubscribe", "--bind-to", "none", "-np", "2", LATENTAUDIT_MPI_RELAY_PROBE};
  w.insert(w.end(), words.begin(), words.end());
  std::vector<std::string> env_s = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
  // Under AddressSanitizer, LeakSanitizer would report Open MPI's own allocations still held at
  // exit (MPI_Finalize keeps them) and fail the probe: leak checking is off for the ranks only (the
  // library's code is leak-checked by the single-process tests). This entry precedes the inherited one.
  const char* asan = std::getenv("ASAN_OPTIONS");
  env_s.push_back(std::string("ASAN_OPTIONS=") + (asan != nullptr ? std::string(asan) + ":" : "") +
                  "detect_leaks=0");
  for (char** e = environ; *e != nullptr; ++e) env_s.emplace_back(*e);
  std::vector<char*> envp, argv;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (auto& x : w) argv.push_back(x.data());
  argv.push_back(nullptr);
  const auto dir = latentaudit::test::cli_work_dir();
  const std::string out = (dir / (tag + ".out")).string(), err = (dir / (tag + ".err")).string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("stderr: " << latentaudit::test::slurp_file(err));
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  CHECK(code == 0);
  return {code, latentaudit::test::slurp_file(out)};
}

}  // namespace

TEST_CASE("mpi transport: agent A on rank 1 serves the relays, records equal the in-process run's") {
  const auto [code, out] = run_probe({"relay", std::string(LATENTAUDIT_SOURCE_DIR) + "/models"}, "relay");
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("relay records equal: 24 of 24; measured: 20"));
}

TEST_CASE("mpi transport: frames cross whole, a 10 GB announcement is refused before allocation") {
  const auto [code, out] = run_probe({"frames"}, "frames");
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("refused: mpi transport: rank 1 announces a message of 10000000000 bytes"));
  std::map<long, std::vector<double>> by;
  std::istringstream in(out);
  std::string word;
  long bytes = 0;
  double s = 0;
  while (in >> word)
    if (word == "frame" && in >> bytes >> s) by[bytes].push_back(s);
  CHECK(by.size() == 5);
  for (auto& [b, v] : by) {  // medians, beside the modeled pcie4 link (25 GB/s + 10 µs)
    std::sort(v.begin(), v.end());
    std::printf("mpi frame %8ld B: median %.1f us (modeled pcie4 %.1f us)\n", b, 1e6 * v[v.size() / 2],
                1e6 * (static_cast<double>(b) / 25e9 + 10e-6));
    CHECK(v.size() == 20);
  }
}
