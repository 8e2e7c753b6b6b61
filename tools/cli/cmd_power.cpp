// SPDX-License-Identifier: MIT
// latentaudit CLI: `latentaudit power <paired-t|two-sample-t|mcnemar>` — power, sample size or
// minimum detectable effect (estimators/power.hpp). Give all but one of n / delta / power.
#include <latentaudit/estimators/power.hpp>

#include <algorithm>
#include <cstdio>

#include "cli.hpp"

namespace latentaudit::cli {
namespace {

std::vector<option_spec> t_options(bool two_sample) {
  std::vector<option_spec> o = {
      {"--n", "N",
       two_sample ? "observations in the treated arm (control = ratio x N), real > 1"
                  : "number of pairs, real > 1"},
      {"--delta", "D", "true effect (mean difference, treated - control) in outcome units"},
      {"--power", "P", "target power, in (alpha, 1)"},
      {"--sd", "S",
       two_sample ? "standard deviation of the outcome in each arm; default 1"
                  : "standard deviation of the within-pair differences; default 1"},
      {"--alpha", "A", "significance level in (0, 0.5); default 0.05"},
      {"--one-sided", "", "one-sided test (alternative delta > 0); default two-sided"},
      {"--strict", "",
       "two-sided: also count the rejection region opposite to delta (R strict = TRUE, statsmodels)"},
  };
  if (two_sample) o.push_back({"--ratio", "R", "allocation ratio n_control / n_treated, > 0; default 1"});
  o.push_back(common_option("--pretty"));
  return o;
}

std::vector<option_spec> mcnemar_options_spec() {
  return {
      {"--p10", "X", "probability of a discordant pair with treated 1, control 0, in [0, 1]"},
      {"--p01", "Y", "probability of a discordant pair with treated 0, control 1, in [0, 1], X + Y <= 1"},
      {"--n", "N", "number of pairs (solve for power)"},
      {"--power", "P", "target power in (alpha, 1) (solve for the number of pairs)"},
      {"--alpha", "A", "significance level in (0, 0.5); default 0.05"},
      {"--one-sided", "", "one-sided test in the direction of p10 - p01; default two-sided"},
      {"--exact", "",
       "exact unconditional power of the exact conditional McNemar test (default: Connor 1987 normal "
       "approximation)"},
      {"--max-n", "M", "exact sample size: give up beyond M pairs; default 1000000"},
      common_option("--pretty"),
  };
}

struct power_test {
  std::string name, summary, description;
  std::vector<option_spec> options;
  json_value (*run)(const arguments&);
};

json_value run_t(const arguments& args, power_design design) {
  t_power_options o;
  o.design = design;
  o.sides = args.has("--one-sided") ? power_sides::one_sided : power_sides::two_sided;
  o.alpha = args.alpha();
  o.sd = args.number("--sd", 1.0);
  o.strict = args.has("--strict");
  if (design == power_design::two_sample) o.allocation_ratio = args.number("--ratio", 1.0);
  if (o.strict && o.sides == power_sides::one_sided)
    throw usage_error(args.command() + ": --strict applies to two-sided tests only");
  const int given = int(args.has("--n")) + int(args.has("--delta")) + int(args.has("--power"));
  if (given != 2) {
    throw usage_error(args.command() +
                      ": give exactly two of --n, --delta, --power (the third is solved for), got " +
                      std::to_string(given));
  }
  json_value j = json_value::object();
  j.set("test", args.command().substr(6));
  j.set("alpha", o.alpha);
  j.set("sides", o.sides == power_sides::one_sided ? "one_sided" : "two_sided");
  j.set("sd", o.sd);
  if (design == power_design::two_sample) j.set("allocation_ratio", o.allocation_ratio);
  j.set("strict", o.strict);
  if (!args.has("--power")) {
    const double n = args.required_number("--n"), delta = args.required_number("--delta");
    j.set("solve_for", "power");
    j.set("n", n);
    j.set("delta", delta);
    j.set("power", t_test_power(n, delta, o));
  } else if (!args.has("--n")) {
    const double delta = args.required_number("--delta"), power = args.required_number("--power");
    const auto r = t_test_sample_size(delta, power, o);
    j.set("solve_for", "n");
    j.set("n", r.n);
    j.set("delta", delta);
    j.set("power", power);
    j.set("n_required", r.n_required);
    j.set("n_required_control",
          design == power_design::two_sample ? json_value(r.n_required_control) : json_value(nullptr));
    j.set("n_total", r.n_total);
    j.set("power_at_required", r.power_at_required);
  } else {
    const double n = args.required_number("--n"), power = args.required_number("--power");
    j.set("solve_for", "delta");
    j.set("n", n);
    j.set("delta", t_test_mde(n, power, o));
    j.set("power", power);
  }
  return j;
}

json_value run_mcnemar_power(const arguments& args) {
  mcnemar_power_options o;
  o.alpha = args.alpha();
  o.sides = args.has("--one-sided") ? power_sides::one_sided : power_sides::two_sided;
  o.method = args.has("--exact") ? mcnemar_power_method::exact : mcnemar_power_method::connor;
  o.max_n = args.integer("--max-n", 1000000, 1, std::uint64_t{1} << 40);
  const double p10 = args.required_number("--p10"), p01 = args.required_number("--p01");
  if (args.has("--n") == args.has("--power"))
    throw usage_error(args.command() +
                      ": give exactly one of --n (solve for power) or --power (solve for n)");
  json_value j = json_value::object();
  j.set("test", "mcnemar");
  j.set("method", o.method == mcnemar_power_method::exact ? "exact" : "connor");
  j.set("alpha", o.alpha);
  j.set("sides", o.sides == power_sides::one_sided ? "one_sided" : "two_sided");
  j.set("p10", p10);
  j.set("p01", p01);
  if (args.has("--n")) {
    const double n = args.required_number("--n");
    j.set("solve_for", "power");
    j.set("n", n);
    j.set("power", mcnemar_power(n, p10, p01, o));
  } else {
    const double power = args.required_number("--power");
    const auto r = mcnemar_sample_size(p10, p01, power, o);
    j.set("solve_for", "n");
    j.set("n", r.n);
    j.set("power", power);
    j.set("n_required", r.n_required);
    j.set("power_at_required", r.power_at_required);
  }
  return j;
}

const std::vector<power_test>& power_tests() {
  static const std::vector<power_test> tests = {
      {"paired-t", "paired t test (R power.t.test(type = \"paired\"))",
       "Power, number of pairs, or minimum detectable effect of the paired t test (R\n"
       "power.t.test(type = \"paired\"), statsmodels TTestPower on d = delta/sd). Give exactly two of\n"
       "--n, --delta, --power; the third is solved for. Prints test, alpha, sides, sd, strict,\n"
       "solve_for, n, delta, power, and when solving for n: n_required (the smallest whole number of\n"
       "pairs reaching the power), n_required_control (null), n_total, power_at_required.\n",
       t_options(false), [](const arguments& a) { return run_t(a, power_design::paired); }},
      {"two-sample-t", "pooled two-sample t test (R power.t.test(type = \"two.sample\"))",
       "Power, per-arm sample size, or minimum detectable effect of the pooled two-sample t test\n"
       "(R power.t.test(), statsmodels TTestIndPower with ratio). Give exactly two of --n, --delta,\n"
       "--power; the third is solved for. n counts the treated arm; the control arm has ratio x n.\n"
       "Prints test, alpha, sides, sd, allocation_ratio, strict, solve_for, n, delta, power, and when\n"
       "solving for n: n_required, n_required_control, n_total, power_at_required.\n",
       t_options(true), [](const arguments& a) { return run_t(a, power_design::two_sample); }},
      {"mcnemar", "McNemar's test for paired 0/1 outcomes (Connor 1987, or exact)",
       "Power or number of pairs of McNemar's test when discordant pairs occur with probabilities\n"
       "p10 (treated 1, control 0) and p01 (treated 0, control 1). Connor's (1987) normal\n"
       "approximation by default; --exact for the exact conditional test's unconditional power.\n"
       "Give exactly one of --n (solve for power) or --power (solve for n). Prints test, method,\n"
       "alpha, sides, p10, p01, solve_for, n, power, and when solving for n: n_required,\n"
       "power_at_required.\n",
       mcnemar_options_spec(), run_mcnemar_power},
  };
  return tests;
}

int run_power(std::span<const std::string> words) {
  const auto& tests = power_tests();
  std::string names;
  for (const auto& t : tests) names += (names.empty() ? "" : "|") + t.name;
  if (words.empty())
    throw usage_error("power: missing test, one of " + names + " (try 'latentaudit power --help')");
  if (words.front() == "--help") {
    std::string d =
        "Power, sample size or minimum detectable effect for planning a trial. Prints one JSON "
        "object.\n\ntests:\n";
    std::vector<option_spec> all;
    for (const auto& t : tests) {
      d.append("  ").append(t.name).append(14 - t.name.size(), ' ').append(t.summary).append("\n");
      for (const auto& o : t.options) {
        if (std::none_of(all.begin(), all.end(), [&](const option_spec& x) { return x.name == o.name; }))
          all.push_back(o);
      }
    }
    std::fputs(help_text("latentaudit power <" + names + "> [options]", d, all).c_str(), stdout);
    return exit_ok;
  }
  const auto it =
      std::find_if(tests.begin(), tests.end(), [&](const power_test& t) { return t.name == words.front(); });
  if (it == tests.end())
    throw usage_error("power: unknown test '" + words.front() + "', expected one of " + names);
  const auto args = arguments::parse(words.subspan(1), it->options, "power " + it->name);
  if (args.help()) {
    std::fputs(
        help_text("latentaudit power " + it->name + " [options]", it->description, it->options).c_str(),
        stdout);
    return exit_ok;
  }
  print_json(it->run(args), args.has("--pretty"));
  return exit_ok;
}

[[maybe_unused]] const bool registered_power = register_subcommand(
    {"power", "power, sample size or minimum detectable effect (paired-t, two-sample-t, mcnemar)",
     run_power});

}  // namespace
}  // namespace latentaudit::cli
