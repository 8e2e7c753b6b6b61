// SPDX-License-Identifier: MIT
// latentaudit Python module: the estimators on arrays, with the C++ names, the options as keyword
// arguments (enums as their C++ names in strings) and the result aggregates as read-only classes.
#include <Eigen/Core>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <latentaudit/estimators.hpp>

#include "common.hpp"

namespace latentaudit::python {

namespace {

using namespace pybind11::literals;

// ---- enum names (the C++ enumerators) ------------------------------------------------------------
constexpr std::pair<std::string_view, on_degenerate> degenerate_names[] = {
    {"throw_error", on_degenerate::throw_error},
    {"flag", on_degenerate::flag},
    {"raise", on_degenerate::throw_error}};
constexpr std::pair<std::string_view, estimate_status> status_names[] = {
    {"ok", estimate_status::ok},
    {"degenerate", estimate_status::degenerate},
    {"failed", estimate_status::failed}};
constexpr std::pair<std::string_view, t_test_design> design_names[] = {
    {"welch", t_test_design::welch}, {"student", t_test_design::student}, {"paired", t_test_design::paired}};
constexpr std::pair<std::string_view, better_direction> better_names[] = {
    {"higher", better_direction::higher}, {"lower", better_direction::lower}};
constexpr std::pair<std::string_view, bootstrap_ci_method> ci_method_names[] = {
    {"percentile", bootstrap_ci_method::percentile},
    {"basic", bootstrap_ci_method::basic},
    {"normal", bootstrap_ci_method::normal},
    {"bca", bootstrap_ci_method::bca},
    {"studentized", bootstrap_ci_method::studentized}};
constexpr std::pair<std::string_view, bootstrap_convention> convention_names[] = {
    {"boot", bootstrap_convention::boot}, {"scipy", bootstrap_convention::scipy}};
constexpr std::pair<std::string_view, covariance_type> covariance_names[] = {
    {"automatic", covariance_type::automatic},
    {"classical", covariance_type::classical},
    {"hc0", covariance_type::hc0},
    {"hc1", covariance_type::hc1},
    {"hc2", covariance_type::hc2},
    {"hc3", covariance_type::hc3},
    {"cr0", covariance_type::cr0},
    {"cr1_g", covariance_type::cr1_g},
    {"cr1", covariance_type::cr1}};
constexpr std::pair<std::string_view, reference_distribution> distribution_names[] = {
    {"normal", reference_distribution::normal},
    {"t_residual", reference_distribution::t_residual},
    {"t_cluster", reference_distribution::t_cluster}};
constexpr std::pair<std::string_view, fixed_effect_count> fe_count_names[] = {
    {"counted", fixed_effect_count::counted}, {"nested", fixed_effect_count::nested}};
constexpr std::pair<std::string_view, matching_estimand> matching_estimand_names[] = {
    {"att", matching_estimand::att}, {"atc", matching_estimand::atc}, {"ate", matching_estimand::ate}};
constexpr std::pair<std::string_view, matching_distance> distance_names[] = {
    {"inverse_variance", matching_distance::inverse_variance},
    {"mahalanobis", matching_distance::mahalanobis},
    {"user_matrix", matching_distance::user_matrix}};
constexpr std::pair<std::string_view, dropped_unit_variance> dropped_names[] = {
    {"matched_only", dropped_unit_variance::matched_only},
    {"match_compatible", dropped_unit_variance::match_compatible}};
constexpr std::pair<std::string_view, balance_scale> balance_names[] = {
    {"focal_sd", balance_scale::focal_sd}, {"pooled_sd", balance_scale::pooled_sd}};
constexpr std::pair<std::string_view, weighting_estimand> weighting_estimand_names[] = {
    {"ate", weighting_estimand::ate}, {"att", weighting_estimand::att}};
constexpr std::pair<std::string_view, ipw_normalization> normalization_names[] = {
    {"horvitz_thompson", ipw_normalization::horvitz_thompson}, {"hajek", ipw_normalization::hajek}};
constexpr std::pair<std::string_view, ipw_variance> ipw_variance_names[] = {
    {"stacked", ipw_variance::stacked}, {"weights_known", ipw_variance::weights_known}};
constexpr std::pair<std::string_view, propensity_trimming> trimming_names[] = {
    {"none", propensity_trimming::none},
    {"clip", propensity_trimming::clip},
    {"drop", propensity_trimming::drop}};
constexpr std::pair<std::string_view, did_warning_code> did_warning_names[] = {
    {"staggered_adoption", did_warning_code::staggered_adoption},
    {"treatment_reversal", did_warning_code::treatment_reversal},
    {"no_never_treated", did_warning_code::no_never_treated},
    {"always_treated", did_warning_code::always_treated},
    {"dropped_observations", did_warning_code::dropped_observations}};

constexpr std::pair<std::string_view, p_adjust_method> p_adjust_names[] = {
    {"none", p_adjust_method::none},
    {"bonferroni", p_adjust_method::bonferroni},
    {"holm", p_adjust_method::holm},
    {"hochberg", p_adjust_method::hochberg},
    {"BH", p_adjust_method::benjamini_hochberg},
    {"BY", p_adjust_method::benjamini_yekutieli}};
constexpr std::pair<std::string_view, power_design> power_design_names[] = {
    {"one_sample", power_design::one_sample},
    {"paired", power_design::paired},
    {"two_sample", power_design::two_sample}};
constexpr std::pair<std::string_view, power_sides> sides_names[] = {{"two_sided", power_sides::two_sided},
                                                                    {"one_sided", power_sides::one_sided}};

constexpr std::pair<std::string_view, mcnemar_power_method> mcnemar_power_names[] = {
    {"connor", mcnemar_power_method::connor}, {"exact", mcnemar_power_method::exact}};
constexpr std::pair<std::string_view, interaction_covariance> interaction_names[] = {
    {"hc0", interaction_covariance::hc0},
    {"hc1", interaction_covariance::hc1},
    {"hc2", interaction_covariance::hc2},
    {"hc3", interaction_covariance::hc3}};

on_degenerate degenerate(std::string_view fn, const std::string& s) {
  return parse_choice(fn, "if_degenerate", s, degenerate_names);
}

py::array_t<double> numpy_of(const Eigen::VectorXd& v) {
  py::array_t<double> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.data(), v.data() + v.size(), a.mutable_data());
  return a;
}

py::array_t<double> numpy_of(const Eigen::MatrixXd& m) {
  py::array_t<double> a({static_cast<py::ssize_t>(m.rows()), static_cast<py::ssize_t>(m.cols())});
  auto r = a.mutable_unchecked<2>();
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) r(i, j) = m(i, j);
  return a;
}

// A 2-D float64 matrix (n × k) from a 2-D array, or a 1-D array as one column.
Eigen::MatrixXd matrix_of(const f64_array& a, std::string_view fn, std::string_view name) {
  if (a.ndim() == 1) {
    Eigen::MatrixXd m(a.shape(0), 1);
    std::copy(a.data(), a.data() + a.shape(0), m.data());
    return m;
  }
  if (a.ndim() != 2)
    throw shape_mismatch(std::string(fn) + ": " + std::string(name) + " must be 1- or 2-dimensional, got " +
                         std::to_string(a.ndim()) + " dimensions");
  using row_major = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  return Eigen::Map<const row_major>(a.data(), a.shape(0), a.shape(1));
}

// Group labels (cluster, unit): integers as integers, anything else as its text.
group_index groups_of(const py::object& labels, std::string_view fn, std::string_view name) {
  py::array a = py::array::ensure(labels);
  if (!a)
    throw invalid_argument(std::string(fn) + ": " + std::string(name) + " must be a sequence of labels");
  if (a.ndim() != 1)
    throw shape_mismatch(std::string(fn) + ": " + std::string(name) + " must be 1-dimensional, got " +
                         std::to_string(a.ndim()) + " dimensions");
  const char kind = a.dtype().kind();
  if (kind == 'i' || kind == 'u' || kind == 'b') {
    auto ints = py::array_t<long long, py::array::c_style | py::array::forcecast>::ensure(a);
    return make_group_index(std::span<const long long>(ints.data(), static_cast<std::size_t>(ints.shape(0))));
  }
  std::vector<std::string> text;
  text.reserve(static_cast<std::size_t>(a.shape(0)));
  for (auto x : labels) text.emplace_back(py::str(x));
  return make_group_index(std::span<const std::string>(text));
}

