// SPDX-License-Identifier: MIT
// latentaudit: a linear map from one model's KV cache to another's (cross-model relay, issue 29):
// fitted in closed form on paired calibration caches — the two models' prefill caches of the same
// token sequences — by ridge regression on RoPE-stripped keys and values, from each target layer's
// top-K source layers (ranked by their own ridge fit), and applied to a sender's cache to give a
// cache in the receiver's shape, its keys rotated again for the receiver at the sender's
// positions. The two models may differ in layers, KV heads and head dims. The map file
// (safetensors) is engine/kv_map_file.hpp; docs/mapping.md gives the formulas.
#ifndef LATENTAUDIT_KV_KV_MAP_HPP
#define LATENTAUDIT_KV_KV_MAP_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/hash.hpp"
#include "kv_block.hpp"
#include "map_screen.hpp"
#include "rope.hpp"

namespace latentaudit {

/// @brief Options of fit_kv_map().
struct kv_map_options {
  /// ridge penalty, relative: λ · tr(XᵀX)/F is added to the diagonal of the centred Gram matrix
  /// of the F features (scale-free: the same λ for any cache magnitude); > 0
  double ridge = 1e-3;
  /// source layers each target layer is mapped from (the best by their own ridge fit's R²); ≥ 1,
  /// at most the source's layers
  std::size_t top_layers = 2;
};

/// @brief The fitted map of one target layer: y = W x + b, x the chosen source layers' features
/// (for each, every KV head's pre-RoPE key then value, head after head), y the target layer's
/// (every KV head's pre-RoPE key then value).
struct kv_layer_map {
  std::vector<layer_index> source_layers;  ///< the source layers x is built from, in order
  std::size_t in = 0;                      ///< features: Σ over source_layers of H_s · (d_k + d_v)
  std::size_t out = 0;                     ///< outputs: H_t · (d_k + d_v) of the target
  std::vector<float> weight;               ///< W, row-major out × in
  std::vector<float> bias;                 ///< b, out
  /// calibration R² per target KV head: of its key rows and of its value rows (1 − SSE/SST over
  /// the tokens and the head's dims, in sample)
  std::vector<double> r2_key, r2_value;
};

/// @brief A cache map from `source` (the sender's model) to `target` (the receiver's).
struct kv_map {
  model_fingerprint source;               ///< the sender's model
  model_fingerprint target;               ///< the receiver's model
  std::vector<kv_layer_map> layers;       ///< one per target layer, in layer order
  double ridge = 0.0;                     ///< kv_map_options::ridge of the fit
  std::size_t calibration_sequences = 0;  ///< paired caches fitted on
  std::size_t calibration_tokens = 0;     ///< their tokens
};

/// @brief Fits the map from `source` to `target` caches: source[c] and target[c] are the two
/// models' caches of the same token sequence (the same tokens at the same positions; every layer
/// present, no token mask). Keys are unrotated with each block's own RoPE first. For each target
/// layer, every source layer is scored by the R² of its own ridge fit of the target layer's
/// features; the best `top_layers` (ties: the lower layer) form x, and one multi-output ridge gives
/// W and b (each output column is the per-head ridge regression on the same features).
/// @throws invalid_argument for no pairs, mismatched pairs (tokens, positions, a fingerprint that
///         changes within a side), a block with missing layers or a token mask, a non-positive
///         ridge, top_layers outside [1, source layers], or fewer tokens than 2.
[[nodiscard]] LATENTAUDIT_INLINE kv_map fit_kv_map(std::span<const kv_block> source,
                                                   std::span<const kv_block> target,
                                                   const kv_map_options& o = {});

/// @brief Checks that `m` is a well-formed map: one layer map per target layer, source layers in
/// range and ascending without repeats, shapes that match the two fingerprints, finite numbers.
/// @throws invalid_argument naming the first problem
inline void check_kv_map(std::string_view fn, const kv_map& m) {
  if (m.layers.size() != static_cast<std::size_t>(m.target.n_layers) || m.target.n_kv_heads < 1 ||
      m.source.n_kv_heads < 1)
    detail::throw_invalid(fn, "map", "must hold one layer map per target layer");
  const std::size_t sw = static_cast<std::size_t>(m.source.n_kv_heads) *
                         static_cast<std::size_t>(m.source.head_dim_k + m.source.head_dim_v);
  const std::size_t out = static_cast<std::size_t>(m.target.n_kv_heads) *
                          static_cast<std::size_t>(m.target.head_dim_k + m.target.head_dim_v);
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const auto& lm = m.layers[l];
    const std::string at = "layer " + std::to_string(l);
    if (lm.source_layers.empty() || !std::is_sorted(lm.source_layers.begin(), lm.source_layers.end()) ||
        std::adjacent_find(lm.source_layers.begin(), lm.source_layers.end()) != lm.source_layers.end() ||
        lm.source_layers.front() < 0 || lm.source_layers.back() >= m.source.n_layers)
      detail::throw_invalid(fn, "map", at + ": source layers must be ascending, distinct source layers");
    if (lm.in != lm.source_layers.size() * sw || lm.out != out || lm.weight.size() != lm.in * lm.out ||
        lm.bias.size() != lm.out)
      detail::throw_invalid(fn, "map", at + ": weight and bias must match the two models' shapes");
    auto finite = [](const std::vector<float>& v) {
      return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
    };
    if (!finite(lm.weight) || !finite(lm.bias))
      detail::throw_invalid(fn, "map", at + ": a number is not finite");
  }
}

