// SPDX-License-Identifier: MIT
// The latentaudit command-line tool: dispatches to the registered subcommands (cmd_*.cpp) and
// turns every failure into an exit code and ONE line on stderr (docs/cli.md).
#include <latentaudit/core/error.hpp>
#include <latentaudit/trial/record.hpp>
#include <latentaudit/version.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {

void print_json(const json_value& v, bool pretty) {
  std::string out = write_json(v, json_write_options{.indent = pretty ? 2 : -1});
  out.push_back('\n');
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0)
    LATENTAUDIT_THROW(invalid_argument(std::string("cannot write to stdout: ") + std::strerror(errno)));
}

namespace {

std::string top_help() {
  auto cmds = subcommands();
  std::sort(cmds.begin(), cmds.end(),
            [](const subcommand& a, const subcommand& b) { return a.name < b.name; });
  std::string out =
      "usage: latentaudit <command> [options]\n"
      "       latentaudit <command> --help\n"
      "       latentaudit --version\n\n"
      "Causal statistics for auditing KV-cache relay between LLM agents. Each command prints one\n"
      "JSON object on stdout. Exit codes: 0 success, 2 bad input (one line on stderr naming the\n"
      "problem), 3 internal error.\n\ncommands:\n";
  std::size_t width = 0;
  for (const auto& c : cmds) width = std::max(width, c.name.size());
  for (const auto& c : cmds)
    out.append("  ").append(c.name).append(width + 2 - c.name.size(), ' ').append(c.summary).append("\n");
  out.append(
      "\noptions:\n"
      "  --help     print this help and exit\n"
      "  --version  print the version and exit\n");
  return out;
}

// One line: newlines and carriage returns inside a message become spaces.
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

// Library messages name the function that threw ("read_records: F:3: parse_json: unexpected 'x'"):
// the anchor a C++ caller needs. On the command line the file, line, field or option is what the
// user acts on, so each "<function>: " segment — a lower-case identifier with '_' or "::" (no
// subcommand, option, environment variable, file or field name has that form before ": "), at the
// start or after ": " — is left out ("argument '<name>'" after it stays: parameters such as
// 'treated' or 'options.neighbors' are what the user set): "F:3: unexpected 'x'". A message that
// would be left empty keeps its words.
std::string cli_words(const std::string& s) {
  auto ident_char = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; };
  std::string out;
  std::size_t i = 0;
  bool segment_start = true;
  while (i < s.size()) {
    if (segment_start && ((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_')) {
      std::size_t j = i;
      bool marked = false;  // '_' or "::" inside: a function's name
      while (j < s.size()) {
        if (ident_char(s[j])) {
          marked = marked || s[j] == '_';
          ++j;
        } else if (s.compare(j, 2, "::") == 0 && j + 2 < s.size() && ident_char(s[j + 2])) {
          marked = true;
          j += 2;
        } else {
          break;
        }
      }
      if (marked && s.compare(j, 2, ": ") == 0 && j + 2 < s.size()) {
        i = j + 2;  // drop "<function>: "; what follows starts a segment too
        continue;
      }
    }
    segment_start = s.compare(i, 2, ": ") == 0;
    if (segment_start) {
      out += ": ";
      i += 2;
      continue;
    }
    out += s[i++];
  }
  return out.empty() ? s : out;
}

int fail(int code, const std::string& what) {
  const std::string line =
      "latentaudit: " + std::string(code == exit_internal ? "internal error: " : "error: ") +
      one_line(code == exit_internal ? what : cli_words(what)) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  return code;
}

// The command name nearest to `word` for a "did you mean" hint: within 2 edits (a swapped pair
// of letters is 2: "reprot" -> "report"), or a command that starts with `word` (3 letters or more);
// "" when none is that close.
std::string closest_command(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_distance = 3;
  for (const auto& n : names)
    if (const auto d = edit_distance(word, n); d < best_distance) {
      best_distance = d;
      best = n;
    }
  if (best.empty() && word.size() >= 3)
    for (const auto& n : names)
      if (n.rfind(word, 0) == 0) return n;
  return best;
}

// Runs command `c` on `words` with `-h` read as `--help` (every command, whether it parses its
// options with `arguments` or dispatches on its first word) and a record lint installed: records
// read from files (report, audit's resume) warn once per unknown field and arm of no kind on stderr
// (unless --quiet), and a unit whose arms disagree on the regime is refused naming file:line.
int run_command(const subcommand& c, std::span<const std::string> words) {
  std::vector<std::string> w(words.begin(), words.end());
  for (auto& x : w)
    if (x == "-h") x = "--help";
  const bool quiet = std::find(w.begin(), w.end(), "--quiet") != w.end();
  record_lint lint([quiet](const std::string& line) {
    if (quiet) return;
    const std::string out = "latentaudit: warning: " + one_line(cli_words(line)) + "\n";
    std::fwrite(out.data(), 1, out.size(), stderr);
  });
  const record_lint_scope scope(lint);
  return c.run(w);
}

int dispatch(const std::vector<std::string>& args) {
  if (args.empty()) throw usage_error("missing command (try 'latentaudit --help')");
  const std::string& first = args.front();
  if (first == "--help" || first == "-h" || first == "help") {
    std::fputs(top_help().c_str(), stdout);
    return exit_ok;
  }
  if (first == "--version") {
    std::printf("%s\n", latentaudit::version_string);
    return exit_ok;
  }
  for (const auto& c : subcommands()) {
    if (c.name == first) return run_command(c, std::span<const std::string>(args).subspan(1));
  }
  if (first.rfind("-", 0) == 0)
    throw usage_error("unknown option '" + first + "' (try 'latentaudit --help')");
  std::vector<std::string> names;
  for (const auto& c : subcommands()) names.push_back(c.name);
  std::sort(names.begin(), names.end());
  const std::string near = closest_command(first, names);
  throw usage_error("unknown command '" + first + "'" +
                    (near.empty() ? std::string() : " (did you mean '" + near + "'?)") +
                    " (try 'latentaudit --help')");
}

}  // namespace
}  // namespace latentaudit::cli

int main(int argc, char** argv) {
  namespace cli = latentaudit::cli;
  // A write past RLIMIT_FSIZE fails with EFBIG (a message, exit 2, no partial output: outputs are
  // written to a temporary and renamed) instead of killing the process with SIGXFSZ; a closed pipe
  // on stdout fails with EPIPE (a message, exit 2) instead of SIGPIPE.
  std::signal(SIGXFSZ, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    const int rc = cli::dispatch(args);
    // What is still buffered (help text, printf) and any earlier write error: a full disk or a
    // closed stdout is an error, never a silent exit 0.
    if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
      const int err = errno;
      return rc != cli::exit_ok ? rc
                                : cli::fail(cli::exit_bad_input, std::string("cannot write to stdout: ") +
                                                                     std::strerror(err != 0 ? err : EIO));
    }
    return rc;
  } catch (const cli::usage_error& e) {
    return cli::fail(cli::exit_bad_input, e.what());
  } catch (const latentaudit::error& e) {
    return cli::fail(cli::exit_bad_input, e.what());
  } catch (const std::bad_alloc&) {
    return cli::fail(cli::exit_internal, "out of memory");
  } catch (const std::exception& e) {
    return cli::fail(cli::exit_internal, e.what());
  } catch (...) {
    return cli::fail(cli::exit_internal, "unknown exception");
  }
}
