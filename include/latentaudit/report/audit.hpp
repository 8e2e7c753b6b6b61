// SPDX-License-Identifier: MIT
// latentaudit: the core of the audit — from trial records alone (any stack) to per-arm accuracy,
// paired effects with Holm control, the placebo decomposition, TOST equivalence, subgroup effects,
// the noise dose-response with its tolerance threshold, the bytes/accuracy frontier, and the
// machine-readable findings. Formulas, rules and references: docs/audit-report.md.
//
// Design. One record per (item, seed, arm); the unit of pairing is (item, seed), the cluster is
// the item (the seeds of one item share its document). Each paired difference carries two
// intervals: the descriptive 1 − α interval is a cluster bootstrap over items (percentile, R boot's
// quantile rule, B = bootstrap_replicates, every replicate r drawing from the counter-based stream
// {seed, 0, 0, r}: all contrasts on the same items see the same draws — common random numbers),
// replaced by the betting interval when the bootstrap is a point mass or has < 2 items; the
// verdict interval is the 1 − 2α betting interval over items (estimators/betting.hpp, α per side:
// 90 % at α = 0.05), valid at any number of items and never of zero width. Every p-value is the
// betting p-value over items of "mean item difference = 0". Arms are found by label ("kv_full",
// "no_comm", ...) or, failing that, by arm_kind (several arms of one kind: the first label in sorted
// order, with a warning) — detail::resolve_arm_roles(), the one resolver every analysis of the
// report uses (report/detail/arm_roles.hpp). An analysis whose arms are absent is
// skipped with a warning, and its finding is "inconclusive" with n = 0.
//
// Finding rules (α = audit_options::alpha, m = equivalence_margin, "significant" = Holm-adjusted
// p < α over the Holm family of paired effects, [L, U] = the 1 − 2α verdict interval, reported as
// the finding's ci_low / ci_high):
//   need.text_beats_no_comm      the positive control; a "beats" finding (below). When it is not
//                                "yes", every other need.*, no_need.*, cost.*, stale.*, conflict.*,
//                                noise.* and drift.* finding and the
//                                decision become "inconclusive" (apply_positive_control).
//   need.kv_beats_no_comm, need.<placebo>_beats_no_comm (report/analyses/effects.hpp),
//   need.cross_model_beats_no_comm
//                                "beats": yes if significant and estimate > 0; else no if U < m
//                                (a benefit of m or more is excluded); else inconclusive.
//   need.kv_noninferior_to_text  kv_full − text_full: yes if L > −m (one-sided α); no if U < −m
//                                (inferiority shown); inconclusive otherwise. The detail says when
//                                superiority is shown (L > 0).
//   need.kv_equivalent_to_text   TOST by interval inclusion: yes if −m < L and U < m; no if L ≥ m
//                                or U ≤ −m; inconclusive otherwise.
//   no_need.kv_changes_accuracy  yes if kv_full − no_comm is significant (either sign); else no if
//                                −m < L and U < m; else inconclusive.
//   noise.tolerance_sigma        estimate = the σ where the isotonic fit of the noise − kv_full
//                                difference reaches −noninferiority_margin (report/analyses/noise.hpp);
//                                yes if it and both interval limits lie in the tested range; "no"
//                                does not apply; inconclusive otherwise.
// The relay-failure findings (their own Holm family of the three tests below; "worse": yes if Holm
// p < α and estimate < 0, no if L > −m, else inconclusive; a missing regime or arm: inconclusive):
//   stale.kv_worse_than_text     kv_full − text_full on stale units (analyses/stale.hpp).
//   stale.kv_gives_stale_answer  kv_full's stale answers minus other wrong answers (stale_answer):
//                                yes if Holm p < α and estimate > 0; no if U < m.
//   conflict.kv_worse_than_no_comm kv_full − no_comm on conflict units, with the attention-mass
//                                mechanism (analyses/conflict.hpp).
//   drift.tolerance_steps        as noise.tolerance_sigma with the drift steps of the kv_drift_<k>
//                                arms as the dose (analyses/drift.hpp); "no" when not located and
//                                every tested step is shown non-inferior (fixed sequence).
// The message findings (their own Holm family: every kv_message − text_message_<k> contrast, per k
// and regime; analyses/message.hpp):
//   message.kv_vs_text_message.k<k>.<regime>  "beats": yes if Holm p < α and estimate > 0 (A's
//                                cache beats A's message of at most k tokens); no if U < m.
#ifndef LATENTAUDIT_REPORT_AUDIT_HPP
#define LATENTAUDIT_REPORT_AUDIT_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../estimators/betting.hpp"
#include "../estimators/bootstrap.hpp"
#include "../estimators/detail/distributions.hpp"
#include "../estimators/equivalence.hpp"
#include "../estimators/multiplicity.hpp"
#include "../estimators/paired_binary.hpp"
#include "../trial/record.hpp"
#include "../trial/task_file.hpp"
#include "analyses/conflict.hpp"  // conflict_analysis
#include "analyses/drift.hpp"     // drift_analysis
#include "analyses/mapped.hpp"    // mapped_analysis
#include "analyses/message.hpp"   // message_analysis
#include "analyses/noise.hpp"     // dose_point, noise_tolerance
#include "analyses/stale.hpp"     // stale_analysis
#include "detail/arm_roles.hpp"
#include "detail/audit_data.hpp"
#include "finding.hpp"

