// SPDX-License-Identifier: MIT
// latentaudit: the trial driver — for each (item, seed) unit, agent A reads the document on the
// engine, and for each arm (in randomized order) the relay is built (text, or A's cache through
// export → transfer policy / placebo → wire encode → modeled link → wire decode → import) and
// agent B answers; every stage is timed and the record handed to a sink (the journal).
#ifndef LATENTAUDIT_TRIAL_DRIVER_HPP
#define LATENTAUDIT_TRIAL_DRIVER_HPP

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../backend/concepts.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/hash.hpp"
#include "../kv/placebo.hpp"
#include "../kv/transfer_policy.hpp"
#include "../kv/wire.hpp"
#include "design.hpp"
#include "record.hpp"
#include "task.hpp"

namespace latentaudit {

/// @brief A short text identity of a model fingerprint: "<architecture>:<layers>x<kv heads>x<head
/// dim>:<weights hash, 16 hex digits>", so records can show whether sender and receiver ran the
/// same model.
[[nodiscard]] inline std::string fingerprint_text(const model_fingerprint& f) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string h(16, '0');
  for (int i = 0; i < 16; ++i) h[static_cast<std::size_t>(15 - i)] = hex[(f.weights_hash >> (4 * i)) & 0xF];
  std::string out = f.architecture;
  out.append(":")
      .append(std::to_string(f.n_layers))
      .append("x")
      .append(std::to_string(f.n_kv_heads))
      .append("x");
  out.append(std::to_string(f.head_dim_k)).append(":").append(h);
  return out;
}

/// @brief Where the driver's time went (seconds), for the "driver overhead < 2 % of backend time"
/// check: backend_s sums every backend call (A's prefills, exports, imports, B's prefills and
/// decodes, the text reference run, opening and closing sequences); relay_s sums the relay stages the records
/// measure as part of the system under test (transfer policies and placebos, wire encode and decode); wall_s
/// is the whole run().
struct driver_stats {
  std::uint64_t trials = 0;       ///< records produced
  std::uint64_t skipped = 0;      ///< keys already done (resume)
  double wall_s = 0.0;            ///< run() wall time
  double backend_s = 0.0;         ///< time inside backend calls
  double relay_s = 0.0;           ///< time in policies, placebos and the wire (measured stages of each trial)
  double sink_s = 0.0;            ///< time inside the sink (journal writes)
  std::uint64_t repeat_runs = 0;  ///< extra timed runs of trials (trial_design::timing_repeats)
  std::uint64_t repeat_mismatches = 0;  ///< extra runs whose outcome differed from the first run's
  /// @brief wall − backend − relay: the harness's own time (tasks, bookkeeping, metrics, sink).
  [[nodiscard]] double overhead_s() const noexcept { return std::max(0.0, wall_s - backend_s - relay_s); }
};

/// @brief Progress after each unit: trials done (including skipped), total trials.
using progress_callback = std::function<void(std::uint64_t done, std::uint64_t total)>;

