// SPDX-License-Identifier: MIT
// latentaudit: the production sample — per request, a counter-based draw decides whether the request
// is also run on the fallback arm (text, or no communication) at a configured fraction; both answers
// are scored by the stack's own callback and journaled as trial records (the journal's format, one
// writer: trial/journal.hpp's record_journal, in bounded rotating files), and the pair is returned
// for the relay monitor (serve/relay_monitor.hpp).
//
// The draw for request r under seed s is uniform01(Philox stream (s, r, 0x5345, 0)) < fraction: a
// pure function of (seed, request id) — the same on every thread, process and restart, independent
// of the order requests arrive in and of every outcome — so the sampled requests are a random sample
// of all requests and the monitor's hypothesis about the sample is one about the stream.
#ifndef LATENTAUDIT_SERVE_RELAY_SAMPLER_HPP
#define LATENTAUDIT_SERVE_RELAY_SAMPLER_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/rng.hpp"
#include "../trial/arm.hpp"
#include "../trial/design.hpp"
#include "../trial/journal.hpp"
#include "../trial/record.hpp"
#include "relay_monitor.hpp"

namespace latentaudit {

/// @brief One answer the stack served for a request on one arm, as the sampler records it.
struct served_answer {
  std::uint64_t request_id = 0;       ///< the stack's request id (the record's item; below 2^53)
  std::string answer_text;            ///< the answer as the stack produced it (scored by the callback)
  std::string regime;                 ///< the request's regime when the stack knows it ("" unknown)
  std::uint64_t bytes = 0;            ///< bytes relayed on the wire (0 for no communication)
  std::int64_t relay_tokens = 0;      ///< tokens relayed (text tokens or KV rows)
  std::int64_t generated_tokens = 0;  ///< tokens B generated
  latency_split latency;              ///< the stages the stack measured (seconds; others 0)
  /// log-probability of the answer (≤ 0), if the stack measures it: the likelihood endpoint is its
  /// exp() when no continuation is given
  std::optional<double> answer_logprob;
  /// the continuation's summed log-probability (≤ 0) and its tokens (> 0), if the stack measures
  /// them: the likelihood endpoint is exp(logprob / tokens), the record's continuation_prob
  std::optional<double> continuation_logprob;
  std::optional<std::int64_t> continuation_tokens;  ///< tokens of the continuation, with it
  std::string sender_fingerprint;                   ///< sender model fingerprint ("" without sender)
  std::string receiver_fingerprint;                 ///< B's model fingerprint
  std::string task_id;                              ///< the request's task class, if any
};

/// @brief The stack's scorer: whether `answer` is correct for its request on arm `arm`.
using answer_scorer = std::function<bool(const served_answer& answer, std::string_view arm)>;

/// @brief Options of relay_sampler.
struct relay_sampler_options {
  std::uint64_t seed = 1;                          ///< the sample's seed (below 2^53: written to design.json)
  double fraction = 0.05;                          ///< share of requests also run on the fallback, in [0, 1]
  std::string relay_arm = "kv_full";               ///< the relay's arm label (any parse_arm name)
  relay_fallback fallback = relay_fallback::text;  ///< the fallback requests are also run on
  std::string fallback_arm;   ///< its arm label; "" = "text_full" (text) or "no_comm" (no communication)
  std::filesystem::path dir;  ///< the journal directory (created; locked while the sampler lives)
  std::uint64_t max_file_bytes = std::uint64_t{64} << 20;  ///< a file rotates once it holds this many bytes
  std::size_t max_files = 8;      ///< rotated files kept (the oldest are removed): ≤ max_files files
  bool record_unsampled = false;  ///< also journal the relay record of requests not sampled
  std::string link;               ///< the link's name written to each record ("" none)
};

/// @brief The file name of rotated file `index` of a sampler's journal: "sample-000001.jsonl".
/// @param index the file's index (1-based)
/// @returns the name
[[nodiscard]] inline std::string relay_sample_file_name(std::uint64_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "sample-%06llu.jsonl", static_cast<unsigned long long>(index));
  return buf;
}

namespace detail {
/// @brief The sampler's uniform draw of request `request_id` under `seed`: uniform01 of the Philox
/// stream (seed, request_id, 0x5345, 0).
/// @param seed the sample's seed
/// @param request_id the request
/// @returns a value in [0, 1)
[[nodiscard]] inline double relay_sample_draw(std::uint64_t seed, std::uint64_t request_id) noexcept {
  auto g = make_stream({seed, request_id, 0x5345, 0});
  return uniform01(g);
}
}  // namespace detail

