// SPDX-License-Identifier: MIT
// latentaudit: the catalog of finding kinds — the one table that owns each finding's id pattern,
// family, polarity, question and statements, whether the positive control gates it, the check of
// the decision that reads it and the arms it needs (as plan_of() owns each arm, trial/arm.hpp).
// A finding carries its kind and typed parameters (finding_key); its id is produced from them by
// finding_id() and never parsed back. docs/design.md "Finding catalog"; the ids:
// docs/audit-report.md "Findings".
#ifndef LATENTAUDIT_REPORT_FINDING_CATALOG_HPP
#define LATENTAUDIT_REPORT_FINDING_CATALOG_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../trial/arm.hpp"

namespace latentaudit {

/// @brief What a finding is, one value a catalog row (finding_catalog()). `unknown` is a finding
/// no catalog row produced (one built by hand from an id): the renderers write it as "<id>: <verdict>.".
enum class finding_kind : std::uint8_t {
  unknown,                                         ///< not from the catalog
  need_text_beats_no_comm,                         ///< the positive control
  need_kv_beats_no_comm,                           ///< the dependency on accuracy
  need_kv_carries_information,                     ///< the dependency check (accuracy, then likelihoods)
  need_kv_raises_answer_probability,               ///< likelihood: kv_full − no_comm on P(answer)
  need_kv_raises_continuation_probability,         ///< likelihood: kv_full − no_comm on P(continuation)
  need_kv_noninferior_to_text,                     ///< the value check
  need_kv_equivalent_to_text,                      ///< TOST of kv_full and text_full
  need_pairing_placebo_beats_no_comm,              ///< another item's cache (pairing_placebo_kind())
  need_zeroed_beats_no_comm,                       ///< a zeroed cache
  need_cross_model_beats_no_comm,                  ///< a foreign model's cache
  need_kv_answer_probability_noninferior_to_text,  ///< likelihood: kv_full − text_full on P(answer)
  need_pairing_raises_answer_probability,          ///< likelihood: kv_full − deranged on P(answer)
  need_kv_continuation_noninferior_to_text,        ///< likelihood: kv_full − text_full on P(continuation)
  need_pairing_raises_continuation_probability,    ///< likelihood: kv_full − deranged on P(continuation)
  no_need_kv_changes_accuracy,                     ///< relay where B needs nothing
  noise_tolerance_sigma,                           ///< the noise dose-response's tolerance
  stale_kv_worse_than_text,                        ///< a stale cache against the current text
  stale_kv_gives_stale_answer,                     ///< B gives the stale value
  conflict_kv_worse_than_no_comm,                  ///< a conflicting cache against no communication
  drift_tolerance_steps,                           ///< the drifted senders' tolerance
  message_kv_vs_text_message,                      ///< A's cache against A's message (budget, regime)
  mapped_beats_unmapped,                           ///< a cache map against the unmapped cache (sender)
  mapped_noninferior_to_same_model,                ///< a cache map against same-model relay (sender)
  mapped_retention,                                ///< the share of the relay's benefit a map keeps (sender)
  cost_relay_pays,                                 ///< the cost statement over the links
  cost_relay_pays_on_link,                         ///< the cost verdict on one link (link)
  gate_not_worse_than_always_relay,                ///< the per-request gate's accuracy
  gate_saves_relays,                               ///< the per-request gate's saving
  log_naive_covers_randomized,                     ///< demonstration: production log, naive difference
  log_matching_covers_randomized,                  ///< demonstration: production log, matching
  log_aipw_covers_randomized,                      ///< demonstration: production log, AIPW
  rollout_before_after_covers_truth,               ///< demonstration: rollout, before/after
  rollout_did_covers_truth,                        ///< demonstration: rollout, DiD
};

/// @brief The typed parameters of a finding's id (each kind reads the ones its pattern names).
struct finding_params {
  std::string link;        ///< `<link>`: the link's name (characters other than [A-Za-z0-9_] become '_')
  std::size_t budget = 0;  ///< `<k>`: the message budget in tokens
  std::string regime;      ///< `<regime>`: the items' regime
  std::string sender;      ///< `[.<sender>]`: a named sender ("" = the partner: no part in the id)
  /// @brief Equal when every parameter is.
  friend bool operator==(const finding_params&, const finding_params&) = default;
};

/// @brief A finding's identity: its kind and parameters; id() writes its id.
struct finding_key {
  finding_kind kind = finding_kind::unknown;  ///< the catalog row
  finding_params params = {};                 ///< the parameters its pattern names
  /// @brief The id (finding_id(kind, params)).
  [[nodiscard]] std::string id() const;
  /// @brief Equal when kind and parameters are.
  friend bool operator==(const finding_key&, const finding_key&) = default;
};

/// @brief How a verdict reads for relaying (report.md/report.html's direction column).
enum class finding_polarity : std::uint8_t {
  context,             ///< neither: the finding locates or describes
  yes_supports,        ///< yes supports relaying, no is against it
  yes_against,         ///< yes is against relaying, no supports it
  no_by_sign,          ///< yes supports; no: the estimate's sign says (> 0 supports, else against)
  yes_against_if_lost  ///< yes is against only with a negative estimate (else context); no supports
};

/// @brief The unit of a finding's numbers.
enum class finding_unit : std::uint8_t {
  points,  ///< accuracy points (written ×100)
  ms,      ///< seconds, written in milliseconds
  sigma,   ///< a noise level σ
  steps,   ///< fine-tuning steps
  ratio    ///< a share, written in %
};

/// @brief The interval a finding reports (its label in report.md/report.html).
enum class finding_interval : std::uint8_t {
  verdict_betting,  ///< the 1 − 2α verdict interval, betting over items
  betting,          ///< a 1 − 2α betting interval over items
  bootstrap_ms,     ///< a 1 − α bootstrap CI of receiver milliseconds saved
  test_inversion,   ///< a 1 − α CI by test inversion over items
  other             ///< see the method
};

/// @brief One row of the catalog: everything the library says about a kind of finding.
struct finding_kind_info {
  finding_kind kind = finding_kind::unknown;  ///< the kind
  /// the id pattern, as docs/audit-report.md writes it: `<arm>` is the row's subject arm's kind
  /// name, `<k>` the budget, `<regime>` the regime, `<sender>` the sender, `<link>` the link; a part
  /// in brackets only when its parameters are given (finding_id)
  std::string_view pattern;
  std::string_view family;     ///< the id's first part: need, no_need, stale, ..., log, rollout
  bool gated = false;          ///< made inconclusive when the positive control is not "yes"
  bool demonstration = false;  ///< a teaching demonstration (report.json `demonstrations`)
  finding_polarity polarity = finding_polarity::context;  ///< how its verdict reads for relaying
  finding_unit unit = finding_unit::points;               ///< the unit of its numbers
  finding_interval interval = finding_interval::other;    ///< the interval it reports
  std::string_view method_short;                          ///< the method in a few words (report.html)
  std::string_view question;                              ///< what it asks ("" = no statement yet)
  std::string_view yes;                                   ///< the statement for "yes"
  std::string_view no;                                    ///< the statement for "no"
  /// the checks of the decision that read it (checklist_item::name; "map" = every "map_<arm>";
  /// "" = none)
  std::array<std::string_view, 2> checks = {};
  /// in the decision's risk family: every risk-family check (no_need_harm, freshness, conflict,
  /// map_<arm>) reads it through Holm over the family's absence claims
  bool risk_family = false;
  /// a check reads it only where the findings hold it (else it names it whether or not it was computed)
  bool read_when_present = false;
  /// the arms it contrasts (their kinds; arm_kind::no_comm past `arm_count`)
  std::array<arm_kind, 3> arms = {};
  std::size_t arm_count = 0;  ///< how many of `arms` it needs
  /// the arm `<arm>` of the pattern names (the placebos' subject)
  arm_kind subject = arm_kind::no_comm;
};

namespace detail {

/// @brief The catalog's rows, one per finding_kind after `unknown`, in the enum's order (checked
/// below): the order in which a check names the kinds it reads.
inline constexpr std::array<finding_kind_info, 33> finding_catalog_rows = {{
    {.kind = finding_kind::need_text_beats_no_comm,
     .pattern = "need.text_beats_no_comm",
     .family = "need",
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "does text relay beat no communication (the positive control)?",
     .yes = "Text relay beats no communication: the need regime tests dependency (positive control passed).",
     .no = "Text relay does not beat no communication by the margin: the need regime tests nothing.",
     .checks = {"positive_control"},
     .arms = {arm_kind::text_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::need_kv_beats_no_comm,
     .pattern = "need.kv_beats_no_comm",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "does KV relay beat no communication in the need regime?",
     .yes = "KV relay beats no communication in the need regime.",
     .no = "KV relay's benefit over no communication is below the margin.",
     .checks = {"dependency"},
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::need_kv_carries_information,
     .pattern = "need.kv_carries_information",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question =
         "does KV relay carry A's information (accuracy, or a likelihood endpoint: the dependency check)?",
     .yes =
         "KV relay carries A's information: it raises accuracy or the probability of the reference answer or "
         "continuation (the dependency check).",
     .no = "KV relay's benefit in accuracy is below the margin and no likelihood endpoint shows a rise.",
     .checks = {"dependency"},
     .read_when_present = true,
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::need_kv_raises_answer_probability,
     .pattern = "need.kv_raises_answer_probability",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "does KV relay raise the probability B gives the reference answer (second endpoint)?",
     .yes = "KV relay raises the probability B gives the reference answer (second endpoint).",
     .no = "KV relay's gain in answer probability over no communication is below the margin.",
     .checks = {"dependency"},
     .read_when_present = true,
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::need_kv_raises_continuation_probability,
     .pattern = "need.kv_raises_continuation_probability",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "does KV relay raise the probability B gives the task's continuation (third endpoint)?",
     .yes = "KV relay raises the probability B gives the task's continuation (third endpoint).",
     .no = "KV relay's gain in continuation probability over no communication is below the margin.",
     .checks = {"dependency"},
     .read_when_present = true,
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::need_kv_noninferior_to_text,
     .pattern = "need.kv_noninferior_to_text",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "is KV relay within the margin of text relay, or better?",
     .yes = "KV relay is not worse than text relay by the margin.",
     .no = "KV relay is worse than text relay by more than the margin.",
     .checks = {"value"},
     .arms = {arm_kind::kv_full, arm_kind::text_full},
     .arm_count = 2},
    {.kind = finding_kind::need_kv_equivalent_to_text,
     .pattern = "need.kv_equivalent_to_text",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::no_by_sign,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "are KV relay and text relay equivalent within the margin?",
     .yes = "KV relay and text relay are equivalent within the margin.",
     .no = "KV relay and text relay differ by more than the margin (the estimate's sign says which way).",
     .arms = {arm_kind::kv_full, arm_kind::text_full},
     .arm_count = 2},
    {.kind = finding_kind::need_pairing_placebo_beats_no_comm,
     .pattern = "need.<arm>_beats_no_comm",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_against,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "does another item's cache help?",
     .yes = "Another item's cache helps: part of the relay effect is not about this item's document.",
     .no = "Another item's cache does not help: the effect needs the right cache.",
     .arms = {pairing_placebo_kind(), arm_kind::no_comm},
     .arm_count = 2,
     .subject = pairing_placebo_kind()},
    {.kind = finding_kind::need_zeroed_beats_no_comm,
     .pattern = "need.<arm>_beats_no_comm",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_against,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "does a zeroed cache help?",
     .yes = "A zeroed cache helps: part of the effect is the cache's presence, not its content.",
     .no = "A zeroed cache does not help.",
     .arms = {arm_kind::zeroed, arm_kind::no_comm},
     .arm_count = 2,
     .subject = arm_kind::zeroed},
    {.kind = finding_kind::need_cross_model_beats_no_comm,
     .pattern = "need.<arm>_beats_no_comm",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_against,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "does a foreign model's cache help?",
     .yes = "A foreign model's cache helps: B reads a cache from another model (homogeneity fails).",
     .no = "A foreign model's cache does not help: the benefit needs identical models.",
     .checks = {"homogeneity", "cross_model"},
     .arms = {arm_kind::cross_model, arm_kind::no_comm},
     .arm_count = 2,
     .subject = arm_kind::cross_model},
    {.kind = finding_kind::need_kv_answer_probability_noninferior_to_text,
     .pattern = "need.kv_answer_probability_noninferior_to_text",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "is KV relay's answer probability within the margin of text relay's (second endpoint)?",
     .yes = "KV relay's answer probability is not lower than text relay's by the margin (second endpoint).",
     .no = "KV relay's answer probability is lower than text relay's by more than the margin.",
     .arms = {arm_kind::kv_full, arm_kind::text_full},
     .arm_count = 2},
    {.kind = finding_kind::need_pairing_raises_answer_probability,
     .pattern = "need.pairing_raises_answer_probability",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "does the right item's cache raise the answer probability over another item's?",
     .yes = "The right item's cache raises the answer probability over another item's (pairing, second "
            "endpoint).",
     .no = "The right item's cache does not raise the answer probability over another item's by the margin.",
     .arms = {arm_kind::kv_full, pairing_placebo_kind()},
     .arm_count = 2},
    {.kind = finding_kind::need_kv_continuation_noninferior_to_text,
     .pattern = "need.kv_continuation_noninferior_to_text",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "is KV relay's continuation probability within the margin of text relay's (third endpoint)?",
     .yes =
         "KV relay's continuation probability is not lower than text relay's by the margin (third endpoint).",
     .no = "KV relay's continuation probability is lower than text relay's by more than the margin.",
     .arms = {arm_kind::kv_full, arm_kind::text_full},
     .arm_count = 2},
    {.kind = finding_kind::need_pairing_raises_continuation_probability,
     .pattern = "need.pairing_raises_continuation_probability",
     .family = "need",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "does the right item's cache raise the continuation probability over another item's?",
     .yes = "The right item's cache raises the continuation probability over another item's (pairing, third "
            "endpoint).",
     .no = "The right item's cache does not raise the continuation probability over another item's by the "
           "margin.",
     .arms = {arm_kind::kv_full, pairing_placebo_kind()},
     .arm_count = 2},
    {.kind = finding_kind::no_need_kv_changes_accuracy,
     .pattern = "no_need.kv_changes_accuracy",
     .family = "no_need",
     .gated = true,
     .polarity = finding_polarity::yes_against_if_lost,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items",
     .question = "does KV relay change accuracy where B does not need A?",
     .yes = "KV relay changes accuracy where B does not need A (the estimate's sign says which way).",
     .no = "KV relay leaves accuracy unchanged (within the margin) where B does not need A.",
     .checks = {"no_need_harm"},
     .risk_family = true,
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::noise_tolerance_sigma,
     .pattern = "noise.tolerance_sigma",
     .family = "noise",
     .gated = true,
     .unit = finding_unit::sigma,
     .interval = finding_interval::test_inversion,
     .method_short = "isotonic fit, test inversion",
     .question = "where does relay noise cost more than the margin?",
     .yes = "The noise level σ at which relay loses the margin is located within the tested range.",
     .no = "The noise tolerance σ is not located.",
     .arms = {arm_kind::kv_policy, arm_kind::kv_full},
     .arm_count = 2},
    {.kind = finding_kind::stale_kv_worse_than_text,
     .pattern = "stale.kv_worse_than_text",
     .family = "stale",
     .gated = true,
     .polarity = finding_polarity::yes_against,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items, Holm (relay-failure family)",
     .question = "is a stale cache worse than the current text?",
     .yes = "A stale cache is worse than the current text: relay only fresh caches.",
     .no = "A stale cache is not worse than the current text by the margin.",
     .checks = {"freshness"},
     .risk_family = true,
     .arms = {arm_kind::kv_full, arm_kind::text_full},
     .arm_count = 2},
    {.kind = finding_kind::stale_kv_gives_stale_answer,
     .pattern = "stale.kv_gives_stale_answer",
     .family = "stale",
     .gated = true,
     .polarity = finding_polarity::yes_against,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items, Holm (relay-failure family)",
     .question = "does a stale cache make B give the old value?",
     .yes = "With a stale cache B gives the old value more often than every other wrong value together.",
     .no = "B does not favour the stale value by the margin.",
     .arms = {arm_kind::kv_full},
     .arm_count = 1},
    {.kind = finding_kind::conflict_kv_worse_than_no_comm,
     .pattern = "conflict.kv_worse_than_no_comm",
     .family = "conflict",
     .gated = true,
     .polarity = finding_polarity::yes_against,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items, Holm (relay-failure family)",
     .question = "is a conflicting cache worse than no communication?",
     .yes = "A cache that contradicts B's prompt is worse than no communication.",
     .no = "A conflicting cache is not worse than no communication by the margin.",
     .checks = {"conflict"},
     .risk_family = true,
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::drift_tolerance_steps,
     .pattern = "drift.tolerance_steps",
     .family = "drift",
     .gated = true,
     .polarity = finding_polarity::yes_against,
     .unit = finding_unit::steps,
     .interval = finding_interval::test_inversion,
     .method_short = "isotonic fit, test inversion",
     .question = "after how many fine-tuning steps of the sender does relay lose the margin?",
     .yes =
         "A drifted sender loses non-inferiority at a located number of steps: relay only between identical "
         "models.",
     .no = "Every tested drift step is non-inferior to same-model relay.",
     .checks = {"drift"},
     .arms = {arm_kind::drifted, arm_kind::kv_full},
     .arm_count = 2},
    {.kind = finding_kind::message_kv_vs_text_message,
     .pattern = "message.kv_vs_text_message[.k<k>.<regime>]",
     .family = "message",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items, Holm (message family)",
     .question = "does A's cache beat A's text message?",
     .yes = "A's cache beats A's text message (this message length and regime).",
     .no = "A's cache does not beat A's text message by the margin.",
     .arms = {arm_kind::kv_message, arm_kind::text_message},
     .arm_count = 2},
    {.kind = finding_kind::mapped_beats_unmapped,
     .pattern = "mapped[.<sender>].beats_unmapped",
     .family = "mapped",
     .gated = true,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items (cache map)",
     .arms = {arm_kind::kv_mapped, arm_kind::cross_model},
     .arm_count = 2},
    {.kind = finding_kind::mapped_noninferior_to_same_model,
     .pattern = "mapped[.<sender>].noninferior_to_same_model",
     .family = "mapped",
     .gated = true,
     .interval = finding_interval::verdict_betting,
     .method_short = "paired, betting over items (cache map)",
     .checks = {"map"},
     .risk_family = true,
     .read_when_present = true,
     .arms = {arm_kind::kv_mapped, arm_kind::kv_full},
     .arm_count = 2},
    {.kind = finding_kind::mapped_retention,
     .pattern = "mapped[.<sender>].retention",
     .family = "mapped",
     .gated = true,
     .unit = finding_unit::ratio,
     .interval = finding_interval::verdict_betting,
     .method_short = "ratio of paired item means, test inversion",
     .arms = {arm_kind::kv_mapped, arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 3},
    {.kind = finding_kind::cost_relay_pays,
     .pattern = "cost.relay_pays",
     .family = "cost",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .unit = finding_unit::ms,
     .interval = finding_interval::bootstrap_ms,
     .method_short = "receiver latency per link, cluster bootstrap",
     .question = "does relaying the cache pay on the links shown?",
     .yes = "Relaying the cache pays.",
     .no = "Relaying the cache does not pay.",
     .arms = {arm_kind::kv_full, arm_kind::text_full},
     .arm_count = 2},
    {.kind = finding_kind::cost_relay_pays_on_link,
     .pattern = "cost.relay_pays_on_<link>",
     .family = "cost",
     .gated = true,
     .polarity = finding_polarity::yes_supports,
     .unit = finding_unit::ms,
     .interval = finding_interval::bootstrap_ms,
     .method_short = "receiver latency per link, cluster bootstrap",
     .question = "does relaying the cache save receiver latency on this link, accuracy kept?",
     .yes = "Relaying the cache pays on this link: receiver latency saved, accuracy non-inferior.",
     .no = "Relaying the cache does not pay on this link.",
     .checks = {"cost"},
     .arms = {arm_kind::kv_full, arm_kind::text_full},
     .arm_count = 2},
    {.kind = finding_kind::gate_not_worse_than_always_relay,
     .pattern = "gate.not_worse_than_always_relay",
     .family = "gate",
     .polarity = finding_polarity::yes_supports,
     .interval = finding_interval::betting,
     .method_short = "cross-fitted gate, betting over items",
     .question = "is the per-request gate's accuracy within the margin of always relaying?",
     .yes = "The per-request gate keeps always-relay's accuracy (within the margin).",
     .no = "The per-request gate loses more than the margin against always relaying.",
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::gate_saves_relays,
     .pattern = "gate.saves_relays",
     .family = "gate",
     .interval = finding_interval::betting,
     .method_short = "cross-fitted gate, betting over items",
     .question = "does the per-request gate skip a share of the relays (and save bytes)?",
     .yes = "The per-request gate skips a share of the relays and saves bytes.",
     .no = "The per-request gate relays nearly every request: it saves next to nothing (where relay never "
           "hurts, that is the right gate).",
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::log_naive_covers_randomized,
     .pattern = "log.naive_covers_randomized",
     .family = "log",
     .demonstration = true,
     .method_short = "see method",
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::log_matching_covers_randomized,
     .pattern = "log.matching_covers_randomized",
     .family = "log",
     .demonstration = true,
     .method_short = "see method",
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::log_aipw_covers_randomized,
     .pattern = "log.aipw_covers_randomized",
     .family = "log",
     .demonstration = true,
     .method_short = "see method",
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::rollout_before_after_covers_truth,
     .pattern = "rollout.before_after_covers_truth",
     .family = "rollout",
     .demonstration = true,
     .method_short = "see method",
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
    {.kind = finding_kind::rollout_did_covers_truth,
     .pattern = "rollout.did_covers_truth",
     .family = "rollout",
     .demonstration = true,
     .method_short = "see method",
     .arms = {arm_kind::kv_full, arm_kind::no_comm},
     .arm_count = 2},
}};

/// @brief Whether every row stands at its kind's place (finding_info indexes the rows by kind).
[[nodiscard]] constexpr bool finding_catalog_in_order() noexcept {
  for (std::size_t i = 0; i < finding_catalog_rows.size(); ++i)
    if (static_cast<std::size_t>(finding_catalog_rows[i].kind) != i + 1) return false;
  return true;
}
static_assert(finding_catalog_in_order(), "finding_catalog_rows: one row per finding_kind, in its order");

/// @brief The row of `unknown`: no pattern, no statement.
inline constexpr finding_kind_info unknown_finding_info{};

}  // namespace detail

/// @brief Every row of the catalog, in finding_kind order (`unknown` has none).
[[nodiscard]] constexpr std::span<const finding_kind_info> finding_catalog() noexcept {
  return detail::finding_catalog_rows;
}

/// @brief The catalog's row of `k` (an empty row for finding_kind::unknown).
[[nodiscard]] constexpr const finding_kind_info& finding_info(finding_kind k) noexcept {
  const auto i = static_cast<std::size_t>(k);
  return i == 0 || i > detail::finding_catalog_rows.size() ? detail::unknown_finding_info
                                                           : detail::finding_catalog_rows[i - 1];
}

/// @brief A link's part of an id: its name with every character other than [A-Za-z0-9_] replaced
/// by '_' ("custom:30:5" → "custom_30_5").
[[nodiscard]] inline std::string finding_link_part(std::string_view link) {
  std::string s;
  s.reserve(link.size());
  for (const char c : link) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    s.push_back(ok ? c : '_');
  }
  return s;
}

namespace detail {
/// @brief `pattern` with its placeholders replaced (finding_id); `all_set`: whether every
/// placeholder met had a value (a budget > 0, a non-empty regime, sender or link).
inline std::string finding_id_part(std::string_view pattern, const finding_kind_info& row,
                                   const finding_params& p, bool& all_set) {
  std::string id;
  std::string_view s = pattern;
  auto take = [&s](std::string_view token) {
    if (!s.starts_with(token)) return false;
    s.remove_prefix(token.size());
    return true;
  };
  auto put = [&](std::string_view value, bool set) {
    id += value;
    all_set = all_set && set;
  };
  while (!s.empty()) {
    if (take("<arm>")) {
      put(arm_kind_name(row.subject), true);
    } else if (take("<k>")) {
      put(std::to_string(p.budget), p.budget > 0);
    } else if (take("<regime>")) {
      put(p.regime, !p.regime.empty());
    } else if (take("<sender>")) {
      put(p.sender, !p.sender.empty());
    } else if (take("<link>")) {
      put(finding_link_part(p.link), !p.link.empty());
    } else if (s.front() == '[') {
      const auto close = s.find(']');
      bool group_set = true;
      std::string group = finding_id_part(s.substr(1, close - 1), row, p, group_set);
      if (group_set) id += group;
      s.remove_prefix(close == std::string_view::npos ? s.size() : close + 1);
    } else {
      id.push_back(s.front());
      s.remove_prefix(1);
    }
  }
  return id;
}
}  // namespace detail

/// @brief The id of the finding of kind `k` with parameters `p`: the row's pattern with `<arm>`
/// replaced by its subject arm's kind name, `<k>` by p.budget, `<regime>` by p.regime, `<sender>` by
/// p.sender and `<link>` by finding_link_part(p.link); a bracketed part (`[.<sender>]`,
/// `[.k<k>.<regime>]`) is written only when each of its parameters is given (a budget > 0, the
/// strings non-empty). "" for finding_kind::unknown.
[[nodiscard]] inline std::string finding_id(finding_kind k, const finding_params& p = {}) {
  bool all_set = true;
  return detail::finding_id_part(finding_info(k).pattern, finding_info(k), p, all_set);
}

inline std::string finding_key::id() const { return finding_id(kind, params); }

/// @brief Whether a check named `check` (checklist_item::name; "map_<arm>" answers to "map")
/// reads the findings of kind `k`: the row names the check, or the row is in the risk family and
/// the check is one of the family's (a check a risk-family row names).
[[nodiscard]] inline bool finding_read_by(finding_kind k, std::string_view check) {
  const std::string_view name = check.starts_with("map_") ? std::string_view("map") : check;
  if (name.empty()) return false;
  const finding_kind_info& row = finding_info(k);
  for (const auto c : row.checks)
    if (c == name) return true;
  if (!row.risk_family) return false;
  for (const auto& r : finding_catalog())
    if (r.risk_family)
      for (const auto c : r.checks)
        if (c == name) return true;
  return false;
}

/// @brief The kinds a check reads (finding_read_by), in catalog order.
[[nodiscard]] inline std::vector<finding_kind> finding_kinds_read_by(std::string_view check) {
  std::vector<finding_kind> out;
  for (const auto& r : finding_catalog())
    if (finding_read_by(r.kind, check)) out.push_back(r.kind);
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_FINDING_CATALOG_HPP
