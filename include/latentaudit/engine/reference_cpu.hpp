// SPDX-License-Identifier: MIT
// latentaudit: the CPU reference engine — exactly HF's LlamaForCausalLM in f32 with Eigen:
// embed_tokens; per layer input_layernorm (RMSNorm), q/k/v/o projections without bias, RoPE in
// HF's rotate_half (NEOX) convention, grouped-query attention (query head h reads kv head
// h / (n_heads / n_kv_heads)), post_attention_layernorm, SwiGLU MLP down(silu(gate(x)) * up(x));
// final norm; lm_head or tied embeddings. It reads HF `config.json` + `model.safetensors`
// (f32, f16, bf16) with HF tensor names, so real HF Llama-family checkpoints load, or a Llama GGUF
// file (f32, f16, bf16; engine/gguf_import.hpp: llama.cpp's names and Q/K row order mapped back
// to HF's).
//
// Caches hold post-RoPE keys with explicit positions. A token attends to every cached token
// before it in cache order (and itself) that is visible in its layer: imported tokens of layers
// without relayed KV are invisible there.
#ifndef LATENTAUDIT_ENGINE_REFERENCE_CPU_HPP
#define LATENTAUDIT_ENGINE_REFERENCE_CPU_HPP

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../kv/kv_block.hpp"
#include "capabilities.hpp"
#include "concepts.hpp"
#include "detail/packed_gemm.hpp"
#include "llama_config.hpp"
#include "safetensors.hpp"

namespace latentaudit {

namespace detail {

/// @brief The tensors the reference engine's constructor reads, by HF name: a safetensors file,
/// or a GGUF file through gguf_import.hpp.
struct reference_weights {
  std::string path;                ///< the file errors name
  std::vector<std::string> names;  ///< every tensor the file holds, by HF name
  /// whether the file holds a tensor
  std::function<bool(const std::string&)> has;
  /// a tensor as f32 of the row-major shape given (throws when missing or of another shape)
  std::function<std::vector<float>(const std::string&, std::span<const std::int64_t>)> read;
  /// optional: the safetensors file the tensors are, when they are one (its tensors are then read
  /// straight into the engine's storage, after their shape is checked; null: `read`, then a copy)
  const safetensors_file* file = nullptr;
};

}  // namespace detail

/// @brief The CPU reference engine (satisfies attention_capturing_engine).
class reference_cpu_engine {
 public:
  /// @brief Row-major f32 matrix ([out][in] as HF stores linear weights).
  using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  /// @brief Loads a model: `path/config.json` and `path/model.safetensors` when `path` is a
  /// directory (an HF checkpoint), else `path` as a Llama GGUF file (engine/gguf_import.hpp: its
  /// llama.* keys as the configuration, its f32, f16 or bf16 tensors mapped to HF names and layout).
  /// @param threads worker threads (0 = all cores) for attention, used by forwards whose attention
  ///        work (new tokens × cached tokens × heads × head_dim) reaches 2^18, and for the matrix
  ///        products (projections, MLP, logits) whose work reaches 2^20 multiply-adds, computed in
  ///        fixed blocks of 256 output features; results do not depend on it
  /// @throws corrupt_data on a bad config, a missing, unexpected or mis-shaped tensor, a GGUF file
  ///         that is malformed, not a Llama or quantized (naming the file and the key or tensor);
  ///         invalid_argument if the directory or files cannot be opened.
  static reference_cpu_engine load(const std::filesystem::path& path, unsigned threads = 1);

  /// @brief Loads `dir` (an HF directory or a GGUF file) as load() does, then replaces the tensors named in
  /// the safetensors file `overlay` by the overlay's (same names and shapes; f32, f16 or bf16): a fine-tuned
  /// copy of the model shipped as only the tensors the fine-tuning changed (models/organism-a-drift). The
  /// fingerprint hashes the weights used, so it differs from the base model's. One engine is built:
  /// every base tensor is checked as load() checks it, those the overlay replaces included.
  /// @throws as load(); corrupt_data if the overlay holds a tensor the model does not have, or one
  ///         whose values are not finite (naming the overlay's file); shape_mismatch if an overlay
  ///         tensor's shape differs.
  static reference_cpu_engine load_with_overlay(const std::filesystem::path& dir,
                                                const std::filesystem::path& overlay, unsigned threads = 1);

  /// @brief An engine over an opened weights file (tensor names as HF's LlamaForCausalLM).
  /// `overlay` (may be null): tensors read from it instead of `st` when it holds them (load_with_overlay).
  reference_cpu_engine(const llama_config& cfg, const safetensors_file& st, unsigned threads = 1,
                       const safetensors_file* overlay = nullptr);

  /// @brief An engine over weights by HF name (a safetensors file, a GGUF import); `overlay` as
  /// in the constructor above.
  reference_cpu_engine(const llama_config& cfg, const detail::reference_weights& st, unsigned threads = 1,
                       const safetensors_file* overlay = nullptr);

  /// @brief Identity, fingerprint and capabilities.
  [[nodiscard]] const engine_info& info() const noexcept { return info_; }

  /// @brief Which kernel runs the matrix products: "avx2-fma" (the packed kernel of
  /// detail/packed_gemm.hpp, chosen at construction where the processor has AVX2 and FMA and
  /// LATENTAUDIT_REFERENCE_KERNEL is not "baseline") or "baseline" (Eigen's product at the build's
  /// instruction set). The two agree within float rounding, not bit for bit: a design run on both
  /// mixes two sets of bits, so the audit names the kernel in its engine version.
  [[nodiscard]] const char* kernel() const noexcept { return packed_ ? "avx2-fma" : "baseline"; }
  /// @brief The model's configuration.
  [[nodiscard]] const llama_config& config() const noexcept { return cfg_; }

