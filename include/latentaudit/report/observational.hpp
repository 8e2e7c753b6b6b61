// SPDX-License-Identifier: MIT
// latentaudit: two observational demonstrations built from the paired (randomized) records, with
// the randomized result as the truth. (1) A "production log" in which a scheduler chose the relay
// mostly for long documents and for requests that need the document: the naive difference in
// means is confounded by the regime; nearest-neighbour matching and AIPW on (doc_tokens, need)
// recover the randomized ATE. (2) A staged "rollout" in which one group of items gets the relay
// from mid-way on while document length drifts upward over the periods: before/after is confounded
// by the drift; difference in differences recovers the ATT. Formulas, defaults and references:
// docs/audit-report.md, "Observational demonstrations".
#ifndef LATENTAUDIT_REPORT_OBSERVATIONAL_HPP
#define LATENTAUDIT_REPORT_OBSERVATIONAL_HPP

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../estimators/difference_in_differences.hpp"
#include "../estimators/difference_in_means.hpp"
#include "../estimators/effect_estimate.hpp"
#include "../estimators/matching.hpp"
#include "../estimators/regression.hpp"
#include "../estimators/weighting.hpp"
#include "../trial/record.hpp"
#include "detail/record_units.hpp"
#include "finding.hpp"

namespace latentaudit {

/// @brief Options of observational_analysis().
///
/// Production log: unit (item, seed) is relayed with probability
/// expit(log_intercept + log_length_slope·z + log_need_shift·[regime = need]), z = doc_tokens
/// standardized over the units. The defaults (−0.75, 1, 1.5) relay about 68 % of need units and
/// 32 % of no-need units, with propensities inside about [0.09, 0.91] on documents of 5..33 tokens:
/// both groups are well populated and overlap, yet the regime confounds the naive comparison.
struct observational_options {
  std::string relay_arm = "kv_full";    ///< the treated arm of both demonstrations
  std::string control_arm = "no_comm";  ///< the untreated arm of the production log
  double log_intercept = -0.75;         ///< a: log-odds of relay at mean length in the no-need regime
  double log_length_slope = 1.0;        ///< b: log-odds per SD of doc_tokens
  double log_need_shift = 1.5;          ///< c: added log-odds in the need regime
  std::size_t matching_neighbors = 1;   ///< M of the nearest-neighbour matching (ties kept)
  std::size_t rollout_periods = 4;      ///< P ≥ 2 periods; group 1 is relayed from period P/2 on
  double rollout_jitter = 0.5;          ///< SD (in SDs of doc_tokens) of the jitter of the period score
  /// Lossy text arm of the rollout; empty: the text_budget arm with the smallest budget.
  std::string rollout_text_arm = {};
  std::uint64_t seed = 0x6f62735f6c6f67ULL;  ///< seed of the assignment, jitter, group and bootstrap streams
  double level = 0.95;                       ///< confidence level of every interval
  std::size_t bootstrap_replicates = 2000;   ///< cluster-bootstrap replicates (item clusters)
};

/// @brief The production-log demonstration.
struct production_log_result {
  std::size_t units = 0;                             ///< (item, seed) units with both arms and doc_tokens
  std::size_t treated = 0;                           ///< units the simulated scheduler relayed
  std::size_t control = 0;                           ///< units it did not
  double relay_rate_need = effect_estimate::nan;     ///< share relayed among need units (NaN: none)
  double relay_rate_no_need = effect_estimate::nan;  ///< share relayed among other units (NaN: none)
  effect_estimate randomized;  ///< the truth: mean of (relay − control) over all units, cluster bootstrap
  effect_estimate naive;       ///< Welch difference in means on the log
  effect_estimate matching;    ///< nearest-neighbour matching ATE (Abadie–Imbens SE)
  effect_estimate aipw;        ///< augmented IPW ATE
  effect_estimate ipw;         ///< Hájek IPW ATE (stacked sandwich)
  std::vector<std::string> covariates;  ///< covariates used by matching / weighting
  std::vector<std::string> notes;       ///< why a method has no estimate, dropped units or covariates
  std::string missing;                  ///< what was missing ("" when the demonstration ran)
};

/// @brief The rollout demonstration.
struct rollout_result {
  std::string text_arm;                      ///< the lossy text arm used
  std::size_t units = 0;                     ///< need-regime units with both arms and doc_tokens
  std::size_t periods = 0;                   ///< P
  std::size_t group1_units = 0;              ///< units of items in group 1 (relayed after the rollout)
  std::size_t group1_post = 0;               ///< group-1 units in periods ≥ P/2
  std::vector<double> period_text_accuracy;  ///< mean accuracy of the text arm per period (the drift)
  /// The truth the findings use: mean of (relay − text) over every post-period unit (both groups),
  /// cluster bootstrap. Groups are random, so it estimates the same ATT as truth_group1, with less
  /// noise of its own: against truth_group1 a 95 % DiD interval covers only ~92 % of the time,
  /// because that truth carries the unobserved text outcomes' noise of the group-1 post cell.
  effect_estimate truth;
  effect_estimate
      truth_group1;  ///< ATT over group-1 post units only: mean of (relay − text), cluster bootstrap
  effect_estimate before_after;  ///< group 1: mean(post) − mean(pre), Welch
  effect_estimate did;           ///< 2 × 2 DiD regression, CR1 by item, t(G − 1)
  effect_estimate
      did_period_effects;  ///< DiD with period fixed effects (y ~ group + period + group:post), CR1 by item
  std::vector<std::string> notes;  ///< why a method has no estimate
  std::string missing;             ///< what was missing ("" when the demonstration ran)
};

/// @brief Both demonstrations and their findings.
struct [[nodiscard]] observational_result {
  production_log_result log;      ///< the production log
  rollout_result rollout;         ///< the rollout
  std::vector<finding> findings;  ///< log.naive_covers_randomized, log.matching_covers_randomized,
                                  ///< log.aipw_covers_randomized, rollout.before_after_covers_truth,
                                  ///< rollout.did_covers_truth
};

/// @brief Runs the two observational demonstrations on paired records.
///
/// Production log: units (item, seed) with records of relay_arm and control_arm. T ~
/// Bernoulli(expit(a + b·z + c·need)) drawn from make_stream({seed, item, 1, fold(unit seed)}); the
/// log keeps the outcome (correct) of the chosen arm. Truth: the randomized mean paired difference
/// with a percentile cluster bootstrap over items. Estimates on the log: Welch difference in means
/// (naive), nearest-neighbour matching (ATE, exact on need, ties kept, AI SE), AIPW and Hájek IPW with
/// a logistic propensity on (doc_tokens, need). Finding "log.<method>_covers_randomized": yes if the
/// method's interval covers the randomized point estimate.
///
/// Rollout: need-regime units with relay_arm and the text arm. Period = ⌊P·rank/n⌋ of the score
/// z + jitter·√12·(u − ½) (u from stream {seed, item, 2, unit seed}); group 1 = items with
/// item_uniform(seed, item, 3) < ½. Outcome: the relay arm for group-1 units in periods ≥ P/2, the
/// text arm otherwise. Truth: the randomized effect over the post periods (every post-period unit;
/// rollout_result::truth says why not group 1 alone); estimates: before/after (Welch) and 2 × 2
/// DiD (cluster-robust by item), plus DiD with period effects (reported, no finding). Findings
/// "rollout.before_after_covers_truth", "rollout.did_covers_truth".
///
/// Absent arms, covariates or regimes give inconclusive findings with n = 0 and a detail naming
/// what was missing; an estimator that cannot run (too few units, separation) gives an
/// inconclusive finding saying why. Nothing here throws for data that are merely incomplete.
/// @param records trial records (any arms; one per (item, seed, arm))
/// @param options assignment model, rollout design, level, bootstrap
/// @returns the two demonstrations and five findings
/// @throws invalid_argument on bad options or on duplicate (item, seed, arm) records
[[nodiscard]] inline observational_result observational_analysis(std::span<const trial_record> records,
                                                                 const observational_options& options = {});

// ============================================================================================
// Implementation
// ============================================================================================

namespace detail {

/// @brief "Does the interval of `e` cover `truth`" as a finding.
inline finding coverage_finding(std::string id, const effect_estimate& e, const effect_estimate& truth,
                                std::string method, std::size_t n, std::string_view what,
                                std::string_view truth_name, const std::string& why_missing) {
  if (!why_missing.empty()) return inconclusive_finding(std::move(id), std::move(method), why_missing);
  if (!std::isfinite(truth.estimate)) {
    return inconclusive_finding(std::move(id), std::move(method),
                                std::string(truth_name) + " is not estimable");
  }
  if (!has_interval(e)) {
    return inconclusive_finding(std::move(id), std::move(method),
                                std::string(what) + " has no interval on this log (see notes)");
  }
  const bool covers = e.ci_low <= truth.estimate && truth.estimate <= e.ci_high;
  finding f{.id = std::move(id),
            .answer = covers ? verdict::yes : verdict::no,
            .estimate = e.estimate,
            .ci_low = e.ci_low,
            .ci_high = e.ci_high,
            .method = std::move(method),
            .n = n,
            .detail = fmt::format("{} {} {} the {} {:.3g}", what, estimate_text(e),
                                  covers ? "covers" : "does not cover", truth_name, truth.estimate)};
  return f;
}

/// @brief The estimate of a failed method: NaN fields with status failed.
inline effect_estimate failed_estimate(std::string method) {
  effect_estimate e;
  e.method = std::move(method);
  e.status = estimate_status::failed;
  return e;
}

/// @brief Budget of a text_budget arm: the record's budget, else the number after the last '_'.
inline std::optional<double> arm_budget(const trial_record& r) {
  if (r.budget) return r.budget;
  const auto pos = r.arm.rfind('_');
  if (pos == std::string::npos) return std::nullopt;
  try {
    std::size_t used = 0;
    const std::string tail = r.arm.substr(pos + 1);
    const double v = std::stod(tail, &used);
    if (used == tail.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {  // not a number: no budget
  }
  return std::nullopt;
}

/// @brief The text_budget arm with the smallest budget (ties: smaller label), or "".
inline std::string smallest_budget_arm(std::span<const trial_record> records) {
  std::string best;
  double best_budget = std::numeric_limits<double>::infinity();
  for (const auto& r : records) {
    if (r.arm_kind != "text_budget" && r.arm.rfind("text_budget_", 0) != 0) continue;
    const double b = arm_budget(r).value_or(std::numeric_limits<double>::max());
    if (best.empty() || b < best_budget || (b == best_budget && r.arm < best)) {
      best = r.arm;
      best_budget = b;
    }
  }
  return best;
}

inline void check_observational_options(std::string_view fn, const observational_options& o) {
  check_finite(fn, "options.log_intercept", o.log_intercept);
  check_finite(fn, "options.log_length_slope", o.log_length_slope);
  check_finite(fn, "options.log_need_shift", o.log_need_shift);
  if (o.matching_neighbors < 1) throw_invalid(fn, "options.matching_neighbors", "must be at least 1, got 0");
  if (o.rollout_periods < 2 || o.rollout_periods > 1000) {
    throw_invalid(fn, "options.rollout_periods",
                  "must lie in [2, 1000], got " + std::to_string(o.rollout_periods));
  }
  check_nonnegative(fn, "options.rollout_jitter", o.rollout_jitter);
  if (o.relay_arm.empty()) throw_invalid(fn, "options.relay_arm", "must not be empty");
  if (o.control_arm.empty()) throw_invalid(fn, "options.control_arm", "must not be empty");
  if (o.relay_arm == o.control_arm)
    throw_invalid(fn, "options.control_arm", "must differ from options.relay_arm");
  check_level_replicates(fn, o.level, o.bootstrap_replicates);
}

/// @brief The production-log demonstration.
inline production_log_result run_production_log(std::string_view fn, std::span<const trial_record> records,
                                                const observational_options& o) {
  production_log_result r;
  for (const auto& arm : {o.relay_arm, o.control_arm}) {
    if (!has_arm(records, arm)) {
      r.missing = "arm '" + arm + "' is absent from the records";
      return r;
    }
  }
  const std::string arms[] = {o.relay_arm, o.control_arm};
  const auto all = group_units(fn, records, arms);
  std::vector<const record_unit*> units;
  std::vector<double> doc;
  std::size_t without_doc = 0, paired = 0;
  for (const auto& u : all) {
    if (!u.has({0, 1})) continue;
    ++paired;
    auto d = u.arms[0]->covariate_value("doc_tokens");
    if (!d) d = u.arms[1]->covariate_value("doc_tokens");
    if (!d) {
      ++without_doc;
      continue;
    }
    units.push_back(&u);
    doc.push_back(*d);
  }
  if (paired == 0) {
    r.missing = "no (item, seed) unit has both '" + o.relay_arm + "' and '" + o.control_arm + "'";
    return r;
  }
  if (units.empty()) {
    r.missing = "covariate 'doc_tokens' is missing from every paired unit";
    return r;
  }
  if (without_doc > 0)
    r.notes.push_back(fmt::format("{} paired units lack doc_tokens and were dropped", without_doc));
  const std::size_t n = units.size();
  r.units = n;
  // Truth: the randomized paired difference.
  std::vector<double> diff(n), y(n), t(n), need(n);
  std::vector<std::size_t> cluster(n);
  for (std::size_t i = 0; i < n; ++i) {
    diff[i] = (units[i]->arms[0]->correct ? 1.0 : 0.0) - (units[i]->arms[1]->correct ? 1.0 : 0.0);
    cluster[i] = static_cast<std::size_t>(units[i]->item);
    need[i] = units[i]->arms[0]->regime == "need" ? 1.0 : 0.0;
  }
  const clustered_mean_options cm{.level = o.level, .replicates = o.bootstrap_replicates, .seed = o.seed};
  r.randomized = clustered_mean(diff, cluster, cm);
  r.randomized.estimand = "ate_randomized";
  // The simulated scheduler.
  const auto [dm, dsd] = mean_sd(doc);
  std::size_t n_need = 0, t_need = 0, t_other = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double z = dsd > 0 ? (doc[i] - dm) / dsd : 0.0;
    const double p = expit(o.log_intercept + o.log_length_slope * z + o.log_need_shift * need[i]);
    t[i] = unit_uniform(o.seed, units[i]->item, 1, units[i]->seed) < p ? 1.0 : 0.0;
    y[i] = (t[i] == 1.0 ? units[i]->arms[0] : units[i]->arms[1])->correct ? 1.0 : 0.0;
    n_need += need[i] == 1.0;
    (need[i] == 1.0 ? t_need : t_other) += t[i] == 1.0;
  }
  r.treated = static_cast<std::size_t>(std::count(t.begin(), t.end(), 1.0));
  r.control = n - r.treated;
  if (n_need > 0) r.relay_rate_need = static_cast<double>(t_need) / static_cast<double>(n_need);
  if (n_need < n) r.relay_rate_no_need = static_cast<double>(t_other) / static_cast<double>(n - n_need);
  r.naive = failed_estimate("welch");
  r.matching = failed_estimate("matching");
  r.aipw = failed_estimate("aipw");
  r.ipw = failed_estimate("ipw_hajek");
  if (r.treated < 2 || r.control < 2) {
    r.notes.push_back(
        fmt::format("the log has {} relayed and {} unrelayed units; at least 2 of each are needed", r.treated,
                    r.control));
    return r;
  }
  std::vector<double> yt, yc;
  for (std::size_t i = 0; i < n; ++i) (t[i] == 1.0 ? yt : yc).push_back(y[i]);
  r.naive = welch_t_test(yt, yc, {.level = o.level, .if_degenerate = on_degenerate::flag});
  if (!has_interval(r.naive)) r.notes.push_back("naive: both groups of the log are constant");
  // Covariates: doc_tokens and the need indicator, each only if it varies.
  std::vector<std::vector<double>> cols;
  if (dsd > 0) {
    cols.push_back(doc);
    r.covariates.push_back("doc_tokens");
  } else {
    r.notes.push_back("doc_tokens is constant and was not used as a covariate");
  }
  std::optional<std::size_t> need_col;
  if (n_need > 0 && n_need < n) {
    need_col = cols.size();
    cols.push_back(need);
    r.covariates.push_back("need");
  } else {
    r.notes.push_back(n_need == 0 ? "no unit is in the need regime: the need indicator was not used"
                                  : "every unit is in the need regime: the need indicator was not used");
  }
  if (cols.empty()) {
    r.notes.push_back("no covariate varies: matching and weighting cannot adjust");
    return r;
  }
  const std::size_t k = cols.size();
  std::vector<double> rowmajor(n * k);
  Eigen::MatrixXd x(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(k));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < k; ++j) {
      rowmajor[i * k + j] = cols[j][i];
      x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = cols[j][i];
    }
  try {
    matching_options mo{.estimand = matching_estimand::ate,
                        .neighbors = o.matching_neighbors,
                        .level = o.level,
                        .keep_pairs = false,
                        .covariate_names = r.covariates,
                        .if_degenerate = on_degenerate::flag};
    if (need_col) mo.exact = {*need_col};
    r.matching = nearest_neighbor_matching(y, t, rowmajor, k, mo).effect;
  } catch (const error& e) {
    r.notes.push_back(std::string("matching: ") + e.what());
  }
  const weighting_options wo{
      .estimand = weighting_estimand::ate, .level = o.level, .if_degenerate = on_degenerate::flag};
  try {
    r.aipw = aipw(y, t, x, wo).effect;
  } catch (const error& e) {
    r.notes.push_back(std::string("aipw: ") + e.what());
  }
  try {
    r.ipw = ipw(y, t, x, wo).effect;
  } catch (const error& e) {
    r.notes.push_back(std::string("ipw: ") + e.what());
  }
  return r;
}

/// @brief The rollout demonstration.
inline rollout_result run_rollout(std::string_view fn, std::span<const trial_record> records,
                                  const observational_options& o) {
  rollout_result r;
  r.periods = o.rollout_periods;
  r.text_arm = o.rollout_text_arm.empty() ? smallest_budget_arm(records) : o.rollout_text_arm;
  if (r.text_arm.empty()) {
    r.missing = "no text_budget arm is present in the records";
    return r;
  }
  for (const auto& arm : {o.relay_arm, r.text_arm}) {
    if (!has_arm(records, arm)) {
      r.missing = "arm '" + arm + "' is absent from the records";
      return r;
    }
  }
  const std::string arms[] = {o.relay_arm, r.text_arm};
  const auto all = group_units(fn, records, arms);
  std::vector<const record_unit*> units;
  std::vector<double> doc;
  std::size_t paired = 0, need_paired = 0;
  for (const auto& u : all) {
    if (!u.has({0, 1})) continue;
    ++paired;
    if (u.arms[0]->regime != "need") continue;
    ++need_paired;
    auto d = u.arms[0]->covariate_value("doc_tokens");
    if (!d) d = u.arms[1]->covariate_value("doc_tokens");
    if (!d) continue;
    units.push_back(&u);
    doc.push_back(*d);
  }
  if (paired == 0) {
    r.missing = "no (item, seed) unit has both '" + o.relay_arm + "' and '" + r.text_arm + "'";
    return r;
  }
  if (need_paired == 0) {
    r.missing = "no paired unit is in the need regime";
    return r;
  }
  if (units.empty()) {
    r.missing = "covariate 'doc_tokens' is missing from every need-regime unit";
    return r;
  }
  if (units.size() < need_paired) {
    r.notes.push_back(
        fmt::format("{} need-regime units lack doc_tokens and were dropped", need_paired - units.size()));
  }
  const std::size_t n = units.size(), P = o.rollout_periods;
  r.units = n;
  const auto [dm, dsd] = mean_sd(doc);
  std::vector<double> score(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double z = dsd > 0 ? (doc[i] - dm) / dsd : 0.0;
    score[i] = z + o.rollout_jitter * std::sqrt(12.0) *
                       (unit_uniform(o.seed, units[i]->item, 2, units[i]->seed) - 0.5);
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return score[a] < score[b]; });
  std::vector<std::size_t> period(n);
  for (std::size_t rank = 0; rank < n; ++rank) period[order[rank]] = rank * P / n;
  std::vector<double> y(n), group(n), post(n), ta_sum(P, 0.0), ta_n(P, 0.0);
  std::vector<double> truth_diff, g1_diff, y_pre, y_post;
  std::vector<std::size_t> truth_cluster, g1_cluster, item_of(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& u = *units[i];
    group[i] = item_uniform(o.seed, u.item, 3) < 0.5 ? 1.0 : 0.0;
    post[i] = period[i] >= P / 2 ? 1.0 : 0.0;
    const double kv = u.arms[0]->correct ? 1.0 : 0.0, text = u.arms[1]->correct ? 1.0 : 0.0;
    y[i] = group[i] == 1.0 && post[i] == 1.0 ? kv : text;
    ta_sum[period[i]] += text;
    ta_n[period[i]] += 1.0;
    item_of[i] = static_cast<std::size_t>(u.item);
    if (post[i] == 1.0) {
      truth_diff.push_back(kv - text);
      truth_cluster.push_back(item_of[i]);
    }
    if (group[i] == 1.0) {
      ++r.group1_units;
      (post[i] == 1.0 ? y_post : y_pre).push_back(y[i]);
      if (post[i] == 1.0) {
        g1_diff.push_back(kv - text);
        g1_cluster.push_back(item_of[i]);
      }
    }
  }
  r.group1_post = g1_diff.size();
  for (std::size_t p = 0; p < P; ++p)
    r.period_text_accuracy.push_back(ta_n[p] > 0 ? ta_sum[p] / ta_n[p] : 0.0);
  r.truth = clustered_mean(
      truth_diff, truth_cluster,
      {.level = o.level, .replicates = o.bootstrap_replicates, .seed = o.seed ^ 0x726f6c6cULL});
  r.truth.estimand = "ate_randomized_post_periods";
  r.truth_group1 = clustered_mean(
      g1_diff, g1_cluster,
      {.level = o.level, .replicates = o.bootstrap_replicates, .seed = o.seed ^ 0x67317474ULL});
  r.truth_group1.estimand = "att_randomized_group1";
  r.before_after = failed_estimate("welch");
  r.did = failed_estimate("did_2x2_ols_cr1");
  if (y_pre.size() >= 2 && y_post.size() >= 2) {
    r.before_after = welch_t_test(y_post, y_pre, {.level = o.level, .if_degenerate = on_degenerate::flag});
    r.before_after.estimand = "before_after";
    if (!has_interval(r.before_after))
      r.notes.push_back("before/after: both periods of group 1 are constant");
  } else {
    r.notes.push_back(
        fmt::format("before/after: group 1 has {} pre and {} post units; at least 2 of each are needed",
                    y_pre.size(), y_post.size()));
  }
  try {
    const auto units_index = make_group_index(std::span<const std::size_t>(item_of));
    r.did = did_2x2_regression(y, group, post, units_index,
                               {.level = o.level, .if_degenerate = on_degenerate::flag})
                .effect;
  } catch (const error& e) {
    r.notes.push_back(std::string("did: ") + e.what());
  }
  r.did_period_effects = failed_estimate("did_period_fe_ols_cr1");
  try {
    std::vector<std::size_t> period_label(period.begin(), period.end());
    std::vector<double> inter(n);
    for (std::size_t i = 0; i < n; ++i) inter[i] = group[i] * post[i];
    const auto x = design_builder(n)
                       .intercept()
                       .add("group", group)
                       .add_dummies("period", make_group_index(std::span<const std::size_t>(period_label)))
                       .add("group:post", inter)
                       .build();
    const auto fit = ols(x, y, make_group_index(std::span<const std::size_t>(item_of)),
                         {.covariance = covariance_type::cr1,
                          .distribution = reference_distribution::t_cluster,
                          .level = o.level,
                          .if_degenerate = on_degenerate::flag});
    r.did_period_effects = fit.term("group:post");
    r.did_period_effects.method = "did_period_fe_ols_cr1";
    r.did_period_effects.estimand = "did";
  } catch (const error& e) {
    r.notes.push_back(std::string("did with period effects: ") + e.what());
  }
  return r;
}

}  // namespace detail

