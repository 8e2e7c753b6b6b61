// SPDX-License-Identifier: MIT
// latentaudit: the trial driver — for each (item, seed) unit, agent A reads the document on the
// engine, and for each arm (in randomized order) the relay is built (text, or A's cache through
// export → transfer policy / placebo → wire encode → modeled link → wire decode → import) and
// agent B answers; every stage is timed and the record handed to a sink (the journal).
//
// The driver consults the engine's engine_capabilities (trial/engine_support.hpp): a design with an
// arm the engine cannot run is refused up front naming the arm and the reason (restrict_to_engine
// drops such arms); H2O, SnapKV and PyramidKV selections get their attention scores from the
// sender's prefill_capture; metrics the engine cannot produce are recorded as absent with the reason.
// Engine sequences are owned by scoped_seq (a throw in the wire or an import leaks none), and every
// output is checked against its declared shape before it is read (engine_error otherwise).
// Position placement has one owner, the transfer policy (kv_policy::mode, before the wire):
// the receiver imports the block at the positions it carries. Records are built with the public
// functions of trial/record_builder.hpp.
#ifndef LATENTAUDIT_TRIAL_DRIVER_HPP
#define LATENTAUDIT_TRIAL_DRIVER_HPP

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/hash.hpp"
#include "../engine/concepts.hpp"
#include "../kv/map_screen.hpp"
#include "../kv/placebo.hpp"
#include "../kv/transfer_policy.hpp"
#include "../kv/wire.hpp"
#include "design.hpp"
#include "engine_support.hpp"
#include "link.hpp"
#include "message.hpp"
#include "record.hpp"
#include "record_builder.hpp"
#include "remote_sender.hpp"
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

/// @brief A cache map a kv_mapped arm relays through (trial_driver::add_map): the sender's cache
/// in, a cache of B's model out. The CLI builds it from a map file (kv/kv_map.hpp apply_kv_map);
/// any function of that shape serves (a custom map of a user's stack).
struct relay_map {
  std::string id;            ///< the map's identity (kv_map_id): the records' field "map", the policy's "map"
  model_fingerprint source;  ///< the sender's model (the cache `apply` takes)
  model_fingerprint target;  ///< B's model (the cache `apply` gives)
  std::function<kv_block(const kv_block&)> apply;  ///< the sender's whole cache → B's shape
};

/// @brief Where the driver's time went (seconds), for the "driver overhead < 2 % of engine time"
/// check: engine_s sums every engine call (A's prefills, exports, imports, B's prefills and
/// decodes, the text reference run, opening and closing sequences); relay_s sums the relay stages the records
/// measure as part of the system under test (transfer policies and placebos, wire encode and decode); wall_s
/// is the whole run().
struct driver_stats {
  std::uint64_t trials = 0;       ///< records produced
  std::uint64_t skipped = 0;      ///< keys already done (resume)
  double wall_s = 0.0;            ///< run() wall time
  double engine_s = 0.0;          ///< time inside engine calls
  double relay_s = 0.0;           ///< time in policies, placebos and the wire (measured stages of each trial)
  double sink_s = 0.0;            ///< time inside the sink (journal writes)
  std::uint64_t repeat_runs = 0;  ///< extra timed runs of trials (trial_design::timing_repeats)
  std::uint64_t repeat_mismatches = 0;  ///< extra runs whose outcome differed from the first run's
  /// the workers' wall times summed (run_on_workers: several drivers at once); 0 for one driver's
  /// run(), whose wall_s it is
  double worker_wall_s = 0.0;
  /// @brief wall − engine − relay, over the workers' summed wall times when several ran: the
  /// harness's own time (tasks, bookkeeping, metrics, sink).
  [[nodiscard]] double overhead_s() const noexcept {
    return std::max(0.0, (worker_wall_s > 0.0 ? worker_wall_s : wall_s) - engine_s - relay_s);
  }
  /// @brief Adds another run's figures field by field (the drivers of run_on_workers, the batches
  /// of `audit --until-decided`).
  driver_stats& operator+=(const driver_stats& o) noexcept {
    trials += o.trials;
    skipped += o.skipped;
    wall_s += o.wall_s;
    engine_s += o.engine_s;
    relay_s += o.relay_s;
    sink_s += o.sink_s;
    repeat_runs += o.repeat_runs;
    repeat_mismatches += o.repeat_mismatches;
    worker_wall_s += o.worker_wall_s;
    return *this;
  }
};

/// @brief Progress after each unit: trials done (including skipped), total trials.
using progress_callback = std::function<void(std::uint64_t done, std::uint64_t total)>;

/// @brief Which units a run() runs, in what order (a sharded audit's share, docs/distributed.md):
/// called before each unit, it returns the next position in design.unit_order() to run, or
/// std::nullopt when none is left. An empty schedule runs every position in order.
using unit_schedule = std::function<std::optional<std::size_t>()>;

namespace detail {

using driver_clock = std::chrono::steady_clock;
inline double seconds_since(driver_clock::time_point t0) {
  return std::chrono::duration<double>(driver_clock::now() - t0).count();
}

// Whether every key and value of `b` is finite (a relay from another process may hold NaN).
inline bool kv_all_finite(const kv_block& b) {
  return visit_cache_type(b.type(), [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < b.n_layers(); ++i) {
      for (const T x : b.k<T>(i))
        if (!std::isfinite(static_cast<float>(x))) return false;
      for (const T x : b.v<T>(i))
        if (!std::isfinite(static_cast<float>(x))) return false;
    }
    return true;
  });
}

// A misbehaving engine: what it returned does not have the shape it declared.
[[noreturn]] inline void throw_bad_output(std::string_view engine, std::string_view what) {
  LATENTAUDIT_THROW(
      engine_error("trial_driver::run: engine '" + std::string(engine) + "' " + std::string(what)));
}

}  // namespace detail

/// @brief Runs trial designs on an engine (and a partner engine for cross_model arms).
/// @tparam Engine B's engine, which also runs agent A (the agents share the model).
/// @tparam Partner the partner engine (another model) for cross_model arms.
template <inference_engine Engine, inference_engine Partner = Engine>
class trial_driver {
 public:
  /// @brief A task source: the task of (item, seed).
  using task_source = std::function<trial_task(std::uint64_t item, std::uint64_t seed)>;

  /// @brief Drives `engine`; `partner` (may be null) serves cross_model arms.
  trial_driver(Engine& engine, Partner* partner = nullptr) : engine_(engine), partner_(partner) {}

