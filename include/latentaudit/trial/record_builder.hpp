// SPDX-License-Identifier: MIT
// latentaudit: building a trial record — the pieces the built-in driver (trial/driver.hpp) uses
// to fill each trial_record, public so that a custom driver (another serving stack, another
// scheduler) writes records the audit reads exactly as it reads the built-in driver's:
//   begin_record            the identity fields of (task, arm) under a design
//   policy_seed, relay_hmac_key   the policy/placebo seed of a unit and the relays' HMAC key
//   transfer_record_json    the "policy" object of a KV relay (docs/records.md)
//   text_reference          B reading the document as text: the reference distribution and hidden
//                           state of next_token_kl and hidden_cosine
//   record_answer           correct, answer_logprob, generated_tokens, next_token_kl, hidden_cosine
//   record_continuation     continuation_logprob, continuation_tokens, continuation_prob
//                           from B's logits at the query, its greedy answer and the text reference
//   attention_mass_on       the attention mass of B's last query position on the relayed rows
//   note_unavailable        the metrics an engine cannot produce, absent with the reason
// examples/04_custom_driver.cpp is a complete custom driver built from these.
#ifndef LATENTAUDIT_TRIAL_RECORD_BUILDER_HPP
#define LATENTAUDIT_TRIAL_RECORD_BUILDER_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/hash.hpp"
#include "../core/json.hpp"
#include "../core/rng.hpp"
#include "../engine/capabilities.hpp"
#include "../kv/quantize.hpp"
#include "../kv/transfer_policy.hpp"
#include "arm.hpp"
#include "design.hpp"
#include "record.hpp"
#include "task.hpp"

