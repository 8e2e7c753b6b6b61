// SPDX-License-Identifier: MIT
// latentaudit CLI: `estimate ols|did|event-study|iv` (estimators/regression.hpp,
// difference_in_differences.hpp, instrumental.hpp).
#include <latentaudit/estimators/difference_in_differences.hpp>
#include <latentaudit/estimators/instrumental.hpp>
#include <latentaudit/estimators/regression.hpp>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "data_input.hpp"

namespace latentaudit::cli {
namespace {

const option_spec opt_covariates{"--covariates", "COLS",
                                 "comma-separated covariate columns (numeric); an intercept is always added"};
const option_spec opt_cov{
    "--cov", "TYPE",
    "covariance: classical, hc0, hc1, hc2, hc3, cr0, cr1; default classical, or cr1 with --cluster "
    "(did and event-study: cr1 by --unit)"};
const option_spec opt_dist{
    "--dist", "NAME",
    "reference distribution: normal, t (t with n - k df, R coeftest) or t-cluster (t with G - 1 df); "
    "default t (did and event-study: t-cluster)"};
const option_spec opt_cluster{"--cluster", "COL",
                              "cluster identifier column for cr0/cr1 (any text or integer labels)"};
const option_spec opt_unit{"--unit", "COL", "unit identifier column (panel unit; the clusters of cr0/cr1)"};
const option_spec opt_time{"--time", "COL", "integer period column"};
const option_spec opt_post{"--post", "COL",
                           "0/1 post-period column: with it, did is the 2 x 2 regression y ~ treated*post"};
const option_spec opt_instrument{"--instrument", "COLS",
                                 "comma-separated excluded instrument columns (numeric)"};
const option_spec opt_fe{
    "--fe-k", "RULE", "unit fixed effects in k: counted (R lm + factor dummies, default) or nested (fixest)"};
const option_spec opt_first{
    "--first", "K",
    "event-study: earliest relative time with a coefficient (<= -2); default earliest observed"};
const option_spec opt_last{
    "--last", "K", "event-study: latest relative time with a coefficient (>= 0); default latest observed"};
const option_spec opt_bin{
    "--bin", "",
    "event-study: bin relative times outside [--first, --last] into the end bins (default: drop them)"};

/// Splits "a,b,c" into its parts; an empty part is a usage error naming the option.
std::vector<std::string> split_list(const arguments& args, const char* option) {
  std::vector<std::string> out;
  const auto v = args.get(option);
  if (!v) return out;
  std::string cur;
  for (std::size_t i = 0; i <= v->size(); ++i) {
    if (i == v->size() || (*v)[i] == ',') {
      if (cur.empty())
        throw usage_error(args.command() + ": option " + option + " has an empty column name in '" + *v +
                          "'");
      out.push_back(cur);
      cur.clear();
    } else {
      cur += (*v)[i];
    }
  }
  return out;
}

covariance_type parse_cov(const arguments& a, covariance_type fallback) {
  const std::string c = a.choice("--cov", "", {"classical", "hc0", "hc1", "hc2", "hc3", "cr0", "cr1"});
  if (c.empty()) return fallback;
  if ((c == "cr0" || c == "cr1") && !a.has("--cluster") && !a.has("--unit"))
    throw usage_error(a.command() + ": option --cov " + c + " needs --cluster COL (the cluster ids)");
  if (c == "classical") return covariance_type::classical;
  if (c == "hc0") return covariance_type::hc0;
  if (c == "hc1") return covariance_type::hc1;
  if (c == "hc2") return covariance_type::hc2;
  if (c == "hc3") return covariance_type::hc3;
  if (c == "cr0") return covariance_type::cr0;
  return covariance_type::cr1;
}

reference_distribution parse_dist(const arguments& a, reference_distribution fallback) {
  const std::string d = a.choice("--dist", "", {"normal", "t", "t-cluster"});
  if (d.empty()) return fallback;
  if (d == "normal") return reference_distribution::normal;
  if (d == "t") return reference_distribution::t_residual;
  return reference_distribution::t_cluster;
}

std::string dist_name(reference_distribution d) {
  switch (d) {
    case reference_distribution::normal:
      return "normal";
    case reference_distribution::t_residual:
      return "t";
    case reference_distribution::t_cluster:
      return "t-cluster";
  }
  return "t";
}

/// A design with an intercept and the listed numeric columns.
design_matrix design_with_intercept(const data_table& t, const std::vector<std::string>& cols) {
  design_builder b(t.rows());
  b.intercept();
  for (const auto& c : cols) b.add(c, t.numeric_column(c));
  return b.build();
}

group_index groups_of(const data_table& t, const std::string& col) {
  const auto labels = t.text_column(col);
  return make_group_index(std::span<const std::string>(labels));
}

std::vector<long long> periods_of(const data_table& t, const std::string& col) {
  const auto v = t.numeric_column(col);
  std::vector<long long> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != std::floor(v[i]) || std::fabs(v[i]) > 9.0e15) {
      t.cell_error(i, col, "expected an integer period, got " + number_text(v[i]));
    }
    out.push_back(static_cast<long long>(v[i]));
  }
  return out;
}

