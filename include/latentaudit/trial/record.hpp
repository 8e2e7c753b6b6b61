// SPDX-License-Identifier: MIT
// latentaudit: one trial's record — what the driver measured for one (item, seed, arm) — and its
// JSON form, one object per line of records.jsonl (schema: docs/records.md). The audit reads
// records only, so records written by other stacks get the same analysis.
#ifndef LATENTAUDIT_TRIAL_RECORD_HPP
#define LATENTAUDIT_TRIAL_RECORD_HPP

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/edit_distance.hpp"
#include "../core/error.hpp"
#include "../core/json.hpp"
#include "../core/types.hpp"
#include "arm.hpp"

namespace latentaudit {

/// @brief Wall-clock seconds of each stage of one trial. `transfer_s` is modeled (bytes / link
/// bandwidth + the link's fixed cost per relay), every other field is measured.
struct latency_split {
  double a_prefill_s = 0.0;  ///< sender A reads its document (0 when the arm has no sender)
  double export_s = 0.0;     ///< export_kv from A's engine
  double policy_s = 0.0;     ///< the transfer policy (slicing, noise, quantization, placebo)
  double encode_s = 0.0;     ///< wire encoding of the relay (KV block or text)
  double transfer_s = 0.0;   ///< modeled link time: bytes / bandwidth + alpha
  double decode_s = 0.0;     ///< wire decoding and verification at the receiver
  double import_s = 0.0;     ///< import_kv into B's engine
  double b_prefill_s = 0.0;  ///< B prefills its own prompt (and the document, for text relays)
  double b_decode_s = 0.0;   ///< B generates its answer
  /// @brief Receiver-side latency: everything after A has its cache (export through B's decode).
  [[nodiscard]] double receiver_s() const noexcept {
    return export_s + policy_s + encode_s + transfer_s + decode_s + import_s + b_prefill_s + b_decode_s;
  }
  /// @brief Every stage including A's prefill.
  [[nodiscard]] double total_s() const noexcept { return a_prefill_s + receiver_s(); }
};

/// @brief One named numeric covariate of the item (document length, needed position, ...).
struct covariate {
  std::string name;    ///< e.g. "doc_tokens", "pairs", "needed_position"
  double value = 0.0;  ///< finite value
};

/// @brief One named label covariate of the item (a task file's non-numeric covariate, e.g.
/// "domain": "biology"): the report groups by its values (docs/tasks.md).
struct covariate_label {
  std::string name;   ///< the covariate's name
  std::string value;  ///< its label
};

/// @brief A metric a record lacks because its engine cannot produce it, and why
/// (trial/engine_support.hpp unavailable_metrics).
struct unavailable_metric {
  std::string metric;  ///< the record field left absent, e.g. "attention_mass"
  std::string reason;  ///< why the engine cannot produce it
};

/// @brief What the driver measured for one (item, seed, arm). Optional metrics are absent (JSON
/// null) when the arm or the engine cannot produce them; they are never NaN.
struct trial_record {
  std::uint64_t item = 0;  ///< item index (the document)
  std::uint64_t seed = 0;  ///< seed index (query draw and every random stream)
  std::string arm;         ///< arm label, unique in a design (e.g. "kv_noise_0.5")
  std::string arm_kind;    ///< no_comm, text_full, text_budget, kv_full, kv_policy, deranged, zeroed, random,
                           ///< cross_model, drifted
  std::string regime;      ///< "need", "no_need", "stale" or "conflict" ("" when unknown)
  bool correct = false;    ///< B's answer equals the reference answer
  /// log-probability B gives the reference answer (its first token), ≤ 0; absent (JSON null) when
  /// it was not measured (regex-scored tasks, records from stacks that do not write it): the
  /// answer-probability findings leave such records out and never read them as probability 1
  std::optional<double> answer_logprob;
  /// The task's continuation (trial_task::continuation, docs/tasks.md): B's teacher-forced
  /// log-likelihood of it after the query, summed over its tokens (nats, ≤ 0); its token count; and
  /// exp(mean per-token log-probability), in [0, 1]. Absent (not written) when the task has none.
  std::optional<double> continuation_logprob;
  std::optional<std::int64_t> continuation_tokens;  ///< tokens of the continuation (> 0), with it
  std::optional<double> continuation_prob;          ///< exp(continuation_logprob / continuation_tokens)
  std::int64_t generated_tokens = 0;                ///< tokens B generated
  std::uint64_t bytes =
      0;  ///< relay size on the wire (LARL frame, same framing for text and KV); 0 without relay
  std::int64_t relay_tokens = 0;  ///< tokens relayed (text tokens, or KV rows after the policy)
  latency_split latency;          ///< stage timings (seconds)
  /// Receiver latencies (latency_split::receiver_s, seconds) of extra timed runs of the same
  /// trial (trial_design::timing_repeats); empty when the trial was not repeated.
  std::vector<double> latency_repeats_s;
  /// Repeats whose outcome (correct, generated_tokens, answer_logprob, bytes) differed from the
  /// first run's, which the record keeps (0 on a deterministic engine; meaningful only with repeats).
  std::uint32_t repeat_mismatches = 0;
  std::string link;  ///< link preset used for transfer_s
  /// Measured seconds of the relay's wire frame crossing a real link (trial_driver::set_remote_sender):
  /// the receiver's clock from its "go" message to holding the whole frame (docs/records.md); absent
  /// (not written) when the relay stayed in one process or the arm relays nothing.
  std::optional<double> transfer_measured_s;
  /// Why the frame that crossed the link was rejected (CRC, HMAC, framing), when it was: the relay
  /// failed and nothing was imported (B answered without it). Absent (not written) otherwise.
  std::optional<std::string> relay_error;
  std::optional<double>
      attention_mass;  ///< B's attention mass on relayed tokens at the query (mean over layers, heads)
  std::optional<double>
      hidden_cosine;  ///< cosine of B's final hidden state vs B reading the document as text
  std::optional<double> next_token_kl;  ///< KL(text || this arm) of B's next-token distribution at the query
  std::optional<double> noise_sigma;    ///< noise level of the arm's policy (dose-response), if any
  std::optional<double> budget;         ///< text_budget pairs, or a message arm's most tokens, if any
  /// stale regime only (every arm): whether B's answer equals the value of the version A's cache
  /// was built from (the stale value); null in every other regime. With `correct` it splits the
  /// wrong answers into stale and other.
  std::optional<bool> stale_answer;
  std::optional<double> drift_steps;  ///< drifted arms: fine-tuning steps of the sender model; null otherwise
  std::vector<covariate> covariates;  ///< item covariates (doc_tokens, pairs, needed_position, ...)
  /// Label covariates of a task file (JSON object "covariate_labels": {name: label}, written only
  /// when non-empty); the report groups by them like numeric covariates' bins.
  std::vector<covariate_label> covariate_labels;
  std::string task_id;                      ///< the task's id (task files; written only when non-empty)
  std::optional<std::int64_t> query_index;  ///< which of the task's queries was asked (task files)
  std::optional<std::string> answer_text;   ///< B's detokenized answer as scored (text scoring only)
  /// Message arms (text_message, kv_message, kv_message_only): the tokens of the message A wrote and
  /// the arm relayed (at most its budget; the stop token is not part of it). Written with
  /// message_length, for message arms only.
  std::vector<token_id> message_tokens;
  /// Message arms: the message as text when the engine has a tokenizer (null otherwise); absent
  /// for the other arms.
  std::optional<std::string> message;
  /// Message arms: the message's length in tokens (= message_tokens.size()); absent for the other arms.
  std::optional<std::int64_t> message_length;
  /// A task file's fields that latentaudit does not read (JSON object "task_fields", written only
  /// when it is a non-empty object): carried from the task line unchanged.
  json_value task_fields;
  std::string sender_fingerprint;    ///< model fingerprint (hex) of the sender's engine ("" without sender)
  std::string receiver_fingerprint;  ///< model fingerprint (hex) of B's engine
  /// kv_mapped arms: the id of the cache map the sender's cache went through (kv_map_id; "" for
  /// other arms; JSON "map", written only when set)
  std::string map;
  /// kv_mapped arms: the attention-output cosine of the mapped cache against B's own cache of the
  /// document (kv/map_screen.hpp), in [−1, 1]; absent when not measured (JSON "map_cosine")
  std::optional<double> map_cosine;
  json_value policy;  ///< the transfer policy's record (object) or null
  /// Metrics absent because the engine cannot produce them, with the reason (JSON object
  /// "unavailable": {metric: reason}, written only when non-empty).
  std::vector<unavailable_metric> unavailable;

