// SPDX-License-Identifier: MIT
// latentaudit: the llama.cpp engine as an inference_engine (engine/concepts.hpp), over a
// llama_model / llama_context that a serving stack owns, or loaded from a GGUF file.
//
// Needs llama.h: compiled only where llama.cpp is available (CMake target latentaudit::llama_cpp,
// cmake/LatentauditLlamaCpp.cmake); no other header of the library includes it. Checked against
// llama.cpp v0.5.0 (the prebuilt release scripts/install-deps.sh installs); docs/engines.md.
//
// How the concept maps onto llama.cpp:
//   open_seq / close_seq   llama sequence ids 0 .. n_seq_max − 2 (the last id is the adapter's
//                          scratch sequence); close_seq removes the sequence's cells
//   prefill / decode       llama_batch on that sequence, logits of the last (or every) new token;
//                          a batch that does not continue the sequence (a position gap) is refused
//                          here with invalid_argument, as llama_decode would refuse it;
//                          forward_batch runs several sequences' tokens in one llama_decode
//                          (engine/llama_cpp_batch.hpp shares an engine among driver threads)
//   export_kv              llama_state_seq_get_data → from_llama_seq_state (kv/llama_state.hpp),
//                          cells sorted by position, keys converted from llama.cpp's NORM pairing
//                          to HF's NEOX (convert_pairing), so blocks are those of the reference
//                          engine on the same checkpoint (same fingerprint, weights hash from the
//                          GGUF's latentaudit.source.weights_hash)
//   import_kv              the reverse, llama_state_seq_set_data into an EMPTY sequence (set_data
//                          replaces a sequence: importing into a non-empty one is refused); a block
//                          must hold every layer and no token mask (no per-layer visibility mask)
//   shift / erase          llama_memory_seq_add / llama_memory_seq_rm. llama.cpp re-rotates shifted
//                          keys lazily, at the next llama_decode: the adapter applies a pending shift
//                          (one decode on its scratch sequence, then removed) before any export, so
//                          an export right after a shift sees rotated keys
// Declared capabilities: no attention capture, no hidden state, no partial-layer or token-mask
// import, no position gaps, f32/f16/bf16 blobs, a tokenizer when the GGUF has one
// (tokenizer()). Blobs carry the context's V
// transposition (flash attention), cache type and stream count: the adapter reads them from a probe
// of its own context at construction and writes imports the same way; it needs a single stream
// (kv_unified, or n_seq_max 1) and a cache type the blob parser reads (F32, F16, BF16).
// For logits equal to the reference engine's within ~3e-5 load with flash attention disabled and
// an F32 cache (what load() does; llama_cpp_context_params() gives those parameters).
#ifndef LATENTAUDIT_ENGINE_LLAMA_CPP_HPP
#define LATENTAUDIT_ENGINE_LLAMA_CPP_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <llama.h>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../kv/kv_block.hpp"
#include "../kv/llama_state.hpp"
#include "../kv/rope.hpp"
#include "../kv/selection.hpp"
#include "capabilities.hpp"
#include "concepts.hpp"
#include "llama_cpp_runtime.hpp"
#include "llama_cpp_tokenizer.hpp"

namespace latentaudit {

/// @brief Options of llama_cpp_engine::load.
struct llama_cpp_options {
  /// Cache cells shared by all sequences (kv_unified); 0 (the default): sized from the model,
  /// llama_cpp_context_cells(n_ctx_train, n_seq_max)
  std::uint32_t n_ctx = 0;
  std::uint32_t max_context = 0;  ///< the longest sequence (info().max_context); 0: n_ctx
  std::uint32_t n_seq_max = 8;    ///< llama sequences: n_seq_max − 1 usable, one scratch
  std::uint32_t n_batch = 2048;   ///< tokens per llama_decode call (longer prefills are split)
  std::int32_t threads = 1;       ///< llama.cpp threads (generation and batches)
  dtype cache_type = dtype::f32;  ///< K and V cache type: f32 (exact), f16 or bf16
  bool flash_attention = false;   ///< flash attention (casts K/V to f16: ~1e-2 off the reference)
};

/// @brief The cache cells of a context sized from the model (llama_cpp_options::n_ctx 0): room for
/// every sequence at the model's trained length at once (n_seq_max × n_ctx_train; a sequence's
/// positions are capped at n_ctx_train, info().max_context), at most max(n_ctx_train, 4096) cells
/// per 4 usable sequences (4096 cells for the default 8 sequences, as before; the batched audit's
/// 4 sequences per worker get 4096 each), and at least n_ctx_train.
[[nodiscard]] constexpr std::uint32_t llama_cpp_context_cells(std::uint32_t n_ctx_train,
                                                              std::uint32_t n_seq_max) noexcept {
  const std::uint64_t train = n_ctx_train == 0 ? 4096 : n_ctx_train;
  const std::uint64_t all = train * std::max<std::uint64_t>(n_seq_max, 1);
  const std::uint64_t cap = std::max<std::uint64_t>(train, 4096) *
                            std::max<std::uint64_t>(1, (std::max<std::uint64_t>(n_seq_max, 1) - 1) / 4);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>({all, std::max(cap, train), 0xFFFFFFFFull}));
}