std::vector<double> binary_column(const data_table& t, const std::string& col) {
  auto v = t.numeric_column(col);
  check_binary_column(t, col, v, "a 0/1 indicator");
  return v;
}

/// The fit's scalars and every coefficient as an effect row with its name.
void add_fit(json_value& j, const ols_result& f) {
  j.set("n", f.n);
  j.set("k", f.k);
  j.set("clusters", f.clusters == 0 ? json_value(nullptr) : json_value(f.clusters));
  j.set("df_residual", f.df_residual);
  j.set("covariance", std::string(covariance_name(f.covariance_kind)));
  j.set("distribution", dist_name(f.distribution));
  j.set("sigma", f.sigma);
  j.set("r_squared", f.r_squared);
  json_value terms = json_value::array();
  for (std::size_t i = 0; i < f.terms.size(); ++i) {
    json_value row = effect_to_json(f.terms[i]);
    row.set("term", f.names[i]);
    terms.push_back(std::move(row));
  }
  j.set("terms", std::move(terms));
}

json_value wald_to_json(const wald_test_result& w) {
  json_value o = json_value::object();
  o.set("chi2", w.chi2);
  o.set("chi2_p", w.chi2_p);
  o.set("f", w.f);
  o.set("df1", w.df1);
  o.set("df2", std::isinf(w.df2) ? json_value(nullptr) : json_value(w.df2));
  o.set("f_p", w.f_p);
  o.set("p_value", w.p_value);
  o.set("status", std::string(status_name(w.status)));
  return o;
}

json_value warnings_to_json(const std::vector<did_warning>& ws) {
  static constexpr const char* codes[] = {"staggered_adoption", "treatment_reversal", "no_never_treated",
                                          "always_treated", "dropped_observations"};
  json_value a = json_value::array();
  for (const auto& w : ws) {
    json_value o = json_value::object();
    o.set("code", codes[static_cast<int>(w.code)]);
    o.set("message", w.message);
    a.push_back(std::move(o));
  }
  return a;
}

json_value run_ols(const arguments& args) {
  const data_table t = load_table(args);
  const auto y = t.numeric_column(args.require("--outcome"));
  const auto covs = split_list(args, "--covariates");
  const auto x = design_with_intercept(t, covs);
  const bool clustered = args.has("--cluster");
  const ols_options o{.covariance = parse_cov(args, covariance_type::automatic),
                      .distribution = parse_dist(args, reference_distribution::t_residual),
                      .level = args.level()};
  const ols_result f = clustered ? ols(x, y, groups_of(t, args.require("--cluster")), o) : ols(x, y, o);
  // Top level: the first covariate (the intercept when there is none); all terms follow.
  json_value j = effect_to_json(f.terms[covs.empty() ? 0 : 1]);
  j.set("term", f.names[covs.empty() ? 0 : 1]);
  add_fit(j, f);
  return j;
}