namespace latentaudit {

/// @brief log Σ exp(row), computed in double around the row's maximum.
[[nodiscard]] inline double log_sum_exp(std::span<const float> row) {
  double mx = -std::numeric_limits<double>::infinity();
  for (float x : row) mx = std::max(mx, static_cast<double>(x));
  double s = 0;
  for (float x : row) s += std::exp(static_cast<double>(x) - mx);
  return mx + std::log(s);
}

/// @brief The first index of the largest entry of a logits row (greedy decoding).
/// @throws invalid_argument if the row is empty.
[[nodiscard]] inline token_id argmax_token(std::span<const float> row) {
  if (row.empty()) detail::throw_invalid("argmax_token", "row", "must not be empty");
  return static_cast<token_id>(std::max_element(row.begin(), row.end()) - row.begin());
}

/// @brief The seed of the transfer policies and placebos of unit (item, seed index `s`) under
/// design `d` (policy_context::seed; with policy_context::item it selects every noise and placebo
/// stream, so a custom driver using it draws the built-in driver's noise).
[[nodiscard]] inline std::uint64_t policy_seed(const trial_design& d, std::uint64_t s) noexcept {
  return detail::mix64(d.seed ^ (0x9E3779B97F4A7C15ULL * (s + 1)));
}

/// @brief The HMAC-SHA256 key of the relays of a design with master seed `design_seed` (32 bytes
/// from the stream (design_seed, 0, 0x4B, 0)). Relay sizes do not depend on the key.
[[nodiscard]] inline std::array<std::byte, 32> relay_hmac_key(std::uint64_t design_seed) {
  std::array<std::byte, 32> key{};
  auto g = make_stream({design_seed, 0, 0x4B, 0});
  for (std::size_t i = 0; i < key.size(); i += 4) {
    const std::uint32_t w = g();
    for (std::size_t b = 0; b < 4; ++b) key[i + b] = static_cast<std::byte>((w >> (8 * b)) & 0xFF);
  }
  return key;
}

/// @brief The identity fields of the record of `arm` on `task` under design `d`: item, seed, arm,
/// arm_kind, regime, covariates, link, noise_sigma, (text_budget and message arms) budget, (drifted)
/// drift_steps and a task file's covariate_labels, task_id, query_index and task_fields. Everything measured
/// is left for the caller.
[[nodiscard]] inline trial_record begin_record(const trial_design& d, const trial_task& task,
                                               const trial_arm& arm) {
  trial_record r;
  r.item = task.item;
  r.seed = task.seed;
  r.arm = arm.label;
  r.arm_kind = std::string(arm_kind_name(arm.kind));
  r.regime = regime_name(task.regime);
  r.covariates = task.covariates;
  r.link = d.link.name;
  r.noise_sigma = arm.noise_sigma;
  if (arm.plan().budgeted) r.budget = arm.budget;
  if (arm.drift_steps) r.drift_steps = *arm.drift_steps;
  r.covariate_labels = task.labels;
  r.task_id = task.id;
  if (task.query_index) r.query_index = *task.query_index;
  r.task_fields = task.extra;
  return r;
}

/// @brief The record's "policy" object for a KV relay: what the transfer policy did (policy,
/// layers, tokens_in, tokens_kept, bytes_before, bytes_after, noise, placebo, position_mode) and
/// the wire quantization, if any (docs/records.md).
[[nodiscard]] LATENTAUDIT_INLINE json_value
transfer_record_json(const transfer_record& tr, const std::optional<quantize_spec>& wire_quantization);

/// @brief B reading the document as text, at the query: the reference of next_token_kl (its
/// next-token distribution) and hidden_cosine (its final hidden state).
struct text_reference {
  std::vector<double> logp;   ///< log-softmax of the logits at the query
  std::vector<double> p;      ///< softmax of the logits at the query
  std::vector<float> hidden;  ///< final hidden state at the query (empty when the engine gives none)
};

/// @brief The text reference from B's logits row at the query and its final hidden state.
/// @throws invalid_argument if the row is empty or not finite.
[[nodiscard]] inline text_reference make_text_reference(std::span<const float> row,
                                                        std::vector<float> hidden) {
  if (row.empty()) detail::throw_invalid("make_text_reference", "row", "must not be empty");
  const double lse = log_sum_exp(row);
  if (!std::isfinite(lse)) detail::throw_invalid("make_text_reference", "row", "must hold finite logits");
  text_reference ref;
  ref.logp.resize(row.size());
  ref.p.resize(row.size());
  for (std::size_t i = 0; i < row.size(); ++i)
    ref.logp[i] = static_cast<double>(row[i]) - lse, ref.p[i] = std::exp(ref.logp[i]);
  ref.hidden = std::move(hidden);
  return ref;
}

/// @brief KL(text ‖ arm) = Σ p_text (log p_text − log p_arm) of the next-token distributions at
/// the query (clamped at 0 against rounding), or nothing when the row's size differs from the
/// reference's.
[[nodiscard]] inline std::optional<double> next_token_kl(const text_reference& ref,
                                                         std::span<const float> row) {
  if (row.empty() || ref.logp.size() != row.size()) return std::nullopt;
  const double lse = log_sum_exp(row);
  double kl = 0;
  for (std::size_t i = 0; i < row.size(); ++i)
    kl += ref.p[i] * (ref.logp[i] - (static_cast<double>(row[i]) - lse));
  return std::isfinite(kl) ? std::optional<double>(std::max(0.0, kl)) : std::nullopt;
}

/// @brief Cosine similarity of B's final hidden state with the text reference's, or nothing when
/// either is missing or their sizes differ (0 when either vector is zero).
[[nodiscard]] inline std::optional<double> hidden_cosine(std::span<const float> hidden,
                                                         const text_reference& ref) {
  if (hidden.empty() || hidden.size() != ref.hidden.size()) return std::nullopt;
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < hidden.size(); ++i) {
    const double a = hidden[i], b = ref.hidden[i];
    ab += a * b, aa += a * a, bb += b * b;
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

/// @brief B's attention mass on the relayed rows at the query: the weights of the capture's last
/// query position on the first `relayed` cache rows, summed over those rows and averaged over the
/// captured layers and heads.
/// @throws engine_error if the capture's weights do not hold layers × heads × queries × keys values or
///         it has no query, head or layer.
[[nodiscard]] inline double attention_mass_on(const attention_capture& cap, std::int64_t relayed) {
  const auto L = cap.layers.size(), H = static_cast<std::size_t>(std::max(cap.heads, 0)),
             Q = static_cast<std::size_t>(std::max<std::int64_t>(cap.queries, 0)),
             K = static_cast<std::size_t>(std::max<std::int64_t>(cap.keys, 0));
  if (L == 0 || H == 0 || Q == 0 || K == 0 || cap.weights.size() != L * H * Q * K)
    LATENTAUDIT_THROW(engine_error("attention_mass_on: the attention capture holds " +
                                   std::to_string(cap.weights.size()) + " weights, expected layers " +
                                   std::to_string(L) + " x heads " + std::to_string(H) + " x queries " +
                                   std::to_string(Q) + " x keys " + std::to_string(K) + " (all > 0)"));
  const auto R = static_cast<std::size_t>(std::clamp<std::int64_t>(relayed, 0, cap.keys));
  double mass = 0;
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < H; ++h) {
      const float* w = cap.weights.data() + ((l * H + h) * Q + (Q - 1)) * K;
      for (std::size_t k = 0; k < R; ++k) mass += w[k];
    }
  return mass / static_cast<double>(L * H);
}

/// @brief Fills the answer fields of `r`: answer_logprob (log-probability of the answer's first
/// token under `first_row`, B's logits at the query), generated_tokens, correct (`generated`, B's
/// greedy answer, is accepted: trial_task::check_answer; answer_text when the task scores text), stale_answer
/// (stale_answer_of), next_token_kl and hidden_cosine against `ref` (left absent when the sizes disagree;
/// `hidden` is B's final hidden state at the query, empty if none).
/// @throws invalid_argument if the task has no answer or its first token is outside the row.
inline void record_answer(trial_record& r, const trial_task& task, std::span<const float> first_row,
                          const std::vector<token_id>& generated, std::span<const float> hidden,
                          const text_reference& ref) {
  constexpr std::string_view fn = "record_answer";
  if (task.answer.empty() && !task.score) detail::throw_invalid(fn, "task.answer", "must not be empty");
  if (task.answer.empty()) {  // a scorer without a reference token sequence (regex answers)
    r.unavailable.push_back({"answer_logprob",
                             "the task's answers are patterns (regex scoring): no reference "
                             "answer tokens to score (written as null)"});
  } else {
    const auto a0 = task.answer[0];
    if (a0 < 0 || static_cast<std::size_t>(a0) >= first_row.size())
      detail::throw_invalid(fn, "task.answer",
                            "holds token " + std::to_string(a0) + ", outside the vocabulary [0, " +
                                std::to_string(first_row.size()) + ")");
    r.answer_logprob = static_cast<double>(first_row[static_cast<std::size_t>(a0)]) - log_sum_exp(first_row);
  }
  r.generated_tokens = static_cast<std::int64_t>(generated.size());
  auto check = task.check_answer(generated);
  r.correct = check.correct;
  if (task.score) r.answer_text = std::move(check.text);
  r.stale_answer = stale_answer_of(task, generated);
  r.next_token_kl = next_token_kl(ref, first_row);
  r.hidden_cosine = hidden_cosine(hidden, ref);
}

/// @brief Fills continuation_logprob (the sum over i of log softmax(rows[i])[continuation[i]]),
/// continuation_tokens and continuation_prob = exp(mean) of `r`; `rows` holds one row of `vocab`
/// logits per continuation token, row i being B's logits before continuation[i].
/// @throws invalid_argument if the sizes disagree or a token is outside the vocabulary.
inline void record_continuation(trial_record& r, std::span<const token_id> continuation,
                                std::span<const float> rows, std::size_t vocab) {
  constexpr std::string_view fn = "record_continuation";
  if (continuation.empty() || vocab == 0 || rows.size() != continuation.size() * vocab)
    detail::throw_invalid(fn, "rows",
                          "must hold one row of " + std::to_string(vocab) +
                              " logits per continuation token (" + std::to_string(continuation.size()) +
                              "), got " + std::to_string(rows.size()));
  double sum = 0;
  for (std::size_t i = 0; i < continuation.size(); ++i) {
    const auto c = continuation[i];
    if (c < 0 || static_cast<std::size_t>(c) >= vocab)
      detail::throw_invalid(
          fn, "continuation",
          "holds token " + std::to_string(c) + ", outside the vocabulary [0, " + std::to_string(vocab) + ")");
    const auto row = rows.subspan(i * vocab, vocab);
    sum += std::min(0.0, static_cast<double>(row[static_cast<std::size_t>(c)]) - log_sum_exp(row));
  }
  const auto n = static_cast<std::int64_t>(continuation.size());
  r.continuation_logprob = sum;
  r.continuation_tokens = n;
  r.continuation_prob = std::clamp(std::exp(sum / static_cast<double>(n)), 0.0, 1.0);
}

/// @brief Records `metrics` as unavailable on `r` (skipping any the record does carry), so a
/// metric the engine cannot produce is absent with its reason, never a zero.
inline void note_unavailable(trial_record& r, const std::vector<unavailable_metric>& metrics) {
  for (const auto& m : metrics) {
    if (m.metric == "attention_mass" && r.attention_mass) continue;
    if (m.metric == "hidden_cosine" && r.hidden_cosine) continue;
    r.unavailable.push_back(m);
  }
}

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/record_builder-inl.hpp"
#endif

#endif  // LATENTAUDIT_TRIAL_RECORD_BUILDER_HPP
