// SPDX-License-Identifier: MIT
// `latentaudit audit`'s --config file (a JSON object of its options, the command line winning) and
// its progress on stderr (the trials' line, the looks of --until-decided).
#ifndef LATENTAUDIT_TOOLS_CLI_AUDIT_CONFIG_HPP
#define LATENTAUDIT_TOOLS_CLI_AUDIT_CONFIG_HPP

#include <latentaudit/core/file_check.hpp>
#include <latentaudit/core/json.hpp>
#include <latentaudit/core/number_text.hpp>
#include <latentaudit/report/report.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli.hpp"

namespace latentaudit::cli {

// Command-line words plus --config entries (command line wins). Keys are option names without
// "--": a flag takes true or false, any other option a string or a number; "help" and "config"
// are refused.
inline std::vector<std::string> with_config(std::span<const std::string> words,
                                            const std::vector<option_spec>& specs,
                                            std::vector<std::string>* overridden = nullptr,
                                            std::string* config_where = nullptr) {
  std::vector<std::string> out(words.begin(), words.end());
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string path;
    if (words[i] == "--config" && i + 1 < words.size())
      path = words[i + 1];
    else if (words[i].rfind("--config=", 0) == 0)
      path = words[i].substr(9);
    else
      continue;
    const std::string where = "audit: --config file '" + path + "'";
    std::uint64_t size = 0;
    try {
      size = require_regular_file(path, "--config file");
    } catch (const error& e) {
      throw usage_error(std::string("audit: ") + e.what());
    }
    if (size > (std::uint64_t{1} << 20)) throw usage_error(where + " is larger than 1 MiB");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw usage_error("audit: cannot read --config file '" + path + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    json_value j;
    try {
      j = parse_json(ss.str(), {.max_depth = 4, .max_bytes = 1 << 20});
    } catch (const error& e) {
      throw usage_error(where + ": " + e.what());
    }
    if (!j.is_object()) throw usage_error(where + " must hold a JSON object");
    for (const auto& [k, v] : j.as_object()) {
      const std::string opt = "--" + k;
      if (k == "config") throw usage_error(where + " may not name another config");
      if (k == "help") throw usage_error(where + ": key 'help' is not an option a config can set");
      const auto spec =
          std::find_if(specs.begin(), specs.end(), [&](const option_spec& s) { return s.name == opt; });
      if (spec == specs.end()) throw usage_error(where + ": unknown key '" + k + "' (no option " + opt + ")");
      const bool flag = spec->metavar.empty();
      // The value is checked even where the command line overrides it (a broken config is refused
      // whichever of its keys is in force).
      std::string word;
      if (flag) {
        if (!v.is_bool())
          throw usage_error(where + ": key '" + k + "' is a flag and takes true or false, got " +
                            write_json(v));
        if (v.as_bool()) word = opt;
      } else if (v.is_string()) {
        if (v.as_string().find('\0') != std::string::npos)
          throw usage_error(where + ": key '" + k + "' holds a NUL character");
        word = opt + "=" + v.as_string();
      } else if (v.is_number()) {
        // An integral value as an integer ({"bootstrap": 1000000} is 1000000, not 1e+06).
        const double x = v.as_number();
        std::string text;
        if (std::trunc(x) == x && std::fabs(x) <= json_max_exact_integer)
          text = x < 0 ? "-" + std::to_string(static_cast<std::uint64_t>(-x))
                       : std::to_string(static_cast<std::uint64_t>(x));
        else
          text = number_text(x);
        word = opt + "=" + text;
      } else {
        throw usage_error(where + ": key '" + k + "' must be a string or a number (option " + opt + " " +
                          spec->metavar + ")");
      }
      bool given = false;
      for (const auto& w : words) given |= w == opt || w.rfind(opt + "=", 0) == 0;
      if (given) {
        if (overridden != nullptr && !word.empty()) overridden->push_back(word);
        if (config_where != nullptr) *config_where = where + " (overridden on the command line)";
        continue;
      }
      if (!word.empty()) out.push_back(word);
    }
  }
  return out;
}

// Progress on stderr: a carriage-return line on a terminal, else a line every 10 %.
class progress_meter {
 public:
  explicit progress_meter(bool quiet)
      : quiet_(quiet), tty_(::isatty(2) == 1), t0_(std::chrono::steady_clock::now()) {}
  void operator()(std::uint64_t done, std::uint64_t total, std::uint64_t skipped) {
    if (quiet_ || total == 0) return;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const int decile = static_cast<int>(10 * done / total);
    const bool last = done == total;
    if (tty_ ? (el - last_ < 0.1 && !last) : (decile == decile_ && !last)) return;
    last_ = el;
    decile_ = decile;
    const double rate = done > skipped && el > 0 ? static_cast<double>(done - skipped) / el : 0.0;
    const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
    std::fprintf(stderr, "%saudit: %llu/%llu trials (%.0f%%), %.0f trials/s, ETA %.0f s%s", tty_ ? "\r" : "",
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                 100.0 * static_cast<double>(done) / static_cast<double>(total), rate, eta,
                 tty_ && !last ? "" : "\n");
    std::fflush(stderr);
  }

 private:
  bool quiet_, tty_;
  std::chrono::steady_clock::time_point t0_;
  double last_ = -1;
  int decile_ = -1;
};

// --until-decided: one stderr line per look (its verdict, the checks still open, the cells running).
inline void print_look(std::size_t k, std::size_t looks, std::uint64_t items, std::uint64_t all_items,
                       const audit_report& report, std::size_t cells, std::size_t cells_all) {
  const auto& decision = report.decision;
  const bool settled = decision_settled(decision);
  std::string open;  // the checks still open: the risks not yet shown, or what keeps it inconclusive
  for (const auto& c : decision.unverified) open.append(open.empty() ? "" : ", ").append(c);
  if (open.empty() && !settled)
    for (const auto& c : decision.checklist)
      if (c.passed == verdict::inconclusive && c.name != "monitor")
        open.append(open.empty() ? "" : ", ").append(c.name);
  std::fprintf(stderr,
               "latentaudit: --until-decided: look %zu of %zu after %llu of %llu items: %s%s%s; %zu of %zu "
               "(regime, arm) cells run on\n",
               k, looks, static_cast<unsigned long long>(items), static_cast<unsigned long long>(all_items),
               decision_verdict_name(decision.verdict), settled ? " (settled: stop)" : "",
               open.empty() ? "" : (" (open: " + open + ")").c_str(), cells, cells_all);
}

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_TOOLS_CLI_AUDIT_CONFIG_HPP
