// SPDX-License-Identifier: MIT
// latentaudit: the audit's decision — relay, relay with conditions, text, or no communication —
// with a serving policy and its reasons, from a checklist over the findings (dependency, model
// homogeneity, value, cost-benefit, and the relay-failure checks: stale caches, conflicting
// caches, drifted senders), plus the sequential monitor a serving stack runs online to switch
// relay on, and the relay switch (analyses/relay_switch.hpp) that turns it off.
#ifndef LATENTAUDIT_REPORT_DECISION_HPP
#define LATENTAUDIT_REPORT_DECISION_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../estimators/sequential.hpp"
#include "../serve/relay_policy.hpp"
#include "../trial/record.hpp"
#include "analyses/relay_switch.hpp"
#include "finding.hpp"

namespace latentaudit {

/// @brief The decision's verdict (truth table: docs/audit-report.md "Decision").
enum class decision_verdict : std::uint8_t {
  inconclusive,           ///< "inconclusive": a check the verdict needs is not shown
  relay,                  ///< "relay": every check shown, every risk shown absent
  relay_with_conditions,  ///< "relay with conditions": risks shown present became policy conditions
  relay_unverified,       ///< "relay (unverified)": a risk check not shown either way
  text,                   ///< "text": the relay carries nothing, is less accurate, or does not pay
  no_communication        ///< "no communication": neither text nor the relay carries what B uses
};

/// @brief The verdict as report.json, report.md and report.html write it ("relay with conditions", ...).
[[nodiscard]] constexpr const char* decision_verdict_name(decision_verdict v) noexcept {
  switch (v) {
    case decision_verdict::relay:
      return "relay";
    case decision_verdict::relay_with_conditions:
      return "relay with conditions";
    case decision_verdict::relay_unverified:
      return "relay (unverified)";
    case decision_verdict::text:
      return "text";
    case decision_verdict::no_communication:
      return "no communication";
    case decision_verdict::inconclusive:
      break;
  }
  return "inconclusive";
}

/// @brief Whether `v` is one of the relay verdicts ("relay", "relay with conditions", "relay
/// (unverified)"; only the first two allow relaying: audit_decision::relay_allowed).
[[nodiscard]] constexpr bool is_relay_verdict(decision_verdict v) noexcept {
  return v == decision_verdict::relay || v == decision_verdict::relay_with_conditions ||
         v == decision_verdict::relay_unverified;
}

/// @brief One item of the decision checklist.
struct checklist_item {
  std::string name;                        ///< positive_control, dependency, ..., monitor (decide())
  verdict passed = verdict::inconclusive;  ///< yes = the check supports relaying
  std::string reason;                      ///< one sentence with the numbers behind it
  /// the findings the check reads, by id (report.json): those of `kinds` — a kind the catalog reads
  /// only where present (finding_kind_info::read_when_present) by the findings of that kind, the
  /// others whether or not computed; the risk family's for each of its checks
  std::vector<std::string> findings = {};
  /// cells the check reads directly, not through a finding (dependency: the control arm's need
  /// records, whose accuracy "no communication" reads)
  std::vector<arm_cell> reads = {};
  /// the kinds of finding the check reads, in catalog order (finding_kinds_read_by(name): the catalog
  /// rows that name this check)
  std::vector<finding_kind> kinds = {};
  /// a risk check (no_need_harm, freshness, conflict, drift, cross_model; set where decide() builds
  /// them): "yes" = the risk shown absent, "no" = shown present, a condition of the policy when the
  /// decision relays (report.md and report.html mark it so, and the policy lines whose rules rest on it)
  bool risk = false;
};

/// @brief The sequential monitor replayed on the audit's own need-regime data, at the item level:
/// one observation per item — the item's mean paired difference relay − reference over its seeds,
/// in [−1, 1] — in item-id order (fixed before any outcome is seen), fed to the betting monitor
/// (estimators/sequential.hpp, betting_monitor). Seeds of one item are never treated as
/// independent observations.
struct monitor_replay {
  std::string contrast;                ///< e.g. "kv_full - no_comm"
  std::string unit = "item";           ///< what one observation is: an item (its seeds averaged)
  std::size_t pairs = 0;               ///< (item, seed) pairs behind the items
  betting_sequential_result result;    ///< state after every item (n = items)
  std::optional<std::size_t> stop_at;  ///< first item at which the always-valid test rejected θ = 0
};

/// @brief The decision with its reasons.
struct audit_decision {
  /// relay, relay with conditions, relay (unverified), text, no communication or inconclusive
  /// (decision_verdict_name writes it; truth table: docs/audit-report.md "Decision")
  decision_verdict verdict = decision_verdict::inconclusive;
  /// true exactly when the verdict is "relay" or "relay with conditions": every check the relay
  /// depends on is shown (its risks shown absent, or shown present and turned into a policy
  /// condition). The one field a pipeline gates relay traffic on.
  bool relay_allowed = false;
  /// the risk checks (no_need_harm, freshness, conflict, drift, cross_model) that were not tested
  /// or stayed inconclusive, in checklist order: non-empty only with "relay (unverified)" or where
  /// a verdict before the risks was reached ("inconclusive", "text")
  std::vector<std::string> unverified;
  /// the serving policy, one rule a line (e.g. "relay only fresh caches: fall back to text when the
  /// cache is older than the document"); empty when inconclusive
  std::vector<std::string> policy;
  /// the policy as data (report.json `decision.rules`, docs/policy.schema.json): rules over request
  /// features in evaluation order (the first whose conditions hold fires; relay_policy evaluates
  /// them); each names its line in `policy` (rule.line) and the check and finding it rests on.
  /// Written with its line in one place (detail::add_policy_line): every line has a rule.
  std::vector<policy_rule> rules;
  /// `rules` replayed on the audit's own requests (replay_relay_policy): the policy's accuracy and
  /// relay share (report.json `decision.policy_replay`)
  policy_replay replay;
  /// positive_control, dependency, homogeneity, value, cost, no_need_harm, freshness, conflict,
  /// drift, cross_model, monitor
  std::vector<checklist_item> checklist;
  std::vector<monitor_replay> monitors;  ///< replays of the sequential monitor
  switch_replay relay_switch;            ///< the relay switch replayed with a change point
  std::string link;                      ///< link the cost check used
  std::string summary;                   ///< one paragraph (its first sentence names the verdict's cause)
};

/// @brief Options of decide().
struct decision_options {
  std::string link;  ///< link preset for the cost check ("" = the records' link, else pcie4)
  /// the arms of the monitor replay: each answers by label, else by arm_kind (the resolver every
  /// analysis of the report shares, report/detail/arm_roles.hpp)
  std::string relay_arm = "kv_full";
  std::string control_arm = "no_comm";  ///< the control of the first replay (relay − control)
  std::string text_arm = "text_full";   ///< the reference of the second replay (relay − text)
  /// item-level betting monitor: level alpha, bounds [−1, 1], θ₀ = 0 (the defaults)
  betting_sequential_options monitor{};
  /// the margin of the findings (audit_options::equivalence_margin): "no communication" needs
  /// kv_full − no_comm's verdict upper limit below it
  double margin = 0.05;
  /// the audit's α (audit_options::alpha): the level of the risk family's Holm procedure over the
  /// absence claims of no_need_harm, freshness and conflict; in (0, 0.5)
  double alpha = 0.05;
  relay_switch_options switch_options{};  ///< the relay switch's replay
  /// the items the betting limit of "B answers on its own" is tuned for (audit_options::horizon,
  /// `audit --until-decided`; 0 = the sample's size)
  std::size_t horizon = 0;
  /// the report's one table (every arm's records grouped by (item, seed) once; build_audit_report
  /// sets it, for these very records): the analysis reads its arms' columns instead of grouping the
  /// records again. Null (the default): it groups them itself.
  const detail::unit_records* units = nullptr;
};

namespace detail {

const finding* find_finding(std::span<const finding> fs, std::string_view id);

/// @brief The finding of kind `k` with parameters `p` among `fs` (by its id, finding_id(k, p), so a
/// finding built by hand from that id answers too), or null.
const finding* find_finding(std::span<const finding> fs, finding_kind k, const finding_params& p = {});

std::string finding_text(const finding* f);

/// @brief finding_text() of a finding in seconds (the cost findings), written in milliseconds.
std::string finding_ms_text(const finding* f);

/// @brief Need-regime item mean differences treated − control, one per item in item-id order (the
/// mean over the item's seeds that have both arms; items without such a seed are left out).
struct need_item_diffs {
  std::vector<double> d;  ///< item means, in [−1, 1]
  std::size_t pairs = 0;  ///< (item, seed) pairs behind them
};

/// @brief The need-regime item mean differences of `treated` − `control` in `rs` (pairs from the
/// report's one table `units` when given, else grouped here: units_of()).
/// @throws invalid_argument naming "decide" and the (item, seed, arm) if one of them has two records
need_item_diffs need_item_differences(std::span<const trial_record> rs, std::string_view treated,
                                      std::string_view control, const unit_records* units = nullptr);

}  // namespace detail

/// @brief Decides from the findings and the records.
///
/// Checklist (docs/audit-report.md "Decision"), in this order:
/// - positive_control: need.text_beats_no_comm — text relay must beat no communication in the need
///   regime, else the need regime does not test dependency;
/// - dependency: need.kv_beats_no_comm — without a need-regime effect there is nothing to relay;
/// - homogeneity: every KV record other than cross_model and the drift arms (arm_kind "drifted" or
///   label kv_drift_*: planted drift, judged by the drift check) has sender fingerprint = receiver
///   fingerprint, and need.cross_model_beats_no_comm is not "yes"; "no" if either fails;
/// - value: need.kv_noninferior_to_text;
/// - cost: cost.relay_pays_on_<link>;
/// - no_need_harm: no_need.kv_changes_accuracy — "no" when a negative change is shown;
/// - freshness: stale.kv_worse_than_text — "no" when a stale cache is shown worse than the current
///   text (condition: relay only fresh caches, text otherwise), "yes" when a loss is excluded,
///   inconclusive otherwise (also when no stale regime was tested);
/// - conflict: conflict.kv_worse_than_no_comm — "no" when a conflicting cache is shown worse than no
///   communication (condition: do not relay when B's own prompt binds the document's keys);
/// - drift: drift.tolerance_steps — "no" when the tolerance is located (condition: relay only
///   between identical fingerprints; non-inferiority to same-model relay fails at about k steps),
///   "yes" when the finding is "no" (every tested drift step shown non-inferior), else inconclusive;
/// - cross_model: need.cross_model_beats_no_comm — "yes" when a foreign model's cache is shown not
///   to help (the relay's benefit needs identical models), inconclusive when absent or inconclusive
///   (a foreign cache that helps fails homogeneity instead);
/// - monitor: the item-level betting monitor replayed on relay − control (informational).
/// The risk checks are no_need_harm, freshness, conflict, drift and cross_model: "yes" = the risk
/// shown absent, "no" = shown present (a policy condition), inconclusive = not tested or not shown.
/// The absence claims of no_need_harm, freshness and conflict are one family: a "yes" of theirs
/// stands only if Holm at `alpha` over the three findings' noninferiority_p rejects it (else the
/// check is inconclusive and the verdict "relay (unverified)"), so P(relay allowed while any of
/// these risks is present without its condition) ≤ alpha. Every relay policy starts with "relay
/// only between identical model fingerprints", so drift and cross_model claims let no drifted or
/// foreign cache through and stay outside the family (docs/audit-report.md "Testing along the
/// decision").
/// Verdict: "no communication" if positive_control is "no" (text's benefit beyond the margin
/// excluded), kv_full − no_comm's verdict upper limit is below `margin` too, and B answers the
/// need-regime requests on its own (no_comm's item-clustered accuracy, betting lower limit at
/// monitor.alpha/2, above 0.5; when nothing answers the task is broken: inconclusive); else
/// "inconclusive" if positive_control is not "yes"; "text" if dependency is "no"; if dependency,
/// homogeneity, value and cost are all "yes": "relay (unverified)" when a risk check is
/// inconclusive (listed in `unverified`; relay_allowed stays false), else "relay with conditions"
/// when no_need_harm, freshness, conflict or drift is "no" (each "no" adds its rule to the policy),
/// else "relay"; "text" if
/// dependency is "yes" and value or cost is "no"; otherwise "inconclusive". The relay switch is
/// replayed on relay, text and control (informational).
/// @throws invalid_argument on bad monitor or switch options, alpha ∉ (0, 0.5), or two records of
///         one (item, seed, arm) of the monitor's arms.
[[nodiscard]] audit_decision decide(std::span<const finding> findings, std::span<const trial_record> records,
                                    const decision_options& o = {});

/// @brief Whether `d` ends an audit that stops when it has decided (`audit --until-decided`): its
/// verdict is "relay", "relay with conditions", "text" or "no communication" — every check that
/// verdict reads is decided — and, for a relay verdict, every cache map's check ("map_<arm>") is
/// decided too (its policy line relays through the map or sends text). "inconclusive" and "relay
/// (unverified)" (a risk check not yet shown) go on to the next batch. docs/audit-report.md "An
/// audit that stops when it has decided".
[[nodiscard]] inline bool decision_settled(const audit_decision& d) noexcept {
  if (d.verdict == decision_verdict::text || d.verdict == decision_verdict::no_communication) return true;
  if (d.verdict != decision_verdict::relay && d.verdict != decision_verdict::relay_with_conditions)
    return false;
  return std::none_of(d.checklist.begin(), d.checklist.end(), [](const checklist_item& c) {
    return c.name.rfind("map_", 0) == 0 && c.passed == verdict::inconclusive;
  });
}

/// @brief The (regime, arm) cells an audit that stops arms one by one (`audit --until-decided`)
/// runs on its next batch of items: none once `d` is settled (decision_settled); else every cell a
/// finding of `findings` that is not decided ("inconclusive") reads (finding::reads), and the cells
/// the decision still needs — while its verdict is "inconclusive" those of every check, else those
/// of the checks still "inconclusive" (each check's findings' reads and its own reads; the monitor
/// is informational and holds none). A cell no undecided finding or open check reads stops: its
/// findings are decided, and their intervals, confidence sequences over the items the cell ran,
/// stay valid at that stop. docs/audit-report.md "An audit that stops when it has decided".
[[nodiscard]] std::set<arm_cell> arm_cells_to_run(std::span<const finding> findings, const audit_decision& d);

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/decision-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_DECISION_HPP