  /// @brief Registers `engine` (same engine type as B's, e.g. a drifted copy of B's model) as the
  /// sender named `name`: drifted arms whose trial_arm::sender is `name` have it read A's document
  /// and relay its whole cache (force-imported: its fingerprint differs). The engine must outlive
  /// the driver's runs; registering a name again replaces the engine.
  /// @throws invalid_argument if the name is empty.
  void add_sender(const std::string& name, Engine& engine) {
    if (name.empty()) detail::throw_invalid("trial_driver::add_sender", "name", "must not be empty");
    for (auto& [n, e] : senders_)
      if (n == name) {
        e = &engine;
        return;
      }
    senders_.emplace_back(name, &engine);
  }

  /// @brief Registers the cache map of the sender named `sender` (partner_sender for the partner):
  /// kv_mapped arms whose trial_arm::sender is `sender` relay that sender's cache through
  /// `m.apply`, and B imports the result with its fingerprint checked (it must be B's). A run checks
  /// that m.source is the sender's fingerprint and m.target B's. Registering a sender again
  /// replaces its map.
  /// @throws invalid_argument if the sender is empty, the id empty or `apply` unset.
  void add_map(const std::string& sender, relay_map m) {
    if (sender.empty()) detail::throw_invalid("trial_driver::add_map", "sender", "must not be empty");
    if (m.id.empty() || !m.apply)
      detail::throw_invalid("trial_driver::add_map", "m", "must have an id and an apply function");
    for (auto& [n, x] : maps_)
      if (n == sender) {
        x = std::move(m);
        return;
      }
    maps_.emplace_back(sender, std::move(m));
  }

