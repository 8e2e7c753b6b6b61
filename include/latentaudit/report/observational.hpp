// SPDX-License-Identifier: MIT
// latentaudit: two observational demonstrations built from the paired (randomized) records, with
// the randomized result as the truth. (1) A "production log" in which a scheduler chose the relay
// mostly for long documents and for requests that need the document: the naive difference in
// means is confounded by the regime; nearest-neighbour matching and AIPW on (doc_tokens, need)
// recover the randomized ATE. (2) A staged "rollout" in which one group of items gets the relay
// from mid-way on while document length drifts upward over the periods: before/after is confounded
// by the drift; difference in differences recovers the ATT. Every standard error and interval is
// clustered by item (the seeds of an item share its document): CR1 regressions by item where the
// estimator is a regression, a percentile cluster bootstrap over items (re-running the estimator)
// for matching, IPW and AIPW. These are teaching demonstrations, true by construction: the report
// lists their "findings" under `demonstrations`, never among the findings a pipeline gates on.
// Formulas, defaults and references: docs/audit-report.md, "Observational demonstrations".
#ifndef LATENTAUDIT_REPORT_OBSERVATIONAL_HPP
#define LATENTAUDIT_REPORT_OBSERVATIONAL_HPP

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../estimators/effect_estimate.hpp"
#include "../trial/record.hpp"
#include "finding.hpp"

namespace latentaudit::detail {
struct unit_records;  // report/detail/audit_data.hpp: the report's one table
}  // namespace latentaudit::detail