// A design matrix from a mapping {name: column} (a dict, a pandas DataFrame) or a 2-D array
// (columns named <prefix>1..k), with an intercept first when asked.
design_matrix design_of(const py::object& x, std::size_t n, bool intercept, std::string_view fn,
                        const std::string& prefix) {
  design_builder b(n);
  if (intercept) b.intercept();
  if (x.is_none()) return b.build();
  if (py::hasattr(x, "items") && py::hasattr(x, "keys")) {
    for (auto kv : x.attr("items")()) {
      auto pair = kv.cast<py::tuple>();
      const auto col = f64_array::ensure(pair[1]);
      if (!col)
        throw invalid_argument(std::string(fn) + ": column " + std::string(py::str(pair[0])) +
                               " is not numeric");
      b.add(py::str(pair[0]), vec(col, fn, prefix));
    }
    return b.build();
  }
  const auto arr = f64_array::ensure(x);
  if (!arr) throw invalid_argument(std::string(fn) + ": " + prefix + " must be numeric");
  const Eigen::MatrixXd m = matrix_of(arr, fn, prefix);
  std::vector<double> col(static_cast<std::size_t>(m.rows()));
  for (Eigen::Index j = 0; j < m.cols(); ++j) {
    Eigen::Map<Eigen::VectorXd>(col.data(), m.rows()) = m.col(j);
    b.add(prefix + std::to_string(j + 1), col);
  }
  return b.build();
}

// Why an estimate's status is not ok, in words ("" when it is): the statistic left undefined and
// the cause, by the estimator that made it.
std::string effect_reason(const effect_estimate& e) {
  if (e.status == estimate_status::ok) return "";
  const std::string& m = e.method;
  if (e.status == estimate_status::failed)
    return "the computation failed (e.g. the standard error overflowed): the estimate and its interval are "
           "undefined (NaN)";
  if (m == "welch" || m == "student" || m == "paired_t")
    return std::string(m == "paired_t" ? "the paired differences are" : "the data are") +
           " essentially constant (standard error 0): the t statistic, p-value and interval are undefined "
           "(NaN)";
  if (m.rfind("mcnemar", 0) == 0)
    return "no discordant pairs: the chi-square statistic is undefined (NaN); the exact p-value is 1";
  if (m.find("newcombe") != std::string::npos || e.estimand == "risk_difference")
    return "all outcomes are equal (pooled variance 0): the z statistic and its p-value are undefined (NaN)";
  return "the data are degenerate for " + m + ": the statistic is undefined (NaN)";
}

// ---- result classes ---------------------------------------------------------------------------------
// The result classes of the tests, intervals, bootstrap, betting and matching estimators.
void bind_test_results(py::module_& m) {
  result_class<effect_estimate>(m, "EffectEstimate",
                                "One estimated effect with its uncertainty (effect_estimate).")
      .field("method", &effect_estimate::method)
      .field("estimand", &effect_estimate::estimand)
      .field("estimate", &effect_estimate::estimate)
      .field("std_error", &effect_estimate::std_error)
      .field("ci_low", &effect_estimate::ci_low)
      .field("ci_high", &effect_estimate::ci_high)
      .field("level", &effect_estimate::level)
      .field("df", &effect_estimate::df)
      .field("statistic", &effect_estimate::statistic)
      .field("p_value", &effect_estimate::p_value)
      // A paired estimate has n_pairs observations in each arm: the CLI's counts (n_treated =
      // n_control = n_pairs), not the C++ aggregate's zeros.
      .computed("n_treated",
                [](const effect_estimate& e) { return e.n_treated == 0 ? e.n_pairs : e.n_treated; })
      .computed("n_control",
                [](const effect_estimate& e) { return e.n_control == 0 ? e.n_pairs : e.n_control; })
      .field("n_pairs", &effect_estimate::n_pairs)
      .computed("status", [](const effect_estimate& e) { return choice_name(e.status, status_names); })
      .computed("status_reason", &effect_reason)
      .finish();
  result_class<paired_binary_table>(m, "PairedBinaryTable", "The 2x2 table of paired binary outcomes.")
      .field("both", &paired_binary_table::both)
      .field("treated_only", &paired_binary_table::treated_only)
      .field("control_only", &paired_binary_table::control_only)
      .field("neither", &paired_binary_table::neither)
      .finish();
  result_class<mcnemar_result>(m, "McNemarResult", "McNemar's test and the paired risk difference.")
      .field("table", &mcnemar_result::table)
      .field("discordant", &mcnemar_result::discordant)
      .field("exact_p_value", &mcnemar_result::exact_p_value)
      .field("chi2_statistic", &mcnemar_result::chi2_statistic)
      .field("chi2_p_value", &mcnemar_result::chi2_p_value)
      .field("chi2_cc_statistic", &mcnemar_result::chi2_cc_statistic)
      .field("chi2_cc_p_value", &mcnemar_result::chi2_cc_p_value)
      .field("phi", &mcnemar_result::phi)
      .field("effect", &mcnemar_result::effect)
      .computed("status", [](const mcnemar_result& r) { return choice_name(r.status, status_names); })
      .computed("status_reason",
                [](const mcnemar_result& r) -> std::string {
                  if (r.status == estimate_status::ok) return "";
                  return "no discordant pairs (b + c = 0): the chi-square statistics are undefined (NaN); "
                         "the exact p-value is 1 and the difference 0";
                })
      .finish();
  result_class<proportion_interval>(m, "ProportionInterval", "A proportion with its confidence interval.")
      .field("estimate", &proportion_interval::estimate)
      .field("low", &proportion_interval::low)
      .field("high", &proportion_interval::high)
      .field("level", &proportion_interval::level)
      .finish();
  result_class<equivalence_result>(m, "EquivalenceResult", "TOST equivalence test.")
      .field("effect", &equivalence_result::effect)
      .field("margin_low", &equivalence_result::margin_low)
      .field("margin_high", &equivalence_result::margin_high)
      .field("alpha", &equivalence_result::alpha)
      .field("statistic_lower", &equivalence_result::statistic_lower)
      .field("statistic_upper", &equivalence_result::statistic_upper)
      .field("p_lower", &equivalence_result::p_lower)
      .field("p_upper", &equivalence_result::p_upper)
      .field("p_value", &equivalence_result::p_value)
      .field("equivalent", &equivalence_result::equivalent)
      .finish();
  result_class<non_inferiority_result>(m, "NonInferiorityResult", "One-sided non-inferiority test.")
      .field("effect", &non_inferiority_result::effect)
      .field("margin", &non_inferiority_result::margin)
      .field("bound", &non_inferiority_result::bound)
      .computed("better", [](const non_inferiority_result& r) { return choice_name(r.better, better_names); })
      .field("alpha", &non_inferiority_result::alpha)
      .field("statistic", &non_inferiority_result::statistic)
      .field("p_value", &non_inferiority_result::p_value)
      .field("non_inferior", &non_inferiority_result::non_inferior)
      .finish();
  result_class<bootstrap_result>(m, "BootstrapResult", "A bootstrap interval with its diagnostics.")
      .field("effect", &bootstrap_result::effect)
      .computed("replicates",
                [](const bootstrap_result& r) {
                  py::array_t<double> a(static_cast<py::ssize_t>(r.replicates.size()));
                  std::copy(r.replicates.begin(), r.replicates.end(), a.mutable_data());
                  return a;
                })
      .field("bias_correction", &bootstrap_result::bias_correction)
      .field("acceleration", &bootstrap_result::acceleration)
      .field("alpha_low", &bootstrap_result::alpha_low)
      .field("alpha_high", &bootstrap_result::alpha_high)
      .field("replicates_used", &bootstrap_result::replicates_used)
      .finish();
  result_class<betting_interval>(m, "BettingInterval", "A betting confidence interval for a bounded mean.")
      .field("estimate", &betting_interval::estimate)
      .field("low", &betting_interval::low)
      .field("high", &betting_interval::high)
      .field("n", &betting_interval::n)
      .finish();
  result_class<covariate_balance>(m, "CovariateBalance",
                                  "Balance of one covariate before and after matching.")
      .field("name", &covariate_balance::name)
      .field("mean_treated_before", &covariate_balance::mean_treated_before)
      .field("mean_control_before", &covariate_balance::mean_control_before)
      .field("smd_before", &covariate_balance::smd_before)
      .field("variance_ratio_before", &covariate_balance::variance_ratio_before)
      .field("mean_treated_after", &covariate_balance::mean_treated_after)
      .field("mean_control_after", &covariate_balance::mean_control_after)
      .field("smd_after", &covariate_balance::smd_after)
      .field("variance_ratio_after", &covariate_balance::variance_ratio_after)
      .finish();
  result_class<matching_result>(m, "MatchingResult", "Nearest-neighbour matching (Abadie-Imbens SE).")
      .field("effect", &matching_result::effect)
      .field("estimate_unadjusted", &matching_result::estimate_unadjusted)
      .field("std_error_population", &matching_result::std_error_population)
      .field("std_error_sample", &matching_result::std_error_sample)
      .field("std_error_conditional", &matching_result::std_error_conditional)
      .field("std_error_standard", &matching_result::std_error_standard)
      .field("n_focal", &matching_result::n_focal)
      .field("n_matched", &matching_result::n_matched)
      .field("n_dropped", &matching_result::n_dropped)
      .field("n_rows", &matching_result::n_rows)
      .field("n_matches_unique", &matching_result::n_matches_unique)
      .field("index_treated", &matching_result::index_treated)
      .field("index_control", &matching_result::index_control)
      .field("weights", &matching_result::weights)
      .field("balance", &matching_result::balance)
      .finish();
}

