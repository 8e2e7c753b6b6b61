// SPDX-License-Identifier: MIT
// latentaudit: the stale-cache analysis. In regime "stale" A read version 1 of the document, the
// document then changed (version 2) and the query asks about a changed pair: every KV arm relays
// A's cache of v1, the text arms relay the current v2 text, and the correct answer is the v2
// value. Two findings: stale.kv_worse_than_text (kv_full − text_full on stale units) and
// stale.kv_gives_stale_answer (among kv_full's stale-regime answers, the stale v1 value is given
// more often than every other wrong value together, from the records' `stale_answer`). Rules:
// docs/audit-report.md "When relay does not pay". Not part of the public API.
#ifndef LATENTAUDIT_REPORT_ANALYSES_STALE_HPP
#define LATENTAUDIT_REPORT_ANALYSES_STALE_HPP

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../trial/record.hpp"
#include "../detail/audit_data.hpp"
#include "../finding.hpp"
#include "regime_contrast.hpp"

namespace latentaudit {

/// @brief How one arm answered in the stale regime (records with a non-null `stale_answer`).
struct stale_answer_counts {
  std::string arm;               ///< arm label
  std::size_t classified = 0;    ///< stale-regime records carrying stale_answer
  std::size_t unclassified = 0;  ///< stale-regime records without it (null)
  std::size_t correct = 0;       ///< answered the current (v2) value
  std::size_t stale = 0;         ///< answered the stale (v1) value (stale_answer true)
  std::size_t other_wrong = 0;   ///< wrong, and not the stale value
};

/// @brief The stale-cache analysis.
struct stale_analysis {
  std::size_t units = 0;            ///< (item, seed) units in regime "stale"
  regime_contrast kv_vs_text;       ///< kv_full − text_full (the finding's contrast; Holm family)
  regime_contrast kv_vs_no_comm;    ///< kv_full − no_comm (descriptive)
  regime_contrast text_vs_no_comm;  ///< text_full − no_comm (descriptive: does current text help?)
  /// per unit of kv_full: 1[stale value] − 1[other wrong value], over items (the finding's score;
  /// Holm family): > 0 when the stale value is given more often than all other wrong values
  regime_contrast stale_excess;
  stale_answer_counts kv_answers;    ///< how kv_full answered
  stale_answer_counts text_answers;  ///< how text_full answered (should rarely be stale)
};

/// @brief stale.kv_worse_than_text: yes if kv_full − text_full on stale units has Holm p < α
/// (over the relay-failure family) and a negative estimate; no if its verdict lower limit >
/// −margin; inconclusive otherwise, with the reason when the regime or an arm is missing.
/// @param s the analysis (p_holm filled)
/// @param alpha,margin the audit's α and equivalence margin
[[nodiscard]] finding stale_worse_finding(const stale_analysis& s, double alpha, double margin);

/// @brief stale.kv_gives_stale_answer: on kv_full's stale-regime records with `stale_answer`
/// recorded, the item means of 1[stale] − 1[wrong and not stale]; yes if Holm p < α and the
/// estimate > 0 (the stale value is given more often than all other wrong values together); no if
/// the verdict upper limit < margin; inconclusive otherwise or when nothing is classified.
[[nodiscard]] finding stale_answer_finding(const stale_analysis& s, double alpha, double margin);

namespace detail {

/// @brief The stale analysis on the unit × arm table (roles resolved by the caller; npos: absent).
/// The Holm adjustment of kv_vs_text and stale_excess is left to the caller (the relay-failure
/// family spans the stale and conflict analyses).
[[nodiscard]] stale_analysis audit_stale(const audit_data& d, std::span<const trial_record> records,
                                         std::size_t kv_full, std::size_t text_full, std::size_t no_comm,
                                         double alpha, std::vector<std::string>& warnings);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/stale-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_ANALYSES_STALE_HPP
