// SPDX-License-Identifier: MIT
// latentaudit CLI: `latentaudit estimate <method> ...` — dispatches to the methods registered by
// the estimate_*.cpp files (see README-dev.md).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {
namespace {

std::vector<estimate_method> sorted_methods() {
  auto ms = estimate_methods();
  std::sort(ms.begin(), ms.end(),
            [](const estimate_method& a, const estimate_method& b) { return a.name < b.name; });
  return ms;
}

std::string method_names() {
  std::string s;
  for (const auto& m : sorted_methods()) s += (s.empty() ? "" : "|") + m.name;
  return s;
}

std::string estimate_help() {
  std::string d =
      "Estimates the effect of a 0/1 treatment on an outcome column of a CSV or JSONL table and\n"
      "prints one JSON object: method, estimand, estimate, std_error, ci_low, ci_high, level, df,\n"
      "statistic, p_value, n_treated, n_control, n_pairs, status (plus method-specific fields).\n"
      "Effects are treated minus control. Run 'latentaudit estimate <method> --help' for a\n"
      "method's options.\n\nmethods:\n";
  const auto ms = sorted_methods();
  std::size_t width = 0;
  for (const auto& m : ms) width = std::max(width, m.name.size());
  for (const auto& m : ms)
    d.append("  ").append(m.name).append(width + 2 - m.name.size(), ' ').append(m.summary).append("\n");
  // Every option any method accepts, once.
  std::vector<option_spec> all;
  for (const auto& m : ms) {
    for (const auto& o : m.options) {
      if (std::none_of(all.begin(), all.end(), [&](const option_spec& x) { return x.name == o.name; }))
        all.push_back(o);
    }
  }
  all.push_back(common_option("--pretty"));
  return help_text("latentaudit estimate <" + method_names() + "> [options]", d, all);
}

int run_estimate(std::span<const std::string> args) {
  if (args.empty())
    throw usage_error("estimate: missing method, one of " + method_names() +
                      " (try 'latentaudit estimate --help')");
  const std::string& name = args.front();
  if (name == "--help") {
    std::fputs(estimate_help().c_str(), stdout);
    return exit_ok;
  }
  const auto& ms = estimate_methods();
  const auto it =
      std::find_if(ms.begin(), ms.end(), [&](const estimate_method& m) { return m.name == name; });
  if (it == ms.end())
    throw usage_error("estimate: unknown method '" + name + "', expected one of " + method_names());
  std::vector<option_spec> specs = it->options;
  specs.push_back(common_option("--pretty"));
  const std::string command = "estimate " + it->name;
  const auto parsed = arguments::parse(args.subspan(1), specs, command);
  if (parsed.help()) {
    std::fputs(help_text("latentaudit " + command + " [options]", it->description, specs).c_str(), stdout);
    return exit_ok;
  }
  print_json(it->run(parsed), parsed.has("--pretty"));
  return exit_ok;
}

[[maybe_unused]] const bool registered_estimate =
    register_subcommand({"estimate", "estimate a treatment effect from a CSV/JSONL table", run_estimate});

}  // namespace
}  // namespace latentaudit::cli
