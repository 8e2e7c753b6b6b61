// SPDX-License-Identifier: MIT
// latentaudit: the audit's second, bounded continuous endpoint — the probability B gives the
// reference answer, p = exp(answer_logprob) in [0, 1] (the answer's first token) — for the
// dependency, value and pairing questions in the need regime. A relay can move this probability
// where 0/1 accuracy does not move (or moves too little to show at tens of items), so its findings
// can show a dependency at sizes where accuracy cannot; they are reported beside the accuracy
// findings and the decision does not read them (accuracy stays the endpoint of every decision
// check). Estimands, rules and the Monte Carlo of their size: docs/audit-report.md "Answer
// probability". Not part of the public API.
#ifndef LATENTAUDIT_REPORT_ANALYSES_ANSWER_PROBABILITY_HPP
#define LATENTAUDIT_REPORT_ANALYSES_ANSWER_PROBABILITY_HPP

#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../trial/record.hpp"
#include "../detail/audit_data.hpp"
#include "../finding.hpp"
#include "effects.hpp"
#include "regime_contrast.hpp"

namespace latentaudit::detail {

/// @brief One need-regime contrast treated − control on the answer probability, over items.
struct probability_contrast {
  std::string id;           ///< finding id
  std::string treated;      ///< treated arm label
  std::string control;      ///< control arm label
  std::size_t n_pairs = 0;  ///< (item, seed) units with both arms' probability measured
  std::size_t n_items = 0;  ///< items among them
  std::size_t imputed = 0;  ///< need-regime units lacking either record or its answer_logprob
  /// mean over items of the item mean difference of p (observed units); NaN when none
  double estimate = std::numeric_limits<double>::quiet_NaN();
  double verdict_low = std::numeric_limits<double>::quiet_NaN();   ///< lower limit, α one-sided (all views)
  double verdict_high = std::numeric_limits<double>::quiet_NaN();  ///< upper limit, α one-sided (all views)
  /// one-sided betting p of the claim's null (mean ≤ θ₀), the largest over the views
  double p_value = std::numeric_limits<double>::quiet_NaN();
  double p_holm = std::numeric_limits<double>::quiet_NaN();  ///< Holm over the endpoint's family
  std::vector<double> items;  ///< the observed item mean differences (ascending item)
};

/// @brief The answer probability exp(answer_logprob), clamped to [0, 1], of record `i` (npos: none),
/// when it was measured.
[[nodiscard]] std::optional<double> answer_probability(std::span<const trial_record> records, std::size_t i);

/// @brief treated − control (arm indices; npos: absent) on the answer probability over the need
/// regime's items, with the claim "mean > theta0": the observed pairs' betting view and, where a
/// unit of the regime lacks either record or its answer_logprob, the worst-case imputations (low: a
/// missing treated probability 0 and control 1; high: the reverse); the verdict interval is the
/// union and p the largest of the observed and low views' one-sided p.
[[nodiscard]] probability_contrast probability_contrast_of(const audit_data& d,
                                                           std::span<const trial_record> records,
                                                           std::size_t t, std::size_t c, std::string id,
                                                           double theta0, double alpha);

/// @brief The answer-probability findings (need.kv_raises_answer_probability,
/// need.kv_answer_probability_noninferior_to_text, need.pairing_raises_answer_probability), each
/// "not estimable" when an arm is absent or no unit holds both arms' answer_logprob.
/// @param d the unit × arm table
/// @param records the records `d` indexes
/// @param r the roles' arm indices
/// @param alpha,margin the audit's α and margin
[[nodiscard]] std::vector<finding> answer_probability_findings(const audit_data& d,
                                                               std::span<const trial_record> records,
                                                               const role_index& r, double alpha,
                                                               double margin);

}  // namespace latentaudit::detail

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/answer_probability-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_ANALYSES_ANSWER_PROBABILITY_HPP
