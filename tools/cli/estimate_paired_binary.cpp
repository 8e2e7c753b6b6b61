// SPDX-License-Identifier: MIT
// latentaudit CLI: `estimate mcnemar|newcombe` (estimators/paired_binary.hpp).
#include <latentaudit/estimators/paired_binary.hpp>

#include "cli.hpp"
#include "data_input.hpp"

namespace latentaudit::cli {
namespace {

// McNemar's extra fields: the table, the three p-values, both chi-square statistics, phi.
void add_mcnemar_fields(json_value& j, const mcnemar_result& r) {
  json_value t = json_value::object();
  t.set("both", r.table.both);
  t.set("treated_only", r.table.treated_only);
  t.set("control_only", r.table.control_only);
  t.set("neither", r.table.neither);
  j.set("table", std::move(t));
  j.set("discordant", r.discordant);
  j.set("exact_p_value", r.exact_p_value);
  j.set("chi2_statistic", r.chi2_statistic);
  j.set("chi2_p_value", r.chi2_p_value);
  j.set("chi2_cc_statistic", r.chi2_cc_statistic);
  j.set("chi2_cc_p_value", r.chi2_cc_p_value);
  j.set("phi", r.phi);
}

json_value run_mcnemar(const arguments& args) {
  if (!wants_pairs(args)) {
    throw usage_error(args.command() +
                      ": McNemar's test needs paired data: give --pair COL (long layout) or "
                      "--outcome-treated COL --outcome-control COL (wide layout)");
  }
  const auto p = load_pairs(args, true);
  const auto r = mcnemar_test(p.treated, p.control, mcnemar_options{.level = args.level()});
  json_value j = effect_to_json(r.effect);
  set_pairs(j, r.effect.n_pairs);
  j.set("design", "paired");
  add_mcnemar_fields(j, r);
  return j;
}

json_value run_newcombe(const arguments& args) {
  const double level = args.level();
  if (wants_pairs(args)) {
    if (args.has("--continuity-correction")) {
      throw usage_error(args.command() +
                        ": --continuity-correction applies to the unpaired interval only (drop --pair / the "
                        "wide layout, or the flag)");
    }
    const auto p = load_pairs(args, true);
    const auto r = mcnemar_test(p.treated, p.control, mcnemar_options{.level = level});
    json_value j = effect_to_json(r.effect);
    set_pairs(j, r.effect.n_pairs);
    j.set("design", "paired");
    add_mcnemar_fields(j, r);
    return j;
  }
  const auto a = load_two_arms(args, true, false);
  const auto e = two_proportion_test(
      a.treated, a.control,
      two_proportion_options{.level = level, .continuity_correction = args.has("--continuity-correction")});
  json_value j = effect_to_json(e);
  j.set("design", "two_sample");
  double s1 = 0, s0 = 0;
  for (double y : a.treated) s1 += y;
  for (double y : a.control) s0 += y;
  j.set("proportion_treated", s1 / static_cast<double>(a.treated.size()));
  j.set("proportion_control", s0 / static_cast<double>(a.control.size()));
  return j;
}

[[maybe_unused]] const bool reg_mcnemar = register_estimate_method({
    "mcnemar",
    "McNemar's test for paired 0/1 outcomes (exact and both chi-square p-values) + Newcombe interval",
    "McNemar's test for paired binary (0/1) outcomes. Reports the paired risk difference\n"
    "(b - c)/n with its Wald standard error and Newcombe's (1998) method-10 score interval,\n"
    "p_value = the exact binomial p-value (R binom.test(b, b + c)), statistic = b, and in the\n"
    "same object chi2_statistic/chi2_p_value (R mcnemar.test(correct = FALSE)) and\n"
    "chi2_cc_statistic/chi2_cc_p_value (mcnemar.test default, continuity corrected), the table\n"
    "{both, treated_only (b), control_only (c), neither} and phi. Needs paired data: --pair COL\n"
    "(long layout) or --outcome-treated/--outcome-control (wide). No discordant pair -> exit 2.\n",
    paired_options(),
    run_mcnemar,
});

[[maybe_unused]] const bool reg_newcombe = register_estimate_method({
    "newcombe",
    "difference of two proportions with Newcombe's hybrid score interval (paired with --pair)",
    "Risk difference p1 - p0 of 0/1 outcomes with Newcombe's (1998a) hybrid score interval\n"
    "(method 10; method 11 with --continuity-correction) and the pooled two-proportion z test\n"
    "(R prop.test(c(x1, x0), c(n1, n0), correct = FALSE|TRUE)). With --pair COL or the wide\n"
    "layout it is the paired Newcombe interval (1998b method 10) with McNemar's exact p-value,\n"
    "as `estimate mcnemar`.\n",
    [] {
      auto o = paired_options();
      o.push_back({"--continuity-correction", "",
                   "unpaired only: continuity-corrected Wilson limits (method 11) and Yates' z test"});
      return o;
    }(),
    run_newcombe,
});

}  // namespace
}  // namespace latentaudit::cli