/// @brief Context parameters for exact relays: flash attention disabled, K and V cache of the given
/// type, one unified cache stream, no embeddings.
[[nodiscard]] inline llama_context_params llama_cpp_context_params(const llama_cpp_options& o = {}) {
  llama_context_params p = llama_context_default_params();
  p.n_ctx = o.n_ctx;
  p.n_batch = o.n_batch;
  p.n_ubatch = o.n_batch;
  p.n_seq_max = o.n_seq_max;
  p.n_threads = o.threads;
  p.n_threads_batch = o.threads;
  p.flash_attn_type = o.flash_attention ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  const auto t = o.cache_type == dtype::f32   ? GGML_TYPE_F32
                 : o.cache_type == dtype::f16 ? GGML_TYPE_F16
                                              : GGML_TYPE_BF16;
  p.type_k = t;
  p.type_v = t;
  p.kv_unified = true;
  p.embeddings = false;
  p.no_perf = true;
  return p;
}

/// @brief One sequence's part of llama_cpp_engine::forward_batch: the tokens appended to `seq` at
/// positions first, first + 1, ... (the span must outlive the call).
struct llama_cpp_forward {
  seq_id seq{};                      ///< an open sequence (one request per sequence)
  std::span<const token_id> tokens;  ///< the tokens (non-empty)
  position_t first = 0;              ///< the first token's position (the sequence's next one)
  forward_options options;           ///< all_logits or the last row; want_hidden is refused
};