namespace latentaudit {

/// @brief Options of analyse_records.
struct audit_options {
  double alpha = 0.05;                  ///< family-wise level (Holm) and 1 − α intervals; in (0, 0.5)
  double equivalence_margin = 0.05;     ///< accuracy points: TOST of kv_full vs text_full (declared margin)
  double noninferiority_margin = 0.05;  ///< noise tolerance: σ where the fitted difference reaches −this
  std::size_t bootstrap_replicates = 2000;  ///< B of every cluster bootstrap; (B + 1)·α/2 ≥ 1
  std::uint64_t seed = 1;                   ///< every bootstrap stream derives from it
  unsigned threads = 1;  ///< bootstrap worker threads (0 = all cores); results do not depend on it
  /// receiver latency SLO (seconds) for the cost analysis; empty: no SLO is evaluated (cost_options)
  std::optional<double> latency_slo_s = {};
  /// receiver prefill throughput (tokens/s) for the cost projection; empty: a table at 3 throughputs
  std::optional<double> prefill_tokens_per_s = {};
  /// `--link measured`: the cost verdicts (and the decision) use the link fitted from the records'
  /// transfer_measured_s (fit_link, report/analyses/link_fit.hpp) as their primary link
  bool link_measured = false;
  /// build_audit_report() runs the observational demonstrations (teaching material, never a finding;
  /// the most expensive part of a report on large record sets): false skips them, and report.md and
  /// report.json say so; nothing a finding or the decision reads changes
  bool demonstrations = true;
  /// build_audit_report() fits the relay gate (the gate.* findings, report.json "gate"; cross-fitted
  /// logistic models, about a third of a report's time on the decision's Monte Carlo designs):
  /// false skips it, the gate's `missing` says so, and nothing the decision reads changes (the
  /// decision does not read gate.*); the Monte Carlo of the decision uses it
  bool relay_gate = true;
  /// the task file the records ran on (item i = its line i; the records' task_id must equal the
  /// line's id): report.html's drill-down shows each trial's query and accepted answers from it;
  /// null: the drill-down shows what the records carry. `latentaudit audit --tasks` passes its file,
  /// `report --records DIR` the one design.json names when its SHA-256 still matches.
  std::shared_ptr<const task_file> tasks = {};
  /// why `tasks` is null when a file was named (e.g. "the task file ... changed since the audit"):
  /// report.html's drill-down says it; empty otherwise
  std::string tasks_note = {};
  /// the arms of the design (design.json "arms"): completeness counts each of them on every
  /// (item, seed) unit; empty: the arms seen in the records
  std::vector<std::string> design_arms = {};
  /// the design's items (design.json "items"; with `design_seeds`): "the design is the denominator"
  /// — every (item, seed) unit of items × seeds that lacks a record in some arm, including a unit
  /// lacking every arm (a stack that lost it with its failed relay), is missing and bounded as
  /// missing records are (worst case; docs/audit-report.md "Missing records"), counted in
  /// completeness and input_warnings. 0 (no design): units missing in every arm cannot be seen, and
  /// unequal seeds per item get a warning naming the items. Read only for a whole design (horizon 0).
  std::uint64_t design_items = 0;
  std::uint64_t design_seeds = 0;  ///< the design's seeds per item (design.json "seeds"); 0: none
  /// each design item's regime (item i = entry i: the task file's), for the items no record holds;
  /// empty: such an item is counted as a need item (the regime every check that lets relay through reads)
  std::vector<std::string> design_item_regime = {};
  /// the engine that ran the trials ("reference", "llama.cpp"): run_audit_report writes the
  /// "Unavailable on this engine" section of report.md and report.html for it, with `arms_unavailable` and
  /// the records' `unavailable` metrics; empty: no section
  std::string engine = {};
  /// the arms left out of the design on `engine`, and why (trial/engine_support.hpp skipped_arm)
  std::vector<std::pair<std::string, std::string>> arms_unavailable = {};
  /// `audit --until-decided`: the records are the first items of a design of `horizon` items that
  /// was looked at after every batch and stopped once decided. Every betting interval and p-value
  /// over items is then tuned for `horizon` items (betting_options::horizon: a confidence sequence,
  /// valid at the data-dependent stop), and the cost findings' bootstrap runs at α/`looks` (a union
  /// bound over the looks the rule may take). 0: the records are the whole design.
  std::size_t horizon = 0;
  /// the most looks the stopping rule may take (≥ 1; with horizon 0 it must be 1)
  std::size_t looks = 1;
  /// with a horizon: the items of each regime in the design ("need", "no_need", "stale",
  /// "conflict"; counted before any trial, as a regime is the task's, not an outcome), which the
  /// intervals over that regime's items are tuned for; a regime not named uses `horizon`
  std::map<std::string, std::size_t> regime_horizon = {};
  /// `audit --until-decided`: the trials the audit scheduled, batch by batch (schedule.json): an
  /// arm stopped on a regime's items once every finding that reads it was decided. A trial it left
  /// out is not a missing record (no worst-case bound, no completeness gap); a record of one is
  /// corrupt. Empty (the default): every arm of the design was scheduled on every item.
  arm_schedule schedule = {};
};

/// @brief Completeness of one arm in one regime: which (item, seed) units of the regime hold its
/// record, and how many of its records are failed relays (relay_error).
struct arm_completeness {
  std::string arm;     ///< arm label (a design arm, or one seen in the records)
  std::string regime;  ///< "need", "no_need", "stale", "conflict" or "unknown"
  /// (item, seed) units of the regime where this arm was scheduled (some arm holds a record there)
  std::size_t units = 0;
  std::size_t records = 0;  ///< units holding this arm's record
  std::size_t missing = 0;  ///< units lacking it (units − records)
  /// units of the regime the schedule left this arm out of (`audit --until-decided`), not counted
  /// in `units`
  std::size_t not_scheduled = 0;
  std::size_t relay_errors = 0;  ///< its records with relay_error (failed relays, counted as outcomes)
};

/// @brief Accuracy and costs of one arm in one regime ("need", "no_need" or "all").
struct arm_summary {
  std::string arm;          ///< arm label
  std::string arm_kind;     ///< its arm_kind
  std::string regime;       ///< "need", "no_need" or "all" (every record, unknown regimes included)
  std::size_t n = 0;        ///< records
  double accuracy = 0.0;    ///< mean of `correct`
  std::size_t n_items = 0;  ///< distinct items among the records (the clusters)
  /// 1 − α interval clustered by item: betting over the item mean accuracies on [0, 1], α/2 per
  /// side (detail::item_accuracy_interval; widened to hold `accuracy` when items are unbalanced)
  double ci_low = 0.0;
  double ci_high = 0.0;                       ///< upper limit of the item-clustered 1 − α interval
  double mean_bytes = 0.0;                    ///< mean relay bytes on the wire
  double mean_receiver_s = 0.0;               ///< mean latency_split::receiver_s()
  std::optional<double> mean_attention_mass;  ///< mean over the records that carry it
  std::optional<double> mean_hidden_cosine;   ///< mean over the records that carry it
  std::optional<double> mean_next_token_kl;   ///< mean over the records that carry it
};

/// @brief One paired contrast treated − control within a regime.
struct paired_effect {
  std::string id;       ///< "<regime>:<treated>-<control>" (the need regime's kv_full against no_comm, say)
  std::string treated;  ///< treated arm label ("{zeroed,random}" for an average of arms)
  std::string control;  ///< control arm label
  std::string regime;   ///< "need" or "no_need"
  std::size_t n_pairs = 0;     ///< (item, seed) units holding both arms
  std::size_t n_clusters = 0;  ///< distinct items among them
  /// mean over items of the item mean paired difference of `correct` (accuracy points as a
  /// fraction): the quantity the verdict interval covers (equal to the mean over pairs when every
  /// item holds the same number of pairs)
  double estimate = 0.0;
  /// descriptive 1 − α interval: cluster bootstrap over items (percentile); the betting interval
  /// over items (α/2 per side) instead when the bootstrap is a point mass or has < 2 items
  double ci_low = 0.0;
  double ci_high = 0.0;  ///< upper limit of the descriptive interval
  /// verdict interval: betting over items (estimators/betting.hpp), α per side (1 − 2α, 90 % at
  /// α = 0.05); the findings decide on it, except a need-regime superiority finding at one (item,
  /// seed) unit per item and one treated arm, which decides on exact conditional McNemar and reports
  /// a lower limit inverting it (the finding's ci_low; docs/estimators/findings.md). Never of zero
  /// width.
  double verdict_low = 0.0;
  double verdict_high = 0.0;  ///< upper limit of the verdict interval
  /// p-value of "mean item difference = 0": for a need-regime superiority contrast (Holm family or
  /// decision sequence) at one unit per item and one treated arm, exact conditional McNemar's
  /// (two-sided; the largest over the worst-case imputations of missing records); else the betting
  /// p-value over items
  double p_value = 0.0;
  /// Holm-adjusted over the family (effects: every contrast with in_holm_family; decomposition:
  /// its own contrasts); NaN outside the family
  double p_holm = 0.0;
  /// false for the decomposition material (each placebo − kv_full) and the steps of the
  /// decision's fixed sequence (in_decision_sequence)
  bool in_holm_family = true;
  /// need regime text_full − no_comm and kv_full − no_comm: steps of the decision's fixed sequence,
  /// each tested at full α (one-sided: verdict lower limit > 0) once the steps before it are shown
  bool in_decision_sequence = false;
  std::string method;  ///< how it was computed
  /// the item mean paired differences behind the estimate (ascending item), which
  /// detail::noninferiority_p() reads for the decision's risk family
  std::vector<double> item_diffs;
  /// worst-case bounds when units of the regime lack one of the arms (missing.units = 0: complete);
  /// the findings then hold a verdict only if it holds under both bounds
  detail::missing_bounds missing;
  /// the (item, seed) pairs behind each entry of item_diffs: an item's requests
  std::vector<double> item_pairs;
  /// the items hold unequal numbers of pairs (observed, or under the worst-case imputation): the mean
  /// over items and the mean over requests (items weighted by their pairs) can differ
  bool unequal_seeds = false;
  /// the mean over requests Σ n_g·D_g / Σ n_g (the mean over pairs; equal to `estimate` with equal seeds)
  double request_estimate = std::numeric_limits<double>::quiet_NaN();
  /// with unequal_seeds: the one-sided betting p of "the mean over requests loses by the margin or
  /// more" (detail::request_noninferiority_p; the largest of the observed pairs' and the `low`
  /// imputation's); NaN with equal seeds
  double request_noninferiority_p = std::numeric_limits<double>::quiet_NaN();
};

/// @brief One arm on the bytes/accuracy plane (need regime).
struct frontier_point {
  std::string arm;          ///< arm label
  double mean_bytes = 0.0;  ///< mean relay bytes
  double accuracy = 0.0;    ///< accuracy
  double ci_low = 0.0;      ///< item-clustered 1 − α interval (as arm_summary::ci_low), lower limit
  double ci_high = 0.0;     ///< its upper limit
  bool pareto = false;      ///< no other point has accuracy ≥ and bytes ≤, one of them strictly
};

/// @brief One subgroup effect of a contrast (named cate_effect: estimators/heterogeneity.hpp
/// already defines latentaudit::subgroup_effect).
struct cate_effect {
  std::string arm_pair;     ///< "kv_full-no_comm"
  std::string variable;     ///< "regime", or a covariate's name ("doc_tokens", a task file's)
  std::string level;        ///< "need", "no_need", a bin "Q1 [a, b]" (later bins (a, b]) or a label
  std::string regime;       ///< the regime the subgroup lies in
  std::size_t n = 0;        ///< pairs
  double estimate = 0.0;    ///< mean over items of the item mean paired difference
  double ci_low = 0.0;      ///< cluster bootstrap over items, percentile (1 − α)
  double ci_high = 0.0;     ///< upper limit
  double p_value = 0.0;     ///< McNemar exact
  double p_adjusted = 0.0;  ///< Holm over every subgroup listed
};

/// @brief The nine stages of a trial's latency (latency_split's fields, in order), as the latency
/// figures name them.
inline constexpr std::array<std::string_view, 9> latency_stage_names = {
    "A prefill", "export", "policy",    "encode",  "transfer (modeled)",
    "decode",    "import", "B prefill", "B decode"};

/// @brief One arm's latency by stage summed over its need-regime records (the latency figures draw
/// total_s[i] / records, the mean per trial).
struct arm_stage_latency {
  std::string arm;                  ///< arm label
  std::size_t records = 0;          ///< the records summed
  std::array<double, 9> total_s{};  ///< seconds, one per latency_stage_names entry
};

/// @brief Everything the core audit computes from the records.
struct audit_core {
  std::vector<arm_summary> arms;             ///< per arm and regime
  std::vector<paired_effect> effects;        ///< the paired effects (Holm family: in_holm_family)
  std::vector<paired_effect> decomposition;  ///< need: presence, pairing, content
  std::vector<cate_effect> cate;             ///< kv_full − no_comm by regime and (need) every covariate
  noise_tolerance noise;                     ///< dose-response and threshold
  stale_analysis stale;                      ///< regime "stale": relay of an old cache vs current text
  conflict_analysis conflict;                ///< regime "conflict": relay that contradicts B's prompt
  drift_analysis drift;                      ///< drift arms: dose-response over fine-tuning steps
  message_analysis messages;                 ///< message arms: A's cache vs A's message, per k and regime
  mapped_analysis mapped;                    ///< kv_mapped arms: relay through a cross-model cache map
  std::vector<frontier_point> frontier;      ///< need regime, ascending bytes
  std::vector<finding> findings;             ///< the ids of docs/audit-report.md, in that order
  /// per arm (the design's and those seen, by label) and regime: records, missing units, relay errors
  std::vector<arm_completeness> completeness;
  /// the record fields a decision check needs that the records lack ("regime", "receiver_fingerprint",
  /// "sender_fingerprint", "timings", "bytes"), each once; docs/records.md says which check reads which
  std::vector<std::string> missing_fields;
  /// one line per missing field and per arm with missing units or failed relays: what a caller prints
  /// on stderr and in its summary (a subset of the situations `warnings` describes)
  std::vector<std::string> input_warnings;
  /// sentences report.md puts under the decision's heading: what the decision cannot see (units
  /// missing in every arm, without a design) and whose mean it decides (items and requests, with
  /// unequal seeds per item); report.json completeness.headline
  std::vector<std::string> headline;
  /// (item, seed) units of the design no record holds in any arm (bounded as missing in every arm);
  /// 0 without a design (audit_options::design_items)
  std::size_t design_units_absent = 0;
  bool design_given = false;          ///< the units were counted against a design (design_items/seeds)
  std::size_t n_records = 0;          ///< records read
  std::size_t n_items = 0;            ///< distinct items
  std::size_t n_seeds = 0;            ///< distinct seeds
  std::vector<std::string> warnings;  ///< dropped units, absent arms, skipped analyses
  /// the label playing each role (detail::resolve_arm_roles: the one resolution the analyses read)
  detail::arm_roles roles;
  /// the need regime's records (and those without a regime), per arm in label order: each stage's total
  std::vector<arm_stage_latency> stage_latency;
};

/// @brief Runs the core audit on a set of records from any stack.
///
/// See the file comment and docs/audit-report.md for the estimands, intervals, tests and the
/// rule behind every finding's verdict.
///
/// @code
/// const auto core = analyse_records(read_records("records.jsonl"));
/// for (const finding& f : core.findings) std::cout << f.id << ": " << verdict_name(f.answer) << "\n";
/// @endcode
/// @param records one record per (item, seed, arm) (at least one)
/// @param o levels, margins, bootstrap size, seed, threads
/// @returns the tables and the findings; a unit lacking one arm of a contrast is dropped from that
///          contrast only (with a warning); an analysis whose arms are absent is skipped and its
///          finding is inconclusive with n = 0
/// @throws invalid_argument on no records or bad options; corrupt_data naming the key for a
///         duplicate (item, seed, arm), arms of one (item, seed) with different regimes, an arm
///         with two arm_kinds, or a non-finite field
[[nodiscard]] audit_core analyse_records(std::span<const trial_record> records, const audit_options& o = {});

/// @brief The positive-control gate: unless `control` (need.text_beats_no_comm) is "yes", every
/// finding of `findings` whose kind the catalog gates (finding_kind_info::gated: the need.*, no_need.*,
/// cost.*, stale.*, conflict.*, drift.*, noise.*, message.* and mapped.* kinds other than the control
/// itself; a finding of kind finding_kind::unknown is not gated) becomes "inconclusive"; its estimate
/// and interval stay, its detail starts with positive_control_reason and keeps the verdict it would
/// have had. Idempotent.
/// @param findings the findings to gate (in place)
/// @param control the positive-control finding (nullptr: absent, i.e. not "yes")
void apply_positive_control(std::span<finding> findings, const finding* control);

// ---- implementation ----------------------------------------------------------------------------
namespace detail {

inline constexpr double audit_nan = std::numeric_limits<double>::quiet_NaN();

/// @brief Checks audit_options.
void check_audit_options(std::string_view fn, const audit_options& o);

/// @brief The items an interval over items of `regime` is tuned for: o.regime_horizon's entry for
/// it, else o.horizon (0: each sample's own size).
[[nodiscard]] inline std::size_t horizon_of(const audit_options& o, std::string_view regime) {
  const auto it = o.regime_horizon.find(std::string(regime));
  return it != o.regime_horizon.end() ? it->second : o.horizon;
}

/// @brief Each arm's latency by stage summed over the need regime's records and those without a
/// regime, arms in label order (audit_core::stage_latency).
/// @param records the trial records
/// @returns one entry per arm
[[nodiscard]] std::vector<arm_stage_latency> stage_latency_by_arm(std::span<const trial_record> records);

/// @brief analyse_records() on arm roles already resolved: build_audit_report() resolves them once
/// (resolve_arm_roles) and hands the same roles to every analysis.
/// @param records one record per (item, seed, arm) (at least one)
/// @param o levels, margins, bootstrap size, seed, threads
/// @param roles the label of each role ("" = absent)
/// @param role_warnings the warnings of the resolution (added to the core's warnings)
/// @param table receives, when given, the unit × arm table the analyses read (every arm's records
///        grouped by (item, seed)): the report's one table, which cost, the gate, the observational
///        demonstrations and the decision then read too (their options' `units`)
/// @returns as analyse_records()
/// @throws as analyse_records()
[[nodiscard]] audit_core analyse_records_with_roles(std::span<const trial_record> records,
                                                    const audit_options& o, const arm_roles& roles,
                                                    std::span<const std::string> role_warnings,
                                                    unit_records* table = nullptr);

/// @brief Fills out.completeness (per arm, by label, and regime: units, records, missing, relay
/// errors; the design arms of `o` and the arms seen), out.missing_fields (what a decision check needs and no
/// record holds) and out.input_warnings (one line per missing field and per arm with missing units or failed
/// relays).
void audit_completeness(const audit_data& d, std::span<const trial_record> records, const audit_options& o,
                        audit_core& out);

/// @brief Fills out.design_given, out.design_units_absent and their input_warnings and headline: with a
/// design (audit_options::design_items/design_seeds), the units it lists that no record holds; without
/// one, the items with fewer seeds than the most any item holds and the items with fewer records than
/// their regime's mode (each warning naming them), and the headline that units missing in every arm
/// cannot be seen.
void design_completeness(const audit_data& d, const audit_options& o, audit_core& out);

/// @brief The first ten of `items`, comma-separated, then "and k more".
[[nodiscard]] std::string item_list(std::span<const std::uint64_t> items);

/// @brief Level in percent, as text ("95").
[[nodiscard]] std::string percent(double level);

/// @brief The item-clustered 1 − α accuracy interval of one arm: `item_means` are the mean
/// `correct` of each item's records (each in [0, 1], one per item), `accuracy` the pooled mean
/// reported with it. The betting interval (bounded_mean_interval on [0, 1], (1 − level)/2 per
/// side; Waudby-Smith & Ramdas 2024) for the mean item accuracy: the seeds of an item are one
/// observation, valid at every number of items, never of zero width. Limits widened to hold
/// `accuracy` (it differs from the item mean only when items hold unequal numbers of records).
/// @param item_means per-item accuracies (at least one)
/// @param accuracy the pooled accuracy x / n
/// @param level the confidence level, in (0, 1)
/// @param horizon the items the bets are tuned for (audit_options::horizon; 0 = item_means' size)
/// @returns estimate = accuracy and the limits
/// @throws invalid_argument for no items or a value outside [0, 1]
[[nodiscard]] betting_interval item_accuracy_interval(std::span<const double> item_means, double accuracy,
                                                      double level, std::size_t horizon = 0);

/// @brief Wilson interval, or NaN limits for n = 0.
[[nodiscard]] proportion_interval wilson_or_nan(std::size_t x, std::size_t n, double level);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/audit-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_AUDIT_HPP