  /// @brief Runs every (item, seed, arm) of `design` whose key is not in `done`, calling
  /// `sink(record)` as each trial completes (units in design.unit_order(), arms in
  /// design.arm_order(); the trials of a unit chosen for timing repeats once their repeats are
  /// done). Records do not depend on the execution order or on resumption: every
  /// random stream derives from (design.seed, item, arm, seed).
  /// @throws invalid_argument if the design is invalid or has an arm the engine cannot run
  ///         (arm_unsupported_reason: a cross_model arm without a partner, a partial-layer relay
  ///         on an engine without per-layer import, ...); engine_error if an engine returns
  ///         outputs whose shape disagrees with its info(); other engine errors propagate.
  /// @param schedule the units to run (positions in design.unit_order()); empty: all, in order.
  driver_stats run(const trial_design& design, const task_source& tasks,
                   const std::function<void(const trial_record&)>& sink, const std::set<trial_key>& done = {},
                   const progress_callback& progress = {}, const unit_schedule& schedule = {}) {
    constexpr std::string_view fn = "trial_driver::run";
    design.validate();
    if (!tasks) detail::throw_invalid(fn, "tasks", "must be a callable task source");
    if (!sink) detail::throw_invalid(fn, "sink", "must be a callable");
    prepare(design, fn);
    const auto t0 = detail::driver_clock::now();
    stats_ = {};
    if (remote_ != nullptr) remote_->begin(design);
    std::uint64_t finished = 0;
    const std::uint64_t total = design.trials();
    const auto units = design.unit_order();
    for (std::size_t next = 0;;) {
      std::size_t pos = next++;
      if (schedule) {
        const auto p = schedule();
        if (!p) break;
        if (*p >= units.size())
          detail::throw_invalid(
              fn, "schedule",
              "returned position " + std::to_string(*p) + " of " + std::to_string(units.size()) + " units");
        pos = *p;
      } else if (pos >= units.size()) {
        break;
      }
      const auto [item, s] = units[pos];
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
    if (remote_ != nullptr) remote_->end();
    stats_.wall_s = detail::seconds_since(t0);
    return stats_;
  }

  /// @brief Has agent A's half of every relay of later run()s done by `sender`, in another process
  /// (dist::channel_sender over a tcp or MPI relay channel, whose far end runs dist::serve_sender on
  /// its own driver, same design and tasks); nullptr (the default): agent A runs in this process.
  /// From a remote sender, records carry transfer_measured_s, and a report or frame that fails B's
  /// checks (limits, finite values, the wire's authentication) is recorded as relay_error, never
  /// imported. The sender must outlive the runs.
  void set_remote_sender(remote_sender* sender) noexcept { remote_ = sender; }

  /// @brief The remote sender of later runs (set_remote_sender), nullptr when A runs here.
  [[nodiscard]] const remote_sender* remote_sender_in_use() const noexcept { return remote_; }

  /// @brief The key of the relays' wire HMAC tag (trial_design::authenticate) in later runs,
  /// instead of relay_hmac_key(design.seed) — which anyone who knows the design can compute. Both
  /// ends of a relay channel must set the same key (dist::authenticated_channel::wire_key derives one
  /// from the channel's shared secret). An empty key restores the seed-derived one.
  /// @throws invalid_argument if the key is neither empty nor 32 bytes.
  void set_relay_key(std::span<const std::byte> key) {
    if (!key.empty() && key.size() != 32)
      detail::throw_invalid("trial_driver::set_relay_key", "key", "must be 32 bytes (or empty)");
    relay_key_.assign(key.begin(), key.end());
  }

  /// @brief How agent A writes its message for the message arms (text_message_<k>, kv_message,
  /// kv_message_only): the default instruction (used when a task names none), the stop tokens and
  /// the detokenizer of the records' `message` text. A unit with a message arm has A read its
  /// document, then the instruction, then generate greedily up to the largest message budget of the
  /// unit's arms (stopping at a stop token or the engine's context); each arm relays the first
  /// `budget` tokens of that message (greedy decoding is prefix-consistent, so this equals
  /// generating `budget` tokens).
  void set_message_options(message_options o) { message_ = std::move(o); }

  /// @brief Starts serving as agent A for a driver in another process (dist::serve_sender runs the
  /// relay protocol around begin_serving, serve_relay and end_serving): checks `design` against the
  /// engine as run() does and resets the statistics.
  /// @throws invalid_argument if the design is invalid or has an arm the engine cannot run.
  void begin_serving(const trial_design& design) {
    prepare(design, "dist::serve_sender");
    stats_ = {};
    serve_t0_ = detail::driver_clock::now();
    end_read();
  }

  /// @brief Agent A's half of the trial (item, seed, arm labelled `label`) for a receiver whose next
  /// free position is `receiver_next`: reads the unit's document (once per unit, and the unit's
  /// message when its arms need one), exports, applies the arm's policy or placebo and encodes.
  /// @throws invalid_argument if (item, seed, label) names no trial of `design`; engine errors.
  sender_half serve_relay(const trial_design& design, const task_source& tasks, std::uint64_t item,
                          std::uint64_t seed, std::string_view label, position_t receiver_next) {
    constexpr std::string_view fn = "dist::serve_sender";
    if (!tasks) detail::throw_invalid(fn, "tasks", "must be a callable task source");
    const auto it = std::find_if(design.arms.begin(), design.arms.end(),
                                 [&](const trial_arm& x) { return x.label == label; });
    if (it == design.arms.end() || item >= design.items || seed >= design.seeds)
      detail::throw_invalid(fn, "request",
                            "names no trial of the design (item " + std::to_string(item) + ", seed " +
                                std::to_string(seed) + ", arm '" + std::string(label) + "')");
    const trial_task task = tasks(item, seed);
    if (reads_on_receiver(*it) && (!serving_read_ || serving_item_ != item || serving_seed_ != seed)) {
      end_read();
      serving_read_ = read_document(engine_, task.document, score_window_ >= 0);
      std::vector<std::size_t> all(design.arms.size());
      std::iota(all.begin(), all.end(), std::size_t{0});
      if (const auto mb = message_budget(design, all); mb > 0) write_message(*serving_read_, task, mb);
      serving_item_ = item;
      serving_seed_ = seed;
    }
    sender_half out = send_half(design, tasks, task, *it, serving_read_, receiver_next);
    ++stats_.trials;
    return out;
  }

  /// @brief Ends serving: closes A's read of the last unit.
  /// @returns the statistics since begin_serving (trials = relays served).
  driver_stats end_serving() {
    end_read();
    stats_.wall_s = detail::seconds_since(serve_t0_);
    return stats_;
  }

  /// @brief The statistics of the last run().
  [[nodiscard]] const driver_stats& stats() const noexcept { return stats_; }

 private:
  // Checks the design against the engine and sets what every trial reads (capabilities, attention
  // window, HMAC key, fingerprints, derangement); `fn` names the public function in errors.
  void prepare(const trial_design& design, std::string_view fn) {
    design.validate();
    const engine_info& info = engine_.info();
    if (info.vocab_size <= 0 || info.fingerprint.n_layers <= 0)
      LATENTAUDIT_THROW(engine_error(std::string(fn) + ": engine '" + info.name + "' reports vocab_size " +
                                     std::to_string(info.vocab_size) + " and " +
                                     std::to_string(info.fingerprint.n_layers) + " layers"));
    caps_ = capabilities_of(engine_);
    score_window_ = -1;  // < 0: no arm needs attention scores
    for (const auto& a : design.arms) {
      auto why = arm_unsupported_reason(a, caps_, info.fingerprint.n_layers, partner_ != nullptr);
      if (!why && partner_ != nullptr && a.needs_partner())
        why = foreign_shape_reason(a, info.fingerprint, partner_->info().fingerprint);
      if (!why && a.plan().sender == arm_sender::named && !a.needs_partner())
        if (const Engine* se = sender(a.sender); se != nullptr)
          why = foreign_shape_reason(a, info.fingerprint, se->info().fingerprint);
      if (why)
        detail::throw_invalid(fn, "design.arms",
                              "has arm '" + a.label + "', which engine '" + info.name + "' cannot run: " +
                                  *why + " (restrict_to_engine drops such arms and lists why)");
      if (a.plan().selects && needs_attention_scores(a.policy)) {
        score_window_ = std::max<std::int64_t>(score_window_, 0);
        if (const auto* sk = std::get_if<snapkv_spec>(&a.policy.tokens))
          score_window_ = std::max(score_window_, sk->window);
      }
    }
    missing_ = unavailable_metrics(caps_);
    if (relay_key_.size() == key_.size())
      std::copy(relay_key_.begin(), relay_key_.end(), key_.begin());
    else
      key_ = relay_hmac_key(design.seed);
    // The largest KV frame a relay of one token more can add, and the fixed part, over every
    // engine that may send (A's, the partner, the drifted senders): f32 rows, tagged.
    frame_token_bytes_ = 0;
    frame_fixed_bytes_ = 0;
    auto measure = [&](const model_fingerprint& f) {
      const auto w1 = relay_wire_bytes(kv_block::all_layers(f, 1, dtype::f32), true);
      const auto w2 = relay_wire_bytes(kv_block::all_layers(f, 2, dtype::f32), true);
      frame_token_bytes_ = std::max(frame_token_bytes_, w2 - w1);
      frame_fixed_bytes_ = std::max(frame_fixed_bytes_, w1 - (w2 - w1));
    };
    measure(info.fingerprint);
    if (partner_ != nullptr) measure(partner_->info().fingerprint);
    for (const auto& [n, e] : senders_) measure(e->info().fingerprint);
    receiver_text_ = fingerprint_text(engine_.info().fingerprint);
    partner_text_ = partner_ != nullptr ? fingerprint_text(partner_->info().fingerprint) : std::string();
    derangement_.clear();
    for (const auto& a : design.arms) {  // e.g. drifted arms read A's document on a registered sender engine
      if (a.plan().sender != arm_sender::named) continue;
      const bool is_partner = a.sender == partner_sender;
      if (is_partner ? partner_ == nullptr : sender(a.sender) == nullptr)
        detail::throw_invalid(
            fn, "design.arms",
            "has arm '" + a.label + "' whose sender '" + a.sender +
                (is_partner ? "' needs a partner engine" : "' is not registered (trial_driver::add_sender)"));
      if (a.plan().transform != arm_transform::mapped) continue;
      const relay_map* m = map_of(a.sender);
      if (m == nullptr)
        detail::throw_invalid(fn, "design.arms",
                              "has arm '" + a.label + "' whose sender '" + a.sender +
                                  "' has no cache map (trial_driver::add_map)");
      const model_fingerprint& from =
          is_partner ? partner_->info().fingerprint : sender(a.sender)->info().fingerprint;
      if (!(m->source == from) || !(m->target == info.fingerprint))
        detail::throw_invalid(fn, "design.arms",
                              "has arm '" + a.label + "' whose cache map " + m->id + " maps " +
                                  fingerprint_text(m->source) + " to " + fingerprint_text(m->target) +
                                  ", not the sender " + fingerprint_text(from) + " to this model " +
                                  fingerprint_text(info.fingerprint));
    }
    for (const auto& a : design.arms)
      if (a.plan().transform == arm_transform::other_item)
        derangement_ = random_derangement(static_cast<std::size_t>(design.items), design.seed);
  }

  template <class F>
  auto engine_call(double& into, F&& f) {
    const auto t = detail::driver_clock::now();
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      const double d = detail::seconds_since(t);
      into += d;
      stats_.engine_s += d;
    } else {
      auto r = f();
      const double d = detail::seconds_since(t);
      into += d;
      stats_.engine_s += d;
      return r;
    }
  }

