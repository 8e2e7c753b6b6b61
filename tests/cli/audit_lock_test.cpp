// SPDX-License-Identifier: MIT
// One writer per journal: a second `latentaudit audit` on an --out another audit holds (fresh or
// --resume) exits 2 at once naming the holder's pid, and never touches the first one's mapped
// file (which died with SIGBUS before the lock); two audits started together on one directory,
// many times over, leave a journal that holds every key of the design exactly once.
#include <latentaudit/trial/journal.hpp>

#include <signal.h>

#include <chrono>
#include <thread>

#include "support/cli_runner.hpp"
#include "support/common.hpp"
#include "support/sanitizer.hpp"

using namespace latentaudit;

namespace {

using latentaudit::test::models;

std::vector<std::string> lock_audit_args(const std::filesystem::path& out, const std::string& items,
                                         bool resume) {
  std::vector<std::string> a = {"audit",
                                "--model",
                                models + "organism-a",
                                "--partner",
                                models + "organism-b",
                                "--items",
                                items,
                                "--seeds",
                                "1",
                                "--out",
                                out.string(),
                                "--trials-only",
                                "--quiet",
                                "--drift",
                                "none"};  // the 21 built-in arms (no drifted senders)
  if (resume) a.emplace_back("--resume");
  return a;
}

// The pid written in DIR's lock file ("" until there is one).
std::string lock_pid(const std::filesystem::path& dir) {
  std::string s = test::slurp_file(dir / directory_lock::file_name);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

int exit_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

TEST_CASE("audit: a second audit on a held --out exits 2 at once and leaves the first running", "[cli]") {
  const auto dir = test::cli_work_dir() / "lock_held";
  std::filesystem::remove_all(dir);
  // A long design (about 40 000 trials), killed once the contenders have been refused.
  const auto err_a = (test::cli_work_dir() / "lock_a.err").string();
  const pid_t a = test::spawn_cli(lock_audit_args(dir, "2000", false), "/dev/null", err_a);
  const std::string pid_text = std::to_string(a);
  for (int i = 0; i < 3000 && lock_pid(dir) != pid_text; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(lock_pid(dir) == pid_text);
  // Let it journal some records first, so a resume would have a mapped file to cut.
  for (int i = 0; i < 3000; ++i) {
    std::error_code ec;
    if (std::filesystem::file_size(dir / "records.jsonl", ec) > 0 && !ec) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int round = 0; round < 6; ++round) {
    const bool resume = round % 2 == 1;
    const auto r = test::run_cli(lock_audit_args(dir, "2000", resume));
    INFO("round " << round << (resume ? " (--resume)" : " (fresh)") << ", stderr: " << r.err);
    test::expect_one_line_error(r, "another audit holds " + dir.string() + " (pid " + pid_text + ")");
    int status = 0;
    REQUIRE(waitpid(a, &status, WNOHANG) == 0);  // the holder is still running
  }
  // `report` into the held directory is refused the same way (one writer of the report files).
  test::expect_one_line_error(
      test::run_cli({"report", "--records", (dir / "records.jsonl").string(), "--quiet"}),
      "another audit holds " + dir.string() + " (pid " + pid_text + ")");
  ::kill(a, SIGKILL);
  int status = 0;
  REQUIRE(waitpid(a, &status, 0) == a);
  INFO("holder's stderr: " << test::slurp_file(err_a));
  CHECK(exit_code(status) == 128 + SIGKILL);  // killed by us, not by a SIGBUS
  // The holder's journal is intact: complete lines, unique keys (a torn last line is tolerated).
  std::uint64_t good = 0;
  const auto partial = read_records(dir / "records.jsonl", &good);
  CHECK(!partial.empty());
  // The kernel released the lock with the holder: a resume may take it now (and is refused only
  // for its design, which here differs in --items).
  const auto r = test::run_cli(lock_audit_args(dir, "3", true));
  test::expect_one_line_error(r, "design");
  CHECK(r.err.find("another audit") == std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("audit: two audits started together on one --out, many times: every key exactly once", "[cli]") {
  const auto base = test::cli_work_dir() / "lock_race";
  std::filesystem::remove_all(base);
  int refused = 0;
  // 24 rounds; 9 under the sanitizer (each of the three kinds of round three times; support/sanitizer.hpp)
  const int rounds = test::full_or_sanitized(24, 9);
  for (int round = 0; round < rounds; ++round) {
    const auto dir = base / std::to_string(round);
    // Rounds alternate: two resumes; a fresh run and a resume; two fresh runs.
    const bool resume_a = round % 3 != 2, resume_b = round % 3 == 0;
    const auto ea = (base / "a.err").string(), eb = (base / "b.err").string();
    std::filesystem::create_directories(base);
    const pid_t a = test::spawn_cli(lock_audit_args(dir, "6", resume_a), "/dev/null", ea);
    const pid_t b = test::spawn_cli(lock_audit_args(dir, "6", resume_b), "/dev/null", eb);
    int sa = 0, sb = 0;
    REQUIRE(waitpid(a, &sa, 0) == a);
    REQUIRE(waitpid(b, &sb, 0) == b);
    const std::string err[2] = {test::slurp_file(ea), test::slurp_file(eb)};
    const int code[2] = {exit_code(sa), exit_code(sb)};
    INFO("round " << round << ": exits " << code[0] << ", " << code[1] << "; stderr: " << err[0] << " | "
                  << err[1]);
    for (int k = 0; k < 2; ++k) {
      REQUIRE((code[k] == 0 || code[k] == 2));
      if (code[k] == 2) {
        const bool held = err[k].find("another audit holds") != std::string::npos;
        CHECK((held || err[k].find("already holds records") != std::string::npos));
        refused += held ? 1 : 0;
      }
    }
    REQUIRE((code[0] == 0 || code[1] == 0));
    // Both runs are over: the journal is complete, every key once, no torn line, no padding.
    std::uint64_t good = 0;
    const auto records = read_records(dir / "records.jsonl", &good);  // throws on a repeated key
    // items x seeds x the design's arms (the default arms depend on the model: design.json lists them)
    const auto design = parse_json(test::slurp_file(dir / "design.json"));
    CHECK(records.size() == 6u * 1u * design.at("arms").as_array().size());
    CHECK(good == std::filesystem::file_size(dir / "records.jsonl"));
    // And a later resume finds nothing to do.
    const auto r = test::run_cli(lock_audit_args(dir, "6", true));
    INFO("resume: " << r.err);
    REQUIRE(r.code == 0);
    CHECK(parse_json(r.out).at("trials_run").as_number() == 0);
  }
  std::printf("audit_lock_test: %d rounds of two concurrent audits, %d refused for the lock\n", rounds,
              refused);
  std::filesystem::remove_all(base);
}

// A CLI built without MPI (cmake -DLATENTAUDIT_MPI=OFF, or no MPI found) that an MPI launcher
// starts as one of several ranks refuses: N whole audits into one directory otherwise. The
// launcher is recognised by its environment (here Open MPI's OMPI_COMM_WORLD_SIZE); with MPI the
// same is tests/dist's business (mpi_tests).
// (Registered only in a build without MPI: with MPI the case has nothing to run.)
#if !LATENTAUDIT_CLI_HAS_MPI
TEST_CASE("audit: built without MPI, run as one of several MPI ranks, it says so and exits 2") {
  const auto dir = test::cli_work_dir() / "no_mpi";
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  const auto r = test::run_cli(lock_audit_args(dir, "4", false));
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  test::expect_one_line_error(r, "built without MPI");
  CHECK(r.err.find("OMPI_COMM_WORLD_SIZE") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "records.jsonl"));
}
#endif
