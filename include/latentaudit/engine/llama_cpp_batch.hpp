// SPDX-License-Identifier: MIT
// latentaudit: llama.cpp engines shared by several trial drivers on their own threads, whose
// prefills and decode steps run together in one llama_decode (`latentaudit audit --engine
// llama.cpp --jobs N`; docs/engines.md "Batched trials on llama.cpp").
//
// A llama_cpp_batch holds one or more llama_cpp_engine objects (a model and its partner) and
// seats: one seat per driver thread. seat_engine(seat, e) is an inference_engine over engine e for
// that seat. A seat is *live* while it holds an open sequence of any engine; a prefill or decode of
// a seat waits until every live seat waits too, and the last to arrive runs every waiting request
// — per engine, one llama_cpp_engine::forward_batch — on its own thread, then wakes the others.
// Because a live seat always either forwards again or closes its sequences (scoped_seq closes them
// during unwinding), the wait ends without a timer and the batches do not depend on timing beyond
// which requests meet. Every other call (open, close, export, import, shift, erase) runs at once
// under the batch's lock; so does a forward on a batch with one live seat.
//
// What batching changes: a request's logits equal its own prefill's up to float rounding (the
// reduction order of a larger batch, and the cache cells other sequences occupy); the tokens chosen
// and every answer equal the unbatched run's on the organisms (tests/engine/llama_cpp_batch_test.cpp),
// except where a greedy choice ties within rounding: A's message may then differ (docs/engines.md).
// A forward the engine refuses (a position gap, a closed sequence) fails alone, before the batch
// runs; a failing llama_decode fails every request of its call, each with its own copy of the error.
#ifndef LATENTAUDIT_ENGINE_LLAMA_CPP_BATCH_HPP
#define LATENTAUDIT_ENGINE_LLAMA_CPP_BATCH_HPP

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "concepts.hpp"
#include "llama_cpp.hpp"
#include "llama_cpp_tokenizer.hpp"

namespace latentaudit {

class llama_cpp_seat_engine;

/// @brief llama.cpp engines shared by several driver threads, their forwards batched (see the file
/// comment). Not movable: seat engines point at it. The engines must outlive it.
class llama_cpp_batch {
 public:
  /// @brief Shares `engines` (non-null; at least one).
  /// @throws invalid_argument for an empty list or a null engine.
  explicit llama_cpp_batch(std::vector<llama_cpp_engine*> engines) : engines_(std::move(engines)) {
    constexpr std::string_view fn = "llama_cpp_batch";
    if (engines_.empty()) detail::throw_invalid(fn, "engines", "must hold at least one engine");
    for (const auto* e : engines_)
      if (e == nullptr) detail::throw_invalid(fn, "engines", "must not hold a null engine");
    pending_.resize(engines_.size());
    owner_.resize(engines_.size());
  }
  llama_cpp_batch(const llama_cpp_batch&) = delete;
  llama_cpp_batch& operator=(const llama_cpp_batch&) = delete;

  /// @brief A new seat (one per driver thread), not live until it opens a sequence.
  [[nodiscard]] std::size_t add_seat() {
    const std::lock_guard<std::mutex> lock(mu_);
    open_.push_back(0);
    return open_.size() - 1;
  }

  /// @brief The inference_engine of engine `engine` for seat `seat`.
  /// @throws invalid_argument for a seat or engine index out of range.
  [[nodiscard]] llama_cpp_seat_engine seat_engine(std::size_t seat, std::size_t engine);