/// @brief llama.cpp as an inference_engine (see the file comment for the mapping and limits).
class llama_cpp_engine {
 public:
  /// @brief Loads a GGUF file (llama_cpp_init first) and creates a context with
  /// llama_cpp_context_params(o); the engine owns both.
  /// @throws invalid_argument if the file does not exist; engine_error if llama.cpp cannot load it
  ///         or create the context; as the adopting constructor.
  static llama_cpp_engine load(const std::filesystem::path& gguf, const llama_cpp_options& o = {}) {
    constexpr std::string_view fn = "llama_cpp_engine::load";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(gguf, ec))
      detail::throw_invalid(fn, "gguf", "'" + gguf.string() + "' is not a readable file");
    (void)llama_cpp_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    detail::llama_cpp_reset_reason();
    llama_model* model = llama_model_load_from_file(gguf.string().c_str(), mp);
    if (model == nullptr)
      LATENTAUDIT_THROW(engine_error(std::string(fn) + ": llama.cpp cannot load " +
                                     detail::llama_cpp_failure_text(gguf.string())));
    llama_cpp_options sized = o;  // n_ctx 0: from the model's trained context
    if (sized.n_ctx == 0)
      sized.n_ctx = llama_cpp_context_cells(
          static_cast<std::uint32_t>(std::max(0, llama_model_n_ctx_train(model))), o.n_seq_max);
    detail::llama_cpp_creating_unified_context() = true;  // its n_ctx_seq comparison is a false alarm
    llama_context* ctx = llama_init_from_model(model, llama_cpp_context_params(sized));
    detail::llama_cpp_creating_unified_context() = false;
    if (ctx == nullptr) {
      llama_model_free(model);
      LATENTAUDIT_THROW(
          engine_error(std::string(fn) + ": llama.cpp cannot create a context for '" + gguf.string() + "'"));
    }
    llama_cpp_engine b(model, ctx, true);
    if (o.max_context != 0) b.info_.max_context = std::min<std::int64_t>(b.info_.max_context, o.max_context);
    return b;
  }

  /// @brief Adopts a model and a context a serving stack created (owned = false: not freed here).
  /// The adapter manages every sequence id of the context (the last as its scratch sequence).
  /// @throws engine_error if the context has fewer than 2 sequences, several cache streams, or a
  ///         cache type the state parser does not read.
  llama_cpp_engine(llama_model* model, llama_context* ctx, bool owned = false)
      : model_(model), ctx_(ctx), owned_(owned) {
    constexpr std::string_view fn = "llama_cpp_engine";
    if (model_ == nullptr || ctx_ == nullptr) {
      release();
      detail::throw_invalid(fn, "model, ctx", "must not be null");
    }
    try {
      init();
    } catch (...) {
      release();
      throw;
    }
  }

  llama_cpp_engine(const llama_cpp_engine&) = delete;
  llama_cpp_engine& operator=(const llama_cpp_engine&) = delete;
  /// @brief Moves the model and context (and their ownership).
  llama_cpp_engine(llama_cpp_engine&& o) noexcept
      : model_(std::exchange(o.model_, nullptr)),
        ctx_(std::exchange(o.ctx_, nullptr)),
        owned_(o.owned_),
        info_(std::move(o.info_)),
        norm_fp_(std::move(o.norm_fp_)),
        seqs_(std::move(o.seqs_)),
        v_trans_(o.v_trans_),
        cache_type_(o.cache_type_),
        scratch_(o.scratch_),
        shift_pending_(o.shift_pending_) {}
  llama_cpp_engine& operator=(llama_cpp_engine&&) = delete;
  /// @brief Frees the model and context when owned.
  ~llama_cpp_engine() { release(); }

  /// @brief Identity, fingerprint (HF NEOX pairing, as the reference engine's) and capabilities.
  [[nodiscard]] const engine_info& info() const noexcept { return info_; }
  /// @brief The llama.cpp context (for calls the concept does not cover).
  [[nodiscard]] llama_context* context() const noexcept { return ctx_; }
  /// @brief The llama.cpp model.
  [[nodiscard]] llama_model* model() const noexcept { return model_; }
  /// @brief Whether the context stores V transposed (flash attention off).
  [[nodiscard]] bool v_transposed() const noexcept { return v_trans_; }

  /// @brief Opens an empty sequence.
  /// @throws engine_error when every sequence of the context is open.
  [[nodiscard]] seq_id open_seq() {
    for (std::size_t i = 0; i < seqs_.size(); ++i)
      if (!seqs_[i].open) {
        seqs_[i] = sequence{.open = true};
        llama_memory_seq_rm(mem(), static_cast<llama_seq_id>(i), -1, -1);
        return static_cast<seq_id>(i);
      }
    LATENTAUDIT_THROW(engine_error("llama_cpp_engine::open_seq: all " + std::to_string(seqs_.size()) +
                                   " sequences of the context are open (raise n_seq_max)"));
  }

  /// @brief Closes a sequence and frees its cells.
  void close_seq(seq_id s) {
    seq("close_seq", s);
    llama_memory_seq_rm(mem(), s, -1, -1);
    seqs_[static_cast<std::size_t>(s)] = sequence{};
  }

  /// @brief Tokens in the cache of s.
  [[nodiscard]] std::int64_t n_tokens(seq_id s) const { return seq("n_tokens", s).n; }

  /// @brief One past the largest position of s (0 when empty).
  [[nodiscard]] position_t next_position(seq_id s) const {
    seq("next_position", s);
    return static_cast<position_t>(llama_memory_seq_pos_max(mem(), s) + 1);
  }

  /// @brief Appends tokens at positions first, first+1, ... and runs them.
  /// @throws invalid_argument on an empty token list, an id outside the vocabulary, positions outside
  ///         [0, max_context), or a first position other than next_position(s) on a non-empty
  ///         sequence (llama.cpp refuses position gaps); engine_error if llama_decode fails.
  forward_output prefill(seq_id s, std::span<const token_id> tokens, position_t first,
                         const forward_options& o = {}) {
    const llama_cpp_forward one[1] = {{.seq = s, .tokens = tokens, .first = first, .options = o}};
    return std::move(forward_many(one, "llama_cpp_engine::prefill").front());
  }

  /// @brief Several sequences' prefills or decode steps in one llama_decode (one per n_batch tokens
  /// when they hold more): request i appends its tokens to its sequence as prefill(r.seq, r.tokens,
  /// r.first, r.options) would, and out[i] is what that prefill returns, up to float rounding (the
  /// batch changes llama.cpp's reduction order, not what attends to what: the unified cache masks
  /// every other sequence). Every request is checked before any runs.
  /// @throws invalid_argument as prefill for a request (nothing runs), or when two requests name one
  ///         sequence; engine_error if llama_decode fails (every request of that call fails with it).
  std::vector<forward_output> forward_batch(std::span<const llama_cpp_forward> requests) {
    return forward_many(requests, "llama_cpp_engine::forward_batch");
  }

  /// @brief The checks prefill (and forward_batch) make before running anything.
  /// @throws invalid_argument as prefill.
  void check_forward(seq_id s, std::span<const token_id> tokens, position_t first,
                     const forward_options& o = {}) const {
    check_request("llama_cpp_engine::prefill", {.seq = s, .tokens = tokens, .first = first, .options = o});
  }

  /// @brief One decode step: the token at position p.
  forward_output decode(seq_id s, token_id token, position_t p, const forward_options& o = {}) {
    const token_id one[1] = {token};
    return prefill(s, one, p, o);
  }

  /// @brief Cache rows `tokens` [first, last) (position order) of layers `layer_range` [first, last).
  /// @throws invalid_argument on ranges outside the cache or the model; corrupt_data if llama.cpp's
  ///         blob does not parse.
  [[nodiscard]] kv_block export_kv(seq_id s, index_range tokens, index_range layer_range) {
    constexpr std::string_view fn = "llama_cpp_engine::export_kv";
    const auto& q = seq(fn, s);
    detail::check_in_range(fn, "tokens.first", tokens.first, 0, q.n);
    detail::check_in_range(fn, "tokens.last", tokens.last, tokens.first, q.n);
    detail::check_in_range(fn, "layers.first", layer_range.first, 0, info_.fingerprint.n_layers);
    detail::check_in_range(fn, "layers.last", layer_range.last, layer_range.first,
                           info_.fingerprint.n_layers);
    kv_block all = full_state(s);
    if (all.n_tokens() != q.n)
      LATENTAUDIT_THROW(engine_error(std::string(fn) + ": llama.cpp's state holds " +
                                     std::to_string(all.n_tokens()) + " cells, the adapter counted " +
                                     std::to_string(q.n)));
    if (tokens.first == 0 && tokens.last == q.n && layer_range.first == 0 &&
        layer_range.last == info_.fingerprint.n_layers)
      return all;
    std::vector<layer_index> layers(static_cast<std::size_t>(layer_range.size()));
    std::iota(layers.begin(), layers.end(), static_cast<layer_index>(layer_range.first));
    return apply_selection(
        all, uniform_selection(std::move(layers), tokens_range(q.n, tokens.first, tokens.last)));
  }

  /// @brief Imports a relayed block into an EMPTY sequence (llama_state_seq_set_data replaces a
  /// sequence) at the positions it carries, after the fingerprint check (unless forced) and the
  /// position-consistency gate.
  /// @throws incompatible_model on a fingerprint mismatch; invalid_argument if the sequence is not
  ///         empty, the block lacks layers, has a token mask, or options.layer_mask masks a layer;
  ///         corrupt_data if the gate refuses the positions; engine_error if llama.cpp refuses the blob.
  void import_kv(seq_id s, const kv_block& block, const import_options& o = {}) {
    constexpr std::string_view fn = "llama_cpp_engine::import_kv";
    auto& q = seq(fn, s);
    if (!o.force) check_fingerprint(fn, info_.fingerprint, block.fingerprint());
    const auto& f = info_.fingerprint;
    if (block.n_kv_heads() != f.n_kv_heads || block.head_dim_k() != f.head_dim_k ||
        block.head_dim_v() != f.head_dim_v)
      LATENTAUDIT_THROW(shape_mismatch(
          std::string(fn) + ": the block's kv heads x head dims (" + std::to_string(block.n_kv_heads()) +
          " x " + std::to_string(block.head_dim_k()) + ") differ from the model's (" +
          std::to_string(f.n_kv_heads) + " x " + std::to_string(f.head_dim_k) + ")"));
    if (q.n > 0)
      detail::throw_invalid(
          fn, "s",
          "holds " + std::to_string(q.n) +
              " tokens: llama.cpp's set_data replaces a sequence, import into an empty one");
    if (static_cast<std::int32_t>(block.n_layers()) != f.n_layers)
      detail::throw_invalid(fn, "block",
                            "holds " + std::to_string(block.n_layers()) + " of " +
                                std::to_string(f.n_layers) +
                                " layers: llama.cpp has no per-layer visibility mask (partial_layer_import)");
    if (block.has_token_mask())
      detail::throw_invalid(fn, "block",
                            "has a token mask: llama.cpp imports whole rows (token_mask_import)");
    if (std::find(o.layer_mask.begin(), o.layer_mask.end(), false) != o.layer_mask.end())
      detail::throw_invalid(fn, "options.layer_mask",
                            "masks a layer: llama.cpp has no per-layer visibility mask");
    check_positions(fn, block,
                    {.context_length = info_.max_context, .prerope_reference = o.prerope_reference});
    if (block.n_tokens() == 0) return;
    kv_block b = block;
    if (o.force) {
      auto fp = b.fingerprint();
      fp.rope = f.rope;
      b.set_fingerprint(fp);
    }
    if (b.type() != cache_type_) b = b.converted(cache_type_);
    convert_pairing(b, rope_pairing::norm);
    const auto blob = to_llama_seq_state(b, {.seq_id = s, .v_trans = v_trans_, .n_stream = 1});
    const std::size_t read =
        llama_state_seq_set_data(ctx_, reinterpret_cast<const std::uint8_t*>(blob.data()), blob.size(), s);
    if (read != blob.size()) {
      llama_memory_seq_rm(mem(), s, -1, -1);
      LATENTAUDIT_THROW(engine_error(std::string(fn) + ": llama.cpp refused the state blob (" +
                                     std::to_string(blob.size()) + " bytes; read " + std::to_string(read) +
                                     ")"));
    }
    q.n = b.n_tokens();
  }

  /// @brief Moves tokens with positions in [p0, p1) by delta (llama_memory_seq_add; the keys are
  /// re-rotated by llama.cpp at the next decode, or by the adapter before an export).
  /// @throws invalid_argument if p0 > p1 or a moved position leaves [0, max_context).
  void shift(seq_id s, position_t p0, position_t p1, position_t delta) {
    constexpr std::string_view fn = "llama_cpp_engine::shift";
    seq(fn, s);
    if (p0 > p1) detail::throw_invalid(fn, "p1", "must be >= p0");
    const auto lo = llama_memory_seq_pos_min(mem(), s), hi = llama_memory_seq_pos_max(mem(), s);
    if (lo >= 0) {
      const std::int64_t a = std::max<std::int64_t>(lo, p0), z = std::min<std::int64_t>(hi + 1, p1);
      if (a < z && (a + delta < 0 || z - 1 + delta >= info_.max_context))
        detail::throw_invalid(fn, "delta", "moves positions outside [0, max_context)");
    }
    if (delta == 0 || p0 == p1) return;
    llama_memory_seq_add(mem(), s, p0, p1, delta);
    shift_pending_ = true;
  }

  /// @brief Removes tokens with positions in [p0, p1).
  /// @throws invalid_argument if p0 > p1; engine_error if llama.cpp refuses the removal.
  void erase(seq_id s, position_t p0, position_t p1) {
    constexpr std::string_view fn = "llama_cpp_engine::erase";
    auto& q = seq(fn, s);
    if (p0 > p1) detail::throw_invalid(fn, "p1", "must be >= p0");
    if (p0 == p1) return;
    if (!llama_memory_seq_rm(mem(), s, p0, p1))
      LATENTAUDIT_THROW(engine_error(std::string(fn) + ": llama.cpp refused to remove positions [" +
                                     std::to_string(p0) + ", " + std::to_string(p1) + ")"));
    q.n = count_cells(s);
  }

  /// @brief The model's own tokenizer (non-owning: valid while this engine lives; see
  /// engine/llama_cpp_tokenizer.hpp). info().caps.tokenizer says whether there is one.
  /// @throws invalid_argument if the GGUF has no tokenizer (tokenizer.ggml.model "none", as
  ///         `latentaudit gguf export` writes without --vocab).
  [[nodiscard]] llama_cpp_tokenizer tokenizer() const { return llama_cpp_tokenizer(model_); }

 private:
  struct sequence {
    bool open = false;
    std::int64_t n = 0;  // cells of the sequence
  };

  [[nodiscard]] llama_memory_t mem() const noexcept { return llama_get_memory(ctx_); }

  void check_request(std::string_view fn, const llama_cpp_forward& r) const {
    const auto& q = seq(fn, r.seq);
    if (r.tokens.empty()) detail::throw_invalid(fn, "tokens", "must not be empty");
    for (std::size_t i = 0; i < r.tokens.size(); ++i)
      if (r.tokens[i] < 0 || r.tokens[i] >= info_.vocab_size)
        detail::throw_invalid(fn, "tokens",
                              "holds id " + std::to_string(r.tokens[i]) + " outside [0, " +
                                  std::to_string(info_.vocab_size) + ")");
    const auto n = static_cast<std::int64_t>(r.tokens.size());
    if (r.first < 0 || std::int64_t{r.first} + n > info_.max_context)
      detail::throw_invalid(fn, "first",
                            "puts positions outside [0, " + std::to_string(info_.max_context) + ")");
    if (q.n > 0 && r.first != next_position(r.seq))
      detail::throw_invalid(fn, "first",
                            "is " + std::to_string(r.first) +
                                ", but llama.cpp needs the sequence's next position " +
                                std::to_string(next_position(r.seq)) + " (no position gaps)");
    if (r.options.want_hidden)
      detail::throw_invalid(fn, "options.want_hidden", "is not supported by this adapter");
  }

  // The requests in llama_decode calls of at most n_batch tokens, in request order (a request may
  // span calls); each request's logits rows go to its output.
  std::vector<forward_output> forward_many(std::span<const llama_cpp_forward> rs, std::string_view fn) {
    for (std::size_t i = 0; i < rs.size(); ++i) {
      check_request(fn, rs[i]);
      for (std::size_t j = 0; j < i; ++j)
        if (rs[j].seq == rs[i].seq)
          detail::throw_invalid(fn, "requests",
                                "name sequence " + std::to_string(rs[i].seq) + " twice (one request each)");
    }
    std::vector<forward_output> out(rs.size());
    const auto V = static_cast<std::size_t>(info_.vocab_size);
    for (std::size_t i = 0; i < rs.size(); ++i) {
      const auto n = static_cast<std::int64_t>(rs[i].tokens.size());
      out[i].rows = rs[i].options.all_logits ? n : 1;
      out[i].logits.reserve(static_cast<std::size_t>(out[i].rows) * V);
    }
    const auto chunk = static_cast<std::int32_t>(llama_n_batch(ctx_));
    std::int64_t total = 0;
    for (const auto& r : rs) total += static_cast<std::int64_t>(r.tokens.size());
    // sized for what runs, not for n_batch: llama_batch_init allocates per row, and a decode step
    // is one row
    llama_batch b = llama_batch_init(static_cast<std::int32_t>(std::min<std::int64_t>(chunk, total)), 0, 1);
    struct guard {
      llama_batch& b;
      ~guard() { llama_batch_free(b); }
    } g{b};
    std::vector<std::size_t> owner(
        static_cast<std::size_t>(std::min<std::int64_t>(chunk, total)));  // row → request
    std::vector<std::pair<std::size_t, std::int64_t>> appended;           // (request, tokens) of one call
    std::size_t ri = 0;
    std::int64_t off = 0;  // tokens of request ri already run
    while (ri < rs.size()) {
      b.n_tokens = 0;
      appended.clear();
      while (ri < rs.size() && b.n_tokens < chunk) {
        const auto& r = rs[ri];
        const auto n = static_cast<std::int64_t>(r.tokens.size());
        const std::int64_t m = std::min<std::int64_t>(chunk - b.n_tokens, n - off);
        for (std::int64_t k = off; k < off + m; ++k) {
          const auto i = b.n_tokens++;
          b.token[i] = r.tokens[static_cast<std::size_t>(k)];
          b.pos[i] = static_cast<llama_pos>(r.first + k);
          b.n_seq_id[i] = 1;
          b.seq_id[i][0] = r.seq;
          b.logits[i] = static_cast<int8_t>(r.options.all_logits || k == n - 1);
          owner[static_cast<std::size_t>(i)] = ri;
        }
        appended.emplace_back(ri, m);
        off += m;
        if (off == n) {
          ++ri;
          off = 0;
        }
      }
      decode_batch(b, fn);
      for (const auto& [req, m] : appended) seqs_[static_cast<std::size_t>(rs[req].seq)].n += m;
      for (std::int32_t i = 0; i < b.n_tokens; ++i)
        if (b.logits[i] != 0) append_logits(i, b.pos[i], out[owner[static_cast<std::size_t>(i)]].logits, fn);
    }
    return out;
  }

  // llama_decode of a filled batch.
  void decode_batch(llama_batch& b, std::string_view fn) {
    const int32_t rc = llama_decode(ctx_, b);
    if (rc != 0)
      LATENTAUDIT_THROW(engine_error(std::string(fn) + ": llama_decode returned " + std::to_string(rc)));
    shift_pending_ = false;  // a decode applies pending shifts to the whole cache
  }

  // Appends the logits of batch row i (position pos) to `out`.
  void append_logits(std::int32_t i, llama_pos pos, std::vector<float>& out, std::string_view fn) {
    const auto V = static_cast<std::size_t>(info_.vocab_size);
    const float* row = llama_get_logits_ith(ctx_, i);
    if (row == nullptr) LATENTAUDIT_THROW(engine_error(std::string(fn) + ": llama.cpp returned no logits"));
    // NaN or infinite logits (weights that hold them, an overflow): an error, never an answer
    // or a log-probability that records and reports would carry on
    for (std::size_t v = 0; v < V; ++v)
      if (!std::isfinite(row[v]))
        LATENTAUDIT_THROW(engine_error(
            std::string(fn) + ": llama.cpp computed a non-finite logit (" +
            (std::isnan(row[v]) ? "nan" : "inf") + ", token " + std::to_string(v) + ", position " +
            std::to_string(pos) + "): the model's weights hold NaN or Inf, or its activations overflow"));
    out.insert(out.end(), row, row + V);
  }

  sequence& seq(std::string_view fn, seq_id s) {
    if (s < 0 || static_cast<std::size_t>(s) >= seqs_.size() || !seqs_[static_cast<std::size_t>(s)].open)
      detail::throw_invalid(fn, "s", "sequence " + std::to_string(s) + " is not open");
    return seqs_[static_cast<std::size_t>(s)];
  }
  const sequence& seq(std::string_view fn, seq_id s) const {
    return const_cast<llama_cpp_engine*>(this)->seq(fn, s);
  }

  void release() noexcept {
    if (owned_) {
      if (ctx_ != nullptr) llama_free(ctx_);
      if (model_ != nullptr) llama_model_free(model_);
    }
    ctx_ = nullptr;
    model_ = nullptr;
  }

  std::string meta(const char* key) const {
    char buf[256];
    const int32_t n = llama_model_meta_val_str(model_, key, buf, sizeof buf);
    return n < 0 ? std::string() : std::string(buf, static_cast<std::size_t>(std::min<int32_t>(n, 255)));
  }

  void init() {
    constexpr std::string_view fn = "llama_cpp_engine";
    const auto n_seq = llama_n_seq_max(ctx_);
    if (n_seq < 2)
      LATENTAUDIT_THROW(engine_error(std::string(fn) + ": the context has " + std::to_string(n_seq) +
                                     " sequence(s); the adapter needs at least 2 (one is its scratch)"));
    seqs_.assign(n_seq - 1, sequence{});
    scratch_ = static_cast<llama_seq_id>(n_seq - 1);
    const llama_vocab* vocab = llama_model_get_vocab(model_);
    const std::int32_t n_head = llama_model_n_head(model_), n_kv = llama_model_n_head_kv(model_),
                       n_embd = llama_model_n_embd(model_), n_layer = llama_model_n_layer(model_);
    std::int32_t head_dim = n_head > 0 ? n_embd / n_head : 0;
    if (const auto kl = meta("llama.attention.key_length"); !kl.empty()) head_dim = std::atoi(kl.c_str());
    float theta = 10000.0f;
    if (const auto fb = meta("llama.rope.freq_base"); !fb.empty()) theta = std::strtof(fb.c_str(), nullptr);
    std::string arch = meta("latentaudit.source.architecture");
    if (arch.empty()) arch = "LlamaForCausalLM";
    std::uint64_t wh = 0;
    if (const auto h = meta("latentaudit.source.weights_hash"); !h.empty()) {
      wh = std::strtoull(h.c_str(), nullptr, 10);
    } else {  // no source hash: FNV-1a of the model's description and size (identifies the file, not its
              // weights)
      char desc[256];
      const int32_t n = llama_model_desc(model_, desc, sizeof desc);
      std::string id = std::string(desc, static_cast<std::size_t>(std::max(0, std::min<int32_t>(n, 255)))) +
                       ":" + std::to_string(llama_model_size(model_)) + ":" + meta("general.name");
      wh = 0xcbf29ce484222325ULL;
      for (unsigned char c : id) wh = (wh ^ c) * 0x100000001b3ULL;
    }
    info_.name = "llama.cpp";
    info_.fingerprint = {.architecture = arch,
                         .n_layers = n_layer,
                         .n_heads = n_head,
                         .n_kv_heads = n_kv,
                         .head_dim_k = head_dim,
                         .head_dim_v = head_dim,
                         .rope = {.pairing = rope_pairing::neox, .theta = theta, .rotary_dims = 0},
                         .weights_hash = wh};
    check_fingerprint_valid(fn, info_.fingerprint);
    norm_fp_ = info_.fingerprint;
    norm_fp_.rope.pairing = rope_pairing::norm;
    info_.vocab_size = llama_vocab_n_tokens(vocab);
    info_.hidden_size = n_embd;
    info_.max_context = std::min<std::int64_t>(llama_model_n_ctx_train(model_), llama_n_ctx(ctx_));
    info_.caps = {.attention_capture = false,
                  .hidden_state = false,
                  .partial_layer_import = false,
                  .token_mask_import = false,
                  .position_gaps = false,
                  .kv_dtypes = {dtype::f32, dtype::f16, dtype::bf16},
                  .tokenizer = llama_cpp_has_tokenizer(model_)};
    probe();
  }

  // Reads the context's cache layout (V transposition, cache type, streams) from a one-token state.
  void probe() {
    constexpr std::string_view fn = "llama_cpp_engine";
    llama_memory_seq_rm(mem(), scratch_, -1, -1);
    const token_id t0[1] = {0};
    run_scratch(scratch_, t0, 0, fn);
    std::vector<std::byte> blob(llama_state_seq_get_size(ctx_, scratch_));
    const std::size_t got =
        llama_state_seq_get_data(ctx_, reinterpret_cast<std::uint8_t*>(blob.data()), blob.size(), scratch_);
    llama_memory_seq_rm(mem(), scratch_, -1, -1);
    auto u32 = [&](std::size_t at) {
      std::uint32_t x = 0;
      if (at + 4 <= got) std::memcpy(&x, blob.data() + at, 4);
      return x;
    };
    // 8-byte header, u32 n_stream, u32 cell_count (1), the cell (pos, n_seq_id 1, seq id), u32 v_trans,
    // u32 n_layer, then the first layer's i32 type_k
    const std::uint32_t n_stream = u32(8);
    if (got < 40 || u32(0) != llama_seq_state_magic || n_stream != 1 || u32(12) != 1)
      LATENTAUDIT_THROW(engine_error(std::string(fn) + ": the context's state has " +
                                     std::to_string(n_stream) + " cache streams (blob of " +
                                     std::to_string(got) +
                                     " bytes); the adapter needs one: create the context with kv_unified"));
    v_trans_ = u32(28) != 0;
    const std::uint32_t tk = u32(36);
    if (tk != 0 && tk != 1 && tk != 30)
      LATENTAUDIT_THROW(engine_error(std::string(fn) + ": the context's K cache has ggml type " +
                                     std::to_string(tk) +
                                     "; the state converter reads F32 (0), F16 (1) and BF16 (30)"));
    cache_type_ = tk == 0 ? dtype::f32 : tk == 1 ? dtype::f16 : dtype::bf16;
  }

  // One llama_decode of `tokens` at positions first, first+1, ... on llama sequence `s` (the probe and
  // the scratch decode), logits discarded.
  void run_scratch(llama_seq_id s, std::span<const token_id> tokens, position_t first, std::string_view fn) {
    const auto n = static_cast<int32_t>(tokens.size());
    llama_batch b = llama_batch_init(n, 0, 1);
    struct guard {
      llama_batch& b;
      ~guard() { llama_batch_free(b); }
    } g{b};
    b.n_tokens = n;
    for (int32_t i = 0; i < n; ++i) {
      b.token[i] = tokens[static_cast<std::size_t>(i)];
      b.pos[i] = first + i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = s;
      b.logits[i] = 0;
    }
    decode_batch(b, fn);
  }

  // Applies llama.cpp's pending K re-rotation (after llama_memory_seq_add) by one decode on the scratch
  // sequence.
  void apply_pending_shift() {
    if (!shift_pending_) return;
    const token_id t0[1] = {0};
    llama_memory_seq_rm(mem(), scratch_, -1, -1);
    run_scratch(scratch_, t0, 0, "llama_cpp_engine::export_kv");
    llama_memory_seq_rm(mem(), scratch_, -1, -1);
  }

  std::int64_t count_cells(seq_id s) {
    if (llama_memory_seq_pos_max(mem(), s) < 0) return 0;
    return full_state(s).n_tokens();
  }

  // The whole sequence as a canonical block: cells sorted by position, keys in NEOX pairing.
  kv_block full_state(seq_id s) {
    apply_pending_shift();
    std::vector<std::byte> blob(llama_state_seq_get_size(ctx_, s));
    const std::size_t got =
        llama_state_seq_get_data(ctx_, reinterpret_cast<std::uint8_t*>(blob.data()), blob.size(), s);
    blob.resize(got);
    kv_block b = from_llama_seq_state(blob, norm_fp_);
    const auto pos = b.positions();
    if (!std::is_sorted(pos.begin(), pos.end())) {  // cells reused after an erase: restore position order
      std::vector<std::int64_t> order(static_cast<std::size_t>(b.n_tokens()));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) {
        return pos[static_cast<std::size_t>(x)] < pos[static_cast<std::size_t>(y)];
      });
      kv_block sorted(b.fingerprint(), std::vector<layer_index>(b.layers().begin(), b.layers().end()),
                      b.n_tokens(), b.type());
      for (std::size_t t = 0; t < order.size(); ++t) {
        const auto from = order[t];
        sorted.positions()[t] = pos[static_cast<std::size_t>(from)];
        for (std::size_t i = 0; i < b.n_layers(); ++i)
          for (std::int32_t h = 0; h < b.n_kv_heads(); ++h) {
            for (std::int32_t d = 0; d < b.head_dim_k(); ++d)
              sorted.set(i, false, static_cast<std::int64_t>(t), h, d, b.get(i, false, from, h, d));
            for (std::int32_t d = 0; d < b.head_dim_v(); ++d)
              sorted.set(i, true, static_cast<std::int64_t>(t), h, d, b.get(i, true, from, h, d));
          }
      }
      b = std::move(sorted);
    }
    convert_pairing(b, rope_pairing::neox);
    return b;
  }

  llama_model* model_ = nullptr;
  llama_context* ctx_ = nullptr;
  bool owned_ = false;
  engine_info info_;
  model_fingerprint norm_fp_;
  std::vector<sequence> seqs_;
  bool v_trans_ = false;
  dtype cache_type_ = dtype::f32;
  llama_seq_id scratch_ = 0;
  bool shift_pending_ = false;
};

static_assert(inference_engine<llama_cpp_engine>);

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_LLAMA_CPP_HPP