json_value run_did(const arguments& args) {
  const data_table t = load_table(args);
  const auto y = t.numeric_column(args.require("--outcome"));
  const auto d = binary_column(t, args.require("--treatment"));
  const auto units = groups_of(t, args.require("--unit"));
  did_options o{.covariance = parse_cov(args, covariance_type::cr1),
                .distribution = parse_dist(args, reference_distribution::t_cluster),
                .level = args.level()};
  o.fe_count = args.choice("--fe-k", "counted", {"counted", "nested"}) == "nested"
                   ? fixed_effect_count::nested
                   : fixed_effect_count::counted;
  did_result r;
  std::string design;
  if (args.has("--post")) {
    if (args.has("--time"))
      throw usage_error(args.command() +
                        ": give either --post (2 x 2) or --time (two-way fixed effects), not both");
    r = did_2x2_regression(y, d, binary_column(t, args.require("--post")), units, o);
    design = "2x2";
  } else {
    if (!args.has("--time"))
      throw usage_error(args.command() + ": missing --time (two-way fixed effects) or --post (2 x 2)");
    r = did_twfe(y, d, units, periods_of(t, args.require("--time")), o);
    design = "twfe";
  }
  json_value j = effect_to_json(r.effect);
  j.set("design", design);
  j.set("fe_k", o.fe_count == fixed_effect_count::nested ? "nested" : "counted");
  j.set("warnings", warnings_to_json(r.warnings));
  add_fit(j, r.fit);
  return j;
}

std::optional<long long> relative_time(const arguments& args, const char* name) {
  if (!args.has(name)) return std::nullopt;
  const double v = args.required_number(name);
  if (v != std::floor(v) || std::fabs(v) > 1e15)
    throw usage_error(args.command() + ": option " + name + " expects an integer");
  return static_cast<long long>(v);
}

json_value run_event_study(const arguments& args) {
  const data_table t = load_table(args);
  const auto y = t.numeric_column(args.require("--outcome"));
  const auto d = binary_column(t, args.require("--treatment"));
  const auto units = groups_of(t, args.require("--unit"));
  const auto time = periods_of(t, args.require("--time"));
  event_study_options o{.first = relative_time(args, "--first"),
                        .last = relative_time(args, "--last"),
                        .bin_endpoints = args.has("--bin"),
                        .covariance = parse_cov(args, covariance_type::cr1),
                        .distribution = parse_dist(args, reference_distribution::t_cluster),
                        .level = args.level()};
  o.fe_count = args.choice("--fe-k", "counted", {"counted", "nested"}) == "nested"
                   ? fixed_effect_count::nested
                   : fixed_effect_count::counted;
  const auto r = event_study(y, d, units, time, o);
  json_value j = json_value::object();
  j.set("method", "event_study");
  json_value coefs = json_value::array();
  for (std::size_t i = 0; i < r.coefficients.size(); ++i) {
    json_value c = effect_to_json(r.coefficients[i]);
    c.set("relative_time", r.relative_times[i]);
    coefs.push_back(std::move(c));
  }
  j.set("coefficients", std::move(coefs));
  j.set("pre_trend", wald_to_json(r.pre_trend));
  j.set("warnings", warnings_to_json(r.warnings));
  j.set("n", r.fit.n);
  j.set("clusters", r.fit.clusters);
  j.set("covariance", std::string(covariance_name(r.fit.covariance_kind)));
  j.set("distribution", dist_name(r.fit.distribution));
  return j;
}

json_value run_iv(const arguments& args) {
  const data_table t = load_table(args);
  const auto y = t.numeric_column(args.require("--outcome"));
  const std::string dname = args.require("--treatment");
  (void)args.require("--instrument");
  const auto inst_cols = split_list(args, "--instrument");
  if (std::find(inst_cols.begin(), inst_cols.end(), dname) != inst_cols.end())
    throw usage_error(args.command() + ": --treatment column '" + dname +
                      "' cannot be its own --instrument (an instrument must be excluded from the equation)");
  const auto exo = design_with_intercept(t, split_list(args, "--covariates"));
  const auto endo = design_builder(t.rows()).add(dname, t.numeric_column(dname)).build();
  design_builder ib(t.rows());
  for (const auto& c : inst_cols) ib.add(c, t.numeric_column(c));
  const auto inst = ib.build();
  const iv_options o{.covariance = parse_cov(args, covariance_type::automatic),
                     .distribution = parse_dist(args, reference_distribution::t_residual),
                     .level = args.level()};
  const auto r = args.has("--cluster")
                     ? two_stage_least_squares(y, exo, endo, inst, groups_of(t, args.require("--cluster")), o)
                     : two_stage_least_squares(y, exo, endo, inst, o);
  json_value j = effect_to_json(r.fit.term(dname));
  j.set("term", dname);
  // The treatment may be continuous (any endogenous regressor): arm sizes only for a 0/1 column.
  const auto dv = t.numeric_column(dname);
  if (std::all_of(dv.begin(), dv.end(), [](double v) { return v == 0.0 || v == 1.0; })) {
    j.set("n_treated", static_cast<double>(std::count(dv.begin(), dv.end(), 1.0)));
    j.set("n_control", static_cast<double>(std::count(dv.begin(), dv.end(), 0.0)));
  } else {
    j.set("n_treated", nullptr);
    j.set("n_control", nullptr);
  }
  const auto& fs = r.first_stages[0];
  json_value f = json_value::object();
  f.set("f", fs.f);
  f.set("df1", fs.f_df1);
  f.set("df2", std::isinf(fs.f_df2) ? json_value(nullptr) : json_value(fs.f_df2));
  f.set("f_p", fs.f_p);
  f.set("f_classical", fs.f_classical);
  f.set("f_classical_p", fs.f_classical_p);
  f.set("partial_r_squared", fs.partial_r_squared);
  j.set("first_stage", std::move(f));
  add_fit(j, r.fit);
  return j;
}

