// SPDX-License-Identifier: MIT
// latentaudit: the inference-engine concept — what an engine must offer so a cache can be
// exported from agent A and imported into agent B at explicit positions. docs/engines.md maps
// llama.cpp, vLLM and HF onto it.
//
// Semantics (every engine must pass engine/conformance.hpp):
//   open_seq() / close_seq(s)          a sequence with its own cache
//   prefill(s, tokens, p0, opts)       append tokens at positions p0, p0+1, ...; a new token
//                                      attends to every cached token before it in cache order
//                                      (and itself); returns logits (last or all) and optionally
//                                      the last final hidden state
//   decode(s, token, p, opts)          one step: prefill of a single token
//   export_kv(s, tokens, layers)       the cache rows [first, last) (cache order) of layers
//                                      [first, last) as a canonical kv_block, positions filled in
//   import_kv(s, block, opts)          append a relayed block to the cache after the fingerprint
//                                      check and the position-consistency gate; a layer without
//                                      relayed KV (layer mask) leaves those tokens invisible in
//                                      that layer, so it attends only to the receiver's own tokens
//   shift(s, p0, p1, delta)            move tokens with positions in [p0, p1) by delta, keys
//                                      re-rotated (RoPE-consistent)
//   erase(s, p0, p1)                   remove tokens with positions in [p0, p1)
//   n_tokens(s), next_position(s)      cache size; one past the largest position
//
// The concept checks exactly the expressions its callers use: the trial driver (trial/driver.hpp)
// and the conformance kit (engine/conformance.hpp; shift is called there only, to check that it
// re-rotates keys: the driver never moves tokens, and an engine that cannot shift cannot pass the
// kit). Both always pass every argument (prefill and decode with a forward_options,
// import_kv with an import_options, token lists as std::span<const token_id>), so an adapter
// whose options parameter has no default satisfies the concept and compiles in both, and one
// that lacks the four-argument form fails the concept (tests/engine/concept_callers_test.cpp).
// What an engine returns is checked by its callers (logits rows × vocab_size, hidden_size
// values, the exported block's shape): a misbehaving engine gives engine_error, never an
// out-of-bounds read.
#ifndef LATENTAUDIT_ENGINE_CONCEPTS_HPP
#define LATENTAUDIT_ENGINE_CONCEPTS_HPP

#include <concepts>
#include <cstdint>
#include <span>
#include <utility>

#include "../core/types.hpp"
#include "../kv/kv_block.hpp"
#include "capabilities.hpp"

namespace latentaudit {

/// @brief An engine adapter latentaudit can run trials on.
template <class B>
concept inference_engine = requires(B& b, const B& cb, seq_id s, std::span<const token_id> tokens,
                                    position_t p, token_id token, index_range range, const kv_block& block,
                                    const import_options& io, const forward_options& fo) {
  { cb.info() } -> std::convertible_to<const engine_info&>;
  { b.open_seq() } -> std::same_as<seq_id>;
  { b.close_seq(s) } -> std::same_as<void>;
  { b.prefill(s, tokens, p, fo) } -> std::same_as<forward_output>;
  { b.decode(s, token, p, fo) } -> std::same_as<forward_output>;
  { b.export_kv(s, range, range) } -> std::same_as<kv_block>;
  { b.import_kv(s, block, io) } -> std::same_as<void>;
  { b.shift(s, p, p, p) } -> std::same_as<void>;
  { b.erase(s, p, p) } -> std::same_as<void>;
  { cb.n_tokens(s) } -> std::convertible_to<std::int64_t>;
  { cb.next_position(s) } -> std::convertible_to<position_t>;
};

/// @brief An engine that can capture attention weights during a prefill (for H2O/SnapKV scores
/// and the "attention mass on relayed tokens" metric).
template <class B>
concept attention_capturing_engine = inference_engine<B> &&
    requires(B& b, seq_id s, std::span<const token_id> tokens, position_t p,
             std::span<const layer_index> layers, const forward_options& fo) {
  { b.prefill_capture(s, tokens, p, layers, fo) } -> std::same_as<attention_capture>;
};

/// @brief An open sequence of an engine that closes itself: the owner of a seq_id between
/// open_seq and close_seq, so a throw in between (a wire error, a refused import) does not leak
/// the engine's sequence. close() closes it and lets close_seq's errors propagate; the destructor
/// closes a sequence still open and swallows close_seq's errors (it may run during unwinding).
template <inference_engine E>
class scoped_seq {
 public:
  /// @brief Holds no sequence.
  scoped_seq() noexcept = default;
  /// @brief Takes ownership of sequence `s` of `engine` (already opened).
  scoped_seq(E& engine, seq_id s) noexcept : engine_(&engine), id_(s) {}
  /// @brief Opens a sequence of `engine` and owns it.
  /// @throws whatever engine.open_seq() throws.
  explicit scoped_seq(E& engine) : engine_(&engine), id_(engine.open_seq()) {}
  scoped_seq(const scoped_seq&) = delete;
  scoped_seq& operator=(const scoped_seq&) = delete;
  /// @brief Moves ownership; `other` then holds no sequence.
  scoped_seq(scoped_seq&& other) noexcept : engine_(std::exchange(other.engine_, nullptr)), id_(other.id_) {}
  /// @brief Closes the sequence held (errors swallowed) and takes `other`'s.
  scoped_seq& operator=(scoped_seq&& other) noexcept {
    if (this != &other) {
      release_quietly();
      engine_ = std::exchange(other.engine_, nullptr);
      id_ = other.id_;
    }
    return *this;
  }
  /// @brief Closes a sequence still held; close_seq's errors are swallowed.
  ~scoped_seq() { release_quietly(); }
  /// @brief The sequence id (meaningful while open()).
  [[nodiscard]] seq_id id() const noexcept { return id_; }
  /// @brief Whether a sequence is held.
  [[nodiscard]] bool open() const noexcept { return engine_ != nullptr; }
  /// @brief Closes the sequence now (no-op when none is held).
  /// @throws whatever close_seq throws (the sequence counts as released either way).
  void close() {
    if (engine_ != nullptr) std::exchange(engine_, nullptr)->close_seq(id_);
  }

 private:
  void release_quietly() noexcept {
    if (engine_ == nullptr) return;
    try {
      std::exchange(engine_, nullptr)->close_seq(id_);
    } catch (
        ...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; the sequence is gone either way
    }
  }
  E* engine_ = nullptr;
  seq_id id_{};
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_CONCEPTS_HPP
