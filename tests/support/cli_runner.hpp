// SPDX-License-Identifier: MIT
// Test support: running the built `latentaudit` binary (LATENTAUDIT_CLI_PATH) with captured
// stdout/stderr, in a per-process scratch directory, and the checks shared by tests/cli/*.cpp
// (a successful JSON run, a bad-input run with one line on stderr).
#ifndef LATENTAUDIT_TESTS_SUPPORT_CLI_RUNNER_HPP
#define LATENTAUDIT_TESTS_SUPPORT_CLI_RUNNER_HPP

#include <latentaudit/core/json.hpp>
#include <latentaudit/trial/journal.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"

extern char** environ;  // for posix_spawn

namespace latentaudit::test {

/// What one run of the binary produced.
struct run_result {
  int code = -1;    ///< exit status (128 + signal number if killed by a signal)
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

/// A fresh directory for this process's files.
inline const std::filesystem::path& cli_work_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("latentaudit_cli_" + std::to_string(::getpid()));
    // A directory of this name belongs to a dead process that had our pid (pids are reused): its
    // leftovers (an audit's --out, a lock) must not meet this run's tests.
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

/// The bytes of a file.
inline std::string slurp_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Starts the CLI with `args` (posix_spawn, no shell: every word reaches the binary as it is),
/// stdin from /dev/null and stdout / stderr to the given files; returns its pid.
inline pid_t spawn_cli(const std::vector<std::string>& args, const std::string& out_path,
                       const std::string& err_path) {
  const std::string exe = LATENTAUDIT_CLI_PATH;
  std::vector<std::string> words = {exe};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return pid;
}

/// Runs the CLI with `args` to completion; stdout and stderr are captured through files in
/// cli_work_dir().
inline run_result run_cli(const std::vector<std::string>& args) {
  const std::string out = (cli_work_dir() / "stdout.txt").string(),
                    err = (cli_work_dir() / "stderr.txt").string();
  const pid_t pid = spawn_cli(args, out, err);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  run_result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = slurp_file(out);
  r.err = slurp_file(err);
  return r;
}

/// Runs the CLI and parses its stdout as JSON; fails the test unless it exits 0.
inline json_value ok_json(const std::vector<std::string>& args) {
  const auto r = run_cli(args);
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  return parse_json(r.out);
}

/// The records of a records.jsonl file as their JSON lines, in file order, with every timing
/// cleared: what must not depend on --jobs, a resume or a batch schedule.
inline std::vector<std::string> timeless_record_lines(const std::filesystem::path& file) {
  std::vector<std::string> out;
  for (auto r : read_records(file)) {
    r.latency = {};
    for (auto& x : r.latency_repeats_s) x = 0.0;
    if (r.transfer_measured_s) r.transfer_measured_s = 0.0;  // a relay link's measured crossing
    out.push_back(record_to_line(r));
  }
  return out;
}

/// Checks a bad-input run: exit code 2, nothing on stdout, and exactly one line on stderr that
/// contains `needle`.
inline void expect_one_line_error(const run_result& r, const std::string& needle) {
  INFO("expecting '" << needle << "', stderr: " << r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(needle) != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

}  // namespace latentaudit::test

#endif