  /// @brief The value of covariate `name`, if present.
  [[nodiscard]] std::optional<double> covariate_value(std::string_view name) const {
    for (const auto& c : covariates)
      if (c.name == name) return c.value;
    return std::nullopt;
  }
};

namespace detail {
// The record's JSON line; `fn` names the public function in errors.
[[nodiscard]] inline std::string record_line(const trial_record& r, std::string_view fn) {
  std::string out;
  out.reserve(1024);
  auto key = [&](std::string_view k) {
    out.push_back(out.empty() ? '{' : ',');
    out.push_back('"');
    out.append(k);
    out.append("\":");
  };
  auto num = [&](std::string_view k, double x) {
    if (!std::isfinite(x))
      throw_invalid(fn, std::string("record.").append(k), "must be finite, got " + number_text(x));
    key(k);
    append_json_number(out, x);
  };
  auto str = [&](std::string_view k, std::string_view v) {
    key(k);
    append_json_string(out, v);
  };
  auto opt = [&](std::string_view k, const std::optional<double>& x) {
    if (x) return num(k, *x);
    key(k);
    out.append("null");
  };
  num("item", static_cast<double>(r.item));
  num("seed", static_cast<double>(r.seed));
  str("arm", r.arm);
  str("arm_kind", r.arm_kind);
  str("regime", r.regime);
  key("correct");
  out.append(r.correct ? "true" : "false");
  opt("answer_logprob", r.answer_logprob);
  if (r.continuation_logprob) {  // absent unless the task has a continuation
    if (!(*r.continuation_logprob <= 0) || !r.continuation_tokens || *r.continuation_tokens <= 0 ||
        !r.continuation_prob || !(*r.continuation_prob >= 0 && *r.continuation_prob <= 1))
      throw_invalid(
          fn, "record.continuation_logprob",
          "needs continuation_logprob <= 0, continuation_tokens > 0 and continuation_prob in [0, 1]");
    num("continuation_logprob", *r.continuation_logprob);
    num("continuation_tokens", static_cast<double>(*r.continuation_tokens));
    num("continuation_prob", *r.continuation_prob);
  }
  num("generated_tokens", static_cast<double>(r.generated_tokens));
  num("bytes", static_cast<double>(r.bytes));
  num("relay_tokens", static_cast<double>(r.relay_tokens));
  const auto& L = r.latency;
  num("a_prefill_s", L.a_prefill_s);
  num("export_s", L.export_s);
  num("policy_s", L.policy_s);
  num("encode_s", L.encode_s);
  num("transfer_s", L.transfer_s);
  if (r.transfer_measured_s) {  // absent unless the relay crossed a real link
    if (!(*r.transfer_measured_s >= 0))
      throw_invalid(fn, "record.transfer_measured_s",
                    "must be >= 0, got " + number_text(*r.transfer_measured_s));
    num("transfer_measured_s", *r.transfer_measured_s);
  }
  num("decode_s", L.decode_s);
  num("import_s", L.import_s);
  num("b_prefill_s", L.b_prefill_s);
  num("b_decode_s", L.b_decode_s);
  if (!r.latency_repeats_s.empty()) {  // absent when the trial was not repeated
    key("latency_repeats_s");
    out.push_back('[');
    for (std::size_t i = 0; i < r.latency_repeats_s.size(); ++i) {
      const double x = r.latency_repeats_s[i];
      if (!std::isfinite(x) || x < 0)
        throw_invalid(fn, "record.latency_repeats_s", "must hold finite values >= 0, got " + number_text(x));
      if (i > 0) out.push_back(',');
      append_json_number(out, x);
    }
    out.push_back(']');
    num("repeat_mismatches", static_cast<double>(r.repeat_mismatches));
  }
  str("link", r.link);
  opt("attention_mass", r.attention_mass);
  opt("hidden_cosine", r.hidden_cosine);
  opt("next_token_kl", r.next_token_kl);
  opt("noise_sigma", r.noise_sigma);
  opt("budget", r.budget);
  if (r.stale_answer && r.regime != "stale")
    throw_invalid(fn, "record.stale_answer",
                  "must be null outside the stale regime, regime is '" + r.regime + "'");
  key("stale_answer");
  out.append(!r.stale_answer ? "null" : *r.stale_answer ? "true" : "false");
  if (r.drift_steps && !(*r.drift_steps >= 0 && *r.drift_steps == std::floor(*r.drift_steps)))
    throw_invalid(fn, "record.drift_steps",
                  "must be a non-negative integer, got " + number_text(*r.drift_steps));
  opt("drift_steps", r.drift_steps);
  key("covariates");
  out.push_back('{');
  for (std::size_t i = 0; i < r.covariates.size(); ++i) {
    const auto& c = r.covariates[i];
    if (!std::isfinite(c.value))
      throw_invalid(fn, "record.covariates." + c.name, "must be finite, got " + number_text(c.value));
    for (std::size_t k = 0; k < i; ++k)
      if (r.covariates[k].name == c.name)
        throw_invalid(fn, "record.covariates", "names must be unique, '" + c.name + "' repeats");
    if (i > 0) out.push_back(',');
    append_json_string(out, c.name);
    out.push_back(':');
    append_json_number(out, c.value);
  }
  out.push_back('}');
  if (!r.covariate_labels.empty()) {  // absent unless a task file has label covariates
    key("covariate_labels");
    out.push_back('{');
    for (std::size_t i = 0; i < r.covariate_labels.size(); ++i) {
      const auto& c = r.covariate_labels[i];
      for (std::size_t k = 0; k < i; ++k)
        if (r.covariate_labels[k].name == c.name)
          throw_invalid(fn, "record.covariate_labels", "names must be unique, '" + c.name + "' repeats");
      if (i > 0) out.push_back(',');
      append_json_string(out, c.name);
      out.push_back(':');
      append_json_string(out, c.value);
    }
    out.push_back('}');
  }
  if (!r.task_id.empty()) str("task_id", r.task_id);
  if (r.query_index) num("query_index", static_cast<double>(*r.query_index));
  if (r.answer_text) str("answer_text", *r.answer_text);
  if (r.message_length) {  // message arms only
    if (*r.message_length != static_cast<std::int64_t>(r.message_tokens.size()))
      throw_invalid(fn, "record.message_length",
                    "must equal the number of message_tokens (" + std::to_string(r.message_tokens.size()) +
                        "), got " + std::to_string(*r.message_length));
    key("message_tokens");
    out.push_back('[');
    for (std::size_t i = 0; i < r.message_tokens.size(); ++i) {
      if (i > 0) out.push_back(',');
      append_json_number(out, static_cast<double>(r.message_tokens[i]));
    }
    out.push_back(']');
    key("message");
    if (r.message)
      append_json_string(out, *r.message);
    else
      out.append("null");
    num("message_length", static_cast<double>(*r.message_length));
  }
  if (r.task_fields.is_object() && !r.task_fields.as_object().empty()) {
    key("task_fields");
    append_json(out, r.task_fields, {.indent = -1});
  }
  str("sender_fingerprint", r.sender_fingerprint);
  str("receiver_fingerprint", r.receiver_fingerprint);
  if (!r.map.empty()) str("map", r.map);
  if (r.map_cosine) num("map_cosine", *r.map_cosine);
  key("policy");
  append_json(out, r.policy, {.indent = -1});
  if (r.relay_error) str("relay_error", *r.relay_error);  // absent unless a frame was rejected
  if (!r.unavailable.empty()) {                           // absent when the engine produced every metric
    key("unavailable");
    out.push_back('{');
    for (std::size_t i = 0; i < r.unavailable.size(); ++i) {
      if (i > 0) out.push_back(',');
      append_json_string(out, r.unavailable[i].metric);
      out.push_back(':');
      append_json_string(out, r.unavailable[i].reason);
    }
    out.push_back('}');
  }
  out.push_back('}');
  return out;
}
}  // namespace detail

/// @brief One record as a single JSON line (no trailing newline), fields in the order of
/// docs/records.md, written directly without an intermediate tree (the journal writes one per
/// trial).
/// @throws invalid_argument if a numeric field is not finite or a covariate name repeats.
[[nodiscard]] inline std::string record_to_line(const trial_record& r) {
  return detail::record_line(r, "record_to_line");
}

/// @brief Every top-level field a record may hold, in the order of docs/records.md: the
/// properties of docs/record.schema.json and the fields record_from_json reads. A field outside it
/// is read as nothing (record_lint warns about it).
[[nodiscard]] inline std::span<const std::string_view> record_field_names() noexcept {
  static constexpr std::string_view names[] = {"item",
                                               "seed",
                                               "arm",
                                               "arm_kind",
                                               "regime",
                                               "correct",
                                               "answer_logprob",
                                               "continuation_logprob",
                                               "continuation_tokens",
                                               "continuation_prob",
                                               "generated_tokens",
                                               "bytes",
                                               "relay_tokens",
                                               "a_prefill_s",
                                               "export_s",
                                               "policy_s",
                                               "encode_s",
                                               "transfer_s",
                                               "transfer_measured_s",
                                               "decode_s",
                                               "import_s",
                                               "b_prefill_s",
                                               "b_decode_s",
                                               "latency_repeats_s",
                                               "repeat_mismatches",
                                               "link",
                                               "relay_error",
                                               "attention_mass",
                                               "hidden_cosine",
                                               "next_token_kl",
                                               "noise_sigma",
                                               "budget",
                                               "stale_answer",
                                               "drift_steps",
                                               "covariates",
                                               "covariate_labels",
                                               "task_id",
                                               "query_index",
                                               "answer_text",
                                               "message_tokens",
                                               "message",
                                               "message_length",
                                               "task_fields",
                                               "sender_fingerprint",
                                               "receiver_fingerprint",
                                               "map",
                                               "map_cosine",
                                               "policy",
                                               "unavailable"};
  return names;
}

namespace detail {
// The candidate nearest to `word`: within edit distance 2 (3 for words of 10 characters or more),
// the first on a tie; "" when none is that close.
template <class Range>
[[nodiscard]] std::string closest_word(std::string_view word, const Range& candidates) {
  std::string best;
  std::size_t best_distance = word.size() >= 10 ? 4 : 3;
  for (const auto& c : candidates)
    if (const auto d = edit_distance(word, c); d > 0 && d < best_distance) {
      best_distance = d;
      best = std::string(c);
    }
  return best;
}
}  // namespace detail

/// @brief The known record field (record_field_names) closest to `name` by edit distance — within
/// 2 edits (3 for names of 10 characters or more), the first in record_field_names' order on a tie
/// — for a "did you mean" hint (`bytse` → `bytes`, `export_sec` → `export_s`); "" when none is that
/// close or `name` is itself a field.
[[nodiscard]] inline std::string closest_record_field(std::string_view name) {
  return detail::closest_word(name, record_field_names());
}

/// @brief The arm name closest to `label` by edit distance (`kv_ful` → `kv_full`,
/// `kv_nosie_0.5` → `kv_noise_0.5`): among the fixed arm names and each parameterised family
/// (text_budget_, kv_noise_, kv_layers_, ...) with the label's own parameters; a position mode
/// (`@rebase`) is kept. "" when none is within 2 edits (3 from 10 characters) or `label` already
/// parses (parse_arm).
[[nodiscard]] inline std::string closest_arm_name(std::string_view label) {
  const auto at = label.find('@');
  const std::string_view base = label.substr(0, at);
  const std::string mode = at == std::string_view::npos ? std::string() : std::string(label.substr(at));
  // every arm kind whose name is an arm (all_arm_kinds: no_comm, text_full, kv_full, the placebos,
  // cross_model, ...), with the fixed policy arms after kv_full
  std::vector<std::string> candidates;
  for (const arm_kind k : all_arm_kinds) {
    try {
      (void)parse_arm(arm_kind_name(k));
      candidates.emplace_back(arm_kind_name(k));
    } catch (const invalid_argument&) {
      continue;  // a parameterised family (text_budget_<k>, kv_drift_<steps>, ...): below
    }
    if (k == arm_kind::kv_full)
      for (const char* fixed : {"kv_first_half", "kv_last_half", "kv_int8", "kv_int4", "kv_fp8"})
        candidates.emplace_back(fixed);
  }
  // the label's parameters: from its first digit on ("kv_nosie_0.5" -> "0.5")
  const auto digit = base.find_first_of("0123456789");
  const std::string tail = digit == std::string_view::npos ? std::string() : std::string(base.substr(digit));
  for (const char* family : {"text_budget_", "kv_noise_", "kv_layers_", "kv_sinks_", "kv_drift_",
                             "text_message_", "kv_message_", "kv_message_only_", "kv_mapped_drift_"})
    if (!tail.empty()) candidates.push_back(family + tail);
  std::string best = detail::closest_word(base, candidates);
  if (best.empty()) return best;
  best += mode;
  try {
    (void)parse_arm(best);
  } catch (const invalid_argument&) {
    return {};
  }
  return best;
}

/// @brief What a front end learns about records of another stack while they are read: each
/// unknown field (once per distinct name, with the first file:line holding it and the closest
/// known field), each arm whose label names no arm and that carries no arm_kind, or whose arm_kind
/// names no kind (once per distinct label, with the closest name), and (item, seed) units whose
/// arms disagree on the regime (refused, naming both file:lines). Warnings go to the sink as they
/// arise and are kept in warnings(). Thread-safe. record_from_json reports to the lint that a
/// record_lint_scope installed, if any (the CLI installs one for a run; a library caller gets no
/// warnings unless it does).
class record_lint {
 public:
  /// @brief A function that receives each warning line as it arises (e.g. prints it on stderr).
  using sink = std::function<void(const std::string&)>;