namespace detail {

using driver_clock = std::chrono::steady_clock;
inline double seconds_since(driver_clock::time_point t0) {
  return std::chrono::duration<double>(driver_clock::now() - t0).count();
}

// log Σ exp(row) in double, and the first index of the largest entry.
inline double log_sum_exp(std::span<const float> row) {
  double mx = -std::numeric_limits<double>::infinity();
  for (float x : row) mx = std::max(mx, static_cast<double>(x));
  double s = 0;
  for (float x : row) s += std::exp(static_cast<double>(x) - mx);
  return mx + std::log(s);
}
inline std::int32_t argmax(std::span<const float> row) {
  return static_cast<std::int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

inline double cosine(std::span<const float> a, std::span<const float> b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

inline std::array<std::byte, 32> relay_key(std::uint64_t seed) {
  std::array<std::byte, 32> key{};
  auto g = make_stream({seed, 0, 0x4B, 0});
  for (std::size_t i = 0; i < key.size(); i += 4) {
    const std::uint32_t w = g();
    for (std::size_t b = 0; b < 4; ++b) key[i + b] = static_cast<std::byte>((w >> (8 * b)) & 0xFF);
  }
  return key;
}

}  // namespace detail

/// @brief Runs trial designs on an engine (and a partner engine for cross_model arms).
/// @tparam Backend B's engine, which also runs agent A (the agents share the model).
/// @tparam Partner the partner engine (another model) for cross_model arms.
template <inference_backend Backend, inference_backend Partner = Backend>
class trial_driver {
 public:
  /// @brief A task source: the task of (item, seed).
  using task_source = std::function<trial_task(std::uint64_t item, std::uint64_t seed)>;

  /// @brief Drives `engine`; `partner` (may be null) serves cross_model arms.
  trial_driver(Backend& engine, Partner* partner = nullptr) : engine_(engine), partner_(partner) {}

  /// @brief Runs every (item, seed, arm) of `design` whose key is not in `done`, calling
  /// `sink(record)` as each trial completes (units in design.unit_order(), arms in
  /// design.arm_order(); the trials of a unit chosen for timing repeats once their repeats are
  /// done). Records do not depend on the execution order or on resumption: every
  /// random stream derives from (design.seed, item, arm, seed).
  /// @throws invalid_argument if the design is invalid or has a cross_model arm without a
  ///         partner; backend errors propagate.
  driver_stats run(const trial_design& design, const task_source& tasks,
                   const std::function<void(const trial_record&)>& sink, const std::set<trial_key>& done = {},
                   const progress_callback& progress = {}) {
    constexpr std::string_view fn = "trial_driver::run";
    design.validate();
    if (!tasks) detail::throw_invalid(fn, "tasks", "must be a callable task source");
    if (!sink) detail::throw_invalid(fn, "sink", "must be a callable");
    for (const auto& a : design.arms)
      if (a.kind == arm_kind::cross_model && partner_ == nullptr)
        detail::throw_invalid(fn, "design.arms", "has cross_model but the driver has no partner engine");
    const auto t0 = detail::driver_clock::now();
    stats_ = {};
    key_ = detail::relay_key(design.seed);
    receiver_text_ = fingerprint_text(engine_.info().fingerprint);
    partner_text_ = partner_ != nullptr ? fingerprint_text(partner_->info().fingerprint) : std::string();
    derangement_.clear();
    for (const auto& a : design.arms)
      if (a.kind == arm_kind::deranged)
        derangement_ = random_derangement(static_cast<std::size_t>(design.items), design.seed);
    std::uint64_t finished = 0;
    const std::uint64_t total = design.trials();
    for (const auto& [item, s] : design.unit_order()) {
      std::vector<std::size_t> todo;
      for (auto ai : design.arm_order(item, s)) {
        if (done.count(trial_key{item, s, design.arms[ai].label}) != 0) {
          ++stats_.skipped;
          continue;
        }
        todo.push_back(ai);
      }
      if (!todo.empty()) run_unit(design, tasks, item, s, todo, sink);
      finished += design.arms.size();
      if (progress) progress(finished, total);
    }
    stats_.wall_s = detail::seconds_since(t0);
    return stats_;
  }

  /// @brief The statistics of the last run().
  [[nodiscard]] const driver_stats& stats() const noexcept { return stats_; }

 private:
  template <class F>
  auto backend_call(double& into, F&& f) {
    const auto t = detail::driver_clock::now();
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      const double d = detail::seconds_since(t);
      into += d;
      stats_.backend_s += d;
    } else {
      auto r = f();
      const double d = detail::seconds_since(t);
      into += d;
      stats_.backend_s += d;
      return r;
    }
  }

  // Opening and closing sequences are backend calls too (a real engine allocates and frees cache
  // pages there); they count in backend_s but in no record's latency stage.
  template <class E>
  seq_id open_seq(E& e) {
    double unused = 0;
    return backend_call(unused, [&] { return e.open_seq(); });
  }
  template <class E>
  void close_seq(E& e, seq_id s) {
    double unused = 0;
    backend_call(unused, [&] { e.close_seq(s); });
  }

  // A's document in a sequence of engine e; returns (seq, seconds).
  template <class E>
  std::pair<seq_id, double> read_document(E& e, const std::vector<token_id>& doc) {
    double t = 0;
    const seq_id s = open_seq(e);
    backend_call(t, [&] { return e.prefill(s, doc, 0); });
    return {s, t};
  }

  struct reference_run {
    std::vector<double> logp, p;  // B reading the document: log-softmax and softmax at the query
    std::vector<float> hidden;
  };

  void run_unit(const trial_design& d, const task_source& tasks, std::uint64_t item, std::uint64_t s,
                const std::vector<std::size_t>& todo, const std::function<void(const trial_record&)>& sink) {
    const trial_task task = tasks(item, s);
    if (task.document.empty() || task.query.empty() || task.answer.empty())
      detail::throw_invalid(
          "trial_driver::run", "tasks",
          "returned a task without document, query or answer for item " + std::to_string(item));
    // The text reference: B reading the document itself (for hidden_cosine and next_token_kl).
    reference_run ref;
    {
      double t = 0;
      const seq_id b = open_seq(engine_);
      std::vector<token_id> ctx = task.document;
      ctx.insert(ctx.end(), task.own_prompt.begin(), task.own_prompt.end());
      ctx.insert(ctx.end(), task.query.begin(), task.query.end());
      auto out =
          backend_call(t, [&] { return engine_.prefill(b, ctx, 0, forward_options{.want_hidden = true}); });
      const auto V = static_cast<std::size_t>(engine_.info().vocab_size);
      const std::span<const float> row(out.logits.data() + out.logits.size() - V, V);
      const double lse = detail::log_sum_exp(row);
      ref.logp.resize(V);
      ref.p.resize(V);
      for (std::size_t i = 0; i < V; ++i)
        ref.logp[i] = static_cast<double>(row[i]) - lse, ref.p[i] = std::exp(ref.logp[i]);
      ref.hidden = std::move(out.hidden);
      close_seq(engine_, b);
    }
    bool need_a = false;
    for (auto ai : todo) {
      need_a |= d.arms[ai].needs_sender() && d.arms[ai].kind != arm_kind::cross_model;
    }
    std::optional<std::pair<seq_id, double>> a;
    if (need_a) a = read_document(engine_, task.document);
    auto deliver = [&](const trial_record& r) {
      const auto ts = detail::driver_clock::now();
      sink(r);
      stats_.sink_s += detail::seconds_since(ts);
      ++stats_.trials;
    };
    // Timing repeats: the unit's trials are held until their repeats are done; each round re-runs
    // every arm of the unit in the same (randomized) order, so a trial's repeats are separated by
    // the other arms' runs rather than back to back on warm caches.
    const bool repeat = d.timing_repeat_unit(item, s);
    std::vector<trial_record> held;
    for (auto ai : todo) {
      trial_record r = run_arm(d, tasks, task, d.arms[ai], a, ref);
      stats_.relay_s += r.latency.policy_s + r.latency.encode_s + r.latency.decode_s;
      if (repeat) {
        held.push_back(std::move(r));
      } else {
        deliver(r);
      }
    }
    if (repeat) {
      for (std::uint32_t round = 0; round < d.timing_repeats; ++round) {
        for (std::size_t k = 0; k < todo.size(); ++k) {
          const trial_record x = run_arm(d, tasks, task, d.arms[todo[k]], a, ref);
          stats_.relay_s += x.latency.policy_s + x.latency.encode_s + x.latency.decode_s;
          ++stats_.repeat_runs;
          trial_record& r = held[k];
          r.latency_repeats_s.push_back(x.latency.receiver_s());
          // The record keeps the first run's outcome; a deterministic backend must reproduce it.
          if (x.correct != r.correct || x.generated_tokens != r.generated_tokens ||
              x.answer_logprob != r.answer_logprob || x.bytes != r.bytes) {
            ++r.repeat_mismatches;
            ++stats_.repeat_mismatches;
          }
        }
      }
      for (const auto& r : held) deliver(r);
    }
    if (a) close_seq(engine_, a->first);
  }

  trial_record run_arm(const trial_design& d, const task_source& tasks, const trial_task& task,
                       const trial_arm& arm, const std::optional<std::pair<seq_id, double>>& a,
                       const reference_run& ref) {
    trial_record r;
    r.item = task.item;
    r.seed = task.seed;
    r.arm = arm.label;
    r.arm_kind = std::string(arm_kind_name(arm.kind));
    r.regime = regime_name(task.regime);
    r.covariates = task.covariates;
    r.link = d.link.name;
    r.noise_sigma = arm.noise_sigma;
    if (arm.kind == arm_kind::text_budget) r.budget = arm.budget;
    const auto& fp = engine_.info().fingerprint;
    r.receiver_fingerprint = receiver_text_;
    auto& L = r.latency;
    const std::span<const std::byte> key =
        d.authenticate ? std::span<const std::byte>(key_) : std::span<const std::byte>{};

    std::vector<token_id> prefix;  // B's context before own_prompt + query, when it is text
    position_t first = 0;          // position of B's first own token
    std::int64_t relayed = 0;      // cache rows B holds from the relay (counted for attention mass)
    const seq_id b = open_seq(engine_);
    if (arm.kind == arm_kind::no_comm) {
      prefix = task.no_relay_prefix;
    } else if (arm.kind == arm_kind::text_full || arm.kind == arm_kind::text_budget) {
      L.a_prefill_s = a->second;
      r.sender_fingerprint = r.receiver_fingerprint;
      text_relay msg{
          .as_tokens = true,
          .tokens = arm.kind == arm_kind::text_full ? task.document : task.document_prefix_pairs(arm.budget)};
      auto t = detail::driver_clock::now();
      const auto bytes = encode_relay(msg, wire_encode_options{.hmac_key = key});
      L.encode_s = detail::seconds_since(t);
      r.bytes = bytes.size();
      L.transfer_s = d.link.transfer_seconds(r.bytes);
      t = detail::driver_clock::now();
      auto dec =
          decode_relay(bytes, wire_decode_options{.hmac_key = key, .require_authentication = d.authenticate});
      L.decode_s = detail::seconds_since(t);
      prefix = std::move(dec.text.tokens);
      relayed = static_cast<std::int64_t>(prefix.size());
      r.relay_tokens = relayed;
    } else {
      // KV arms: export → policy / placebo → wire → import.
      kv_block block;
      const std::int64_t n = static_cast<std::int64_t>(task.document.size());
      if (arm.kind == arm_kind::cross_model) {
        auto pa = read_document(*partner_, task.document);
        L.a_prefill_s = pa.second;
        block = backend_call(L.export_s, [&] {
          return partner_->export_kv(pa.first, index_range{0, n},
                                     index_range{0, partner_->info().fingerprint.n_layers});
        });
        close_seq(*partner_, pa.first);
        r.sender_fingerprint = partner_text_;
      } else {
        L.a_prefill_s = a->second;
        r.sender_fingerprint = r.receiver_fingerprint;
        block = backend_call(L.export_s, [&] {
          return engine_.export_kv(a->first, index_range{0, n}, index_range{0, fp.n_layers});
        });
      }
      const policy_context ctx{.seed = detail::mix64(d.seed ^ (0x9E3779B97F4A7C15ULL * (task.seed + 1))),
                               .item = task.item};
      auto t = detail::driver_clock::now();
      transfer_record tr;
      if (arm.kind == arm_kind::deranged) {
        const std::uint64_t donor = derangement_[static_cast<std::size_t>(task.item)];
        const trial_task dt = tasks(donor, task.seed);
        L.policy_s += detail::seconds_since(t);
        auto da = read_document(engine_, dt.document);
        L.a_prefill_s += da.second;
        kv_block donor_block = backend_call(L.export_s, [&] {
          return engine_.export_kv(da.first, index_range{0, static_cast<std::int64_t>(dt.document.size())},
                                   index_range{0, fp.n_layers});
        });
        close_seq(engine_, da.first);
        t = detail::driver_clock::now();
        block = length_matched(donor_block, n, 0);
        tr.policy = "deranged";
        tr.placebo = placebo_kind::deranged;
      } else if (arm.kind == arm_kind::zeroed) {
        block = zeroed_placebo(block);
        tr.policy = "zeroed";
        tr.placebo = placebo_kind::zeroed;
      } else if (arm.kind == arm_kind::random) {
        block = random_placebo(block, ctx.seed, task.item);
        tr.policy = "random";
        tr.placebo = placebo_kind::random;
      } else if (arm.kind == arm_kind::kv_full || arm.kind == arm_kind::kv_policy) {
        tr = arm.policy.apply(block, ctx);
      } else {
        tr.policy = "cross_model";
      }
      L.policy_s += detail::seconds_since(t);
      t = detail::driver_clock::now();
      const auto bytes =
          encode_relay(block, wire_encode_options{.hmac_key = key, .quantize = arm.wire_quantize});
      L.encode_s = detail::seconds_since(t);
      r.bytes = bytes.size();
      L.transfer_s = d.link.transfer_seconds(r.bytes);
      t = detail::driver_clock::now();
      const bool forced = arm.kind == arm_kind::cross_model;
      auto dec = decode_relay(bytes, wire_decode_options{.hmac_key = key,
                                                         .require_authentication = d.authenticate,
                                                         .expected_fingerprint = forced ? nullptr : &fp});
      L.decode_s = detail::seconds_since(t);
      relayed = dec.kv.n_tokens();
      r.relay_tokens = relayed;
      backend_call(L.import_s, [&] {
        engine_.import_kv(b, dec.kv, import_options{.mode = position_mode::preserve, .force = forced});
      });
      // B's own tokens follow the document's positions when the relay keeps them; after a
      // renumbered or appended relay they follow the relay itself.
      first =
          arm.policy.mode == position_mode::preserve ? static_cast<position_t>(n) : engine_.next_position(b);
      r.policy = transfer_record_json(tr, dec.quantization);
    }
    // B: own prompt + query (after a text prefix when the relay is text or nothing).
    std::vector<token_id> ctx = prefix;
    ctx.insert(ctx.end(), task.own_prompt.begin(), task.own_prompt.end());
    ctx.insert(ctx.end(), task.query.begin(), task.query.end());
    forward_output out;
    if constexpr (attention_capturing_backend<Backend>) {
      if (relayed > 0) {
        std::vector<layer_index> layers(static_cast<std::size_t>(fp.n_layers));
        std::iota(layers.begin(), layers.end(), 0);
        auto cap = backend_call(L.b_prefill_s, [&] {
          return engine_.prefill_capture(b, ctx, first, layers, forward_options{.want_hidden = true});
        });
        // mass of the last query position on the relayed rows (the first `relayed` cache rows), mean over
        // layers and heads
        double mass = 0;
        const auto Q = static_cast<std::size_t>(cap.queries), K = static_cast<std::size_t>(cap.keys);
        for (std::size_t l = 0; l < cap.layers.size(); ++l)
          for (std::size_t h = 0; h < static_cast<std::size_t>(cap.heads); ++h) {
            const float* w =
                cap.weights.data() + ((l * static_cast<std::size_t>(cap.heads) + h) * Q + (Q - 1)) * K;
            for (std::size_t k = 0; k < static_cast<std::size_t>(relayed) && k < K; ++k) mass += w[k];
          }
        r.attention_mass =
            mass / static_cast<double>(cap.layers.size() * static_cast<std::size_t>(cap.heads));
        out = std::move(cap.output);
      } else {
        out = backend_call(L.b_prefill_s, [&] {
          return engine_.prefill(b, ctx, first, forward_options{.want_hidden = true});
        });
      }
    } else {
      out = backend_call(L.b_prefill_s, [&] {
        return engine_.prefill(b, ctx, first, forward_options{.want_hidden = true});
      });
    }
    // B answers greedily: the first token from the prefill's logits, the rest by decode steps.
    const auto V = static_cast<std::size_t>(engine_.info().vocab_size);
    const std::span<const float> row(out.logits.data() + out.logits.size() - V, V);
    auto t = detail::driver_clock::now();
    const double lse = detail::log_sum_exp(row);
    const auto arg = detail::argmax(row);
    r.answer_logprob = static_cast<double>(row[static_cast<std::size_t>(task.answer[0])]) - lse;
    std::vector<token_id> generated{arg};
    double decode_backend = 0;
    position_t p = first + static_cast<position_t>(ctx.size());
    while (generated.size() < task.answer.size()) {
      auto step = backend_call(decode_backend, [&] { return engine_.decode(b, generated.back(), p++); });
      generated.push_back(detail::argmax(std::span<const float>(step.logits.data(), V)));
    }
    L.b_decode_s = detail::seconds_since(t);
    r.generated_tokens = static_cast<std::int64_t>(generated.size());
    r.correct = generated == task.answer;
    if (!out.hidden.empty() && out.hidden.size() == ref.hidden.size())
      r.hidden_cosine = detail::cosine(out.hidden, ref.hidden);
    if (ref.logp.size() == V) {  // KL(text || arm) = Σ p_text (log p_text − log p_arm)
      double kl = 0;
      for (std::size_t i = 0; i < V; ++i)
        kl += ref.p[i] * (ref.logp[i] - (static_cast<double>(row[i]) - lse));
      r.next_token_kl = std::max(0.0, kl);
    }
    close_seq(engine_, b);
    return r;
  }

  static json_value transfer_record_json(const transfer_record& tr,
                                         const std::optional<quantize_spec>& wire_q) {
    json_value j;
    j.set("policy", tr.policy);
    json_value layers = json_value::array_type{};
    for (auto l : tr.layers) layers.push_back(l);
    j.set("layers", std::move(layers));
    j.set("tokens_in", static_cast<double>(tr.tokens_in));
    j.set("tokens_kept", static_cast<double>(tr.tokens_kept));
    j.set("bytes_before", static_cast<double>(tr.bytes_before));
    j.set("bytes_after", static_cast<double>(tr.bytes_after));
    if (!tr.noise.empty()) {
      json_value nz = json_value::array_type{};
      for (const auto& n : tr.noise) {
        json_value o;
        o.set("sigma", n.sigma_requested);
        o.set("signal_rms", n.signal_rms);
        o.set("realized_snr_db",
              std::isfinite(n.realized_snr_db) ? json_value(n.realized_snr_db) : json_value(nullptr));
        nz.push_back(std::move(o));
      }
      j.set("noise", std::move(nz));
    }
    if (tr.placebo) j.set("placebo", std::string(placebo_kind_name(*tr.placebo)));
    if (wire_q) j.set("wire_quantization", std::string(quant_scheme_name(wire_q->scheme)));
    j.set("position_mode", std::string(position_mode_name(tr.mode)));
    return j;
  }

  Backend& engine_;
  Partner* partner_;
  driver_stats stats_;
  std::array<std::byte, 32> key_{};
  std::vector<std::size_t> derangement_;
  std::string receiver_text_, partner_text_;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_DRIVER_HPP