  /// @brief Opens an empty sequence.
  [[nodiscard]] seq_id open_seq();

  /// @brief Closes a sequence and frees its cache.
  /// @throws invalid_argument if s is not open.
  void close_seq(seq_id s) {
    seq("close_seq", s);
    seqs_[static_cast<std::size_t>(s)] = sequence{};
  }

  /// @brief Tokens in the cache of s.
  [[nodiscard]] std::int64_t n_tokens(seq_id s) const {
    return static_cast<std::int64_t>(seq("n_tokens", s).positions.size());
  }

  /// @brief One past the largest cached position of s (0 when empty).
  [[nodiscard]] position_t next_position(seq_id s) const {
    const auto& q = seq("next_position", s);
    return q.positions.empty() ? 0 : *std::max_element(q.positions.begin(), q.positions.end()) + 1;
  }

  /// @brief Appends tokens at positions first, first+1, ... and runs them.
  /// @throws invalid_argument on an empty token list, a token id out of range, positions outside
  ///         [0, max_context), or a closed sequence.
  forward_output prefill(seq_id s, std::span<const token_id> tokens, position_t first,
                         const forward_options& o = {});

  /// @brief One decode step: the token at position p.
  forward_output decode(seq_id s, token_id token, position_t p, const forward_options& o = {});

  /// @brief Prefill that also captures the attention weights of the new tokens in `layers`.
  attention_capture prefill_capture(seq_id s, std::span<const token_id> tokens, position_t first,
                                    std::span<const layer_index> layers, const forward_options& o = {});

  /// @brief Cache rows `tokens` [first, last) (cache order) of layers `layer_range` [first, last).
  /// @throws invalid_argument on ranges outside the cache or the model.
  [[nodiscard]] kv_block export_kv(seq_id s, index_range tokens, index_range layer_range) const;

  /// @brief Appends a relayed block to the cache of s (see import_options).
  /// @throws incompatible_model on a fingerprint mismatch (unless forced); shape_mismatch if a
  ///         forced block's head shapes differ; corrupt_data if the positions fail the gate.
  void import_kv(seq_id s, const kv_block& block, const import_options& o = {});

  /// @brief Moves tokens with positions in [p0, p1) by delta, re-rotating their keys.
  /// @throws invalid_argument if p0 > p1 or a moved position leaves [0, max_context).
  void shift(seq_id s, position_t p0, position_t p1, position_t delta);

  /// @brief Removes tokens with positions in [p0, p1).
  void erase(seq_id s, position_t p0, position_t p1);

 private:
  struct layer_weights {
    Eigen::VectorXf in_norm, post_norm;
    matrix q, k, v, o, gate, up, down;                        // empty once packed
    detail::packed_weight pq, pk, pv, po, pgate, pup, pdown;  // with the packed kernel
  };
  struct sequence {
    bool open = false;
    std::vector<position_t> positions;
    std::vector<std::vector<float>> k, v;            // per layer: tokens × kv_heads × head_dim
    std::vector<std::vector<std::uint8_t>> visible;  // per layer: tokens
  };

  [[nodiscard]] std::size_t row_elems() const noexcept {
    return static_cast<std::size_t>(cfg_.n_kv_heads) * static_cast<std::size_t>(cfg_.head_dim);
  }

  sequence& seq(std::string_view fn, seq_id s);
  const sequence& seq(std::string_view fn, seq_id s) const {
    return const_cast<reference_cpu_engine*>(this)->seq(fn, s);
  }

  /// rotate_head with the cos and sin of the position's angles given (same arithmetic).
  void rotate_head_cs(float* x, const double* c, const double* s) const noexcept;

  /// HF LlamaRMSNorm: x · rsqrt(mean(x²) + eps) · w, rows of X.
  matrix rms_norm(const matrix& x, const Eigen::VectorXf& w) const;

  /// x · wᵀ (x: n × in, w: out × in as HF stores linear weights): with the packed kernel (`pw`
  /// non-empty, detail/packed_gemm.hpp) its panels, else Eigen's product; the output features in
  /// fixed blocks of 256, shared among threads_ threads when the product reaches 2^20
  /// multiply-adds, each block computed alike whatever the thread count (so results do not depend
  /// on threads_).
  matrix project(const matrix& x, const matrix& w, const detail::packed_weight& pw) const;

  /// y += x · wᵀ as project() computes x · wᵀ (Eigen: each block accumulated into y by Eigen's
  /// product; packed: the product, then added) — the residual adds of the attention output and MLP.
  void project_add(matrix& y, const matrix& x, const matrix& w, const detail::packed_weight& pw) const;

  forward_output forward(seq_id s, std::span<const token_id> tokens, position_t first,
                         const forward_options& o, std::span<const layer_index> capture_layers,
                         attention_capture* cap);

  llama_config cfg_;
  unsigned threads_ = 1;
  engine_info info_;
  std::vector<double> freq_;
  matrix embed_, lm_head_;
  detail::packed_weight head_packed_;  // the logits' weights (lm_head or the tied embeddings), packed
  bool packed_ = false;                // the packed AVX2/FMA kernel runs the products (kernel())
  std::vector<layer_weights> layers_;
  Eigen::VectorXf norm_;
  std::vector<sequence> seqs_;
};

static_assert(inference_engine<reference_cpu_engine>);
static_assert(attention_capturing_engine<reference_cpu_engine>);

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/reference_cpu-inl.hpp"
#endif

#endif  // LATENTAUDIT_ENGINE_REFERENCE_CPU_HPP