  /// @brief A lint sending its warnings to `on_warning` (none: kept in warnings() only).
  explicit record_lint(sink on_warning = {}) : sink_(std::move(on_warning)) {}

  /// @brief Checks one record `r` read from the JSON object `j` at `where` (file:line).
  /// @throws corrupt_data naming `where` and the earlier record's file:line when r's unit already
  ///         has a record of another regime.
  void check(const json_value& j, const trial_record& r, std::string_view where) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string regime_hint;  // an unknown field that is likely a misspelled 'regime'
    if (j.is_object())
      for (const auto& [name, value] : j.as_object()) {
        if (known_.count(name) != 0) continue;
        const std::string near = closest_record_field(name);
        if (near == "regime") regime_hint = name;
        if (!fields_.insert(name).second) continue;
        warn(std::string(where) + ": unknown record field '" + name + "'" +
             (near.empty() ? std::string() : " (did you mean '" + near + "'?)") +
             "; it is ignored (docs/records.md lists the fields)");
      }
    check_arm(r, where);
    check_regime(r, where, regime_hint);
  }

  /// @brief Every warning so far, in the order they arose.
  [[nodiscard]] std::vector<std::string> warnings() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return warnings_;
  }

 private:
  struct unit_regime {
    std::string regime, arm, where;
  };
  mutable std::mutex mutex_;
  sink sink_;
  std::vector<std::string> warnings_;
  std::set<std::string, std::less<>> fields_, arms_;
  const std::set<std::string_view, std::less<>> known_{record_field_names().begin(),
                                                       record_field_names().end()};
  std::map<std::pair<std::uint64_t, std::uint64_t>, unit_regime> units_;

  void warn(std::string line) {
    if (sink_) sink_(line);
    warnings_.push_back(std::move(line));
  }
  void check_arm(const trial_record& r, std::string_view where) {
    const bool no_kind = r.arm_kind.empty();  // the reader found no kind in the label either
    if (!no_kind && parse_arm_kind(r.arm_kind)) return;
    if (arms_.find(r.arm) != arms_.end()) return;
    arms_.insert(r.arm);
    if (no_kind) {
      const std::string near = closest_arm_name(r.arm);
      warn(std::string(where) + ": arm '" + r.arm + "' has no arm_kind and its label names no arm" +
           (near.empty() ? std::string() : " (did you mean '" + near + "'?)") +
           "; it plays no role in the report (docs/records.md, arm_kind)");
      return;
    }
    std::vector<std::string_view> kinds;
    for (const arm_kind k : all_arm_kinds) kinds.push_back(arm_kind_name(k));
    const std::string near = detail::closest_word(r.arm_kind, kinds);
    warn(std::string(where) + ": arm '" + r.arm + "': arm_kind '" + r.arm_kind + "' names no arm kind" +
         (near.empty() ? std::string() : " (did you mean '" + near + "'?)") +
         "; it plays no role in the report (docs/records.md, arm_kind)");
  }
  void check_regime(const trial_record& r, std::string_view where, const std::string& hint) {
    const auto it = units_.find({r.item, r.seed});  // the unit's first record is kept, once
    if (it == units_.end()) {
      units_.emplace(std::pair{r.item, r.seed}, unit_regime{r.regime, r.arm, std::string(where)});
      return;
    }
    if (it->second.regime == r.regime) return;
    const auto& first = it->second;
    LATENTAUDIT_THROW(corrupt_data(
        std::string(where) + ": the arms of (item " + std::to_string(r.item) + ", seed " +
        std::to_string(r.seed) + ") disagree on the regime: arm '" + r.arm + "' says '" + r.regime +
        "', arm '" + first.arm + "' at " + first.where + " says '" + first.regime + "'" +
        (hint.empty() ? std::string() : " (this record's field '" + hint + "' is not 'regime')")));
  }
};

