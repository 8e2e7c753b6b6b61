// SPDX-License-Identifier: MIT
// latentaudit: the audit's bounded likelihood endpoints — the probability B gives the reference
// answer, p = exp(answer_logprob) in [0, 1] (the answer's first token), and the probability per
// token B gives the task's continuation, continuation_prob = exp(mean per-token log-probability) in
// [0, 1] — for the dependency, value and pairing questions in the need regime. A relay can move
// these probabilities where 0/1 accuracy does not move (or moves too little to show at tens of
// items), so their findings can show a dependency at sizes where accuracy cannot. Both families are
// written by one generator (likelihood_findings) over one description per endpoint
// (likelihood_endpoint); the decision's dependency check falls back on them in its own α-spending
// steps when accuracy is inconclusive (report/decision.hpp). Estimands, rules and the Monte Carlo
// of their size: docs/audit-report.md "Answer probability" and "Continuation probability". Not part
// of the public API.
// Header-only mode: report/audit.hpp first, outside this header's guard. audit.hpp's definitions
// (impl/audit-inl.hpp) include this header, and this header's definitions need audit.hpp's types;
// entered the other way round, each would meet the other half-declared.
#ifndef LATENTAUDIT_COMPILED_LIB
#include "../audit.hpp"
#endif
#ifndef LATENTAUDIT_REPORT_ANALYSES_ANSWER_PROBABILITY_HPP
#define LATENTAUDIT_REPORT_ANALYSES_ANSWER_PROBABILITY_HPP

#include <array>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../config.hpp"
#include "../../trial/record.hpp"
#include "../detail/audit_data.hpp"
#include "../finding.hpp"
#include "effects.hpp"
#include "regime_contrast.hpp"