  /// @brief Forwards run so far in a batch of more than one request, and all forwards.
  struct counts {
    std::uint64_t forwards = 0;  ///< prefill and decode calls of every seat
    std::uint64_t batched = 0;   ///< of which ran with another seat's request in one forward_batch
    std::uint64_t batches = 0;   ///< forward_batch calls
  };
  /// @brief The counts so far.
  [[nodiscard]] counts stats() const {
    const std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  friend class llama_cpp_seat_engine;

  struct request {
    std::size_t seat = 0;
    llama_cpp_forward forward;
    forward_output out;
    std::exception_ptr error;
    bool done = false;
  };

  llama_cpp_engine& engine(std::size_t e) const noexcept { return *engines_[e]; }

  void check_seat(std::string_view fn, std::size_t seat, std::size_t e) const {
    if (seat >= open_.size())
      detail::throw_invalid(fn, "seat", std::to_string(seat) + " is not a seat of this batch");
    if (e >= engines_.size())
      detail::throw_invalid(fn, "engine", std::to_string(e) + " is not an engine of this batch");
  }

  // The seat that opened sequence s of engine e (caller holds mu_).
  void check_owner(std::string_view fn, std::size_t seat, std::size_t e, seq_id s) const {
    const auto& own = owner_[e];
    const auto i = static_cast<std::size_t>(s);
    if (s < 0 || i >= own.size() || own[i] != seat + 1)
      detail::throw_invalid(fn, "s", "sequence " + std::to_string(s) + " is not open on this seat");
  }

  seq_id open(std::size_t seat, std::size_t e) {
    const std::lock_guard<std::mutex> lock(mu_);
    const seq_id s = engine(e).open_seq();
    auto& own = owner_[e];
    const auto i = static_cast<std::size_t>(s);
    if (own.size() <= i) own.resize(i + 1, 0);
    own[i] = seat + 1;
    if (open_[seat]++ == 0) ++live_;
    return s;
  }

  void close(std::size_t seat, std::size_t e, seq_id s) {
    std::unique_lock<std::mutex> lock(mu_);
    check_owner("llama_cpp_engine::close_seq", seat, e, s);
    owner_[e][static_cast<std::size_t>(s)] = 0;
    if (--open_[seat] == 0) --live_;
    std::exception_ptr failed;
    try {
      engine(e).close_seq(s);
    } catch (...) {
      failed = std::current_exception();
    }
    if (waiting_ > 0 && waiting_ == live_) run_waiting();  // this seat was the one not waiting
    if (failed) std::rethrow_exception(failed);
  }

  forward_output forward(std::size_t seat, std::size_t e, const llama_cpp_forward& f) {
    std::unique_lock<std::mutex> lock(mu_);
    check_owner("llama_cpp_engine::prefill", seat, e, f.seq);
    engine(e).check_forward(f.seq, f.tokens, f.first, f.options);  // a refusal fails this call alone
    ++stats_.forwards;
    request r{.seat = seat, .forward = f};
    pending_[e].push_back(&r);
    ++waiting_;
    if (waiting_ == live_)
      run_waiting();
    else
      cv_.wait(lock, [&] { return r.done; });
    if (r.error) std::rethrow_exception(r.error);
    return std::move(r.out);
  }

  // Runs every waiting request, one forward_batch per engine, and wakes their seats (caller holds
  // mu_; every live seat waits, so no other call touches the engines meanwhile).
  void run_waiting() {
    for (std::size_t e = 0; e < engines_.size(); ++e) {
      auto& q = pending_[e];
      if (q.empty()) continue;
      ++stats_.batches;
      if (q.size() > 1) stats_.batched += q.size();
      try {  // whatever fails, every waiting request gets its answer: none waits forever
        std::vector<llama_cpp_forward> fs;
        fs.reserve(q.size());
        for (const auto* r : q) fs.push_back(r->forward);
        auto outs = engine(e).forward_batch(fs);
        for (std::size_t i = 0; i < q.size(); ++i) q[i]->out = std::move(outs[i]);
      } catch (const invalid_argument& x) {
        // each waiting thread rethrows its own exception, its message a fresh string: one object (or
        // one shared message buffer) caught on several threads would be read by one handler while
        // another's end frees it
        for (auto* r : q) r->error = std::make_exception_ptr(invalid_argument(std::string(x.what())));
      } catch (const engine_error& x) {
        for (auto* r : q) r->error = std::make_exception_ptr(engine_error(std::string(x.what())));
      } catch (const std::exception& x) {
        for (auto* r : q)
          r->error = std::make_exception_ptr(engine_error(std::string("llama_cpp_batch: ") + x.what()));
      } catch (...) {
        for (auto* r : q) r->error = std::make_exception_ptr(engine_error("llama_cpp_batch: unknown error"));
      }
      for (auto* r : q) r->done = true;
      waiting_ -= q.size();
      q.clear();
    }
    cv_.notify_all();
  }

  std::vector<llama_cpp_engine*> engines_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::uint32_t> open_;              // open sequences of each seat
  std::vector<std::vector<std::size_t>> owner_;  // per engine, per sequence: seat + 1 (0: none)
  std::vector<std::vector<request*>> pending_;   // per engine: waiting requests, in arrival order
  std::size_t live_ = 0;                         // seats with an open sequence
  std::size_t waiting_ = 0;                      // requests waiting
  counts stats_;
};

/// @brief One seat's view of one engine of a llama_cpp_batch: an inference_engine whose prefill and
/// decode run batched with the other seats' (see the file comment); everything else is the engine's
/// call under the batch's lock. Copyable (it points at the batch), but a seat is one thread's: its
/// views (of the model and of the partner) are used by one driver thread at a time.
class llama_cpp_seat_engine {
  // f(engine) under the batch's lock, for a sequence of this seat (defined first: its return type is
  // deduced)
  template <class F>
  decltype(auto) locked(std::string_view fn, seq_id s, F&& f) const {
    const std::lock_guard<std::mutex> lock(batch_->mu_);
    batch_->check_owner(fn, seat_, engine_, s);
    return f(batch_->engine(engine_));
  }