/// @brief Whether request `request_id` is in the sample of `seed` at `fraction` (the sampler's draw,
/// usable without a sampler: a router deciding before it runs the fallback).
///
/// @code
/// relay_sampled(1, 5, 0.0);  // false: fraction 0 samples no request
/// relay_sampled(1, 5, 1.0);  // true: fraction 1 samples every one
/// @endcode
/// @param seed the sample's seed
/// @param request_id the request
/// @param fraction the share sampled, in [0, 1]
/// @returns uniform01(Philox (seed, request_id, 0x5345, 0)) < fraction
/// @throws invalid_argument for a fraction outside [0, 1]
[[nodiscard]] inline bool relay_sampled(std::uint64_t seed, std::uint64_t request_id, double fraction) {
  detail::check_closed_unit("relay_sampled", "fraction", fraction);
  return detail::relay_sample_draw(seed, request_id) < fraction;
}

/// @brief The likelihood endpoint of a record: continuation_prob when present, else
/// exp(answer_logprob) when present, else nothing.
/// @param r the record
/// @returns a value in [0, 1], or nothing
[[nodiscard]] inline std::optional<double> record_likelihood(const trial_record& r) {
  if (r.continuation_prob) return std::clamp(*r.continuation_prob, 0.0, 1.0);
  if (r.answer_logprob) return std::clamp(std::exp(*r.answer_logprob), 0.0, 1.0);
  return std::nullopt;
}