// The result classes of the regression-based, power, heterogeneity, sensitivity, multiple-testing
// and sequential estimators.
void bind_model_results(py::module_& m) {
  result_class<ols_result>(m, "OlsResult", "A fitted linear regression.")
      .field("names", &ols_result::names)
      .computed("coefficients", [](const ols_result& r) { return numpy_of(r.coefficients); })
      .computed("covariance", [](const ols_result& r) { return numpy_of(r.covariance); })
      .field("terms", &ols_result::terms)
      .computed("residuals", [](const ols_result& r) { return numpy_of(r.residuals); })
      .field("n", &ols_result::n)
      .field("k", &ols_result::k)
      .field("clusters", &ols_result::clusters)
      .field("df_residual", &ols_result::df_residual)
      .field("inference_df", &ols_result::inference_df)
      .field("sigma", &ols_result::sigma)
      .field("rss", &ols_result::rss)
      .field("r_squared", &ols_result::r_squared)
      .field("adj_r_squared", &ols_result::adj_r_squared)
      .field("level", &ols_result::level)
      .computed("covariance_kind",
                [](const ols_result& r) { return choice_name(r.covariance_kind, covariance_names); })
      .computed("distribution",
                [](const ols_result& r) { return choice_name(r.distribution, distribution_names); })
      .computed("status", [](const ols_result& r) { return choice_name(r.status, status_names); })
      .finish()
      .def(
          "term", [](const ols_result& r, const std::string& name) { return r.term(name); }, "name"_a,
          "The row of coefficient `name`.");
  result_class<did_warning>(m, "DidWarning", "A design problem found in a panel.")
      .computed("code", [](const did_warning& w) { return choice_name(w.code, did_warning_names); })
      .field("message", &did_warning::message)
      .finish();
  result_class<did_result>(m, "DidResult", "A difference-in-differences regression.")
      .field("effect", &did_result::effect)
      .field("fit", &did_result::fit)
      .field("warnings", &did_result::warnings)
      .finish();
  result_class<logistic_fit>(m, "LogisticFit", "A fitted logistic regression.")
      .computed("coefficients", [](const logistic_fit& r) { return numpy_of(r.coefficients); })
      .computed("covariance", [](const logistic_fit& r) { return numpy_of(r.covariance); })
      .computed("fitted", [](const logistic_fit& r) { return numpy_of(r.fitted); })
      .computed("linear_predictor", [](const logistic_fit& r) { return numpy_of(r.linear_predictor); })
      .field("deviance", &logistic_fit::deviance)
      .field("null_deviance", &logistic_fit::null_deviance)
      .field("iterations", &logistic_fit::iterations)
      .finish();
  result_class<weighting_result>(m, "WeightingResult", "An IPW or AIPW estimate with its diagnostics.")
      .field("effect", &weighting_result::effect)
      .field("mean_treated", &weighting_result::mean_treated)
      .field("mean_control", &weighting_result::mean_control)
      .field("propensity", &weighting_result::propensity)
      .field("weights", &weighting_result::weights)
      .field("kept", &weighting_result::kept)
      .field("n_trimmed", &weighting_result::n_trimmed)
      .field("ess_treated", &weighting_result::ess_treated)
      .field("ess_control", &weighting_result::ess_control)
      .field("propensity_model", &weighting_result::propensity_model)
      .finish();
  result_class<first_stage_result>(m, "FirstStageResult", "The first stage of one endogenous regressor.")
      .field("endogenous", &first_stage_result::endogenous)
      .field("fit", &first_stage_result::fit)
      .field("f", &first_stage_result::f)
      .field("f_df1", &first_stage_result::f_df1)
      .field("f_df2", &first_stage_result::f_df2)
      .field("f_p", &first_stage_result::f_p)
      .field("f_classical", &first_stage_result::f_classical)
      .field("f_classical_p", &first_stage_result::f_classical_p)
      .field("partial_r_squared", &first_stage_result::partial_r_squared)
      .finish();
  result_class<iv_result>(m, "IvResult", "Two-stage least squares.")
      .field("fit", &iv_result::fit)
      .field("first_stages", &iv_result::first_stages)
      .finish();
  result_class<sample_size_result>(m, "SampleSizeResult", "A required sample size.")
      .field("n", &sample_size_result::n)
      .field("n_required", &sample_size_result::n_required)
      .field("n_required_control", &sample_size_result::n_required_control)
      .field("n_total", &sample_size_result::n_total)
      .field("power_at_required", &sample_size_result::power_at_required)
      .field("target_power", &sample_size_result::target_power)
      .finish();
  result_class<wald_test_result>(m, "WaldTestResult", "A Wald test of linear restrictions.")
      .field("chi2", &wald_test_result::chi2)
      .field("chi2_p", &wald_test_result::chi2_p)
      .field("f", &wald_test_result::f)
      .field("df1", &wald_test_result::df1)
      .field("df2", &wald_test_result::df2)
      .field("f_p", &wald_test_result::f_p)
      .field("p_value", &wald_test_result::p_value)
      .computed("status", [](const wald_test_result& r) { return choice_name(r.status, status_names); })
      .finish();
  result_class<event_study_result>(m, "EventStudyResult", "An event study (TWFE with relative-time dummies).")
      .field("relative_times", &event_study_result::relative_times)
      .field("coefficients", &event_study_result::coefficients)
      .field("pre_trend", &event_study_result::pre_trend)
      .field("fit", &event_study_result::fit)
      .field("warnings", &event_study_result::warnings)
      .finish();
  result_class<subgroup_effect>(m, "SubgroupEffect", "The effect within one subgroup.")
      .field("label", &subgroup_effect::label)
      .field("effect", &subgroup_effect::effect)
      .field("p_holm", &subgroup_effect::p_holm)
      .field("p_bh", &subgroup_effect::p_bh)
      .field("lower_edge", &subgroup_effect::lower_edge)
      .field("upper_edge", &subgroup_effect::upper_edge)
      .finish();
  result_class<interaction_test_result>(m, "InteractionTestResult",
                                        "The heterogeneity (interaction) Wald test.")
      .field("covariance", &interaction_test_result::covariance)
      .field("chi_square", &interaction_test_result::chi_square)
      .field("df", &interaction_test_result::df)
      .field("p_chi_square", &interaction_test_result::p_chi_square)
      .field("f", &interaction_test_result::f)
      .field("df_residual", &interaction_test_result::df_residual)
      .field("p_f", &interaction_test_result::p_f)
      .computed("status",
                [](const interaction_test_result& r) { return choice_name(r.status, status_names); })
      .finish();
  result_class<heterogeneity_result>(m, "HeterogeneityResult",
                                     "Subgroup effects and their heterogeneity test.")
      .field("groups", &heterogeneity_result::groups)
      .field("interaction", &heterogeneity_result::interaction)
      .field("bin_edges", &heterogeneity_result::bin_edges)
      .finish();
  result_class<evalue_result>(m, "EValueResult", "E-values of an estimate and its CI.")
      .field("point", &evalue_result::point)
      .field("ci", &evalue_result::ci)
      .field("rr", &evalue_result::rr)
      .field("rr_low", &evalue_result::rr_low)
      .field("rr_high", &evalue_result::rr_high)
      .field("rr_true", &evalue_result::rr_true)
      .finish();
  result_class<rosenbaum_bound>(m, "RosenbaumBound",
                                "Rosenbaum bounds on the signed-rank p-value at one gamma.")
      .field("gamma", &rosenbaum_bound::gamma)
      .field("statistic", &rosenbaum_bound::statistic)
      .field("expectation_upper", &rosenbaum_bound::expectation_upper)
      .field("expectation_lower", &rosenbaum_bound::expectation_lower)
      .field("variance", &rosenbaum_bound::variance)
      .field("p_upper", &rosenbaum_bound::p_upper)
      .field("p_lower", &rosenbaum_bound::p_lower)
      .field("n_pairs", &rosenbaum_bound::n_pairs)
      .field("n_zero", &rosenbaum_bound::n_zero)
      .field("exact", &rosenbaum_bound::exact)
      .finish();
  result_class<rosenbaum_critical_result>(m, "RosenbaumCriticalResult", "The sensitivity value gamma*.")
      .field("gamma", &rosenbaum_critical_result::gamma)
      .field("alpha", &rosenbaum_critical_result::alpha)
      .field("significant_at_one", &rosenbaum_critical_result::significant_at_one)
      .field("p_at_one", &rosenbaum_critical_result::p_at_one)
      .field("iterations", &rosenbaum_critical_result::iterations)
      .finish();
  result_class<multiple_test_result>(m, "MultipleTestResult", "Decisions for a family of hypotheses.")
      .computed("method",
                [](const multiple_test_result& r) { return std::string(p_adjust_method_name(r.method)); })
      .field("alpha", &multiple_test_result::alpha)
      .field("family_size", &multiple_test_result::family_size)
      .field("p_values", &multiple_test_result::p_values)
      .field("adjusted_p_values", &multiple_test_result::adjusted_p_values)
      .field("rejected", &multiple_test_result::rejected)
      .field("n_rejected", &multiple_test_result::n_rejected)
      .field("n_missing", &multiple_test_result::n_missing)
      .finish();
  result_class<sequential_result>(m, "SequentialResult", "The mSPRT monitor after the observations.")
      .field("n", &sequential_result::n)
      .field("mean", &sequential_result::mean)
      .field("ci_low", &sequential_result::ci_low)
      .field("ci_high", &sequential_result::ci_high)
      .field("likelihood_ratio", &sequential_result::likelihood_ratio)
      .field("rejected", &sequential_result::rejected)
      .field("first_rejection", &sequential_result::first_rejection)
      .field("ready", &sequential_result::ready)
      .finish();
  result_class<betting_sequential_result>(m, "BettingSequentialResult",
                                          "The betting confidence sequence after the observations.")
      .field("n", &betting_sequential_result::n)
      .field("mean", &betting_sequential_result::mean)
      .field("ci_low", &betting_sequential_result::ci_low)
      .field("ci_high", &betting_sequential_result::ci_high)
      .field("p_value", &betting_sequential_result::p_value)
      .field("rejected", &betting_sequential_result::rejected)
      .field("first_rejection", &betting_sequential_result::first_rejection)
      .field("ready", &betting_sequential_result::ready)
      .finish();
  result_class<wald_estimator_result>(m, "WaldEstimatorResult", "The Wald (LATE) estimator.")
      .field("late", &wald_estimator_result::late)
      .field("itt_y", &wald_estimator_result::itt_y)
      .field("itt_d", &wald_estimator_result::itt_d)
      .finish();
}

}  // namespace

