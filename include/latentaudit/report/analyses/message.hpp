// SPDX-License-Identifier: MIT
// latentaudit: the messages analysis — is relaying A's cache better than relaying the message A
// wrote? For each text_message_<k> arm of the records and each regime present, the paired
// contrast kv_message − text_message_<k> (A's cache of its document, instruction and message
// against its message of at most k tokens as text) over items, decided on betting intervals with
// Holm over the message family (every such contrast); descriptive beside it, per k and regime:
// text_message_<k> − no_comm (what the words carry) and kv_message_only − text_message_<k> (the
// message's own cache rows against its text). Rules: docs/audit-report.md "Messages".
// Not part of the public API.
#ifndef LATENTAUDIT_REPORT_ANALYSES_MESSAGE_HPP
#define LATENTAUDIT_REPORT_ANALYSES_MESSAGE_HPP

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../core/json.hpp"
#include "../../trial/record.hpp"
#include "../detail/audit_data.hpp"
#include "../finding.hpp"
#include "regime_contrast.hpp"

namespace latentaudit {

/// @brief The contrasts of one message budget k in one regime.
struct message_contrast {
  std::int64_t k = 0;                ///< the text message's budget (tokens)
  std::string regime;                ///< "need", "no_need", "stale", "conflict"
  double mean_message_length = 0.0;  ///< mean message_length of text_message_<k> in the regime
  regime_contrast kv_vs_text;        ///< kv_message − text_message_<k> (the finding; Holm family)
  regime_contrast text_vs_no_comm;   ///< text_message_<k> − no_comm (descriptive)
  regime_contrast kv_only_vs_text;   ///< kv_message_only − text_message_<k> (descriptive)
};

/// @brief The messages analysis.
struct message_analysis {
  std::string kv_message;                   ///< the kv_message arm's label ("" when absent)
  std::string kv_message_only;              ///< the kv_message_only arm's label ("" when absent)
  std::vector<message_contrast> contrasts;  ///< ascending k, then regime need, no_need, stale, conflict
};

/// @brief The findings message.kv_vs_text_message.k<k>.<regime>, one per contrast: yes if
/// kv_message − text_message_<k> has Holm p < α over the message family and a positive estimate (A's
/// cache beats its message); no if the verdict upper limit < margin (a benefit of the margin or
/// more is excluded); inconclusive otherwise. With message arms but no text_message arm or no
/// kv_message arm a single inconclusive message.kv_vs_text_message finding says what is missing;
/// records without any message arm give no message finding.
/// @param m the analysis (p_holm filled)
/// @param alpha,margin the audit's α and equivalence margin
[[nodiscard]] std::vector<finding> message_findings(const message_analysis& m, double alpha, double margin);

namespace detail {

/// @brief The messages analysis on the unit × arm table, with Holm over its kv_vs_text contrasts
/// (its own family). Arms are found by arm_kind: text_message (budget from the record's `budget`,
/// else the label's number), kv_message and kv_message_only (the first label in sorted order when
/// several, with a warning).
[[nodiscard]] message_analysis audit_messages(const audit_data& d, std::span<const trial_record> records,
                                              std::size_t no_comm, double alpha,
                                              std::vector<std::string>& warnings);

/// @brief report.json "messages": the arms compared and, per k and regime, the mean message length
/// and the three contrasts (kv_vs_text, text_vs_no_comm, kv_only_vs_text); null without message arms.
[[nodiscard]] json_value messages_json(const message_analysis& m);

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/message-inl.hpp"
#endif

#endif  // LATENTAUDIT_REPORT_ANALYSES_MESSAGE_HPP