inline observational_result observational_analysis(std::span<const trial_record> records,
                                                   const observational_options& options) {
  constexpr std::string_view fn = "observational_analysis";
  detail::check_observational_options(fn, options);
  observational_result out;
  out.log = detail::run_production_log(fn, records, options);
  out.rollout = detail::run_rollout(fn, records, options);
  const auto& L = out.log;
  const std::string& lm = L.missing;
  out.findings.push_back(
      detail::coverage_finding("log.naive_covers_randomized", L.naive, L.randomized,
                               "production log: Welch difference in means vs randomized ATE", L.units,
                               "the naive difference", "randomized ATE", lm));
  out.findings.push_back(detail::coverage_finding(
      "log.matching_covers_randomized", L.matching, L.randomized,
      "production log: nearest-neighbour matching ATE (exact on need, Abadie-Imbens SE) vs randomized ATE",
      L.units, "the matching ATE", "randomized ATE", lm));
  out.findings.push_back(
      detail::coverage_finding("log.aipw_covers_randomized", L.aipw, L.randomized,
                               "production log: AIPW ATE (logistic propensity, OLS outcome models) "
                               "vs randomized ATE",
                               L.units, "the AIPW ATE", "randomized ATE", lm));
  const auto& R = out.rollout;
  out.findings.push_back(detail::coverage_finding(
      "rollout.before_after_covers_truth", R.before_after, R.truth,
      "rollout: group-1 post minus pre (Welch) vs randomized post-period effect", R.units,
      "the before/after difference", "randomized post-period effect", R.missing));
  out.findings.push_back(detail::coverage_finding(
      "rollout.did_covers_truth", R.did, R.truth,
      "rollout: 2x2 DiD regression (CR1 by item, t(G-1)) vs randomized post-period effect", R.units,
      "the DiD estimate", "randomized post-period effect", R.missing));
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_OBSERVATIONAL_HPP
