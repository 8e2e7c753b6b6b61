// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/observational.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_REPORT_IMPL_OBSERVATIONAL_INL_HPP
#define LATENTAUDIT_REPORT_IMPL_OBSERVATIONAL_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../observational.hpp"

#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <exception>
#include <iterator>
#include <limits>
#include <numeric>
#include <set>
#include <utility>

#include "../../core/detail/check.hpp"
#include "../../core/error.hpp"
#include "../../core/rng.hpp"
#include "../../estimators/difference_in_differences.hpp"
#include "../../estimators/difference_in_means.hpp"
#include "../../estimators/matching.hpp"
#include "../../estimators/regression.hpp"
#include "../../estimators/weighting.hpp"
#include "../../trial/arm.hpp"
#include "../detail/arm_roles.hpp"
#include "../detail/record_units.hpp"

namespace latentaudit {

namespace detail {

LATENTAUDIT_INLINE finding coverage_finding(finding_key key, const effect_estimate& e,
                                            const effect_estimate& truth, std::string method, std::size_t n,
                                            std::string_view what, std::string_view truth_name,
                                            const std::string& why_missing) {
  if (!why_missing.empty()) return inconclusive_finding(std::move(key), std::move(method), why_missing);
  if (!std::isfinite(truth.estimate)) {
    return inconclusive_finding(std::move(key), std::move(method),
                                std::string(truth_name) + " is not estimable");
  }
  if (!has_interval(e)) {
    return inconclusive_finding(std::move(key), std::move(method),
                                std::string(what) + " has no interval on this log (see notes)");
  }
  const bool covers = e.ci_low <= truth.estimate && truth.estimate <= e.ci_high;
  finding f{.id = key.id(),
            .answer = covers ? verdict::yes : verdict::no,
            .estimate = e.estimate,
            .ci_low = e.ci_low,
            .ci_high = e.ci_high,
            .method = std::move(method),
            .n = n,
            .detail = fmt::format("{} {} {} the {} {:.3g}", what, estimate_text(e),
                                  covers ? "covers" : "does not cover", truth_name, truth.estimate),
            .key = std::move(key)};
  return f;
}

LATENTAUDIT_INLINE effect_estimate failed_estimate(std::string method) {
  effect_estimate e;
  e.method = std::move(method);
  e.status = estimate_status::failed;
  return e;
}

LATENTAUDIT_INLINE effect_estimate
item_cluster_bootstrap(effect_estimate point, std::span<const std::size_t> item_of,
                       const std::function<double(std::span<const std::size_t>)>& statistic, double level,
                       std::size_t replicates, std::uint64_t seed, std::uint32_t tag,
                       std::vector<std::string>& notes, std::string_view what) {
  point.method += "+cluster_bootstrap_percentile(item)";
  point.std_error = point.ci_low = point.ci_high = effect_estimate::nan;
  point.level = level;
  // Units of each item, items in ascending id order.
  std::vector<std::size_t> order(item_of.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return item_of[a] < item_of[b]; });
  std::vector<std::size_t> start;
  for (std::size_t k = 0; k < order.size(); ++k)
    if (k == 0 || item_of[order[k]] != item_of[order[k - 1]]) start.push_back(k);
  const std::size_t G = start.size();
  start.push_back(order.size());
  if (G < 2) {
    notes.push_back(fmt::format("{}: fewer than 2 items, no cluster-bootstrap interval", what));
    return point;
  }
  std::vector<double> t;
  t.reserve(replicates);
  std::vector<std::size_t> idx;
  for (std::size_t r = 0; r < replicates; ++r) {
    auto g = make_stream({.seed = seed, .item = 0, .arm = tag, .replicate = static_cast<std::uint32_t>(r)});
    idx.clear();
    for (std::size_t k = 0; k < G; ++k) {
      const std::uint32_t c = uniform_index(g, static_cast<std::uint32_t>(G));
      for (std::size_t j = start[c]; j < start[c + 1]; ++j) idx.push_back(order[j]);
    }
    const double v = statistic(idx);
    if (std::isfinite(v)) t.push_back(v);
  }
  if (t.size() < replicates) {
    notes.push_back(
        fmt::format("{}: {} of {} cluster-bootstrap replicates could not be estimated and were "
                    "left out",
                    what, replicates - t.size(), replicates));
  }
  if (t.size() < 2) return point;
  std::sort(t.begin(), t.end());
  auto q7 = [&](double p) {
    const double h = (static_cast<double>(t.size()) - 1.0) * p;
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const std::size_t hi = std::min(lo + 1, t.size() - 1);
    return t[lo] + (h - static_cast<double>(lo)) * (t[hi] - t[lo]);
  };
  const auto [m, sd] = mean_sd(t);
  (void)m;
  point.std_error = sd;
  point.ci_low = q7((1.0 - level) / 2.0);
  point.ci_high = q7((1.0 + level) / 2.0);
  return point;
}

LATENTAUDIT_INLINE std::optional<double> arm_budget(const trial_record& r) {
  if (r.budget) return r.budget;
  try {  // the budget the arm's label names (text_budget_<k>, text_message_<k>, ...), if it parses
    const trial_arm a = parse_arm(r.arm);
    if (a.plan().budgeted) return static_cast<double>(a.budget);
  } catch (const invalid_argument&) {  // a label of another stack: no budget
  }
  return std::nullopt;
}

LATENTAUDIT_INLINE std::string smallest_budget_arm(std::span<const trial_record> records) {
  std::string best;
  double best_budget = std::numeric_limits<double>::infinity();
  std::set<std::pair<std::string_view, std::string_view>> seen;  // (label, arm_kind) classified once
  for (const auto& r : records) {
    if (!seen.emplace(r.arm, r.arm_kind).second) continue;
    if (record_arm_kind(r.arm_kind, r.arm) != arm_kind::text_budget) continue;
    const double b = arm_budget(r).value_or(std::numeric_limits<double>::max());
    if (best.empty() || b < best_budget || (b == best_budget && r.arm < best)) {
      best = r.arm;
      best_budget = b;
    }
  }
  return best;
}

LATENTAUDIT_INLINE void check_observational_options(std::string_view fn, const observational_options& o) {
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
  if (o.max_items < 2)
    throw_invalid(fn, "options.max_items", "must be at least 2, got " + std::to_string(o.max_items));
}

LATENTAUDIT_INLINE production_log_result run_production_log(std::string_view fn,
                                                            std::span<const trial_record> records,
                                                            const observational_options& o) {
  production_log_result r;
  for (const auto& arm : {o.relay_arm, o.control_arm}) {
    if (!has_arm(records, arm)) {
      r.missing = "arm '" + arm + "' is absent from the records";
      return r;
    }
  }
  const std::string arms[] = {o.relay_arm, o.control_arm};
  const auto all = group_units(fn, records, arms, o.units);
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
  // Naive: the difference in means as OLS y ~ 1 + relay with CR1 standard errors by item.
  try {
    const auto fit = ols(design_builder(n).intercept().add("relay", t).build(), y,
                         make_group_index(std::span<const std::size_t>(cluster)),
                         {.covariance = covariance_type::cr1,
                          .distribution = reference_distribution::t_cluster,
                          .level = o.level,
                          .if_degenerate = on_degenerate::flag});
    r.naive = fit.term("relay");
    r.naive.method = "difference_in_means_ols_cr1(item)";
    r.naive.estimand = "naive_difference";
  } catch (const error& e) {
    r.notes.push_back(std::string("naive: ") + e.what());
  }
  if (!has_interval(r.naive)) r.notes.push_back("naive: no interval (constant outcomes or a single item)");
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
  matching_options mo{.estimand = matching_estimand::ate,
                      .neighbors = o.matching_neighbors,
                      .level = o.level,
                      .keep_pairs = false,
                      .covariate_names = r.covariates,
                      .if_degenerate = on_degenerate::flag};
  if (need_col) mo.exact = {*need_col};
  const weighting_options wo{
      .estimand = weighting_estimand::ate, .level = o.level, .if_degenerate = on_degenerate::flag};
  // The estimators on a list of units (a cluster-bootstrap replicate); NaN when one cannot run.
  enum class method { matching, aipw, ipw };
  auto on_units = [&](method which, std::span<const std::size_t> idx) -> double {
    const std::size_t m = idx.size();
    std::vector<double> yb(m), tb(m), rb(m * k);
    Eigen::MatrixXd xb(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(k));
    for (std::size_t i = 0; i < m; ++i) {
      yb[i] = y[idx[i]];
      tb[i] = t[idx[i]];
      for (std::size_t j = 0; j < k; ++j) {
        rb[i * k + j] = cols[j][idx[i]];
        xb(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = cols[j][idx[i]];
      }
    }
    try {
      switch (which) {
        case method::matching:
          return nearest_neighbor_matching(yb, tb, rb, k, mo).effect.estimate;
        case method::aipw:
          return aipw(yb, tb, xb, wo).effect.estimate;
        case method::ipw:
          return ipw(yb, tb, xb, wo).effect.estimate;
      }
    } catch (const error&) {  // e.g. a replicate without two units of an arm, or separation
    }
    return effect_estimate::nan;
  };
  // SE and interval of matching, AIPW and IPW: the estimators have no cluster option, so a
  // percentile cluster bootstrap over items (Field & Welsh 2007) re-runs each on the drawn items.
  auto clustered = [&](effect_estimate& out, method which, std::uint32_t tag, const char* name,
                       effect_estimate point) {
    out = item_cluster_bootstrap(
        std::move(point), cluster, [&](std::span<const std::size_t> idx) { return on_units(which, idx); },
        o.level, o.bootstrap_replicates, o.seed, tag, r.notes, name);
  };
  try {
    clustered(r.matching, method::matching, 11, "matching",
              nearest_neighbor_matching(y, t, rowmajor, k, mo).effect);
  } catch (const error& e) {
    r.notes.push_back(std::string("matching: ") + e.what());
  }
  try {
    clustered(r.aipw, method::aipw, 12, "aipw", aipw(y, t, x, wo).effect);
  } catch (const error& e) {
    r.notes.push_back(std::string("aipw: ") + e.what());
  }
  try {
    clustered(r.ipw, method::ipw, 13, "ipw", ipw(y, t, x, wo).effect);
  } catch (const error& e) {
    r.notes.push_back(std::string("ipw: ") + e.what());
  }
  return r;
}

LATENTAUDIT_INLINE rollout_result run_rollout(std::string_view fn, std::span<const trial_record> records,
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
  const auto all = group_units(fn, records, arms, o.units);
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
  r.before_after = failed_estimate("before_after_ols_cr1(item)");
  r.did = failed_estimate("did_2x2_ols_cr1");
  if (y_pre.size() >= 2 && y_post.size() >= 2) {
    // mean(post) − mean(pre) of group 1 as OLS y ~ 1 + post with CR1 standard errors by item.
    std::vector<double> yg, pg;
    std::vector<std::size_t> ig;
    for (std::size_t i = 0; i < n; ++i) {
      if (group[i] != 1.0) continue;
      yg.push_back(y[i]);
      pg.push_back(post[i]);
      ig.push_back(item_of[i]);
    }
    try {
      const auto fit = ols(design_builder(yg.size()).intercept().add("post", pg).build(), yg,
                           make_group_index(std::span<const std::size_t>(ig)),
                           {.covariance = covariance_type::cr1,
                            .distribution = reference_distribution::t_cluster,
                            .level = o.level,
                            .if_degenerate = on_degenerate::flag});
      r.before_after = fit.term("post");
      r.before_after.method = "before_after_ols_cr1(item)";
      r.before_after.estimand = "before_after";
    } catch (const error& e) {
      r.notes.push_back(std::string("before/after: ") + e.what());
    }
    if (!has_interval(r.before_after))
      r.notes.push_back("before/after: no interval (constant outcomes or a single item)");
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

LATENTAUDIT_INLINE observational_result observational_analysis(std::span<const trial_record> records,
                                                               const observational_options& options) {
  constexpr std::string_view fn = "observational_analysis";
  detail::check_observational_options(fn, options);
  // The arms answer by label, else by arm_kind (detail::resolve_arm: the resolver of every analysis).
  std::vector<std::string> arm_notes;
  observational_options o = options;
  o.relay_arm = detail::resolve_arm_or_name(records, o.relay_arm, arm_notes);
  o.control_arm = detail::resolve_arm_or_name(records, o.control_arm, arm_notes);
  if (!o.rollout_text_arm.empty())
    o.rollout_text_arm = detail::resolve_arm_or_name(records, o.rollout_text_arm, arm_notes);
  // At most max_items items (the smallest ids): the demonstrations' cost stays bounded.
  std::vector<trial_record> kept;
  std::span<const trial_record> used = records;
  {
    std::set<std::uint64_t> items;
    for (const auto& r : records) items.insert(r.item);
    if (items.size() > o.max_items) {
      const std::uint64_t last = *std::next(items.begin(), static_cast<std::ptrdiff_t>(o.max_items - 1));
      for (const auto& r : records)
        if (r.item <= last) kept.push_back(r);
      used = kept;
      // The report's table indexes `records`, not this subsample: the demonstrations group the kept
      // records themselves (bounded by max_items). Reading the table here indexed past `kept`.
      o.units = nullptr;
      arm_notes.push_back(
          fmt::format("the demonstrations read the first {} of {} items (items 0..{} in id order; "
                      "observational_options::max_items)",
                      o.max_items, items.size(), last));
    }
  }
  observational_result out;
  out.log = detail::run_production_log(fn, used, o);
  out.rollout = detail::run_rollout(fn, used, o);
  if (used.size() < records.size()) out.rollout.notes.push_back(arm_notes.back());
  out.log.notes.insert(out.log.notes.begin(), arm_notes.begin(), arm_notes.end());
  const auto& L = out.log;
  const std::string& lm = L.missing;
  out.findings.push_back(
      detail::coverage_finding({finding_kind::log_naive_covers_randomized}, L.naive, L.randomized,
                               "production log: difference in means (OLS, CR1 by item, t(G-1)) vs "
                               "randomized ATE",
                               L.units, "the naive difference", "randomized ATE", lm));
  out.findings.push_back(detail::coverage_finding(
      {finding_kind::log_matching_covers_randomized}, L.matching, L.randomized,
      "production log: nearest-neighbour matching ATE (exact on need; percentile cluster bootstrap over "
      "items) vs randomized ATE",
      L.units, "the matching ATE", "randomized ATE", lm));
  out.findings.push_back(
      detail::coverage_finding({finding_kind::log_aipw_covers_randomized}, L.aipw, L.randomized,
                               "production log: AIPW ATE (logistic propensity, OLS outcome models; "
                               "percentile cluster bootstrap over items) vs randomized ATE",
                               L.units, "the AIPW ATE", "randomized ATE", lm));
  const auto& R = out.rollout;
  out.findings.push_back(detail::coverage_finding(
      {finding_kind::rollout_before_after_covers_truth}, R.before_after, R.truth,
      "rollout: group-1 post minus pre (OLS, CR1 by item, t(G-1)) vs randomized post-period effect", R.units,
      "the before/after difference", "randomized post-period effect", R.missing));
  out.findings.push_back(detail::coverage_finding(
      {finding_kind::rollout_did_covers_truth}, R.did, R.truth,
      "rollout: 2x2 DiD regression (CR1 by item, t(G-1)) vs randomized post-period effect", R.units,
      "the DiD estimate", "randomized post-period effect", R.missing));
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_IMPL_OBSERVATIONAL_INL_HPP