namespace detail {
// The lint record_from_json reports to (record_lint_scope), or null.
[[nodiscard]] inline std::atomic<record_lint*>& installed_record_lint() noexcept {
  static std::atomic<record_lint*> lint{nullptr};
  return lint;
}
}  // namespace detail

/// @brief While alive, every record_from_json (and so read_records) in the process reports the
/// records it reads to `lint`; the lint installed before is restored on destruction.
class record_lint_scope {
 public:
  /// @brief Installs `lint` (which must outlive this scope).
  explicit record_lint_scope(record_lint& lint) noexcept
      : previous_(detail::installed_record_lint().exchange(&lint)) {}
  /// @brief Restores the lint installed before this scope (or none).
  ~record_lint_scope() { detail::installed_record_lint().store(previous_); }
  record_lint_scope(const record_lint_scope&) = delete;             ///< not copyable
  record_lint_scope& operator=(const record_lint_scope&) = delete;  ///< not copyable

 private:
  record_lint* previous_;
};

/// @brief Reads a record from its JSON object. Required: `item`, `seed`, `arm`, `correct`; every
/// other field is optional (records from other stacks) and defaults as in trial_record. An absent
/// (or empty) `arm_kind` is resolved here, once, to the kind of the arm the label names
/// (record_arm_kind: `kv_noise_0.5` reads as `kv_policy`), and stays empty when the label names no
/// arm. When a record_lint_scope is alive the record is reported to its lint (unknown fields,
/// arms of no kind, a unit's regimes that disagree).
/// @throws corrupt_data naming `where` and the field if a field is missing or has the wrong type,
///         or (with a lint installed) naming `where` and the earlier line if the unit's arms
///         disagree on the regime.
[[nodiscard]] inline trial_record record_from_json(const json_value& j, std::string_view where = "record") {
  auto fail = [&](std::string_view field, std::string_view what) -> void {
    LATENTAUDIT_THROW(corrupt_data("record_from_json: " + std::string(where) + ": field '" +
                                   std::string(field) + "' " + std::string(what)));
  };
  if (!j.is_object()) fail("(record)", "must be a JSON object");
  auto number = [&](std::string_view key, bool required, double fallback) -> double {
    const json_value* v = j.find(key);
    if (v == nullptr || v->is_null()) {
      if (required) fail(key, "is required");
      return fallback;
    }
    if (v->is_bool() && key == "correct") return v->as_bool() ? 1.0 : 0.0;
    if (!v->is_number()) fail(key, "must be a number");
    if (!std::isfinite(v->as_number())) fail(key, "must be finite");
    return v->as_number();
  };
  auto count = [&](std::string_view key, bool required) -> std::uint64_t {
    const double x = number(key, required, 0.0);
    if (x < 0 || x != std::floor(x) || x > json_max_exact_integer)
      fail(key, "must be a non-negative integer");
    return static_cast<std::uint64_t>(x);
  };
  auto text = [&](std::string_view key, bool required) -> std::string {
    const json_value* v = j.find(key);
    if (v == nullptr || v->is_null()) {
      if (required) fail(key, "is required");
      return {};
    }
    if (!v->is_string()) fail(key, "must be a string");
    return v->as_string();
  };
  auto opt = [&](std::string_view key) -> std::optional<double> {
    const json_value* v = j.find(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return number(key, true, 0.0);
  };
  trial_record r;
  r.item = count("item", true);
  r.seed = count("seed", true);
  r.arm = text("arm", true);
  if (r.arm.empty()) fail("arm", "must not be empty");
  r.arm_kind = text("arm_kind", false);
  // The kind is resolved once, here: a record without arm_kind (docs/records.md allows it) gets the
  // kind of the arm its label names ("kv_noise_0.5" is kv_policy), or none when the label names no
  // arm (record_arm_kind; the report then warns that the arm plays no role).
  if (r.arm_kind.empty())
    if (const auto k = record_arm_kind({}, r.arm)) r.arm_kind = std::string(arm_kind_name(*k));
  r.regime = text("regime", false);
  const double c = number("correct", true, 0.0);
  if (c != 0.0 && c != 1.0) fail("correct", "must be true/false or 0/1");
  r.correct = c == 1.0;
  r.answer_logprob = opt("answer_logprob");
  if (r.answer_logprob && *r.answer_logprob > 0.0) fail("answer_logprob", "must be <= 0 (a log-probability)");
  r.continuation_logprob = opt("continuation_logprob");
  if (r.continuation_logprob) {  // the three together
    if (*r.continuation_logprob > 0.0) fail("continuation_logprob", "must be <= 0 (a log-probability)");
    const auto n = opt("continuation_tokens");
    if (!n || !(*n >= 1 && *n <= 1e9) || *n != std::floor(*n))
      fail("continuation_tokens", "must be a positive integer with continuation_logprob");
    r.continuation_tokens = static_cast<std::int64_t>(*n);
    r.continuation_prob = opt("continuation_prob");
    if (!r.continuation_prob || !(*r.continuation_prob >= 0.0 && *r.continuation_prob <= 1.0))
      fail("continuation_prob", "must be in [0, 1] with continuation_logprob");
  }
  r.generated_tokens = static_cast<std::int64_t>(count("generated_tokens", false));
  r.bytes = count("bytes", false);
  r.relay_tokens = static_cast<std::int64_t>(count("relay_tokens", false));
  auto& L = r.latency;
  std::pair<const char*, double*> lat[] = {
      {"a_prefill_s", &L.a_prefill_s}, {"export_s", &L.export_s},       {"policy_s", &L.policy_s},
      {"encode_s", &L.encode_s},       {"transfer_s", &L.transfer_s},   {"decode_s", &L.decode_s},
      {"import_s", &L.import_s},       {"b_prefill_s", &L.b_prefill_s}, {"b_decode_s", &L.b_decode_s}};
  for (auto& [k, p] : lat) {
    *p = number(k, false, 0.0);
    if (*p < 0) fail(k, "must be >= 0");
  }
  if (const json_value* rep = j.find("latency_repeats_s"); rep != nullptr && !rep->is_null()) {
    if (!rep->is_array()) fail("latency_repeats_s", "must be an array of seconds");
    for (const auto& x : rep->as_array()) {
      if (!x.is_number() || !std::isfinite(x.as_number()) || x.as_number() < 0)
        fail("latency_repeats_s", "must hold finite numbers >= 0");
      r.latency_repeats_s.push_back(x.as_number());
    }
  }
  r.repeat_mismatches =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(count("repeat_mismatches", false), 0xFFFFFFFFull));
  r.link = text("link", false);
  r.transfer_measured_s = opt("transfer_measured_s");
  if (r.transfer_measured_s && *r.transfer_measured_s < 0) fail("transfer_measured_s", "must be >= 0");
  if (const json_value* re = j.find("relay_error"); re != nullptr && !re->is_null()) {
    if (!re->is_string()) fail("relay_error", "must be a string");
    r.relay_error = re->as_string();
  }
  r.attention_mass = opt("attention_mass");
  r.hidden_cosine = opt("hidden_cosine");
  r.next_token_kl = opt("next_token_kl");
  r.noise_sigma = opt("noise_sigma");
  if (r.noise_sigma && !(*r.noise_sigma >= 0)) fail("noise_sigma", "must be >= 0 (a noise level)");
  r.budget = opt("budget");
  if (const json_value* sa = j.find("stale_answer"); sa != nullptr && !sa->is_null()) {
    if (!sa->is_bool()) fail("stale_answer", "must be true, false or null");
    if (r.regime != "stale") fail("stale_answer", "must be null outside the stale regime");
    r.stale_answer = sa->as_bool();
  }
  r.drift_steps = opt("drift_steps");
  if (r.drift_steps && (*r.drift_steps < 0 || *r.drift_steps != std::floor(*r.drift_steps)))
    fail("drift_steps", "must be a non-negative integer or null");
  if (const json_value* cv = j.find("covariates"); cv != nullptr && !cv->is_null()) {
    if (!cv->is_object()) fail("covariates", "must be an object of numbers");
    for (const auto& [name, value] : cv->as_object()) {
      if (!value.is_number() || !std::isfinite(value.as_number()))
        fail("covariates." + name, "must be a finite number");
      r.covariates.push_back({name, value.as_number()});
    }
  }
  if (const json_value* cl = j.find("covariate_labels"); cl != nullptr && !cl->is_null()) {
    if (!cl->is_object()) fail("covariate_labels", "must be an object of strings");
    for (const auto& [name, value] : cl->as_object()) {
      if (!value.is_string()) fail("covariate_labels." + name, "must be a string");
      r.covariate_labels.push_back({name, value.as_string()});
    }
  }
  r.task_id = text("task_id", false);
  if (const json_value* qi = j.find("query_index"); qi != nullptr && !qi->is_null())
    r.query_index = static_cast<std::int64_t>(count("query_index", true));
  if (const json_value* at = j.find("answer_text"); at != nullptr && !at->is_null()) {
    if (!at->is_string()) fail("answer_text", "must be a string");
    r.answer_text = at->as_string();
  }
  if (const json_value* ml = j.find("message_length"); ml != nullptr && !ml->is_null()) {
    r.message_length = static_cast<std::int64_t>(count("message_length", true));
    const json_value* mt = j.find("message_tokens");
    if (mt == nullptr || !mt->is_array()) fail("message_tokens", "must be an array of token ids");
    for (const auto& t : mt->as_array()) {
      if (!t.is_number() || t.as_number() < 0 || t.as_number() != std::floor(t.as_number()) ||
          t.as_number() > 2147483647.0)
        fail("message_tokens", "must hold token ids (integers in [0, 2^31))");
      r.message_tokens.push_back(static_cast<token_id>(t.as_number()));
    }
    if (static_cast<std::int64_t>(r.message_tokens.size()) != *r.message_length)
      fail("message_length", "must equal the number of message_tokens");
    if (const json_value* m = j.find("message"); m != nullptr && !m->is_null()) {
      if (!m->is_string()) fail("message", "must be a string or null");
      r.message = m->as_string();
    }
  }
  if (const json_value* tf = j.find("task_fields"); tf != nullptr && !tf->is_null()) {
    if (!tf->is_object()) fail("task_fields", "must be an object");
    r.task_fields = *tf;
  }
  r.sender_fingerprint = text("sender_fingerprint", false);
  r.receiver_fingerprint = text("receiver_fingerprint", false);
  r.map = text("map", false);
  if (r.map.size() > 256) fail("map", "must be a map id of at most 256 bytes");
  if (const json_value* c = j.find("map_cosine"); c != nullptr && !c->is_null()) {
    if (!c->is_number() || !(c->as_number() >= -1.0 && c->as_number() <= 1.0))
      fail("map_cosine", "must be a number in [-1, 1]");
    r.map_cosine = c->as_number();
  }
  if (const json_value* p = j.find("policy"); p != nullptr) {
    if (!p->is_object() && !p->is_null()) fail("policy", "must be an object or null");
    r.policy = *p;
  }
  // Labels end up in tables and file names: control characters (newline, NUL, ...) are refused.
  const std::pair<const char*, const std::string*> labels[] = {
      {"arm", &r.arm}, {"arm_kind", &r.arm_kind}, {"regime", &r.regime}, {"link", &r.link}};
  for (const auto& [k, v] : labels)
    if (std::any_of(v->begin(), v->end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; }))
      fail(k, "must not hold control characters");
  if (const json_value* u = j.find("unavailable"); u != nullptr && !u->is_null()) {
    if (!u->is_object()) fail("unavailable", "must be an object of metric: reason strings");
    for (const auto& [metric, why] : u->as_object()) {
      if (!why.is_string()) fail("unavailable." + metric, "must be a string (the reason)");
      r.unavailable.push_back({metric, why.as_string()});
    }
  }
  if (record_lint* lint = detail::installed_record_lint().load()) lint->check(j, r, where);
  return r;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_RECORD_HPP