[[maybe_unused]] const bool reg_ols = register_estimate_method({
    "ols",
    "least squares with classical, HC0-HC3 or cluster-robust (CR0/CR1) SE, R lm + sandwich + coeftest",
    "Least squares of --outcome on an intercept and --covariates. --cov picks the covariance\n"
    "(cr0/cr1 need --cluster); --dist the reference: t (n - k df, R coeftest), normal (statsmodels)\n"
    "or t-cluster (G - 1 df, Stata). The top-level fields are the first covariate's coefficient;\n"
    "'terms' lists every coefficient. Collinear covariates are an error naming them.\n",
    {common_option("--data"), common_option("--outcome"), opt_covariates, opt_cov, opt_dist, opt_cluster,
     common_option("--level")},
    run_ols,
});

[[maybe_unused]] const bool reg_did = register_estimate_method({
    "did",
    "difference in differences: 2 x 2 (--post) or two-way fixed effects (--time), SE clustered by unit",
    "With --post: the 2 x 2 regression y ~ treated*post (--treatment is the group indicator).\n"
    "With --time: two-way fixed effects y_it = a_i + g_t + b d_it (--treatment is d_it), by the\n"
    "within-unit transformation. Default covariance cr1 by --unit with t(G - 1); --fe-k chooses\n"
    "whether unit effects count in k for (n - 1)/(n - k). Staggered timing is reported in 'warnings'.\n",
    {common_option("--data"), common_option("--outcome"), common_option("--treatment"), opt_unit, opt_time,
     opt_post, opt_cov, opt_dist, opt_fe, common_option("--level")},
    run_did,
});

[[maybe_unused]] const bool reg_event = register_estimate_method({
    "event-study",
    "event study: leads and lags of the first treated period (reference -1) + Wald pre-trend test",
    "Two-way fixed effects with one dummy per relative time k = t - start (start = first period\n"
    "with --treatment 1; never-treated units have none), k = -1 omitted, clustered by --unit.\n"
    "'pre_trend' tests that every lead (k <= -2) is 0 (chi-square and F versions).\n",
    {common_option("--data"), common_option("--outcome"), common_option("--treatment"), opt_unit, opt_time,
     opt_first, opt_last, opt_bin, opt_cov, opt_dist, opt_fe, common_option("--level")},
    run_event_study,
});

[[maybe_unused]] const bool reg_iv = register_estimate_method({
    "iv",
    "two-stage least squares of --outcome on --treatment instrumented by --instrument (+ first-stage F)",
    "2SLS with the endogenous --treatment, excluded --instrument column(s), and an intercept plus\n"
    "--covariates as exogenous regressors. --cov as for ols (cr0/cr1 need --cluster). Reports the\n"
    "first-stage F (chosen covariance and classical) and partial R-squared. An instrument with no\n"
    "first stage is an error.\n",
    {common_option("--data"),
     common_option("--outcome"),
     {"--treatment", "COL",
      "the endogenous regressor column (numeric; 0/1 or continuous: n_treated and n_control are null "
      "unless it is 0/1)"},
     opt_instrument,
     opt_covariates,
     opt_cov,
     opt_dist,
     opt_cluster,
     common_option("--level")},
    run_iv,
});

}  // namespace
}  // namespace latentaudit::cli
