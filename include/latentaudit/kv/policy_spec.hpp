// SPDX-License-Identifier: MIT
// latentaudit: the vocabulary of a KV transfer policy — the noise, zeroing and dropout transforms,
// the quantization schemes, the position modes, the token selections and the composable kv_policy —
// as plain enums and structs, apart from the machinery that applies them (kv_block.hpp, noise.hpp,
// quantize.hpp, rope.hpp, selection.hpp, transfer_policy.hpp). An arm (trial/arm.hpp) and a record
// carry these values; only code that transforms a cache needs the rest.
#ifndef LATENTAUDIT_KV_POLICY_SPEC_HPP
#define LATENTAUDIT_KV_POLICY_SPEC_HPP

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "../config.hpp"
#include "../core/types.hpp"

namespace latentaudit {

class kv_block;
struct policy_context;
struct transfer_record;

/// @brief Which tensors a transform touches.
enum class kv_part : std::uint8_t {
  keys = 1,    ///< K only
  values = 2,  ///< V only
  both = 3,    ///< K and V
};

/// @brief How `noise_spec::sigma` is interpreted.
enum class noise_scale : std::uint8_t {
  absolute = 0,     ///< σ itself
  rms_layer = 1,    ///< σ × RMS of the (layer, part) tensor over the selected tokens
  rms_head = 2,     ///< σ × RMS of each head (over selected tokens and dims)
  rms_channel = 3,  ///< σ × RMS of each channel (head, dim) over the selected tokens
  snr_db = 4,  ///< target signal-to-noise ratio in dB per (layer, part): σ_eff = RMS · 10^(−sigma/20)
};

/// @brief Name of a noise scale ("absolute", "rms_layer", ...).
[[nodiscard]] constexpr std::string_view noise_scale_name(noise_scale s) noexcept {
  switch (s) {
    case noise_scale::absolute:
      return "absolute";
    case noise_scale::rms_layer:
      return "rms_layer";
    case noise_scale::rms_head:
      return "rms_head";
    case noise_scale::rms_channel:
      return "rms_channel";
    case noise_scale::snr_db:
      return "snr_db";
  }
  return "unknown";
}

/// @brief Gaussian noise to add to a block.
struct noise_spec {
  double sigma = 0.0;                          ///< σ (see scale); for snr_db the SNR in dB
  noise_scale scale = noise_scale::rms_layer;  ///< interpretation of sigma
  kv_part part = kv_part::both;                ///< K, V or both
  index_range layers{0, std::numeric_limits<std::int64_t>::max()};  ///< model layer band [first, last)
  index_range tokens{
      0, std::numeric_limits<std::int64_t>::max()};  ///< token index band [first, last) in the block
  std::uint64_t seed = 0;                            ///< experiment seed
  std::uint64_t item = 0;                            ///< item (task) index
  unsigned threads =
      1;  ///< worker threads over (layer, part) units (0 = all cores); results do not depend on it
};

/// @brief A quantization scheme.
enum class quant_scheme : std::uint8_t {
  int8 = 1,      ///< 8-bit asymmetric groups
  int4 = 2,      ///< 4-bit asymmetric groups (two codes a byte)
  fp8_e4m3 = 3,  ///< FP8 E4M3 with a per-tensor scale
  fp8_e5m2 = 4,  ///< FP8 E5M2 with a per-tensor scale
};

/// @brief Name of a scheme ("int8", "int4", "fp8_e4m3", "fp8_e5m2").
[[nodiscard]] constexpr std::string_view quant_scheme_name(quant_scheme s) noexcept {
  switch (s) {
    case quant_scheme::int8:
      return "int8";
    case quant_scheme::int4:
      return "int4";
    case quant_scheme::fp8_e4m3:
      return "fp8_e4m3";
    case quant_scheme::fp8_e5m2:
      return "fp8_e5m2";
  }
  return "unknown";
}

/// @brief Every scheme, in the enum's order: the one table the CLI (`kv`'s --quantize), the Python
/// binding and the wire read scheme names from (with quant_scheme_name and quant_scheme_from_name).
inline constexpr std::array<quant_scheme, 4> all_quant_schemes = {
    quant_scheme::int8, quant_scheme::int4, quant_scheme::fp8_e4m3, quant_scheme::fp8_e5m2};

/// @brief The scheme named `name` (a quant_scheme_name of all_quant_schemes), or nullopt.
[[nodiscard]] constexpr std::optional<quant_scheme> quant_scheme_from_name(std::string_view name) noexcept {
  for (const quant_scheme q : all_quant_schemes)
    if (quant_scheme_name(q) == name) return q;
  return std::nullopt;
}

/// @brief A round trip to perform.
struct quantize_spec {
  quant_scheme scheme = quant_scheme::int8;  ///< the scheme
  std::int32_t group_size = 32;              ///< integer schemes: elements per group (>= 1)
  bool keys_per_channel = true;              ///< KIVI: keys grouped along tokens per channel (else per token)
};

/// @brief Where a relayed block is placed in the receiver's sequence.
enum class position_mode : std::uint8_t {
  preserve = 0,           ///< keep the sender's positions (and phases)
  rebase_contiguous = 1,  ///< positions base, base+1, ... (base = `first_position`, default 0)
  append_after = 2,       ///< positions start right after the receiver's own tokens
};

/// @brief Name of a position mode ("preserve", "rebase_contiguous", "append_after").
[[nodiscard]] constexpr std::string_view position_mode_name(position_mode m) noexcept {
  switch (m) {
    case position_mode::preserve:
      return "preserve";
    case position_mode::rebase_contiguous:
      return "rebase_contiguous";
    case position_mode::append_after:
      return "append_after";
  }
  return "unknown";
}

// ---- selection specs (resolved against the block at apply time) ---------------------------------

/// @brief Every token.
struct all_tokens {};
/// @brief Tokens [first, last) (clamped to the block).
struct token_range_spec {
  std::int64_t first = 0;
  std::int64_t last = 0;
};
/// @brief The first (or last) fraction of tokens.
struct token_fraction_spec {
  double fraction = 1.0;
  bool last = false;
};
/// @brief Every stride-th token from offset.
struct token_stride_spec {
  std::int64_t stride = 1;
  std::int64_t offset = 0;
};
/// @brief Attention sinks + recent window (StreamingLLM).
struct sinks_window_spec {
  std::int64_t sinks = 4;
  std::int64_t window = 64;
};
/// @brief H2O heavy hitters (needs policy_context::token_scores).
struct heavy_hitter_spec {
  std::int64_t heavy = 32;
  std::int64_t recent = 32;
};
/// @brief SnapKV (needs policy_context::window_attention).
struct snapkv_spec {
  std::int64_t window = 16;
  std::int64_t budget = 64;
  std::int64_t kernel = 7;
};
/// @brief PyramidKV (needs policy_context::layer_token_scores).
struct pyramid_spec {
  std::int64_t average = 64;
  double beta = 20.0;
  std::int64_t window = 8;
};
/// @brief KVComm: layers in `selected` keep every token, the others keep `sinks` tokens.
struct kvcomm_spec {
  std::vector<layer_index> selected;
  std::int64_t sinks = 4;
};

/// @brief How tokens are selected.
using token_spec = std::variant<all_tokens, token_range_spec, token_fraction_spec, token_stride_spec,
                                sinks_window_spec, heavy_hitter_spec, snapkv_spec, pyramid_spec, kvcomm_spec>;

/// @brief Zero K and/or V in bands (a transform).
struct zero_spec {
  kv_part part = kv_part::both;                                     ///< which tensors
  index_range layers{0, std::numeric_limits<std::int64_t>::max()};  ///< model layer band
  index_range tokens{0, std::numeric_limits<std::int64_t>::max()};  ///< token band
};
/// @brief Token dropout with probability p (a transform).
struct dropout_spec {
  double p = 0.1;
};
/// @brief One transform step.
using transform_spec = std::variant<noise_spec, zero_spec, dropout_spec>;

/// @brief The composable policy: select layers (empty = all present) and tokens, apply the
/// transforms in order, then the position mode.
struct kv_policy {
  std::string label = "kv_full";                 ///< name used in records
  std::vector<layer_index> layers;               ///< layers to relay (empty: all present)
  token_spec tokens = all_tokens{};              ///< token selection
  std::vector<transform_spec> transforms;        ///< applied in order after selection
  position_mode mode = position_mode::preserve;  ///< placement at the receiver
  position_t first_position = 0;                 ///< base for rebase_contiguous

  /// @brief The policy's label.
  [[nodiscard]] std::string name() const { return label; }

  /// @brief Applies the policy to `block` in place.
  /// @throws invalid_argument if a selection needs scores the context does not provide, or any
  ///         step rejects its parameters.
  transfer_record apply(kv_block& block, const policy_context& ctx) const;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_POLICY_SPEC_HPP
