// SPDX-License-Identifier: MIT
// Test support: running the built `latentaudit` binary (LATENTAUDIT_CLI_PATH) with captured
// stdout/stderr, in a per-process scratch directory.
#ifndef LATENTAUDIT_TESTS_SUPPORT_CLI_RUNNER_HPP
#define LATENTAUDIT_TESTS_SUPPORT_CLI_RUNNER_HPP

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace latentaudit::test {

/// What one run of the binary produced.
struct run_result {
  int code = -1;    ///< exit status
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

/// A fresh directory for this process's files.
inline const std::filesystem::path& cli_work_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("latentaudit_cli_" + std::to_string(::getpid()));
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

/// Single-quotes a word for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q.append("'\\''");
    else q.push_back(c);
  }
  q.push_back('\'');
  return q;
}

/// Runs the CLI with `args`; stdout and stderr are captured through files.
inline run_result run_cli(const std::vector<std::string>& args) {
  const auto out = cli_work_dir() / "stdout.txt", err = cli_work_dir() / "stderr.txt";
  std::string cmd = shell_quote(LATENTAUDIT_CLI_PATH);
  for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
  cmd.append(" >").append(shell_quote(out.string())).append(" 2>").append(shell_quote(err.string())).append(" </dev/null");
  const int status = std::system(cmd.c_str());
  run_result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = slurp_file(out);
  r.err = slurp_file(err);
  return r;
}

}  // namespace latentaudit::test

#endif
