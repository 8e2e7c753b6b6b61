// SPDX-License-Identifier: MIT
// latentaudit CLI: `estimate tost|noninferiority` (estimators/equivalence.hpp).
#include <latentaudit/estimators/equivalence.hpp>

#include "cli.hpp"
#include "data_input.hpp"

namespace latentaudit::cli {
namespace {

// The data of a TOST / non-inferiority run: the two samples and the t-test design.
struct design_data {
  std::vector<double> treated, control;
  t_test_design design = t_test_design::welch;
  std::size_t pairs = 0;
};

design_data load_design(const arguments& args) {
  design_data d;
  const std::string variance = args.choice("--variance", "unequal", {"unequal", "pooled"});
  if (wants_pairs(args)) {
    if (args.has("--variance"))
      throw usage_error(args.command() + ": --variance applies to unpaired designs only");
    auto p = load_pairs(args, false);
    d.treated = std::move(p.treated);
    d.control = std::move(p.control);
    d.design = t_test_design::paired;
    d.pairs = d.treated.size();
  } else {
    auto a = load_two_arms(args, false, false);
    d.treated = std::move(a.treated);
    d.control = std::move(a.control);
    d.design = variance == "pooled" ? t_test_design::student : t_test_design::welch;
  }
  return d;
}

// α of the one-sided tests: --alpha A, or --level L meaning the (1 - 2α) interval (α = (1 - L)/2).
double tost_alpha(const arguments& args) {
  if (args.has("--alpha") && args.has("--level"))
    throw usage_error(args.command() + ": give --alpha or --level, not both");
  if (args.has("--level")) return (1.0 - args.level()) / 2.0;
  return args.alpha();
}

double positive_margin(const arguments& args) {
  const double m = args.required_number("--margin");
  if (!(m > 0.0))
    throw usage_error(args.command() + ": option --margin must be positive, got " + *args.get("--margin"));
  return m;
}

void finish_design(json_value& j, const design_data& d) {
  if (d.design == t_test_design::paired) {
    set_pairs(j, d.pairs);
    j.set("design", "paired");
  } else {
    j.set("design", "two_sample");
  }
}

json_value run_tost(const arguments& args) {
  equivalence_bounds b;
  const bool asym = args.has("--lower") || args.has("--upper");
  if (asym && args.has("--margin"))
    throw usage_error(args.command() + ": give --margin M or --lower/--upper, not both");
  if (asym) {
    b.low = args.required_number("--lower");
    b.high = args.required_number("--upper");
    if (!(b.low < b.high)) throw usage_error(args.command() + ": --lower must be less than --upper");
  } else {
    b = equivalence_bounds::symmetric(positive_margin(args));
  }
  const double alpha = tost_alpha(args);
  const auto d = load_design(args);
  const auto r =
      equivalence_test(d.treated, d.control, b, equivalence_options{.design = d.design, .alpha = alpha});
  json_value j = effect_to_json(r.effect);
  j.set("method", "tost_" + r.effect.method);
  // The TOST p-value and the statistic of the one-sided test that attains it.
  j.set("statistic", r.p_lower >= r.p_upper ? r.statistic_lower : r.statistic_upper);
  j.set("p_value", r.p_value);
  finish_design(j, d);
  j.set("margin_low", r.margin_low);
  j.set("margin_high", r.margin_high);
  j.set("alpha", r.alpha);
  j.set("statistic_lower", r.statistic_lower);
  j.set("statistic_upper", r.statistic_upper);
  j.set("p_lower", r.p_lower);
  j.set("p_upper", r.p_upper);
  j.set("difference_statistic", r.effect.statistic);
  j.set("difference_p_value", r.effect.p_value);
  j.set("equivalent", r.equivalent);
  return j;
}

json_value run_noninferiority(const arguments& args) {
  const double margin = positive_margin(args);
  const double alpha = tost_alpha(args);
  const std::string better = args.choice("--better", "higher", {"higher", "lower"});
  const auto d = load_design(args);
  const auto r =
      non_inferiority_test(d.treated, d.control, margin,
                           non_inferiority_options{.design = d.design,
                                                   .alpha = alpha,
                                                   .better = better == "higher" ? better_direction::higher
                                                                                : better_direction::lower});
  json_value j = effect_to_json(r.effect);
  j.set("method", "noninferiority_" + r.effect.method);
  j.set("statistic", r.statistic);
  j.set("p_value", r.p_value);
  finish_design(j, d);
  j.set("margin", r.margin);
  j.set("bound", r.bound);
  j.set("better", better);
  j.set("alpha", r.alpha);
  j.set("difference_statistic", r.effect.statistic);
  j.set("difference_p_value", r.effect.p_value);
  j.set("non_inferior", r.non_inferior);
  return j;
}

std::vector<option_spec> design_options() {
  return {common_option("--data"),
          common_option("--outcome"),
          common_option("--treatment"),
          common_option("--pair"),
          common_option("--outcome-treated"),
          common_option("--outcome-control"),
          {"--variance", "KIND", "unpaired designs: unequal (Welch, default) or pooled (Student)"},
          {"--alpha", "A", "level of each one-sided test, in (0, 0.5); default 0.05 (a 90% interval)"},
          {"--level", "L", "alternative to --alpha: level of the reported interval, alpha = (1 - L)/2"}};
}

[[maybe_unused]] const bool reg_tost = register_estimate_method({
    "tost",
    "TOST equivalence test (two one-sided t tests; Welch, pooled or paired)",
    "Schuirmann's two one-sided t tests of equivalence for the difference in means\n"
    "treated - control: H0 effect <= low or effect >= high. p_value = max(p_lower, p_upper)\n"
    "(statistic = the t of the test attaining it); equivalent = p_value < alpha. ci_low/ci_high\n"
    "is the (1 - 2 alpha) interval. Bounds: --margin M for (-M, M) or --lower/--upper. The t test\n"
    "is Welch (default), pooled (--variance pooled), or paired with --pair / the wide layout.\n"
    "difference_statistic/difference_p_value are the ordinary two-sided test of no difference.\n"
    "Reproduces statsmodels ttost_ind / ttost_paired.\n",
    [] {
      auto o = design_options();
      o.insert(o.begin() + 6,
               {{"--margin", "M", "equivalence margin > 0: the region is (-M, M)"},
                {"--lower", "LOW", "lower equivalence bound (with --upper, instead of --margin)"},
                {"--upper", "HIGH", "upper equivalence bound (with --lower, instead of --margin)"}});
      return o;
    }(),
    run_tost,
});

[[maybe_unused]] const bool reg_noninferiority = register_estimate_method({
    "noninferiority",
    "one-sided non-inferiority t test with margin M (Welch, pooled or paired)",
    "Non-inferiority of treated against control with margin M > 0. --better higher (default):\n"
    "H0 effect <= -M; --better lower (latency, bytes, error rates): H0 effect >= +M. statistic\n"
    "and p_value are the one-sided test; non_inferior = p_value < alpha. ci_low/ci_high is the\n"
    "(1 - 2 alpha) interval. Designs as for `estimate tost`.\n",
    [] {
      auto o = design_options();
      o.insert(o.begin() + 6, {{"--margin", "M", "non-inferiority margin > 0, in outcome units"},
                               {"--better", "DIR", "which direction is better: higher (default) or lower"}});
      return o;
    }(),
    run_noninferiority,
});

}  // namespace
}  // namespace latentaudit::cli