namespace {

// The t_power_options of the Python arguments (t_test_power, t_test_sample_size, minimum effects).
t_power_options power_options(std::string_view fn, const std::string& design, const std::string& sides,
                              double alpha, double sd, bool strict, double allocation_ratio) {
  return t_power_options{.design = parse_choice(fn, "design", design, power_design_names),
                         .sides = parse_choice(fn, "sides", sides, sides_names),
                         .alpha = alpha,
                         .sd = sd,
                         .strict = strict,
                         .allocation_ratio = allocation_ratio};
}

// The estimators of the Python module: t tests.
void bind_t_tests(py::module_& m) {
  auto t_test =
      [&m](const char* name,
           effect_estimate (*f)(std::span<const double>, std::span<const double>, const t_test_options&),
           const char* doc) {
        m.def(
            name,
            [f, name](const f64_array& treated, const f64_array& control, double level, double null_value,
                      const std::string& if_degenerate) {
              return f(vec(treated, name, "treated"), vec(control, name, "control"),
                       t_test_options{.level = level,
                                      .null_value = null_value,
                                      .if_degenerate = degenerate(name, if_degenerate)});
            },
            "treated"_a, "control"_a, py::kw_only(), "level"_a = 0.95, "null_value"_a = 0.0,
            "if_degenerate"_a = "throw_error", doc);
      };
  t_test("welch_t_test", &welch_t_test, "Welch's two-sample t test (R t.test(treated, control)).");
  t_test("student_t_test", &student_t_test,
         "Student's pooled two-sample t test (R t.test(var.equal = TRUE)).");
  t_test("paired_t_test", &paired_t_test, "Paired t test (R t.test(paired = TRUE)).");
}

// The estimators of the Python module: binary outcomes.
void bind_binary_outcomes(py::module_& m) {
  m.def(
      "mcnemar_test",
      [](const f64_array& treated, const f64_array& control, double level, const std::string& if_degenerate) {
        constexpr std::string_view fn = "mcnemar_test";
        return mcnemar_test(vec(treated, fn, "treated"), vec(control, fn, "control"),
                            mcnemar_options{.level = level, .if_degenerate = degenerate(fn, if_degenerate)});
      },
      "treated"_a, "control"_a, py::kw_only(), "level"_a = 0.95, "if_degenerate"_a = "throw_error",
      "McNemar's test on paired 0/1 outcomes (exact p, chi-square, Newcombe interval).");
  m.def(
      "mcnemar_test_table",
      [](std::size_t both, std::size_t treated_only, std::size_t control_only, std::size_t neither,
         double level, const std::string& if_degenerate) {
        return mcnemar_test(
            paired_binary_table{
                .both = both, .treated_only = treated_only, .control_only = control_only, .neither = neither},
            mcnemar_options{.level = level, .if_degenerate = degenerate("mcnemar_test", if_degenerate)});
      },
      "both"_a, "treated_only"_a, "control_only"_a, "neither"_a, py::kw_only(), "level"_a = 0.95,
      "if_degenerate"_a = "throw_error", "McNemar's test from the counts a, b, c, d of the paired table.");
  m.def(
      "two_proportion_test",
      [](const f64_array& treated, const f64_array& control, double level, bool continuity_correction,
         const std::string& if_degenerate) {
        constexpr std::string_view fn = "two_proportion_test";
        return two_proportion_test(vec(treated, fn, "treated"), vec(control, fn, "control"),
                                   two_proportion_options{.level = level,
                                                          .continuity_correction = continuity_correction,
                                                          .if_degenerate = degenerate(fn, if_degenerate)});
      },
      "treated"_a, "control"_a, py::kw_only(), "level"_a = 0.95, "continuity_correction"_a = false,
      "if_degenerate"_a = "throw_error",
      "Unpaired difference of two proportions (Newcombe interval, z test).");
  m.def(
      "wilson_interval",
      [](std::size_t successes, std::size_t trials, double level, bool continuity_correction) {
        return wilson_interval(
            binary_counts{.successes = successes, .trials = trials},
            wilson_options{.level = level, .continuity_correction = continuity_correction});
      },
      "successes"_a, "trials"_a, py::kw_only(), "level"_a = 0.95, "continuity_correction"_a = false,
      "Wilson score interval of a proportion.");
}

// The estimators of the Python module: equivalence.
void bind_equivalence(py::module_& m) {
  m.def(
      "equivalence_test",
      [](const f64_array& treated, const f64_array& control, std::optional<double> margin,
         std::optional<double> low, std::optional<double> high, const std::string& design, double alpha,
         const std::string& if_degenerate) {
        constexpr std::string_view fn = "equivalence_test";
        if (margin.has_value() == (low.has_value() || high.has_value()) ||
            low.has_value() != high.has_value())
          throw invalid_argument(std::string(fn) + ": give either margin or both low and high");
        const equivalence_bounds b =
            margin ? equivalence_bounds::symmetric(*margin) : equivalence_bounds{.low = *low, .high = *high};
        if (margin && !(*margin > 0))
          throw invalid_argument(std::string(fn) + ": margin must be > 0, got " + std::to_string(*margin));
        return equivalence_test(
            vec(treated, fn, "treated"), vec(control, fn, "control"), b,
            equivalence_options{.design = parse_choice(fn, "design", design, design_names),
                                .alpha = alpha,
                                .if_degenerate = degenerate(fn, if_degenerate)});
      },
      "treated"_a, "control"_a, py::kw_only(), "margin"_a = py::none(), "low"_a = py::none(),
      "high"_a = py::none(), "design"_a = "welch", "alpha"_a = 0.05, "if_degenerate"_a = "throw_error",
      "TOST equivalence test of mean(treated) - mean(control) in (low, high), or (-margin, margin).");
  m.def(
      "non_inferiority_test",
      [](const f64_array& treated, const f64_array& control, double margin, const std::string& design,
         double alpha, const std::string& better, const std::string& if_degenerate) {
        constexpr std::string_view fn = "non_inferiority_test";
        return non_inferiority_test(
            vec(treated, fn, "treated"), vec(control, fn, "control"), margin,
            non_inferiority_options{.design = parse_choice(fn, "design", design, design_names),
                                    .alpha = alpha,
                                    .better = parse_choice(fn, "better", better, better_names),
                                    .if_degenerate = degenerate(fn, if_degenerate)});
      },
      "treated"_a, "control"_a, "margin"_a, py::kw_only(), "design"_a = "welch", "alpha"_a = 0.05,
      "better"_a = "higher", "if_degenerate"_a = "throw_error", "One-sided non-inferiority t test.");
}

// The estimators of the Python module: bootstrap.
void bind_bootstrap(py::module_& m) {
  auto boot = [&m](const char* name,
                   bootstrap_result (*f)(std::span<const double>, std::span<const double>,
                                         const bootstrap_options&),
                   const char* doc) {
    m.def(
        name,
        [f, name](const f64_array& treated, const f64_array& control, std::size_t replicates, double level,
                  const std::string& method, const std::string& convention, std::uint64_t seed,
                  unsigned threads, bool keep_replicates, const std::string& estimand,
                  const std::string& if_degenerate) {
          bootstrap_options o{.replicates = replicates,
                              .level = level,
                              .method = parse_choice(name, "method", method, ci_method_names),
                              .convention = parse_choice(name, "convention", convention, convention_names),
                              .seed = seed,
                              .threads = threads,
                              .keep_replicates = keep_replicates,
                              .estimand = estimand,
                              .if_degenerate = degenerate(name, if_degenerate)};
          const auto t = vec(treated, name, "treated");
          const auto c = vec(control, name, "control");
          py::gil_scoped_release unlocked;
          return f(t, c, o);
        },
        "treated"_a, "control"_a, py::kw_only(), "replicates"_a = 9999, "level"_a = 0.95, "method"_a = "bca",
        "convention"_a = "boot", "seed"_a = 0, "threads"_a = 1, "keep_replicates"_a = false,
        "estimand"_a = "", "if_degenerate"_a = "throw_error", doc);
  };
  boot("bootstrap_paired_mean", &bootstrap_paired_mean,
       "Paired bootstrap of mean(treated - control) (counter-based streams: bit-identical to the C++).");
  boot("bootstrap_mean_difference", &bootstrap_mean_difference,
       "Two-sample bootstrap of mean(treated) - mean(control).");
}

// The estimators of the Python module: betting.
void bind_betting(py::module_& m) {
  m.def(
      "bounded_mean_interval",
      [](const f64_array& x, double lo, double hi, double alpha_lower, double alpha_upper, double truncation,
         std::size_t horizon) {
        return bounded_mean_interval(vec(x, "bounded_mean_interval", "x"), lo, hi,
                                     betting_options{.alpha_lower = alpha_lower,
                                                     .alpha_upper = alpha_upper,
                                                     .truncation = truncation,
                                                     .horizon = horizon});
      },
      "x"_a, "lo"_a, "hi"_a, py::kw_only(), "alpha_lower"_a = 0.025, "alpha_upper"_a = 0.025,
      "truncation"_a = 0.9, "horizon"_a = 0,
      "Betting confidence interval for the mean of observations in [lo, hi]; horizon = the planned most "
      "observations (0: len(x)) makes it a confidence sequence, valid however often it is looked at.");
  m.def(
      "bounded_mean_p_value",
      [](const f64_array& x, double lo, double hi, double m0, double alpha, double truncation,
         std::size_t horizon) {
        return bounded_mean_p_value(vec(x, "bounded_mean_p_value", "x"), lo, hi, m0, alpha, truncation,
                                    horizon);
      },
      "x"_a, "lo"_a, "hi"_a, "m0"_a, py::kw_only(), "alpha"_a = 0.05, "truncation"_a = 0.9, "horizon"_a = 0,
      "Betting p-value of mean = m0 for observations in [lo, hi].");
  m.def(
      "clustered_paired_difference",
      [](const py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>& cluster,
         const f64_array& treated, const f64_array& control, double alpha_lower, double alpha_upper,
         double truncation) {
        constexpr std::string_view fn = "clustered_paired_difference";
        if (cluster.ndim() != 1) throw shape_mismatch(std::string(fn) + ": cluster must be 1-dimensional");
        return clustered_paired_difference(
            std::span<const std::uint64_t>(cluster.data(), static_cast<std::size_t>(cluster.shape(0))),
            vec(treated, fn, "treated"), vec(control, fn, "control"),
            betting_options{
                .alpha_lower = alpha_lower, .alpha_upper = alpha_upper, .truncation = truncation});
      },
      "cluster"_a, "treated"_a, "control"_a, py::kw_only(), "alpha_lower"_a = 0.025, "alpha_upper"_a = 0.025,
      "truncation"_a = 0.9,
      "Clustered paired difference of two binary arms with a betting interval over items.");
  m.def("betting_items_for_margin", &betting_items_for_margin, "margin"_a, "alpha"_a = 0.05,
        py::arg_v("truncation", betting_options{}.truncation),
        "Items the betting interval needs to show a margin when every item agrees.");
}

// The estimators of the Python module: matching.
void bind_matching(py::module_& m) {
  m.def(
      "nearest_neighbor_matching",
      [](const f64_array& outcome, const f64_array& treatment, const f64_array& covariates,
         const std::string& estimand, std::size_t neighbors, const std::string& distance,
         std::vector<double> weight_matrix, bool ties, double distance_tolerance, std::vector<double> caliper,
         std::vector<std::size_t> exact, bool bias_adjust, std::size_t var_calc, bool sample_variance,
         const std::string& dropped_variance, double tolerance, double level, bool keep_pairs,
         const std::string& balance_denominator, std::vector<std::string> covariate_names, unsigned threads,
         const std::string& if_degenerate) {
        constexpr std::string_view fn = "nearest_neighbor_matching";
        const auto y = vec(outcome, fn, "outcome");
        if (covariates.ndim() != 1 && covariates.ndim() != 2)
          throw shape_mismatch(std::string(fn) + ": covariates must be 1- or 2-dimensional");
        const std::size_t k = covariates.ndim() == 1 ? 1 : static_cast<std::size_t>(covariates.shape(1));
        matching_options o{
            .estimand = parse_choice(fn, "estimand", estimand, matching_estimand_names),
            .neighbors = neighbors,
            .distance = parse_choice(fn, "distance", distance, distance_names),
            .weight_matrix = std::move(weight_matrix),
            .ties = ties,
            .distance_tolerance = distance_tolerance,
            .caliper = std::move(caliper),
            .exact = std::move(exact),
            .bias_adjust = bias_adjust,
            .var_calc = var_calc,
            .sample_variance = sample_variance,
            .dropped_variance = parse_choice(fn, "dropped_variance", dropped_variance, dropped_names),
            .tolerance = tolerance,
            .level = level,
            .keep_pairs = keep_pairs,
            .balance_denominator =
                parse_choice(fn, "balance_denominator", balance_denominator, balance_names),
            .covariate_names = std::move(covariate_names),
            .threads = threads,
            .if_degenerate = degenerate(fn, if_degenerate)};
        return nearest_neighbor_matching(
            y, vec(treatment, fn, "treatment"),
            std::span<const double>(covariates.data(), static_cast<std::size_t>(covariates.size())), k, o);
      },
      "outcome"_a, "treatment"_a, "covariates"_a, py::kw_only(), "estimand"_a = "att", "neighbors"_a = 1,
      "distance"_a = "inverse_variance", "weight_matrix"_a = std::vector<double>{}, "ties"_a = true,
      "distance_tolerance"_a = 1e-5, "caliper"_a = std::vector<double>{},
      "exact"_a = std::vector<std::size_t>{}, "bias_adjust"_a = false, "var_calc"_a = 0,
      "sample_variance"_a = false, "dropped_variance"_a = "matched_only",
      py::arg_v("tolerance", matching_options{}.tolerance), "level"_a = 0.95, "keep_pairs"_a = true,
      "balance_denominator"_a = "focal_sd", "covariate_names"_a = std::vector<std::string>{}, "threads"_a = 1,
      "if_degenerate"_a = "throw_error",
      "Nearest-neighbour matching with replacement (R Matching::Match); covariates n x k (row per unit).");
}

// The estimators of the Python module: difference in differences.
void bind_difference_in_differences(py::module_& m) {
  m.def(
      "did_twfe",
      [](const f64_array& y, const f64_array& treatment, const py::object& units,
         const py::array_t<long long, py::array::c_style | py::array::forcecast>& time,
         const std::string& covariance, const std::string& distribution, double level,
         const std::string& fe_count, const std::string& if_degenerate) {
        constexpr std::string_view fn = "did_twfe";
        if (time.ndim() != 1) throw shape_mismatch(std::string(fn) + ": time must be 1-dimensional");
        return did_twfe(
            vec(y, fn, "y"), vec(treatment, fn, "treatment"), groups_of(units, fn, "units"),
            std::span<const long long>(time.data(), static_cast<std::size_t>(time.shape(0))),
            did_options{.covariance = parse_choice(fn, "covariance", covariance, covariance_names),
                        .distribution = parse_choice(fn, "distribution", distribution, distribution_names),
                        .level = level,
                        .fe_count = parse_choice(fn, "fe_count", fe_count, fe_count_names),
                        .if_degenerate = degenerate(fn, if_degenerate)});
      },
      "y"_a, "treatment"_a, "units"_a, "time"_a, py::kw_only(), "covariance"_a = "cr1",
      "distribution"_a = "t_cluster", "level"_a = 0.95, "fe_count"_a = "counted",
      "if_degenerate"_a = "throw_error",
      "Two-way fixed-effects difference in differences, clustered by unit.");
  m.def(
      "did_2x2_regression",
      [](const f64_array& y, const f64_array& treated, const f64_array& post, const py::object& units,
         const std::string& covariance, const std::string& distribution, double level,
         const std::string& if_degenerate) {
        constexpr std::string_view fn = "did_2x2_regression";
        return did_2x2_regression(
            vec(y, fn, "y"), vec(treated, fn, "treated"), vec(post, fn, "post"),
            groups_of(units, fn, "units"),
            did_options{.covariance = parse_choice(fn, "covariance", covariance, covariance_names),
                        .distribution = parse_choice(fn, "distribution", distribution, distribution_names),
                        .level = level,
                        .if_degenerate = degenerate(fn, if_degenerate)});
      },
      "y"_a, "treated"_a, "post"_a, "units"_a, py::kw_only(), "covariance"_a = "cr1",
      "distribution"_a = "t_cluster", "level"_a = 0.95, "if_degenerate"_a = "throw_error",
      "The 2x2 difference in differences as a regression.");
}

// The estimators of the Python module: weighting.
void bind_weighting(py::module_& m) {
  auto weighting = [](std::string_view fn, const std::string& estimand, const std::string& normalization,
                      const std::string& variance, const std::string& trimming, double trim_epsilon,
                      double level, const std::string& if_degenerate) {
    weighting_options o;
    o.estimand = parse_choice(fn, "estimand", estimand, weighting_estimand_names);
    o.normalization = parse_choice(fn, "normalization", normalization, normalization_names);
    o.variance = parse_choice(fn, "variance", variance, ipw_variance_names);
    o.trimming = parse_choice(fn, "trimming", trimming, trimming_names);
    o.trim_epsilon = trim_epsilon;
    o.level = level;
    o.if_degenerate = degenerate(fn, if_degenerate);
    return o;
  };
  m.def(
      "ipw",
      [weighting](const f64_array& y, const f64_array& treatment, const py::object& covariates,
                  const py::object& propensity, const std::string& estimand, const std::string& normalization,
                  const std::string& variance, const std::string& trimming, double trim_epsilon, double level,
                  const std::string& if_degenerate) {
        constexpr std::string_view fn = "ipw";
        const auto o =
            weighting(fn, estimand, normalization, variance, trimming, trim_epsilon, level, if_degenerate);
        if (!propensity.is_none()) {
          const auto e = f64_array::ensure(propensity);
          if (!e) throw invalid_argument("ipw: propensity must be numeric");
          return ipw_with_propensity(vec(y, fn, "y"), vec(treatment, fn, "treatment"),
                                     vec(e, fn, "propensity"), o);
        }
        if (covariates.is_none()) throw invalid_argument("ipw: give covariates or propensity");
        const auto x = f64_array::ensure(covariates);
        if (!x) throw invalid_argument("ipw: covariates must be numeric");
        return ipw(vec(y, fn, "y"), vec(treatment, fn, "treatment"), matrix_of(x, fn, "covariates"), o);
      },
      "y"_a, "treatment"_a, "covariates"_a = py::none(), py::kw_only(), "propensity"_a = py::none(),
      "estimand"_a = "ate", "normalization"_a = "hajek", "variance"_a = "stacked", "trimming"_a = "none",
      "trim_epsilon"_a = 0.01, "level"_a = 0.95, "if_degenerate"_a = "throw_error",
      "Inverse probability weighting (logistic propensity on covariates n x p, or given propensities).");
  m.def(
      "aipw",
      [weighting](const f64_array& y, const f64_array& treatment, const f64_array& covariates,
                  const py::object& propensity, const std::string& estimand, const std::string& trimming,
                  double trim_epsilon, double level, const std::string& if_degenerate) {
        constexpr std::string_view fn = "aipw";
        const auto o =
            weighting(fn, estimand, "hajek", "stacked", trimming, trim_epsilon, level, if_degenerate);
        const Eigen::MatrixXd x = matrix_of(covariates, fn, "covariates");
        if (!propensity.is_none()) {
          const auto e = f64_array::ensure(propensity);
          if (!e) throw invalid_argument("aipw: propensity must be numeric");
          return aipw_with_propensity(vec(y, fn, "y"), vec(treatment, fn, "treatment"), x,
                                      vec(e, fn, "propensity"), o);
        }
        return aipw(vec(y, fn, "y"), vec(treatment, fn, "treatment"), x, o);
      },
      "y"_a, "treatment"_a, "covariates"_a, py::kw_only(), "propensity"_a = py::none(), "estimand"_a = "ate",
      "trimming"_a = "none", "trim_epsilon"_a = 0.01, "level"_a = 0.95, "if_degenerate"_a = "throw_error",
      "Augmented IPW (doubly robust): logistic propensity and OLS outcome models on covariates n x p.");
}

// The estimators of the Python module: instrumental variables.
void bind_instrumental_variables(py::module_& m) {
  m.def(
      "wald_estimator",
      [](const f64_array& y, const f64_array& d, const f64_array& z, double level, bool sample_variance,
         const std::string& if_degenerate) {
        constexpr std::string_view fn = "wald_estimator";
        return wald_estimator(vec(y, fn, "y"), vec(d, fn, "d"), vec(z, fn, "z"),
                              wald_estimator_options{.level = level,
                                                     .sample_variance = sample_variance,
                                                     .if_degenerate = degenerate(fn, if_degenerate)});
      },
      "y"_a, "d"_a, "z"_a, py::kw_only(), "level"_a = 0.95, "sample_variance"_a = true,
      "if_degenerate"_a = "throw_error", "The Wald estimator of the LATE for a binary instrument.");
  m.def(
      "two_stage_least_squares",
      [](const f64_array& y, const py::object& exogenous, const py::object& endogenous,
         const py::object& instruments, const py::object& clusters, bool intercept,
         const std::string& covariance, const std::string& distribution, double level,
         const std::string& if_degenerate) {
        constexpr std::string_view fn = "two_stage_least_squares";
        const auto yv = vec(y, fn, "y");
        const std::size_t n = yv.size();
        const auto ex = design_of(exogenous, n, intercept, fn, "exog");
        const auto en = design_of(endogenous, n, false, fn, "endog");
        const auto in = design_of(instruments, n, false, fn, "instr");
        const iv_options o{.covariance = parse_choice(fn, "covariance", covariance, covariance_names),
                           .distribution = parse_choice(fn, "distribution", distribution, distribution_names),
                           .level = level,
                           .if_degenerate = degenerate(fn, if_degenerate)};
        if (clusters.is_none()) return two_stage_least_squares(yv, ex, en, in, o);
        return two_stage_least_squares(yv, ex, en, in, groups_of(clusters, fn, "clusters"), o);
      },
      "y"_a, "exogenous"_a, "endogenous"_a, "instruments"_a, py::kw_only(), "clusters"_a = py::none(),
      "intercept"_a = true, "covariance"_a = "automatic", "distribution"_a = "t_residual", "level"_a = 0.95,
      "if_degenerate"_a = "throw_error",
      "Two-stage least squares. Regressors: a dict {name: column}, a pandas DataFrame or an n x k array "
      "(columns named exog1.., endog1.., instr1..); exogenous may be None (intercept only).");
}

// The estimators of the Python module: regression.
void bind_regression(py::module_& m) {
  m.def(
      "ols",
      [](const f64_array& y, const py::object& x, const py::object& clusters, const py::object& weights,
         bool intercept, const std::string& covariance, const std::string& distribution, double level,
         const std::string& if_degenerate) {
        constexpr std::string_view fn = "ols";
        const auto yv = vec(y, fn, "y");
        const auto design = design_of(x, yv.size(), intercept, fn, "x");
        f64_array w;
        ols_options o{.covariance = parse_choice(fn, "covariance", covariance, covariance_names),
                      .distribution = parse_choice(fn, "distribution", distribution, distribution_names),
                      .level = level,
                      .if_degenerate = degenerate(fn, if_degenerate)};
        if (!weights.is_none()) {
          w = f64_array::ensure(weights);
          if (!w) throw invalid_argument("ols: weights must be numeric");
          o.weights = vec(w, fn, "weights");
        }
        if (clusters.is_none()) return ols(design, yv, o);
        return ols(design, yv, groups_of(clusters, fn, "clusters"), o);
      },
      "y"_a, "x"_a, py::kw_only(), "clusters"_a = py::none(), "weights"_a = py::none(), "intercept"_a = true,
      "covariance"_a = "automatic", "distribution"_a = "t_residual", "level"_a = 0.95,
      "if_degenerate"_a = "throw_error",
      "Least squares with classical, HC0-HC3 or cluster (CR0/CR1) covariance; x as for "
      "two_stage_least_squares.");
}

// The estimators of the Python module: multiplicity and power.
void bind_multiplicity_and_power(py::module_& m) {
  m.def(
      "p_adjust",
      [](const f64_array& p, const std::string& method, std::size_t family_size, bool allow_missing) {
        constexpr std::string_view fn = "p_adjust";
        return p_adjust(vec(p, fn, "p"), parse_choice(fn, "method", method, p_adjust_names),
                        p_adjust_options{.family_size = family_size, .allow_missing = allow_missing});
      },
      "p"_a, "method"_a = "holm", py::kw_only(), "family_size"_a = 0, "allow_missing"_a = false,
      "Adjusted p-values (R's p.adjust: none, bonferroni, holm, hochberg, BH, BY).");
  m.def(
      "t_test_power",
      [](double n, double delta, const std::string& design, const std::string& sides, double alpha, double sd,
         bool strict, double allocation_ratio) {
        return t_test_power(
            n, delta, power_options("t_test_power", design, sides, alpha, sd, strict, allocation_ratio));
      },
      "n"_a, "delta"_a, py::kw_only(), "design"_a = "two_sample", "sides"_a = "two_sided", "alpha"_a = 0.05,
      "sd"_a = 1.0, "strict"_a = false, "allocation_ratio"_a = 1.0, "Power of a t test (R's power.t.test).");
  m.def(
      "t_test_sample_size",
      [](double delta, double power, const std::string& design, const std::string& sides, double alpha,
         double sd, bool strict, double allocation_ratio) {
        return t_test_sample_size(
            delta, power,
            power_options("t_test_sample_size", design, sides, alpha, sd, strict, allocation_ratio));
      },
      "delta"_a, "power"_a, py::kw_only(), "design"_a = "two_sample", "sides"_a = "two_sided",
      "alpha"_a = 0.05, "sd"_a = 1.0, "strict"_a = false, "allocation_ratio"_a = 1.0,
      "Sample size a t test needs to detect delta with the given power.");
  auto mcnemar_power_opts = [](std::string_view fn, double alpha, const std::string& sides,
                               const std::string& method, std::size_t max_n) {
    return mcnemar_power_options{.alpha = alpha,
                                 .sides = parse_choice(fn, "sides", sides, sides_names),
                                 .method = parse_choice(fn, "method", method, mcnemar_power_names),
                                 .max_n = max_n};
  };
  m.def(
      "mcnemar_power",
      [mcnemar_power_opts](double n, double p10, double p01, double alpha, const std::string& sides,
                           const std::string& method, std::size_t max_n) {
        return mcnemar_power(n, p10, p01, mcnemar_power_opts("mcnemar_power", alpha, sides, method, max_n));
      },
      "n"_a, "p10"_a, "p01"_a, py::kw_only(), "alpha"_a = 0.05, "sides"_a = "two_sided",
      "method"_a = "connor", "max_n"_a = 1000000,
      "Power of McNemar's test (Connor's approximation or exact).");
  m.def(
      "mcnemar_sample_size",
      [mcnemar_power_opts](double p10, double p01, double power, double alpha, const std::string& sides,
                           const std::string& method, std::size_t max_n) {
        return mcnemar_sample_size(p10, p01, power,
                                   mcnemar_power_opts("mcnemar_sample_size", alpha, sides, method, max_n));
      },
      "p10"_a, "p01"_a, "power"_a, py::kw_only(), "alpha"_a = 0.05, "sides"_a = "two_sided",
      "method"_a = "connor", "max_n"_a = 1000000, "Pairs McNemar's test needs for the given power.");
}

// The estimators of the Python module: event study and heterogeneity.
void bind_event_study_and_heterogeneity(py::module_& m) {
  m.def(
      "event_study",
      [](const f64_array& y, const f64_array& treatment, const py::object& units,
         const py::array_t<long long, py::array::c_style | py::array::forcecast>& time,
         std::optional<long long> first, std::optional<long long> last, bool bin_endpoints,
         const std::string& covariance, const std::string& distribution, double level,
         const std::string& fe_count, const std::string& if_degenerate) {
        constexpr std::string_view fn = "event_study";
        if (time.ndim() != 1) throw shape_mismatch(std::string(fn) + ": time must be 1-dimensional");
        return event_study(
            vec(y, fn, "y"), vec(treatment, fn, "treatment"), groups_of(units, fn, "units"),
            std::span<const long long>(time.data(), static_cast<std::size_t>(time.shape(0))),
            event_study_options{
                .first = first,
                .last = last,
                .bin_endpoints = bin_endpoints,
                .covariance = parse_choice(fn, "covariance", covariance, covariance_names),
                .distribution = parse_choice(fn, "distribution", distribution, distribution_names),
                .level = level,
                .fe_count = parse_choice(fn, "fe_count", fe_count, fe_count_names),
                .if_degenerate = degenerate(fn, if_degenerate)});
      },
      "y"_a, "treatment"_a, "units"_a, "time"_a, py::kw_only(), "first"_a = py::none(), "last"_a = py::none(),
      "bin_endpoints"_a = false, "covariance"_a = "cr1", "distribution"_a = "t_cluster", "level"_a = 0.95,
      "fe_count"_a = "counted", "if_degenerate"_a = "throw_error",
      "Event study: TWFE with relative-time dummies (reference -1) and the pre-trend test.");
  // Subgroups: integer labels as integers, anything else as text; `bins` splits a numeric moderator.
  auto subgroups = [](bool paired, const f64_array& a, const f64_array& b, const py::object& groups,
                      std::size_t bins, double level, const std::string& covariance,
                      const std::string& if_degenerate) {
    const std::string_view fn = paired ? "paired_subgroup_effects" : "subgroup_effects";
    const heterogeneity_options o{.level = level,
                                  .covariance = parse_choice(fn, "covariance", covariance, interaction_names),
                                  .if_degenerate = degenerate(fn, if_degenerate)};
    const auto x = vec(a, fn, paired ? "treated" : "y");
    const auto z = vec(b, fn, paired ? "control" : "treatment");
    if (bins > 0) {
      const auto m = f64_array::ensure(groups);
      if (!m) throw invalid_argument(std::string(fn) + ": with bins, groups must be a numeric moderator");
      const auto mv = vec(m, fn, "groups");
      return paired ? paired_subgroup_effects_binned(x, z, mv, bins, o)
                    : subgroup_effects_binned(x, z, mv, bins, o);
    }
    py::array g = py::array::ensure(groups);
    if (!g) throw invalid_argument(std::string(fn) + ": groups must be a sequence of labels");
    const char kind = g.dtype().kind();
    if (kind == 'i' || kind == 'u' || kind == 'b') {
      const auto ints = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(g);
      if (ints.ndim() != 1) throw shape_mismatch(std::string(fn) + ": groups must be 1-dimensional");
      const std::span<const std::int64_t> gs(ints.data(), static_cast<std::size_t>(ints.shape(0)));
      return paired ? paired_subgroup_effects(x, z, gs, o) : subgroup_effects(x, z, gs, o);
    }
    std::vector<std::string> text;
    for (auto v : groups) text.emplace_back(py::str(v));
    return paired ? paired_subgroup_effects(x, z, std::span<const std::string>(text), o)
                  : subgroup_effects(x, z, std::span<const std::string>(text), o);
  };
  m.def(
      "subgroup_effects",
      [subgroups](const f64_array& y, const f64_array& treatment, const py::object& groups, std::size_t bins,
                  double level, const std::string& covariance, const std::string& if_degenerate) {
        return subgroups(false, y, treatment, groups, bins, level, covariance, if_degenerate);
      },
      "y"_a, "treatment"_a, "groups"_a, py::kw_only(), "bins"_a = 0, "level"_a = 0.95, "covariance"_a = "hc3",
      "if_degenerate"_a = "throw_error",
      "Welch effects within subgroups (labels, or a moderator cut into `bins` quantile bins), Holm/BH "
      "adjusted, with the interaction test.");
  m.def(
      "paired_subgroup_effects",
      [subgroups](const f64_array& treated, const f64_array& control, const py::object& groups,
                  std::size_t bins, double level, const std::string& covariance,
                  const std::string& if_degenerate) {
        return subgroups(true, treated, control, groups, bins, level, covariance, if_degenerate);
      },
      "treated"_a, "control"_a, "groups"_a, py::kw_only(), "bins"_a = 0, "level"_a = 0.95,
      "covariance"_a = "hc3", "if_degenerate"_a = "throw_error",
      "Paired t effects within subgroups, with the interaction test.");
}

// The estimators of the Python module: multiple testing, MDE, sensitivity.
void bind_multiple_testing_mde_sensitivity(py::module_& m) {
  m.def(
      "multiple_test",
      [](const f64_array& p, const std::string& method, double alpha, std::size_t family_size,
         const std::string& if_degenerate) {
        constexpr std::string_view fn = "multiple_test";
        return multiple_test(
            vec(p, fn, "p_values"),
            multiple_test_options{.method = parse_choice(fn, "method", method, p_adjust_names),
                                  .alpha = alpha,
                                  .family_size = family_size,
                                  .if_degenerate = degenerate(fn, if_degenerate)});
      },
      "p_values"_a, py::kw_only(), "method"_a = "holm", "alpha"_a = 0.05, "family_size"_a = 0,
      "if_degenerate"_a = "throw_error", "Adjusted p-values and rejections for a family of hypotheses.");
  m.def(
      "t_test_mde",
      [](double n, double power, const std::string& design, const std::string& sides, double alpha, double sd,
         bool strict, double allocation_ratio) {
        return t_test_mde(n, power,
                          power_options("t_test_mde", design, sides, alpha, sd, strict, allocation_ratio));
      },
      "n"_a, "power"_a, py::kw_only(), "design"_a = "two_sample", "sides"_a = "two_sided", "alpha"_a = 0.05,
      "sd"_a = 1.0, "strict"_a = false, "allocation_ratio"_a = 1.0,
      "Minimum detectable effect of a t test with n observations (per arm) at the given power.");
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  m.def(
      "evalue_risk_ratio",
      [](double rr, double ci_low, double ci_high, double true_value) {
        return evalue_risk_ratio(rr, ci_low, ci_high, evalue_options{.true_value = true_value});
      },
      "rr"_a, "ci_low"_a = nan, "ci_high"_a = nan, py::kw_only(), "true_value"_a = nan,
      "E-value of a risk ratio (VanderWeele & Ding 2017).");
  m.def(
      "evalue_odds_ratio",
      [](double odds_ratio, double ci_low, double ci_high, bool rare_outcome, double true_value) {
        return evalue_odds_ratio(odds_ratio, ci_low, ci_high, rare_outcome,
                                 evalue_options{.true_value = true_value});
      },
      "odds_ratio"_a, "ci_low"_a, "ci_high"_a, py::kw_only(), "rare_outcome"_a, "true_value"_a = nan,
      "E-value of an odds ratio (rare outcome: RR = OR, else RR = sqrt(OR)).");
  m.def(
      "evalue_smd",
      [](double d, double se, double true_value) {
        return evalue_smd(d, se, evalue_options{.true_value = true_value});
      },
      "d"_a, "se"_a, py::kw_only(), "true_value"_a = nan, "E-value of a standardised mean difference.");
  m.def(
      "rosenbaum_signed_rank",
      [](const f64_array& treated, const f64_array& control, double gamma, bool exact,
         std::size_t exact_max_pairs) {
        constexpr std::string_view fn = "rosenbaum_signed_rank";
        return rosenbaum_signed_rank(vec(treated, fn, "treated"), vec(control, fn, "control"), gamma,
                                     rosenbaum_options{.exact = exact, .exact_max_pairs = exact_max_pairs});
      },
      "treated"_a, "control"_a, "gamma"_a, py::kw_only(), "exact"_a = false, "exact_max_pairs"_a = 500,
      "Rosenbaum bounds on the one-sided signed-rank p-value when pair odds may differ by gamma.");
  m.def(
      "rosenbaum_critical_gamma",
      [](const f64_array& treated, const f64_array& control, double alpha, bool exact,
         std::size_t exact_max_pairs) {
        constexpr std::string_view fn = "rosenbaum_critical_gamma";
        return rosenbaum_critical_gamma(
            vec(treated, fn, "treated"), vec(control, fn, "control"), alpha,
            rosenbaum_options{.exact = exact, .exact_max_pairs = exact_max_pairs});
      },
      "treated"_a, "control"_a, py::kw_only(), "alpha"_a = 0.05, "exact"_a = false, "exact_max_pairs"_a = 500,
      "The gamma at which the Rosenbaum upper-bound p-value reaches alpha.");
}

// The estimators of the Python module: sequential monitoring.
void bind_sequential_monitoring(py::module_& m) {
  m.def(
      "run_sequential",
      [](const f64_array& x, double alpha, double tau, double sigma, std::size_t burn_in,
         double sigma_floor) {
        return run_sequential(
            vec(x, "run_sequential", "x"),
            sequential_options{
                .alpha = alpha, .tau = tau, .sigma = sigma, .burn_in = burn_in, .sigma_floor = sigma_floor});
      },
      "x"_a, py::kw_only(), "alpha"_a = 0.05, "tau"_a = 0.1, "sigma"_a = 0.0, "burn_in"_a = 10,
      "sigma_floor"_a = 0.0,
      "The mixture SPRT (always-valid test and confidence sequence) run over x in order.");
  m.def(
      "run_betting_sequential",
      [](const f64_array& x, double alpha, double lower, double upper, double theta0, double truncation) {
        return run_betting_sequential(
            vec(x, "run_betting_sequential", "x"),
            betting_sequential_options{
                .alpha = alpha, .lower = lower, .upper = upper, .theta0 = theta0, .truncation = truncation});
      },
      "x"_a, py::kw_only(), "alpha"_a = 0.05, "lower"_a = -1.0, "upper"_a = 1.0, "theta0"_a = 0.0,
      "truncation"_a = 0.5, "The betting confidence sequence for a bounded mean, run over x in order.");
}

}  // namespace

void bind_estimators(py::module_& m) {
  bind_test_results(m);
  bind_model_results(m);
  bind_t_tests(m);
  bind_binary_outcomes(m);
  bind_equivalence(m);
  bind_bootstrap(m);
  bind_betting(m);
  bind_matching(m);
  bind_difference_in_differences(m);
  bind_weighting(m);
  bind_instrumental_variables(m);
  bind_regression(m);
  bind_multiplicity_and_power(m);
  bind_event_study_and_heterogeneity(m);
  bind_multiple_testing_mde_sensitivity(m);
  bind_sequential_monitoring(m);
}

}  // namespace latentaudit::python