namespace latentaudit::detail {

/// @brief One need-regime contrast treated − control on a likelihood endpoint's probability, over
/// items.
struct probability_contrast {
  std::string id;           ///< finding id
  std::string treated;      ///< treated arm label
  std::string control;      ///< control arm label
  std::size_t n_pairs = 0;  ///< (item, seed) units with both arms' probability measured
  std::size_t n_items = 0;  ///< items among them
  std::size_t imputed = 0;  ///< need-regime units lacking either record or its value
  /// mean over items of the item mean difference of p (observed units); NaN when none
  double estimate = std::numeric_limits<double>::quiet_NaN();
  double verdict_low = std::numeric_limits<double>::quiet_NaN();   ///< lower limit, α one-sided (all views)
  double verdict_high = std::numeric_limits<double>::quiet_NaN();  ///< upper limit, α one-sided (all views)
  /// one-sided betting p of the claim's null (mean ≤ θ₀), the largest over the views
  double p_value = std::numeric_limits<double>::quiet_NaN();
  double p_holm = std::numeric_limits<double>::quiet_NaN();  ///< Holm over the endpoint's family
  std::vector<double> items;  ///< the observed item mean differences (ascending item)
};

/// @brief Which record field a contrast reads: the likelihood endpoints' fields, or `correct` (0/1,
/// the accuracy step of need.kv_carries_information).
enum class likelihood_field { answer_logprob, continuation_prob, correct };

/// @brief One bounded likelihood endpoint of the need regime: the field it reads, its three finding
/// ids and the words its findings, report.html's statements and the decision use (one owner of the
/// endpoint's words: likelihood_findings and report.html's finding table both read it).
struct likelihood_endpoint {
  likelihood_field field;       ///< the record field behind the probability
  std::string_view field_name;  ///< "answer_logprob" / "continuation_prob"
  std::string_view noun;        ///< "answer probability" / "continuation probability"
  std::string_view what;        ///< "the probability B gives the reference answer"
  std::string_view symbol;      ///< "P(reference answer)" / "P(continuation)"
  std::string_view ordinal;     ///< "second endpoint" / "third endpoint"
  std::string_view measure;     ///< the method's words for the value, e.g. "exp(answer_logprob) (...)"
  finding_kind raises;          ///< kv_full − no_comm, claim mean > 0 (the dependency's)
  finding_kind noninferior;     ///< kv_full − text_full, claim mean > −m (the value's)
  finding_kind pairing;         ///< kv_full − deranged, claim mean > 0 (the pairing's)
};

/// @brief The answer probability exp(answer_logprob) (docs/audit-report.md "Answer probability").
inline constexpr likelihood_endpoint answer_probability_endpoint{
    likelihood_field::answer_logprob,
    "answer_logprob",
    "answer probability",
    "the probability B gives the reference answer",
    "P(reference answer)",
    "second endpoint",
    "exp(answer_logprob) (the probability of the reference answer's first token)",
    finding_kind::need_kv_raises_answer_probability,
    finding_kind::need_kv_answer_probability_noninferior_to_text,
    finding_kind::need_pairing_raises_answer_probability};

/// @brief The continuation probability continuation_prob (docs/audit-report.md "Continuation
/// probability"): present only where records carry it.
inline constexpr likelihood_endpoint continuation_probability_endpoint{
    likelihood_field::continuation_prob,
    "continuation_prob",
    "continuation probability",
    "the probability B gives the task's continuation",
    "P(continuation)",
    "third endpoint",
    "continuation_prob = exp(continuation_logprob / continuation_tokens) (the per-token probability of "
    "the task's continuation, teacher-forced after the query)",
    finding_kind::need_kv_raises_continuation_probability,
    finding_kind::need_kv_continuation_noninferior_to_text,
    finding_kind::need_pairing_raises_continuation_probability};

/// @brief The likelihood endpoints, in the order the decision's dependency check spends α on them.
inline constexpr std::array<const likelihood_endpoint*, 2> likelihood_endpoints{
    &answer_probability_endpoint, &continuation_probability_endpoint};

/// @brief The answer probability exp(answer_logprob), clamped to [0, 1], of record `i` (npos: none),
/// when it was measured.
[[nodiscard]] std::optional<double> answer_probability(std::span<const trial_record> records, std::size_t i);

/// @brief The endpoint's probability in [0, 1] of record `i` (npos: none), when it was measured.
[[nodiscard]] std::optional<double> likelihood_value(likelihood_field field,
                                                     std::span<const trial_record> records, std::size_t i);

/// @brief Whether any record carries the endpoint's field.
[[nodiscard]] bool records_measure(likelihood_field field, std::span<const trial_record> records);

/// @brief treated − control (arm indices; npos: absent) on the endpoint's probability over the need
/// regime's items, with the claim "mean > theta0": the observed pairs' betting view and, where a
/// unit of the regime lacks either record or its value, the worst-case imputations (low: a missing
/// treated probability 0 and control 1; high: the reverse); the verdict interval is the union and p
/// the largest of the observed and low views' one-sided p.
[[nodiscard]] probability_contrast probability_contrast_of(
    const audit_data& d, std::span<const trial_record> records, std::size_t t, std::size_t c, std::string id,
    double theta0, double alpha, likelihood_field field = likelihood_field::answer_logprob);

/// @brief The endpoint's three findings (raises, non-inferior to text, pairing), Holm over the
/// three, each "not estimable" when an arm is absent or no unit holds both arms' value.
/// @param e the endpoint
/// @param d the unit × arm table
/// @param records the records `d` indexes
/// @param r the roles' arm indices
/// @param alpha,margin the audit's α and margin
[[nodiscard]] std::vector<finding> likelihood_findings(const likelihood_endpoint& e, const audit_data& d,
                                                       std::span<const trial_record> records,
                                                       const role_index& r, double alpha, double margin);

/// @brief need.kv_carries_information, the decision's dependency check ("relay carries A's
/// information"): the union of kv_full − no_comm on accuracy and on each likelihood endpoint the
/// records measure, each in its own α-spending step (Bonferroni): accuracy at α/2 and the measured
/// likelihood endpoints at α/2 shared equally (answer probability α/2 alone, α/4 each with the
/// continuation probability); with no likelihood endpoint measured, accuracy at full α and the
/// verdict need.kv_beats_no_comm's. yes: some step shows its rise (the accuracy step also needs
/// need.kv_beats_no_comm "yes"); no: need.kv_beats_no_comm "no" (a benefit of the margin excluded)
/// and no likelihood finding shows a rise; otherwise inconclusive (also when a likelihood finding
/// shows a rise at its own level that its step here does not reach). docs/audit-report.md
/// "Decision", "Likelihood endpoints in the dependency check".
/// @param findings the findings so far (need.kv_beats_no_comm and the likelihood findings)
[[nodiscard]] finding carries_information_finding(const audit_data& d, std::span<const trial_record> records,
                                                  const role_index& r, std::span<const finding> findings,
                                                  double alpha);

/// @brief The answer-probability findings (need.kv_raises_answer_probability,
/// need.kv_answer_probability_noninferior_to_text, need.pairing_raises_answer_probability):
/// likelihood_findings of answer_probability_endpoint.
[[nodiscard]] std::vector<finding> answer_probability_findings(const audit_data& d,
                                                               std::span<const trial_record> records,
                                                               const role_index& r, double alpha,
                                                               double margin);

/// @brief The continuation-probability findings (need.kv_raises_continuation_probability,
/// need.kv_continuation_noninferior_to_text, need.pairing_raises_continuation_probability):
/// likelihood_findings of continuation_probability_endpoint; none when no record carries
/// continuation_prob (tasks without a continuation).
[[nodiscard]] std::vector<finding> continuation_probability_findings(const audit_data& d,
                                                                     std::span<const trial_record> records,
                                                                     const role_index& r, double alpha,
                                                                     double margin);

}  // namespace latentaudit::detail

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/answer_probability-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_ANALYSES_ANSWER_PROBABILITY_HPP
