// SPDX-License-Identifier: MIT
// The report's options, one owner for `audit` and `report`: their option specs (--margin, --alpha,
// --bootstrap, --latency-slo-ms, --prefill-tokens-per-s), the audit_options they set, and the
// summary's input warnings.
#ifndef LATENTAUDIT_TOOLS_CLI_REPORT_OPTIONS_HPP
#define LATENTAUDIT_TOOLS_CLI_REPORT_OPTIONS_HPP

#include <latentaudit/core/json.hpp>
#include <latentaudit/report/audit.hpp>
#include <latentaudit/report/report.hpp>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"

namespace latentaudit::cli {

/// The options both commands take for the report (their help lines read the same in both).
inline std::vector<option_spec> report_option_specs() {
  return {
      {"--margin", "M",
       "equivalence / non-inferiority margin as a fraction of accuracy, in (0, 1) (default 0.05: 5 "
       "percentage points)"},
      {"--alpha", "A", "family-wise level (default 0.05)"},
      {"--bootstrap", "B", "bootstrap replicates (default 2000)"},
      {"--latency-slo-ms", "MS", "receiver latency SLO for the cost findings (default: none evaluated)"},
      {"--prefill-tokens-per-s", "T",
       "receiver prefill throughput for the cost projection (default: a table at 2e3, 1e4, 5e4)"},
  };
}

/// The audit_options of --margin, --alpha, --bootstrap, --latency-slo-ms, --prefill-tokens-per-s and
/// --link measured; `seed` seeds the bootstraps.
inline audit_options report_options(const arguments& args, std::uint64_t seed) {
  audit_options o;
  o.equivalence_margin = args.number("--margin", 0.05);
  o.noninferiority_margin = o.equivalence_margin;
  if (!(o.equivalence_margin > 0 && o.equivalence_margin < 1))
    throw usage_error(args.command() + ": option --margin must lie in (0, 1), got " +
                      number_text(o.equivalence_margin));
  o.alpha = args.alpha();
  o.bootstrap_replicates = static_cast<std::size_t>(args.integer("--bootstrap", 2000, 100, 1000000));
  if (args.get("--latency-slo-ms")) {
    const double ms = args.number("--latency-slo-ms", 0.0);
    if (!(ms > 0)) throw usage_error(args.command() + ": option --latency-slo-ms must be > 0");
    o.latency_slo_s = ms * 1e-3;
  }
  if (args.get("--prefill-tokens-per-s")) {
    const double t = args.number("--prefill-tokens-per-s", 0.0);
    if (!(t > 0)) throw usage_error(args.command() + ": option --prefill-tokens-per-s must be > 0");
    o.prefill_tokens_per_s = t;
  }
  o.seed = seed;
  o.threads = 0;  // the bootstraps use every core; results do not depend on it
  o.link_measured = args.get("--link") == std::optional<std::string>("measured");
  if (args.command() == "report" && args.get("--link") && !o.link_measured)
    throw usage_error("report: option --link must be 'measured', got '" + *args.get("--link") + "'");
  return o;
}

/// The report's input warnings into the summary (and on stderr unless quiet).
inline void input_warnings(const audit_report& r, json_value& summary, bool quiet) {
  json_value w = json_value::array_type{};
  for (const auto& s : r.core.input_warnings) {
    if (!quiet) std::fprintf(stderr, "latentaudit: warning: %s\n", s.c_str());
    w.push_back(s);
  }
  summary.set("input_warnings", std::move(w));
}

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_TOOLS_CLI_REPORT_OPTIONS_HPP