  // Opening and closing sequences are engine calls too (a real engine allocates and frees cache
  // pages there); they count in engine_s but in no record's latency stage. A scoped_seq closes a
  // sequence still open when an exception leaves the scope (untimed, errors swallowed).
  template <class E>
  scoped_seq<E> open_seq(E& e) {
    double unused = 0;
    return engine_call(unused, [&] { return scoped_seq<E>(e); });
  }
  template <class E>
  void close_seq(scoped_seq<E>& s) {
    double unused = 0;
    engine_call(unused, [&] { s.close(); });
  }

  // The logits rows of a forward of `n` new tokens, checked against the engine's vocabulary:
  // rows × vocab_size values (rows = n with all_logits, else 1), and the hidden state when asked.
  template <class E>
  static void check_output(const E& e, const forward_output& out, std::int64_t n, const forward_options& o,
                           bool hidden_expected) {
    const auto& info = e.info();
    const std::int64_t rows = o.all_logits ? n : 1;
    const auto V = static_cast<std::size_t>(info.vocab_size);
    if (out.rows != rows || out.logits.size() != static_cast<std::size_t>(rows) * V)
      detail::throw_bad_output(info.name, "returned " + std::to_string(out.rows) + " rows and " +
                                              std::to_string(out.logits.size()) + " logits for " +
                                              std::to_string(n) + " new tokens, expected " +
                                              std::to_string(rows) + " x vocab_size " + std::to_string(V));
    if (o.want_hidden && hidden_expected && out.hidden.size() != static_cast<std::size_t>(info.hidden_size))
      detail::throw_bad_output(info.name, "returned a hidden state of " + std::to_string(out.hidden.size()) +
                                              " values, expected hidden_size " +
                                              std::to_string(info.hidden_size));
  }

  // A's document read into a sequence of engine e: the sequence, the seconds, and (when an arm
  // needs them and e is the receiver's engine) the attention scores of the read.
  template <class E>
  struct sender_read {
    scoped_seq<E> seq;
    double seconds = 0;  // reading the document (and writing the message, when one was written)
    std::optional<attention_scores> scores;
    std::vector<token_id> message;  // A's message (write_message), without its stop token
    std::int64_t message_at = 0;    // A's first message row: document + instruction tokens
  };

  // The instruction A reads before writing: the task's, else the default one.
  const std::vector<token_id>& instruction_of(const trial_task& task) const noexcept {
    return task.instruction.empty() ? message_.instruction : task.instruction;
  }

  // The largest message budget among `arms` (0: no message arm).
  static std::int32_t message_budget(const trial_design& d, std::span<const std::size_t> arms) {
    std::int32_t m = 0;
    for (auto ai : arms)
      if (d.arms[ai].uses_message()) m = std::max(m, d.arms[ai].budget);
    return m;
  }

  // Agent A writes its message after reading the document into r.seq: the instruction is
  // prefilled, then tokens are generated greedily and fed back (the last one too, so the cache
  // holds every message row) until a stop token, `budget` tokens, or the engine's context.
  void write_message(sender_read<Engine>& r, const trial_task& task, std::int32_t budget) {
    const std::vector<token_id>& instr = instruction_of(task);
    const auto& info = engine_.info();
    if (instr.empty())
      detail::throw_invalid(
          "trial_driver::run", "task.instruction",
          "is empty and no default message instruction is set (message arms need one: "
          "trial_driver::set_message_options; an organism's task.json names it as `recite`)");
    for (auto x : instr)
      if (x < 0 || x >= info.vocab_size)
        detail::throw_invalid("trial_driver::run", "task.instruction",
                              "holds token " + std::to_string(x) + ", outside the engine's vocabulary [0, " +
                                  std::to_string(info.vocab_size) + ")");
    const auto n = static_cast<std::int64_t>(task.document.size());
    const auto ni = static_cast<std::int64_t>(instr.size());
    auto out = engine_call(r.seconds, [&] {
      return engine_.prefill(r.seq.id(), std::span<const token_id>(instr), static_cast<position_t>(n),
                             forward_options{});
    });
    check_output(engine_, out, ni, forward_options{}, false);
    r.message_at = n + ni;
    r.message.clear();
    const auto V = static_cast<std::size_t>(info.vocab_size);
    token_id t = argmax_token(std::span<const float>(out.logits.data(), V));
    auto p = static_cast<position_t>(r.message_at);
    // leave room for B's own prompt and query after the message (4 tokens at least)
    const std::int64_t room = info.max_context > 0 ? info.max_context - r.message_at - 4 : budget;
    while (static_cast<std::int64_t>(r.message.size()) < std::min<std::int64_t>(budget, room)) {
      if (std::find(message_.stop.begin(), message_.stop.end(), t) != message_.stop.end()) break;
      r.message.push_back(t);
      auto step = engine_call(r.seconds, [&] { return engine_.decode(r.seq.id(), t, p, forward_options{}); });
      ++p;
      check_output(engine_, step, 1, forward_options{}, false);
      t = argmax_token(step.logits);
    }
  }

  template <class E>
  sender_read<E> read_document(E& e, const std::vector<token_id>& doc, bool capture) {
    sender_read<E> r{open_seq(e)};
    const std::span<const token_id> tokens(doc);
    const auto n = static_cast<std::int64_t>(doc.size());
    if constexpr (attention_capturing_engine<E>) {
      if (capture) {
        std::vector<layer_index> layers(static_cast<std::size_t>(e.info().fingerprint.n_layers));
        std::iota(layers.begin(), layers.end(), 0);
        auto cap = engine_call(r.seconds, [&] {
          return e.prefill_capture(r.seq.id(), tokens, position_t{0}, std::span<const layer_index>(layers),
                                   forward_options{});
        });
        check_output(e, cap.output, n, forward_options{}, false);
        if (cap.layers.size() != layers.size() || cap.queries != n || cap.keys != n)
          detail::throw_bad_output(e.info().name, "returned an attention capture of " +
                                                      std::to_string(cap.layers.size()) + " layers, " +
                                                      std::to_string(cap.queries) + " queries and " +
                                                      std::to_string(cap.keys) + " keys for a document of " +
                                                      std::to_string(n) + " tokens");
        r.scores =
            reduce_attention(cap.weights, cap.layers.size(), cap.heads, cap.queries, cap.keys, score_window_);
        return r;
      }
    }
    (void)capture;
    auto out = engine_call(r.seconds,
                           [&] { return e.prefill(r.seq.id(), tokens, position_t{0}, forward_options{}); });
    check_output(e, out, n, forward_options{}, false);
    return r;
  }