/// @brief The production sampler: decides per request whether the fallback is also run, journals
/// the scored records in rotating files, and returns the pair for the monitor. Thread-safe (one
/// lock around the journal).
class relay_sampler {
 public:
  /// @brief Opens the sampler: locks `options.dir` and starts a new file after any already there
  /// (never appends to an old file).
  /// @param options the options
  /// @param scorer the stack's scorer (called once per recorded answer)
  /// @throws invalid_argument for a bad option (naming it), an empty scorer, a directory another
  ///         process holds, or arm labels parse_arm refuses
  relay_sampler(relay_sampler_options options, answer_scorer scorer)
      : o_(std::move(options)), scorer_(std::move(scorer)) {
    constexpr std::string_view fn = "relay_sampler";
    detail::check_closed_unit(fn, "options.fraction", o_.fraction);
    if (o_.seed >= max_exact_seed) detail::throw_invalid(fn, "options.seed", "must be below 2^53");
    if (o_.dir.empty()) detail::throw_invalid(fn, "options.dir", "must name the journal directory");
    if (o_.max_file_bytes < 1024)
      detail::throw_invalid(fn, "options.max_file_bytes", "must be at least 1024");
    if (o_.max_files < 1) detail::throw_invalid(fn, "options.max_files", "must be at least 1");
    if (!scorer_) detail::throw_invalid(fn, "scorer", "must be callable");
    if (o_.fallback_arm.empty())
      o_.fallback_arm = o_.fallback == relay_fallback::text ? "text_full" : "no_comm";
    relay_ = parse_arm(o_.relay_arm);
    fallback_ = parse_arm(o_.fallback_arm);
    if (relay_.label == fallback_.label)
      detail::throw_invalid(fn, "options.fallback_arm", "must differ from relay_arm");
    design_.seed = o_.seed;
    design_.items = max_exact_seed - 1;
    design_.seeds = 1;
    design_.arms = {relay_, fallback_};
    design_.randomize_order = false;
    design_.validate();
    lock_.emplace(o_.dir, "relay_sampler directory");
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(o_.dir, ec))
      if (const auto i = file_index(e.path().filename().string())) {
        next_index_ = std::max(next_index_, *i + 1);
        files_.push_back(*i);
      }
    std::sort(files_.begin(), files_.end());
  }
  relay_sampler(const relay_sampler&) = delete;
  relay_sampler& operator=(const relay_sampler&) = delete;

  /// @brief Whether request `request_id` is in the sample (relay_sampled with the options).
  /// @param request_id the request
  /// @returns true when the stack should also run the fallback
  [[nodiscard]] bool sampled(std::uint64_t request_id) const noexcept {
    return detail::relay_sample_draw(o_.seed, request_id) < o_.fraction;
  }

  /// @brief Records one served request: scores the relay answer and, when given, the fallback's, and
  /// journals both (the relay record alone when no fallback is given and record_unsampled is set).
  /// @param relay the relay answer
  /// @param fallback the fallback answer of the same request (only for sampled requests)
  /// @returns the pair for relay_monitor::observe when a fallback was given, else nothing
  /// @throws invalid_argument for a fallback of a request not sampled, or of another request id, a
  ///         request id of 2^53 or more, a request already journaled in the current file, or a
  ///         record field the record writer refuses; corrupt_data if a write fails
  std::optional<relay_pair> record(const served_answer& relay, const std::optional<served_answer>& fallback) {
    constexpr std::string_view fn = "relay_sampler::record";
    if (relay.request_id >= max_exact_seed)
      detail::throw_invalid(fn, "relay.request_id", "must be below 2^53");
    if (fallback && fallback->request_id != relay.request_id)
      detail::throw_invalid(fn, "fallback", "must answer the same request as relay");
    if (fallback && !sampled(relay.request_id))
      detail::throw_invalid(fn, "fallback",
                            "given for request " + std::to_string(relay.request_id) +
                                ", which is not in the sample (the draw is fixed by (seed, request id))");
    if (!fallback && !o_.record_unsampled) return std::nullopt;
    trial_record a = make_record(relay, relay_);
    std::optional<trial_record> b;
    if (fallback) b = make_record(*fallback, fallback_);
    {
      std::lock_guard<std::mutex> guard(mu_);
      write({&a, b ? &*b : nullptr});
    }
    if (!b) return std::nullopt;
    relay_pair p;
    p.request_id = relay.request_id;
    p.fallback = o_.fallback;
    p.relay_correct = a.correct;
    p.fallback_correct = b->correct;
    p.relay_likelihood = record_likelihood(a);
    p.fallback_likelihood = record_likelihood(*b);
    return p;
  }

  /// @brief The files the sampler's directory holds now, oldest first.
  /// @returns their paths
  [[nodiscard]] std::vector<std::filesystem::path> files() const {
    std::lock_guard<std::mutex> guard(mu_);
    std::vector<std::filesystem::path> out;
    for (auto i : files_) out.push_back(o_.dir / relay_sample_file_name(i));
    return out;
  }
  /// @brief Closes the current file (cutting its padding); the next record starts a new one.
  /// @throws corrupt_data if the file cannot be finished
  void flush() {
    std::lock_guard<std::mutex> guard(mu_);
    journal_.reset();
  }
  /// @brief The options (fallback_arm resolved).
  /// @returns them
  [[nodiscard]] const relay_sampler_options& options() const noexcept { return o_; }

 private:
  static std::optional<std::uint64_t> file_index(const std::string& name) {
    constexpr std::string_view pre = "sample-", post = ".jsonl";
    if (name.size() <= pre.size() + post.size() || name.compare(0, pre.size(), pre) != 0 ||
        name.compare(name.size() - post.size(), post.size(), post) != 0)
      return std::nullopt;
    const std::string digits = name.substr(pre.size(), name.size() - pre.size() - post.size());
    if (digits.empty() || digits.size() > 15 || digits.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return std::stoull(digits);
  }

  trial_record make_record(const served_answer& s, const trial_arm& arm) const {
    trial_record r;
    r.item = s.request_id;
    r.seed = 0;
    r.arm = arm.label;
    r.arm_kind = std::string(arm_kind_name(arm.kind));
    r.regime = s.regime;
    r.correct = scorer_(s, arm.label);
    r.answer_logprob = s.answer_logprob;
    if (s.continuation_logprob) {
      if (!s.continuation_tokens || *s.continuation_tokens <= 0)
        detail::throw_invalid("relay_sampler::record", "answer.continuation_tokens",
                              "must be a positive count with continuation_logprob");
      r.continuation_logprob = s.continuation_logprob;
      r.continuation_tokens = s.continuation_tokens;
      r.continuation_prob = std::exp(*s.continuation_logprob / static_cast<double>(*s.continuation_tokens));
    }
    r.generated_tokens = s.generated_tokens;
    r.bytes = s.bytes;
    r.relay_tokens = s.relay_tokens;
    r.latency = s.latency;
    r.link = o_.link;
    r.answer_text = s.answer_text;
    r.sender_fingerprint = s.sender_fingerprint;
    r.receiver_fingerprint = s.receiver_fingerprint;
    r.task_id = s.task_id;
    (void)record_to_line(r);  // refuse a bad field before anything of the pair is written
    return r;
  }

  // Appends the records (both of a pair go to one file), rotating first when the file is full.
  void write(std::initializer_list<const trial_record*> records) {
    if (journal_ && journal_->size_bytes() >= o_.max_file_bytes) journal_.reset();
    if (!journal_) open_next();
    for (const auto* r : records)
      if (r != nullptr) journal_->append(*r);
  }

  void open_next() {
    const std::uint64_t index = next_index_++;
    journal_ =
        std::make_unique<record_journal>(directory_lock(o_.dir, "relay_sampler directory", journal_lock),
                                         design_, false, false, relay_sample_file_name(index));
    files_.push_back(index);
    while (files_.size() > o_.max_files) {
      std::error_code ec;
      std::filesystem::remove(o_.dir / relay_sample_file_name(files_.front()), ec);
      files_.erase(files_.begin());
    }
  }

  static constexpr const char* journal_lock = ".latentaudit.sample.lock";
  relay_sampler_options o_;
  answer_scorer scorer_;
  trial_arm relay_, fallback_;
  trial_design design_;
  std::optional<directory_lock> lock_;  // the directory, for the sampler's life
  mutable std::mutex mu_;
  std::unique_ptr<record_journal> journal_;
  std::vector<std::uint64_t> files_;
  std::uint64_t next_index_ = 1;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_SERVE_RELAY_SAMPLER_HPP
