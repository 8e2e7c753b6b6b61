// SPDX-License-Identifier: MIT
// latentaudit CLI: `latentaudit interval` — bootstrap intervals from replicates saved elsewhere
// (R boot, scipy, another program), via bootstrap_interval (estimators/bootstrap.hpp).
#include <latentaudit/estimators/bootstrap.hpp>

#include <cstdio>

#include "bootstrap_common.hpp"
#include "cli.hpp"
#include "data_input.hpp"

namespace latentaudit::cli {
namespace {

std::vector<option_spec> interval_options() {
  return {
      {"--estimate", "X", "the statistic on the original data (t0), required"},
      {"--replicates", "FILE",
       "the bootstrap replicates t*, one number per line (a header line allowed), required"},
      {"--method", "METHOD", "percentile, basic, normal, bca or studentized, required"},
      {"--influence", "FILE",
       "bca: influence values of the resampling units (R empinf / jackknife), one per line; required for "
       "bca"},
      {"--strata", "N1,N2,...",
       "bca with scipy: sizes of consecutive samples in the influence file (multi-sample acceleration)"},
      {"--estimate-variance", "V", "studentized: variance estimate v0 of the statistic on the original data"},
      {"--replicate-variances", "FILE",
       "studentized: variance estimate of each replicate, one per line, same order as --replicates"},
      common_option("--level"),
      common_option("--convention"),
      common_option("--pretty"),
  };
}

const char* interval_description =
    "Confidence interval from bootstrap replicates computed elsewhere. With --convention boot\n"
    "(default) it reproduces R boot::boot.ci (norm.inter order statistics, z0 from #{t* < t0}/B,\n"
    "a = sum L^3 / (6 (sum L^2)^1.5)); with --convention scipy, scipy.stats.bootstrap (linear\n"
    "percentiles, mid-rank z0, per-sample acceleration with --strata). Prints method, estimand,\n"
    "estimate (= t0), std_error (sd of t*), ci_low, ci_high, level, replicates, replicates_used,\n"
    "bias_correction, acceleration, alpha_low, alpha_high, convention, status.\n";

std::vector<std::size_t> parse_strata(const arguments& args) {
  std::vector<std::size_t> out;
  const std::string s = args.require("--strata");
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string part = s.substr(pos, comma - pos);
    std::size_t v = 0;
    const auto r = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || r.ec != std::errc() || r.ptr != part.data() + part.size() || v == 0) {
      throw usage_error(args.command() +
                        ": option --strata expects positive integers separated by commas, got '" + s + "'");
    }
    out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

int run_interval(std::span<const std::string> words) {
  const auto specs = interval_options();
  const auto args = arguments::parse(words, specs, "interval");
  if (args.help()) {
    std::fputs(help_text("latentaudit interval --estimate X --replicates FILE --method METHOD [options]",
                         interval_description, specs)
                   .c_str(),
               stdout);
    return exit_ok;
  }
  const double t0 = args.required_number("--estimate");
  if (!args.has("--method")) throw usage_error("interval: missing required option --method");
  const std::string method =
      args.choice("--method", "", {"percentile", "basic", "normal", "bca", "studentized"});
  const std::string convention = args.choice("--convention", "boot", {"boot", "scipy"});
  bootstrap_options o;
  o.level = args.level();
  o.method = ci_method_of(method);
  o.convention = convention_of(args);
  const bool bca = method == "bca", stud = method == "studentized";
  if (args.has("--influence") && !bca)
    throw usage_error("interval: --influence applies to --method bca only");
  if (args.has("--strata") && !bca) throw usage_error("interval: --strata applies to --method bca only");
  if ((args.has("--estimate-variance") || args.has("--replicate-variances")) && !stud) {
    throw usage_error(
        "interval: --estimate-variance and --replicate-variances apply to --method studentized only");
  }
  if (bca && !args.has("--influence"))
    throw usage_error(
        "interval: --method bca needs --influence FILE (influence values of the resampling units)");
  const auto reps = read_number_file(args.require("--replicates"), "--replicates");
  std::vector<double> influence, variances;
  std::vector<std::size_t> strata;
  bootstrap_replicates in{.t0 = t0, .replicates = reps};
  if (bca) {
    influence = read_number_file(args.require("--influence"), "--influence");
    in.influence = influence;
    if (args.has("--strata")) {
      strata = parse_strata(args);
      in.strata = strata;
    }
  }
  if (stud) {
    in.t0_variance = args.required_number("--estimate-variance");
    variances = read_number_file(args.require("--replicate-variances"), "--replicate-variances");
    in.replicate_variances = variances;
  }
  const auto r = bootstrap_interval(in, o);
  json_value j = bootstrap_to_json(r, convention);
  j.set("replicates", reps.size());
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

[[maybe_unused]] const bool registered_interval = register_subcommand(
    {"interval", "bootstrap confidence interval from saved replicates (R boot / scipy rules)", run_interval});

}  // namespace
}  // namespace latentaudit::cli