namespace latentaudit {

/// @brief Options of observational_analysis().
///
/// Production log: unit (item, seed) is relayed with probability
/// expit(log_intercept + log_length_slope·z + log_need_shift·[regime = need]), z = doc_tokens
/// standardized over the units. The defaults (−0.75, 1, 1.5) relay about 68 % of need units and
/// 32 % of no-need units, with propensities inside about [0.09, 0.91] on documents of 5..33 tokens:
/// both groups are well populated and overlap, yet the regime confounds the naive comparison.
struct observational_options {
  /// the treated arm of both demonstrations; each arm name answers by label, else by arm_kind
  /// (ties: the first label in sorted order), the rule of every analysis (report/detail/arm_roles.hpp)
  std::string relay_arm = "kv_full";
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
  /// cluster-bootstrap replicates (item clusters) of the truths and of matching / IPW / AIPW
  std::size_t bootstrap_replicates = 2000;
  /// the demonstrations read the records of at most this many items, the smallest item ids (every
  /// seed of each), and say so in their notes; ≥ 2. They are teaching material (never a finding),
  /// and matching with ties over discrete covariates costs up to the square of the units per
  /// bootstrap replicate: without a bound a report of 200 000 records spent most of its minute here.
  /// The default keeps the default audit's 450 items whole.
  std::size_t max_items = 450;
  /// the report's one table (every arm's records grouped by (item, seed) once; build_audit_report
  /// sets it, for these very records): the analysis reads its arms' columns instead of grouping the
  /// records again. Null (the default): it groups them itself.
  const detail::unit_records* units = nullptr;
};

/// @brief The production-log demonstration.
struct production_log_result {
  std::size_t units = 0;                             ///< (item, seed) units with both arms and doc_tokens
  std::size_t treated = 0;                           ///< units the simulated scheduler relayed
  std::size_t control = 0;                           ///< units it did not
  double relay_rate_need = effect_estimate::nan;     ///< share relayed among need units (NaN: none)
  double relay_rate_no_need = effect_estimate::nan;  ///< share relayed among other units (NaN: none)
  effect_estimate randomized;  ///< the truth: mean of (relay − control) over all units, cluster bootstrap
  effect_estimate naive;       ///< difference in means on the log: OLS y ~ 1 + relay, CR1 by item, t(G − 1)
  effect_estimate matching;    ///< nearest-neighbour matching ATE; SE and CI: cluster bootstrap over items
  effect_estimate aipw;        ///< augmented IPW ATE; SE and CI: cluster bootstrap over items
  effect_estimate ipw;         ///< Hájek IPW ATE; SE and CI: cluster bootstrap over items
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
  effect_estimate before_after;  ///< group 1: mean(post) − mean(pre), OLS y ~ 1 + post, CR1 by item
  effect_estimate did;           ///< 2 × 2 DiD regression, CR1 by item, t(G − 1)
  effect_estimate
      did_period_effects;  ///< DiD with period fixed effects (y ~ group + period + group:post), CR1 by item
  std::vector<std::string> notes;  ///< why a method has no estimate
  std::string missing;             ///< what was missing ("" when the demonstration ran)
};

/// @brief Both demonstrations and their findings.
struct [[nodiscard]] observational_result {
  production_log_result log;  ///< the production log
  rollout_result rollout;     ///< the rollout
  /// The demonstration kinds (finding_kind::log_*_covers_randomized and rollout_*_covers_truth;
  /// their ids in finding_catalog.hpp): true by construction (the report's `demonstrations`, never its gating
  /// `findings`)
  std::vector<finding> findings;
};

/// @brief Runs the two observational demonstrations on paired records.
///
/// Production log: units (item, seed) with records of relay_arm and control_arm. T ~
/// Bernoulli(expit(a + b·z + c·need)) drawn from make_stream({seed, item, 1, fold(unit seed)}); the
/// log keeps the outcome (correct) of the chosen arm. Truth: the randomized mean paired difference
/// with a percentile cluster bootstrap over items. Estimates on the log: the difference in means
/// (naive; OLS with CR1 by item), nearest-neighbour matching (ATE, exact on need, ties kept), AIPW
/// and Hájek IPW with a logistic propensity on (doc_tokens, need), each with a percentile cluster
/// bootstrap over items (replicates where the estimator fails are left out and counted in the
/// notes). Finding "log.<method>_covers_randomized": yes if the method's interval covers the
/// randomized point estimate.
///
/// Rollout: need-regime units with relay_arm and the text arm. Period = ⌊P·rank/n⌋ of the score
/// z + jitter·√12·(u − ½) (u from stream {seed, item, 2, unit seed}); group 1 = items with
/// item_uniform(seed, item, 3) < ½. Outcome: the relay arm for group-1 units in periods ≥ P/2, the
/// text arm otherwise. Truth: the randomized effect over the post periods (every post-period unit;
/// rollout_result::truth says why not group 1 alone); estimates: before/after (OLS, CR1 by item)
/// and 2 × 2 DiD (CR1 by item), plus DiD with period effects (reported, no finding). Findings of
/// the kinds finding_kind::rollout_before_after_covers_truth and rollout_did_covers_truth.
///
/// The findings are teaching demonstrations, true by construction (the log is simulated from the
/// randomized records): build_audit_report keeps them in audit_report::demonstrations, out of
/// the findings a pipeline gates on.
///
/// Absent arms, covariates or regimes give inconclusive findings with n = 0 and a detail naming
/// what was missing; an estimator that cannot run (too few units, separation) gives an
/// inconclusive finding saying why. Nothing here throws for data that are merely incomplete.
/// @param records trial records (any arms; one per (item, seed, arm))
/// @param options assignment model, rollout design, level, bootstrap
/// @returns the two demonstrations and five findings
/// @throws invalid_argument on bad options or on duplicate (item, seed, arm) records
[[nodiscard]] observational_result observational_analysis(std::span<const trial_record> records,
                                                          const observational_options& options = {});

namespace detail {

/// @brief "Does the interval of `e` cover `truth`" as a finding.
finding coverage_finding(finding_key key, const effect_estimate& e, const effect_estimate& truth,
                         std::string method, std::size_t n, std::string_view what,
                         std::string_view truth_name, const std::string& why_missing);

/// @brief The estimate of a failed method: NaN fields with status failed.
effect_estimate failed_estimate(std::string method);

/// @brief Replaces the standard error and interval of `point` (an estimate on every unit) by a
/// percentile cluster bootstrap over items: replicate r draws G items with replacement from
/// make_stream({seed, 0, tag, r}) and calls `statistic` on the units of the drawn items (item
/// after item; a unit index may repeat). A replicate whose statistic is not finite is left out;
/// their number goes to `notes`. SE = SD of the kept replicates; limits: type-7 quantiles at
/// (1 ∓ level)/2. Fewer than 2 items or 2 kept replicates: `point` with NaN interval, a note.
/// @param point the estimate on all units (its estimate is kept)
/// @param item_of item of each unit
/// @param statistic the estimator on a list of unit indices; NaN when it cannot run
/// @param replicates B
/// @param notes where the dropped-replicate counts are recorded, prefixed by `what`
/// @returns `point` with std_error, ci_low, ci_high, level replaced and method suffixed
effect_estimate item_cluster_bootstrap(effect_estimate point, std::span<const std::size_t> item_of,
                                       const std::function<double(std::span<const std::size_t>)>& statistic,
                                       double level, std::size_t replicates, std::uint64_t seed,
                                       std::uint32_t tag, std::vector<std::string>& notes,
                                       std::string_view what);

/// @brief Budget of a budgeted arm (text_budget, the message arms): the record's budget, else the
/// budget of the arm its label parses to (parse_arm), else nothing.
std::optional<double> arm_budget(const trial_record& r);

/// @brief The text_budget arm (by record_arm_kind) with the smallest budget (ties: smaller label),
/// or "". Each arm's budget is its first record's (arm_budget).
std::string smallest_budget_arm(std::span<const trial_record> records);

void check_observational_options(std::string_view fn, const observational_options& o);

/// @brief The production-log demonstration.
production_log_result run_production_log(std::string_view fn, std::span<const trial_record> records,
                                         const observational_options& o);

/// @brief The rollout demonstration.
rollout_result run_rollout(std::string_view fn, std::span<const trial_record> records,
                           const observational_options& o);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/observational-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_OBSERVATIONAL_HPP