  // An exported block, checked against what was asked.
  template <class E>
  static void check_export(const E& e, const kv_block& b, std::int64_t n) {
    const auto L = e.info().fingerprint.n_layers;
    if (b.n_tokens() != n || static_cast<std::int64_t>(b.n_layers()) != L)
      detail::throw_bad_output(e.info().name, "exported " + std::to_string(b.n_tokens()) + " tokens of " +
                                                  std::to_string(b.n_layers()) + " layers, expected " +
                                                  std::to_string(n) + " of " + std::to_string(L));
  }

  void run_unit(const trial_design& d, const task_source& tasks, std::uint64_t item, std::uint64_t s,
                const std::vector<std::size_t>& todo, const std::function<void(const trial_record&)>& sink) {
    const trial_task task = tasks(item, s);
    if (task.document.empty() || task.query.empty() || (task.answer.empty() && !task.score) ||
        task.answer_tokens() == 0)
      detail::throw_invalid(
          "trial_driver::run", "tasks",
          "returned a task without document, query or answer for item " + std::to_string(item));
    const auto V = engine_.info().vocab_size;
    auto check_tokens = [&](const std::vector<token_id>& t, std::string_view what) {
      for (auto x : t)
        if (x < 0 || x >= V)
          detail::throw_invalid("trial_driver::run", "tasks",
                                "returned a task whose " + std::string(what) + " holds token " +
                                    std::to_string(x) + ", outside the engine's vocabulary [0, " +
                                    std::to_string(V) + ") (item " + std::to_string(item) + ")");
    };
    check_tokens(task.document, "document");
    check_tokens(task.own_prompt, "own_prompt");
    check_tokens(task.query, "query");
    check_tokens(task.answer, "answer");
    for (const auto& oa : task.other_answers) check_tokens(oa, "other_answers");
    check_tokens(task.text_document, "text_document");
    check_tokens(task.no_relay_prefix, "no_relay_prefix");
    // The text reference: B reading the document itself (for hidden_cosine and next_token_kl).
    text_reference ref;
    {
      auto b = open_seq(engine_);
      std::vector<token_id> ctx = task.relay_text();  // what the text arms carry (stale: the current version)
      ctx.insert(ctx.end(), task.own_prompt.begin(), task.own_prompt.end());
      ctx.insert(ctx.end(), task.query.begin(), task.query.end());
      const forward_options fo{.want_hidden = caps_.hidden_state};
      double t = 0;
      auto out = engine_call(
          t, [&] { return engine_.prefill(b.id(), std::span<const token_id>(ctx), position_t{0}, fo); });
      check_output(engine_, out, static_cast<std::int64_t>(ctx.size()), fo, caps_.hidden_state);
      ref = make_text_reference(out.logits, std::move(out.hidden));
      close_seq(b);
    }
    bool need_a = false;  // with a remote sender, agent A reads in the peer process
    for (auto ai : remote_ != nullptr ? std::vector<std::size_t>{} : todo) {
      need_a |= reads_on_receiver(d.arms[ai]);
    }
    std::optional<sender_read<Engine>> a;
    if (need_a) a = read_document(engine_, task.document, score_window_ >= 0);
    if (const auto mb = message_budget(d, todo); a && mb > 0) write_message(*a, task, mb);
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
          // The record keeps the first run's outcome; a deterministic engine must reproduce it.
          if (x.correct != r.correct || x.generated_tokens != r.generated_tokens ||
              x.answer_logprob != r.answer_logprob || x.bytes != r.bytes) {
            ++r.repeat_mismatches;
            ++stats_.repeat_mismatches;
          }
        }
      }
      for (const auto& r : held) deliver(r);
    }
    if (a) close_seq(a->seq);
  }

  // Agent A's half of a relay, in this process, as the arm's plan says (trial/arm.hpp plan_of):
  // the text, or a cache exported (by B's model, the partner or a named sender) → the policy or a
  // placebo → encoded. `a` is A's read of the unit's document on B's model (the plans whose sender
  // is arm_sender::receiver); receiver_next is B's next free position (for the policy's placement).
  sender_half send_half(const trial_design& d, const task_source& tasks, const trial_task& task,
                        const trial_arm& arm, const std::optional<sender_read<Engine>>& a,
                        position_t receiver_next) {
    sender_half out;
    const arm_plan plan = arm.plan();
    const auto& fp = engine_.info().fingerprint;
    const std::span<const std::byte> key =
        d.authenticate ? std::span<const std::byte>(key_) : std::span<const std::byte>{};
    const auto n = static_cast<std::int64_t>(task.document.size());
    std::int64_t lo = 0, hi = n;  // A's cache rows relayed
    if (plan.uses_message()) {    // A's message: the first `budget` tokens of what it wrote
      const auto mk = std::min<std::size_t>(a->message.size(), static_cast<std::size_t>(arm.budget));
      out.message.assign(a->message.begin(), a->message.begin() + static_cast<std::ptrdiff_t>(mk));
      lo = plan.payload == arm_payload::message_rows ? a->message_at : 0;
      hi = a->message_at + static_cast<std::int64_t>(mk);
    }
    if (plan.text_relay(out.message.size())) {
      out.a_prefill_s = a->seconds;
      out.sender_fingerprint = receiver_text_;
      text_relay msg{.as_tokens = true};
      if (plan.payload == arm_payload::document_text) {
        msg.tokens = task.relay_text();
      } else if (plan.payload == arm_payload::document_pairs) {
        msg.tokens = task.document_prefix_pairs(arm.budget);
      } else {  // the message (an empty one relays nothing but B's own prefix)
        msg.tokens = task.no_relay_prefix;
        msg.tokens.insert(msg.tokens.end(), out.message.begin(), out.message.end());
      }
      const auto t = detail::driver_clock::now();
      out.frame = encode_relay(msg, wire_encode_options{.hmac_key = key});
      out.encode_s = detail::seconds_since(t);
      return out;
    }
    // KV payloads: export → policy / placebo → wire.
    kv_block block;
    auto export_from = [&](auto& e, std::string fingerprint) {  // another engine reads the document
      auto sa = read_document(e, task.document, false);
      out.a_prefill_s = sa.seconds;
      block = engine_call(out.export_s, [&] {
        return e.export_kv(sa.seq.id(), index_range{0, n}, index_range{0, e.info().fingerprint.n_layers});
      });
      check_export(e, block, n);
      close_seq(sa.seq);
      out.sender_fingerprint = std::move(fingerprint);
    };
    switch (plan.sender) {
      case arm_sender::named: {
        if (arm.sender == partner_sender) {
          export_from(*partner_, partner_text_);
          break;
        }
        Engine& se = *sender(arm.sender);
        export_from(se, fingerprint_text(se.info().fingerprint));
        break;
      }
      case arm_sender::partner:
        export_from(*partner_, partner_text_);
        break;
      case arm_sender::receiver:
      case arm_sender::none:
        out.a_prefill_s = a->seconds;
        out.sender_fingerprint = receiver_text_;
        block = engine_call(out.export_s, [&] {
          return engine_.export_kv(a->seq.id(), index_range{lo, hi}, index_range{0, fp.n_layers});
        });
        check_export(engine_, block, hi - lo);
        break;
    }
    // Placement is the policy's (append_after places the relay after the receiver's tokens).
    policy_context ctx{.seed = policy_seed(d, task.seed), .item = task.item, .receiver_next = receiver_next};
    if (a && a->scores) {  // H2O, PyramidKV and SnapKV read the sender's attention
      ctx.token_scores = a->scores->token;
      ctx.layer_token_scores = a->scores->layer_token;
      if (const auto* sk = std::get_if<snapkv_spec>(&arm.policy.tokens))
        ctx.window_attention = a->scores->last_window(sk->window);
    }
    auto t = detail::driver_clock::now();
    transfer_record tr;
    switch (plan.transform) {
      case arm_transform::other_item: {  // the cache of the item the derangement pairs with this one
        const std::uint64_t donor = derangement_[static_cast<std::size_t>(task.item)];
        const trial_task dt = tasks(donor, task.seed);
        out.policy_s += detail::seconds_since(t);
        auto da = read_document(engine_, dt.document, false);
        out.a_prefill_s += da.seconds;
        const auto dn = static_cast<std::int64_t>(dt.document.size());
        kv_block donor_block = engine_call(out.export_s, [&] {
          return engine_.export_kv(da.seq.id(), index_range{0, dn}, index_range{0, fp.n_layers});
        });
        check_export(engine_, donor_block, dn);
        close_seq(da.seq);
        t = detail::driver_clock::now();
        block = length_matched(donor_block, n, 0);
        break;
      }
      case arm_transform::placebo:  // the plan's placebo, made from A's cache (stream: seed, item)
        block = cache_placebo(*plan.placebo, block, ctx.seed, task.item);
        break;
      case arm_transform::policy:
        tr = arm.policy.apply(block, ctx);
        break;
      case arm_transform::mapped:  // the sender's cache in B's model's shape (checked when imported)
        block = map_of(arm.sender)->apply(block);
        if (a) {  // the screen, against B's own cache of the document (a measurement: not timed)
          out.policy_s += detail::seconds_since(t);
          const kv_block native =
              engine_.export_kv(a->seq.id(), index_range{0, n}, index_range{0, fp.n_layers});
          check_export(engine_, native, n);
          if (native.fingerprint() == block.fingerprint())
            out.map_cosine = attention_output_cosine(block, native);
          t = detail::driver_clock::now();
        }
        break;
      case arm_transform::none:
        break;
    }
    if (plan.transform != arm_transform::policy) {  // the record's policy names the arm's kind
      tr.policy = std::string(arm_kind_name(arm.kind));
      tr.placebo = plan.placebo;
    }
    out.policy_s += detail::seconds_since(t);
    t = detail::driver_clock::now();
    out.frame = encode_relay(block, wire_encode_options{.hmac_key = key, .quantize = arm.wire_quantize});
    out.encode_s = detail::seconds_since(t);
    out.policy = transfer_record_json(tr, arm.wire_quantize);
    if (plan.transform == arm_transform::mapped) {
      out.policy.set("map", map_of(arm.sender)->id);
      if (out.map_cosine) out.policy.set("map_cosine", *out.map_cosine);
    }
    return out;
  }

  // What B accepts of a remote sender's answer for `arm` on `task` (remote_relay_limits).
  [[nodiscard]] remote_relay_limits remote_limits(const trial_task& task, const trial_arm& arm) const {
    remote_relay_limits l{.max_frame_bytes = max_frame_bytes(task, arm),
                          .vocab_size = engine_.info().vocab_size};
    if (arm.plan().transform == arm_transform::mapped) l.map_id = map_of(arm.sender)->id;
    return l;
  }

  // serve_relay: closes A's read of the unit it holds, if any.
  void end_read() {
    if (serving_read_) close_seq(serving_read_->seq);
    serving_read_.reset();
  }

  // The largest frame a relay of `arm` on `task` can be: a KV block of every row A may send
  // (document, instruction, message) of the largest sending model in f32 rows, times 3 for the
  // quantizers' scales, or a text relay of every token; plus 64 KiB for headers. A longer length
  // prefix is refused before anything is allocated (docs/distributed.md, "Threat model").
  [[nodiscard]] std::uint64_t max_frame_bytes(const trial_task& task, const trial_arm& arm) const {
    const std::uint64_t budget = arm.budget > 0 ? static_cast<std::uint64_t>(arm.budget) : 0;
    const std::uint64_t rows = task.document.size() + instruction_of(task).size() + budget + 1;
    const std::uint64_t kv = 2 * frame_fixed_bytes_ + 3 * frame_token_bytes_ * rows + rows / 8;
    const std::uint64_t text =
        8 * (task.relay_text().size() + task.no_relay_prefix.size() + task.document.size() + budget);
    return (std::uint64_t{64} << 10) + std::max(kv, text);
  }

  // A relay decoded from the peer's frame, checked against what A may send for `arm` on `task`: text
  // tokens of the vocabulary, at most every token of the relay text and the message; KV rows at
  // most the document, instruction and message (corrupt_data naming the peer otherwise).
  void check_remote_relay(const decoded_relay& dec, const trial_task& task, const trial_arm& arm,
                          bool is_text) const {
    const std::uint64_t budget = arm.budget > 0 ? static_cast<std::uint64_t>(arm.budget) : 0;
    if (is_text) {
      const std::uint64_t most = task.relay_text().size() + task.no_relay_prefix.size() + budget;
      if (dec.text.tokens.size() > most)
        LATENTAUDIT_THROW(corrupt_data(remote_->peer_name() + ": the text relay holds " +
                                       std::to_string(dec.text.tokens.size()) + " tokens, more than the " +
                                       std::to_string(most) + " arm '" + arm.label + "' can send"));
      for (const token_id t : dec.text.tokens)
        if (t < 0 || t >= engine_.info().vocab_size)
          LATENTAUDIT_THROW(corrupt_data(remote_->peer_name() + ": the text relay holds token id " +
                                         std::to_string(t) + ", outside the vocabulary"));
      return;
    }
    const std::uint64_t rows = task.document.size() + instruction_of(task).size() + budget;
    if (static_cast<std::uint64_t>(dec.kv.n_tokens()) > rows)
      LATENTAUDIT_THROW(corrupt_data(remote_->peer_name() + ": the KV relay holds " +
                                     std::to_string(dec.kv.n_tokens()) + " rows, more than the " +
                                     std::to_string(rows) + " arm '" + arm.label + "' can send"));
  }

  trial_record run_arm(const trial_design& d, const task_source& tasks, const trial_task& task,
                       const trial_arm& arm, const std::optional<sender_read<Engine>>& a,
                       const text_reference& ref) {
    trial_record r = begin_record(d, task, arm);
    const auto& fp = engine_.info().fingerprint;
    const std::string& name = engine_.info().name;
    r.receiver_fingerprint = receiver_text_;
    auto& L = r.latency;
    const std::span<const std::byte> key =
        d.authenticate ? std::span<const std::byte>(key_) : std::span<const std::byte>{};

    std::vector<token_id> prefix;  // B's context before own_prompt + query, when it is text
    position_t first = 0;          // position of B's first own token
    std::int64_t relayed = 0;      // cache rows B holds from the relay (counted for attention mass)
    auto b = open_seq(engine_);
    const arm_plan plan = arm.plan();
    if (plan.payload == arm_payload::nothing) {
      prefix = task.no_relay_prefix;
    } else {
      // The sender's half (A reads, exports, applies the policy or placebo, encodes) runs in this
      // process, or in the peer process at the far end of the relay channel (serve_sender); the
      // wire frame reaches the receiver's half either way.
      const position_t receiver_next = engine_.next_position(b.id());
      sender_half sent = remote_ == nullptr
                             ? send_half(d, tasks, task, arm, a, receiver_next)
                             : remote_->relay(task, arm, receiver_next, remote_limits(task, arm));
      // text: the text payloads, and a message's rows when the message is empty (nothing to relay)
      const bool is_text = plan.text_relay(sent.message.size());
      if (plan.uses_message()) {
        r.message_length = static_cast<std::int64_t>(sent.message.size());
        if (message_.detokenize) r.message = message_.detokenize(std::span<const token_id>(sent.message));
        r.message_tokens = sent.message;
      }
      L.a_prefill_s = sent.a_prefill_s;
      L.export_s = sent.export_s;
      L.policy_s = sent.policy_s;
      L.encode_s = sent.encode_s;
      r.sender_fingerprint = std::move(sent.sender_fingerprint);
      r.bytes = sent.frame.size();
      L.transfer_s = d.link.transfer_seconds(r.bytes);
      r.transfer_measured_s = sent.measured_s;
      const bool forced = plan.forced_import;
      auto t = detail::driver_clock::now();
      std::optional<decoded_relay> dec;
      try {
        if (!sent.relay_error.empty()) LATENTAUDIT_THROW(corrupt_data(sent.relay_error));
        dec = decode_relay(sent.frame,
                           wire_decode_options{.hmac_key = key,
                                               .require_authentication = d.authenticate,
                                               .expected_fingerprint = is_text || forced ? nullptr : &fp});
        if (dec->kind != (is_text ? relay_kind::text_tokens : relay_kind::kv))
          LATENTAUDIT_THROW(corrupt_data("decode_relay: the frame carries another kind of relay than arm '" +
                                         arm.label + "' sends"));
        if (remote_ != nullptr) check_remote_relay(*dec, task, arm, is_text);
        if (remote_ != nullptr && !is_text && !detail::kv_all_finite(dec->kv))
          LATENTAUDIT_THROW(corrupt_data(remote_->peer_name() +
                                         ": the KV frame holds a non-finite key or value (NaN or infinity)"));
      } catch (const corrupt_data& e) {
        if (remote_ == nullptr) throw;  // a frame that never left the process cannot be damaged
        r.relay_error = e.what();       // damaged on the link: rejected, recorded, never imported
        dec.reset();
      }
      if (dec && is_text) {
        L.decode_s = detail::seconds_since(t);
        prefix = std::move(dec->text.tokens);
        relayed = static_cast<std::int64_t>(prefix.size());
        r.relay_tokens = relayed;
      } else if (dec) {
        // an element type the engine does not import is converted (part of the receiver's decoding)
        if (!caps_.kv_dtypes.empty() && std::find(caps_.kv_dtypes.begin(), caps_.kv_dtypes.end(),
                                                  dec->kv.type()) == caps_.kv_dtypes.end())
          dec->kv = dec->kv.converted(caps_.kv_dtypes.front());
        L.decode_s = detail::seconds_since(t);
        relayed = dec->kv.n_tokens();
        r.relay_tokens = relayed;
        engine_call(L.import_s, [&] { engine_.import_kv(b.id(), dec->kv, import_options{.force = forced}); });
        // B's own tokens follow the document's positions when the relay keeps them; after a
        // renumbered or appended relay they follow the relay itself.
        // (message arms: the relay ends after the instruction and the message)
        const auto n = static_cast<std::int64_t>(task.document.size()) +
                       (arm.uses_message() ? static_cast<std::int64_t>(instruction_of(task).size()) +
                                                 static_cast<std::int64_t>(r.message_tokens.size())
                                           : 0);
        const position_t next = engine_.next_position(b.id());
        first = arm.policy.mode == position_mode::preserve ? static_cast<position_t>(n) : next;
        if (!caps_.position_gaps && first != next)
          detail::throw_invalid("trial_driver::run", "design.arms",
                                "arm '" + arm.label +
                                    "' left a position gap before B's tokens (the relay ends at " +
                                    std::to_string(next) + ", B starts at " + std::to_string(first) +
                                    "), which engine '" + name + "' refuses");
      } else {
        L.decode_s = detail::seconds_since(t);
      }
      if (!is_text) r.policy = std::move(sent.policy);
      if (plan.transform == arm_transform::mapped) {
        r.map = map_of(arm.sender)->id;
        r.map_cosine = sent.map_cosine;
      }
    }
    // B: own prompt + query (after a text prefix when the relay is text or nothing).
    std::vector<token_id> ctx = prefix;
    ctx.insert(ctx.end(), task.own_prompt.begin(), task.own_prompt.end());
    ctx.insert(ctx.end(), task.query.begin(), task.query.end());
    const std::span<const token_id> own(ctx);
    const auto n_own = static_cast<std::int64_t>(ctx.size());
    const forward_options fo{.want_hidden = caps_.hidden_state};
    forward_output out;
    bool captured = false;
    if constexpr (attention_capturing_engine<Engine>) {
      if (relayed > 0 && caps_.attention_capture) {
        const std::int64_t cached = engine_.n_tokens(b.id());  // relayed KV rows (0 for a text relay)
        std::vector<layer_index> layers(static_cast<std::size_t>(fp.n_layers));
        std::iota(layers.begin(), layers.end(), 0);
        auto cap = engine_call(L.b_prefill_s, [&] {
          return engine_.prefill_capture(b.id(), own, first, std::span<const layer_index>(layers), fo);
        });
        check_output(engine_, cap.output, n_own, fo, caps_.hidden_state);
        if (cap.queries != n_own || cap.keys != cached + n_own)
          detail::throw_bad_output(name, "returned an attention capture of " + std::to_string(cap.queries) +
                                             " queries and " + std::to_string(cap.keys) + " keys, expected " +
                                             std::to_string(n_own) + " queries over " +
                                             std::to_string(cached + n_own) + " keys");
        r.attention_mass = attention_mass_on(cap, relayed);  // the relayed rows are the first cache rows
        out = std::move(cap.output);
        captured = true;
      }
    }
    if (!captured) {
      out = engine_call(L.b_prefill_s, [&] { return engine_.prefill(b.id(), own, first, fo); });
      check_output(engine_, out, n_own, fo, caps_.hidden_state);
    }
    // B answers greedily: the first token from the prefill's logits, the rest by decode steps.
    const auto V = static_cast<std::size_t>(engine_.info().vocab_size);
    const std::span<const float> row(out.logits.data(), V);
    auto t = detail::driver_clock::now();
    std::vector<token_id> generated{argmax_token(row)};
    double decode_engine = 0;
    position_t p = first + static_cast<position_t>(ctx.size());
    while (generated.size() < task.answer_tokens()) {
      const position_t at = p++;
      auto step = engine_call(
          decode_engine, [&] { return engine_.decode(b.id(), generated.back(), at, forward_options{}); });
      check_output(engine_, step, 1, forward_options{}, false);
      generated.push_back(argmax_token(step.logits));
    }
    L.b_decode_s = detail::seconds_since(t);
    record_answer(r, task, row, generated, out.hidden, ref);  // also stale_answer
    if (!task.continuation.empty()) {
      // The continuation, teacher-forced after the query: B's answer leaves the cache first.
      const position_t after = first + static_cast<position_t>(ctx.size());
      if (p > after) engine_call(decode_engine, [&] { engine_.erase(b.id(), after, p); });
      std::vector<float> rows(row.begin(), row.end());  // row i predicts continuation[i]
      if (task.continuation.size() > 1) {
        const std::span<const token_id> head(task.continuation.data(), task.continuation.size() - 1);
        const forward_options all{.all_logits = true};
        auto cont = engine_call(decode_engine, [&] { return engine_.prefill(b.id(), head, after, all); });
        check_output(engine_, cont, static_cast<std::int64_t>(head.size()), all, false);
        rows.insert(rows.end(), cont.logits.begin(), cont.logits.end());
      }
      record_continuation(r, task.continuation, rows, V);
    }
    for (const auto& m : missing_)  // without a relay there is no attention mass to miss
      if (relayed > 0 || m.metric != "attention_mass") note_unavailable(r, {m});
    close_seq(b);
    return r;
  }

  Engine& engine_;
  Partner* partner_;
  remote_sender* remote_ = nullptr;  // set_remote_sender: agent A in a peer process
  // serving as agent A (begin_serving, serve_relay, end_serving): A's read of unit (item, seed)
  std::optional<sender_read<Engine>> serving_read_;
  std::uint64_t serving_item_ = 0, serving_seed_ = 0;
  detail::driver_clock::time_point serve_t0_{};
  message_options message_;  // set_message_options: how A writes its message
  driver_stats stats_;
  std::array<std::byte, 32> key_{};
  std::vector<std::byte> relay_key_;  // set_relay_key: the wire HMAC key instead of the seed's
  std::uint64_t frame_token_bytes_ = 0, frame_fixed_bytes_ = 0;  // prepare: frame size bounds
  std::vector<std::size_t> derangement_;
  std::string receiver_text_, partner_text_;
  std::vector<std::pair<std::string, Engine*>> senders_;  // add_sender: drifted arms' engines by name

  std::vector<std::pair<std::string, relay_map>> maps_;  // add_map: kv_mapped arms' maps by sender

  Engine* sender(const std::string& name) const {
    for (const auto& [n, e] : senders_)
      if (n == name) return e;
    return nullptr;
  }
  // Whether agent A reads the unit's document on B's model for `arm`: the arms B's model sends, and
  // kv_mapped (its screen compares the mapped cache with B's own cache of the document).
  static bool reads_on_receiver(const trial_arm& arm) noexcept {
    const arm_plan p = arm.plan();
    return p.sender == arm_sender::receiver || p.transform == arm_transform::mapped;
  }
  const relay_map* map_of(const std::string& sender) const {
    for (const auto& [n, m] : maps_)
      if (n == sender) return &m;
    return nullptr;
  }
  engine_capabilities caps_;                 // the engine's, as capabilities_of() reads them
  std::vector<unavailable_metric> missing_;  // metrics the engine cannot produce, and why
  std::int64_t score_window_ = -1;  // < 0: no arm needs attention scores; else SnapKV's largest window
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_DRIVER_HPP
