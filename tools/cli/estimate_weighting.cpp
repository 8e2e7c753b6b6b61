// SPDX-License-Identifier: MIT
// latentaudit CLI: `estimate ipw|aipw|cate|rosenbaum` (estimators/weighting.hpp,
// estimators/heterogeneity.hpp, estimators/sensitivity.hpp).
#include <latentaudit/estimators/heterogeneity.hpp>
#include <latentaudit/estimators/sensitivity.hpp>
#include <latentaudit/estimators/weighting.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cli.hpp"
#include "data_input.hpp"

namespace latentaudit::cli {
namespace {

// Splits "a,b,c" into column names; empty names are an error.
std::vector<std::string> split_columns(const arguments& args, const std::string& option) {
  const std::string v = args.require(option);
  std::vector<std::string> out;
  std::string cur;
  for (char c : v + ",") {
    if (c == ',') {
      if (cur.empty())
        throw usage_error(args.command() + ": option " + option + " has an empty column name in '" + v + "'");
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  return out;
}

// Outcome, treatment codes and the covariate matrix of a weighting run.
struct weighting_data {
  std::vector<double> y, t;
  Eigen::MatrixXd x;
};

weighting_data load_weighting(const arguments& args) {
  const data_table tab = load_table(args);
  weighting_data d;
  d.y = tab.numeric_column(args.require("--outcome"));
  d.t = treatment_codes(tab, args.require("--treatment"));
  const auto cols = split_columns(args, "--covariates");
  d.x.resize(static_cast<Eigen::Index>(d.y.size()), static_cast<Eigen::Index>(cols.size()));
  for (std::size_t j = 0; j < cols.size(); ++j) {
    const auto c = tab.numeric_column(cols[j]);
    for (std::size_t i = 0; i < c.size(); ++i)
      d.x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = c[i];
  }
  return d;
}

weighting_options weighting_opts(const arguments& args, bool ipw_method) {
  weighting_options o;
  o.level = args.level();
  o.estimand = args.choice("--estimand", "ate", {"ate", "att"}) == "att" ? weighting_estimand::att
                                                                         : weighting_estimand::ate;
  if (ipw_method) {
    o.normalization = args.choice("--normalization", "hajek", {"hajek", "ht"}) == "ht"
                          ? ipw_normalization::horvitz_thompson
                          : ipw_normalization::hajek;
    o.variance = args.choice("--variance", "stacked", {"stacked", "known"}) == "known"
                     ? ipw_variance::weights_known
                     : ipw_variance::stacked;
  }
  const std::string mode = args.choice("--trim-mode", "clip", {"clip", "drop"});
  if (args.has("--trim")) {
    const double eps = args.required_number("--trim");
    if (!(eps > 0.0 && eps < 0.5))
      throw usage_error(args.command() + ": option --trim must lie in (0, 0.5), got " + *args.get("--trim"));
    o.trim_epsilon = eps;
    o.trimming = mode == "drop" ? propensity_trimming::drop : propensity_trimming::clip;
  } else if (args.has("--trim-mode")) {
    throw usage_error(args.command() + ": option --trim-mode needs --trim EPS");
  }
  return o;
}

json_value weighting_json(const weighting_result& r, const weighting_options& o, bool ipw_method) {
  json_value j = effect_to_json(r.effect);
  j.set("mean_treated", r.mean_treated);
  j.set("mean_control", r.mean_control);
  if (ipw_method) j.set("variance", o.variance == ipw_variance::stacked ? "stacked" : "weights_known");
  j.set("trimming", o.trimming == propensity_trimming::none
                        ? "none"
                        : (o.trimming == propensity_trimming::clip ? "clip" : "drop"));
  j.set("n_trimmed", r.n_trimmed);
  j.set("ess_treated", r.ess_treated);
  j.set("ess_control", r.ess_control);
  json_value coef = json_value::array();
  for (Eigen::Index k = 0; k < r.propensity_model.coefficients.size(); ++k)
    coef.push_back(r.propensity_model.coefficients[k]);
  j.set("propensity_coefficients", std::move(coef));
  double lo = 1, hi = 0;
  for (double e : r.propensity) {
    lo = std::fmin(lo, e);
    hi = std::fmax(hi, e);
  }
  j.set("propensity_min", lo);
  j.set("propensity_max", hi);
  return j;
}

json_value run_ipw(const arguments& args) {
  const auto o = weighting_opts(args, true);
  const auto d = load_weighting(args);
  return weighting_json(ipw(d.y, d.t, d.x, o), o, true);
}

json_value run_aipw(const arguments& args) {
  const auto o = weighting_opts(args, false);
  const auto d = load_weighting(args);
  return weighting_json(aipw(d.y, d.t, d.x, o), o, false);
}

// Integer group labels when every cell of the column is an integral number, text otherwise.
bool integral_column(const data_table& tab, const std::string& name) {
  for (const auto& c : tab.column(name).cells) {
    if (c.kind != cell_kind::number || c.number != std::floor(c.number) || std::fabs(c.number) > 9.0e15)
      return false;
  }
  return true;
}

json_value run_cate(const arguments& args) {
  heterogeneity_options o;
  o.level = args.level();
  const std::string cov = args.choice("--covariance", "hc3", {"hc0", "hc1", "hc2", "hc3"});
  o.covariance = cov == "hc0"   ? interaction_covariance::hc0
                 : cov == "hc1" ? interaction_covariance::hc1
                 : cov == "hc2" ? interaction_covariance::hc2
                                : interaction_covariance::hc3;
  const std::string by = args.require("--by");
  const bool binned = args.has("--bins");
  const std::size_t bins = static_cast<std::size_t>(args.integer("--bins", 4, 2, 1000));
  const bool paired = args.has("--outcome-treated") || args.has("--outcome-control");
  const data_table tab = load_table(args);
  heterogeneity_result r;
  if (paired) {
    if (args.has("--outcome") || args.has("--treatment")) {
      throw usage_error(args.command() +
                        ": give --outcome/--treatment or --outcome-treated/--outcome-control, not both");
    }
    const auto a = tab.numeric_column(args.require("--outcome-treated"));
    const auto b = tab.numeric_column(args.require("--outcome-control"));
    if (binned) {
      r = paired_subgroup_effects_binned(a, b, tab.numeric_column(by), bins, o);
    } else if (integral_column(tab, by)) {
      const auto v = tab.numeric_column(by);
      const std::vector<std::int64_t> g(v.begin(), v.end());
      r = paired_subgroup_effects(a, b, std::span<const std::int64_t>(g), o);
    } else {
      const auto g = tab.text_column(by);
      r = paired_subgroup_effects(a, b, std::span<const std::string>(g), o);
    }
  } else {
    const auto y = tab.numeric_column(args.require("--outcome"));
    const auto t = treatment_codes(tab, args.require("--treatment"));
    if (binned) {
      r = subgroup_effects_binned(y, t, tab.numeric_column(by), bins, o);
    } else if (integral_column(tab, by)) {
      const auto v = tab.numeric_column(by);
      const std::vector<std::int64_t> g(v.begin(), v.end());
      r = subgroup_effects(y, t, std::span<const std::int64_t>(g), o);
    } else {
      const auto g = tab.text_column(by);
      r = subgroup_effects(y, t, std::span<const std::string>(g), o);
    }
  }
  // Top level: the heterogeneity (interaction) test; per-group effects under "groups".
  std::string method_name = "interaction_wald_";
  method_name += cov;
  effect_estimate top{.method = method_name, .estimand = "effect_heterogeneity"};
  top.df = r.interaction.df;
  top.statistic = r.interaction.chi_square;
  top.p_value = r.interaction.p_chi_square;
  top.level = o.level;
  top.status = r.interaction.status;
  json_value j = effect_to_json(top);
  std::size_t n1 = 0, n0 = 0;
  for (const auto& g : r.groups) {
    n1 += paired ? g.effect.n_pairs : g.effect.n_treated;
    n0 += paired ? g.effect.n_pairs : g.effect.n_control;
  }
  if (paired) {
    set_pairs(j, n1);
    j.set("design", "paired");
  } else {
    j.set("n_treated", n1);
    j.set("n_control", n0);
    j.set("design", "two_sample");
  }
  j.set("by", by);
  j.set("f", r.interaction.f);
  j.set("df_residual", r.interaction.df_residual);
  j.set("p_f", r.interaction.p_f);
  json_value groups = json_value::array();
  for (const auto& g : r.groups) {
    json_value e = effect_to_json(g.effect);
    if (paired) set_pairs(e, g.effect.n_pairs);
    e.set("group", g.label);
    e.set("p_holm", g.p_holm);
    e.set("p_bh", g.p_bh);
    if (binned) {
      e.set("lower_edge", g.lower_edge);
      e.set("upper_edge", g.upper_edge);
    }
    groups.push_back(std::move(e));
  }
  j.set("groups", std::move(groups));
  return j;
}

json_value run_rosenbaum(const arguments& args) {
  const double gamma = args.number("--gamma", 1.0);
  if (!(gamma >= 1.0))
    throw usage_error(args.command() + ": option --gamma must be >= 1, got " + *args.get("--gamma"));
  const double alpha = args.number("--alpha", 0.05);
  if (!(alpha > 0.0 && alpha < 0.5))
    throw usage_error(args.command() + ": option --alpha must lie in (0, 0.5), got " + *args.get("--alpha"));
  const rosenbaum_options o{.exact = args.has("--exact")};
  const auto p = load_pairs(args, false);
  const auto b = rosenbaum_signed_rank(p.treated, p.control, gamma, o);
  const auto c = rosenbaum_critical_gamma(p.treated, p.control, alpha, o);
  effect_estimate top{.method = o.exact ? "rosenbaum_signed_rank_exact" : "rosenbaum_signed_rank",
                      .estimand = "sensitivity_upper_p"};
  top.statistic = b.statistic;
  top.p_value = b.p_upper;
  json_value j = effect_to_json(top);
  set_pairs(j, p.treated.size());
  j.set("design", "paired");
  j.set("gamma", b.gamma);
  j.set("p_upper", b.p_upper);
  j.set("p_lower", b.p_lower);
  j.set("expectation_upper", b.expectation_upper);
  j.set("expectation_lower", b.expectation_lower);
  j.set("variance", b.variance);
  j.set("n_nonzero", b.n_pairs);
  j.set("n_zero", b.n_zero);
  j.set("alpha", alpha);
  j.set("critical_gamma", c.gamma);
  j.set("significant_at_gamma_1", c.significant_at_one);
  return j;
}

std::vector<option_spec> weighting_options_list(bool ipw_method) {
  std::vector<option_spec> o{
      common_option("--data"),
      common_option("--outcome"),
      common_option("--treatment"),
      {"--covariates", "COLS",
       "comma-separated numeric confounder columns of the logistic propensity model (intercept added)"},
      {"--estimand", "E", "ate (default) or att"}};
  if (ipw_method) {
    o.push_back({"--normalization", "N", "hajek (weighted means, default) or ht (Horvitz-Thompson)"});
    o.push_back({"--variance", "V",
                 "stacked (M-estimation sandwich with the propensity score's estimation, default) or known "
                 "(weights treated as known)"});
  }
  o.push_back(
      {"--trim", "EPS", "trim propensities outside [EPS, 1 - EPS], EPS in (0, 0.5); default no trimming"});
  o.push_back({"--trim-mode", "MODE",
               "with --trim: clip (winsorise, default) or drop (exclude those units from the effect)"});
  o.push_back(common_option("--level"));
  return o;
}

[[maybe_unused]] const bool reg_ipw = register_estimate_method({
    "ipw",
    "inverse probability weighting (logistic propensity score; Hajek or Horvitz-Thompson; ATE or ATT)",
    "Fits a logistic propensity score on --covariates (IRLS as R glm; perfect or quasi-complete\n"
    "separation is an error naming the separating column) and weights units by 1/e and 1/(1-e)\n"
    "(ATE) or 1 and e/(1-e) (ATT). SE: stacked M-estimation sandwich accounting for the estimated\n"
    "propensity score (Lunceford & Davidian 2004) or the weights-known sandwich; normal CI and\n"
    "p-value (df null). Extra fields: mean_treated, mean_control, n_trimmed, ess_treated,\n"
    "ess_control, propensity_coefficients (intercept first), propensity_min/max.\n",
    weighting_options_list(true),
    run_ipw,
});

[[maybe_unused]] const bool reg_aipw = register_estimate_method({
    "aipw",
    "augmented IPW (doubly robust: logistic propensity score + OLS outcome model per arm)",
    "Doubly robust estimate of the ATE or ATT: logistic propensity score and linear outcome\n"
    "models fitted by OLS within each arm on --covariates. SE = sd(psi)/sqrt(n) from the\n"
    "influence function; normal CI and p-value. Extra fields as for `estimate ipw`.\n",
    weighting_options_list(false),
    run_aipw,
});

[[maybe_unused]] const bool reg_cate = register_estimate_method({
    "cate",
    "effects by subgroup (--by COL, or --bins K quantile bins) with Holm/BH and an interaction test",
    "Per-group Welch t tests (or paired t tests with the wide layout --outcome-treated/\n"
    "--outcome-control), Holm- and BH-adjusted p-values, and a heterogeneity test: OLS of y on\n"
    "treatment x group (paired: of the differences on group) with an HC sandwich and a joint\n"
    "Wald test of the interaction terms. Top level: statistic = chi-square, df = K - 1,\n"
    "p_value = P(chi2 > W); f, df_residual and p_f give the F form (lmtest::waldtest test = \"F\").\n"
    "groups: one effect object per group (group label, p_holm, p_bh; bins also lower_edge and\n"
    "upper_edge). --by columns of integers are ordered numerically, text bytewise; --bins K uses\n"
    "R's type-7 quantiles of the numeric column --by.\n",
    {common_option("--data"),
     common_option("--outcome"),
     common_option("--treatment"),
     common_option("--outcome-treated"),
     common_option("--outcome-control"),
     {"--by", "COL", "subgroup column (integer or text labels), or the numeric moderator with --bins"},
     {"--bins", "K", "split --by into K >= 2 quantile bins (R type 7, cut include.lowest)"},
     {"--covariance", "HC", "sandwich of the interaction test: hc0, hc1, hc2 or hc3 (default)"},
     common_option("--level")},
    run_cate,
});

[[maybe_unused]] const bool reg_rosenbaum = register_estimate_method({
    "rosenbaum",
    "Rosenbaum bounds for matched pairs (Wilcoxon signed rank) at --gamma, and the critical gamma",
    "Sensitivity of the one-sided signed-rank test (treated > control) to hidden bias: bounds on\n"
    "the p-value when the odds of treatment within a pair may differ by a factor gamma >= 1.\n"
    "Zero differences are dropped, ties get average ranks; normal approximation as rbounds::psens\n"
    "(or --exact). p_value = p_upper at --gamma; critical_gamma is where p_upper reaches --alpha\n"
    "(1 when the test is not significant at gamma = 1).\n",
    {common_option("--data"),
     common_option("--outcome"),
     common_option("--treatment"),
     common_option("--pair"),
     common_option("--outcome-treated"),
     common_option("--outcome-control"),
     {"--gamma", "G", "sensitivity parameter gamma >= 1; default 1"},
     {"--alpha", "A", "one-sided level for the critical gamma, in (0, 0.5); default 0.05"},
     {"--exact", "",
      "exact distribution of the statistic (at most 500 non-zero pairs) instead of the normal "
      "approximation"}},
    run_rosenbaum,
});

}  // namespace
}  // namespace latentaudit::cli