/// @brief A map's identity: the first 16 hex digits of the SHA-256 of both fingerprints (every
/// field), each target layer's source layers, weight and bias (f32 bytes), and the ridge. Two maps
/// with the same id relay the same caches; the audit names the map by it (design.json, the
/// records' policy "map", the decision's policy line).
/// @throws invalid_argument for a malformed map (check_kv_map)
[[nodiscard]] inline std::string kv_map_id(const kv_map& m) {
  check_kv_map("kv_map_id", m);
  sha256 h;
  h.update("latentaudit kv map id 1");
  for (const auto* f : {&m.source, &m.target}) {
    h.update(f->architecture);
    const std::int64_t shape[] = {f->n_layers,         f->n_heads,
                                  f->n_kv_heads,       f->head_dim_k,
                                  f->head_dim_v,       static_cast<std::int64_t>(f->rope.pairing),
                                  f->rope.rotary_dims, static_cast<std::int64_t>(f->weights_hash)};
    h.update(std::as_bytes(std::span(&f->rope.theta, 1)));
    h.update(std::as_bytes(std::span(shape)));
  }
  for (const auto& lm : m.layers) {
    const auto n = static_cast<std::int64_t>(lm.source_layers.size());
    h.update(std::as_bytes(std::span(&n, 1)));
    h.update(std::as_bytes(std::span(lm.source_layers)));
    h.update(std::as_bytes(std::span(lm.weight)));
    h.update(std::as_bytes(std::span(lm.bias)));
  }
  h.update(std::as_bytes(std::span(&m.ridge, 1)));
  const auto d = h.finish();
  return to_hex(std::span(d).first(8));
}

/// @brief The hash of one calibration document's tokens (the first 8 bytes of their SHA-256, as
/// int32 little-endian): what a map file lists of its calibration documents, and what the audit
/// compares its items' documents with to refuse a map calibrated on them.
[[nodiscard]] inline std::uint64_t calibration_document_hash(std::span<const token_id> tokens) {
  sha256 h;
  h.update(std::as_bytes(tokens));
  const auto d = h.finish();
  std::uint64_t x = 0;
  for (int i = 0; i < 8; ++i) x = (x << 8) | static_cast<std::uint64_t>(d[static_cast<std::size_t>(i)]);
  return x;
}

/// @brief The receiver's cache for a sender's cache `source` (every layer of the map's source
/// model, no token mask): keys unrotated with the source's RoPE, each target layer's pre-RoPE keys
/// and values y = W x + b from the chosen source layers, then the keys rotated with the target's
/// RoPE at the source's positions. f32, every target layer, the source's positions.
/// @throws incompatible_model if `source` is not a cache of m.source; invalid_argument for a
///         malformed map, missing layers or a token mask
[[nodiscard]] LATENTAUDIT_INLINE kv_block apply_kv_map(const kv_map& m, const kv_block& source);

/// @brief R² of `m` on paired caches it was not fitted on (held out): per target layer and KV head,
/// of its keys and of its values, in the pre-RoPE space the map works in (1 − SSE/SST over the
/// tokens and the head's dims). Pairs as fit_kv_map() takes them.
/// @throws invalid_argument as fit_kv_map() for bad pairs; as apply_kv_map() for a source of
///         another model
[[nodiscard]] LATENTAUDIT_INLINE std::vector<kv_layer_map> evaluate_kv_map(const kv_map& m,
                                                                           std::span<const kv_block> source,
                                                                           std::span<const kv_block> target);

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/kv_map-inl.hpp"
#endif

#endif  // LATENTAUDIT_KV_KV_MAP_HPP