 public:
  /// @brief The engine's identity, fingerprint and capabilities.
  [[nodiscard]] const engine_info& info() const noexcept { return batch_->engine(engine_).info(); }
  /// @brief Opens a sequence owned by this seat (the seat is live while it holds one).
  /// @throws engine_error when every sequence of the context is open.
  [[nodiscard]] seq_id open_seq() { return batch_->open(seat_, engine_); }
  /// @brief Closes a sequence of this seat; runs the waiting requests when this seat was the last
  /// live one not waiting.
  /// @throws invalid_argument for a sequence this seat does not hold.
  void close_seq(seq_id s) { batch_->close(seat_, engine_, s); }
  /// @brief llama_cpp_engine::prefill, run in one batch with the other seats' waiting forwards.
  /// @throws as llama_cpp_engine::prefill; invalid_argument for a sequence of another seat.
  forward_output prefill(seq_id s, std::span<const token_id> tokens, position_t first,
                         const forward_options& o) {
    return batch_->forward(seat_, engine_, {.seq = s, .tokens = tokens, .first = first, .options = o});
  }
  /// @brief One decode step, batched as prefill.
  forward_output decode(seq_id s, token_id token, position_t p, const forward_options& o) {
    const token_id one[1] = {token};
    return prefill(s, one, p, o);
  }
  /// @brief llama_cpp_engine::export_kv under the batch's lock.
  [[nodiscard]] kv_block export_kv(seq_id s, index_range tokens, index_range layers) {
    return locked("llama_cpp_engine::export_kv", s,
                  [&](llama_cpp_engine& e) { return e.export_kv(s, tokens, layers); });
  }
  /// @brief llama_cpp_engine::import_kv under the batch's lock.
  void import_kv(seq_id s, const kv_block& block, const import_options& o) {
    locked("llama_cpp_engine::import_kv", s, [&](llama_cpp_engine& e) { e.import_kv(s, block, o); });
  }
  /// @brief llama_cpp_engine::shift under the batch's lock.
  void shift(seq_id s, position_t p0, position_t p1, position_t delta) {
    locked("llama_cpp_engine::shift", s, [&](llama_cpp_engine& e) { e.shift(s, p0, p1, delta); });
  }
  /// @brief llama_cpp_engine::erase under the batch's lock.
  void erase(seq_id s, position_t p0, position_t p1) {
    locked("llama_cpp_engine::erase", s, [&](llama_cpp_engine& e) { e.erase(s, p0, p1); });
  }
  /// @brief Tokens in the cache of s.
  [[nodiscard]] std::int64_t n_tokens(seq_id s) const {
    return locked("llama_cpp_engine::n_tokens", s, [&](llama_cpp_engine& e) { return e.n_tokens(s); });
  }
  /// @brief One past the largest position of s.
  [[nodiscard]] position_t next_position(seq_id s) const {
    return locked("llama_cpp_engine::next_position", s,
                  [&](llama_cpp_engine& e) { return e.next_position(s); });
  }
  /// @brief The model's own tokenizer (llama_cpp_engine::tokenizer).
  /// @throws invalid_argument if the GGUF has no tokenizer.
  [[nodiscard]] llama_cpp_tokenizer tokenizer() const { return batch_->engine(engine_).tokenizer(); }

 private:
  friend class llama_cpp_batch;
  llama_cpp_seat_engine(llama_cpp_batch& b, std::size_t seat, std::size_t engine) noexcept
      : batch_(&b), seat_(seat), engine_(engine) {}

  llama_cpp_batch* batch_;
  std::size_t seat_;
  std::size_t engine_;
};

inline llama_cpp_seat_engine llama_cpp_batch::seat_engine(std::size_t seat, std::size_t engine) {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    check_seat("llama_cpp_batch::seat_engine", seat, engine);
  }
  return {*this, seat, engine};
}

static_assert(inference_engine<llama_cpp_seat_engine>);

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_LLAMA_CPP_BATCH_HPP
