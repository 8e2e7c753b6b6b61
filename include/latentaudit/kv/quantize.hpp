// SPDX-License-Identifier: MIT
// latentaudit: quantize→dequantize round trips of a relayed cache, reporting the true payload
// bytes of the quantized form (codes plus scales and zero points).
//
// Integer schemes follow KIVI (Liu et al. 2024): asymmetric min–max quantization, keys grouped
// per channel (a group is `group_size` consecutive tokens of one (head, dim) channel), values per
// token (a group is `group_size` consecutive dims of one (token, head)). Scale and zero point are
// stored as f32 (8 bytes a group). FP8 emulates OCP E4M3 (max 448, no infinities) and E5M2 (max
// 57344) with one f32 scale per (layer, K|V) tensor: s = amax / fp8_max, round-to-nearest-even,
// saturating.
#ifndef LATENTAUDIT_KV_QUANTIZE_HPP
#define LATENTAUDIT_KV_QUANTIZE_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../core/detail/check.hpp"
#include "kv_block.hpp"

namespace latentaudit {

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
    case quant_scheme::int8: return "int8";
    case quant_scheme::int4: return "int4";
    case quant_scheme::fp8_e4m3: return "fp8_e4m3";
    case quant_scheme::fp8_e5m2: return "fp8_e5m2";
  }
  return "unknown";
}

/// @brief A round trip to perform.
struct quantize_spec {
  quant_scheme scheme = quant_scheme::int8;  ///< the scheme
  std::int32_t group_size = 32;              ///< integer schemes: elements per group (>= 1)
  bool keys_per_channel = true;              ///< KIVI: keys grouped along tokens per channel (else per token)
};

/// @brief What a round trip did.
struct quantize_record {
  quant_scheme scheme = quant_scheme::int8;  ///< the scheme
  std::int32_t group_size = 0;               ///< group size (0 for fp8)
  std::uint64_t original_bytes = 0;          ///< payload bytes before (present rows, block dtype)
  std::uint64_t quantized_bytes = 0;         ///< codes + scales + zero points
  std::uint64_t groups = 0;                  ///< groups (or tensors, for fp8)
  double max_abs_error = 0;                  ///< largest |x − dequant(x)| before rounding to the block dtype
  double max_error_over_half_step = 0;       ///< largest |x − dequant(x)| / (step / 2) (integer schemes; ≤ 1)
  double rms_error = 0;                      ///< RMS of x − dequant(x)
};

/// @brief Rounds y to the nearest FP8 value (E4M3 when e4m3, else E5M2), ties to even, saturating
/// at ±max; NaN in gives NaN out.
[[nodiscard]] inline double round_to_fp8(double y, bool e4m3) noexcept {
  if (std::isnan(y)) return y;
  const int mant = e4m3 ? 3 : 2;
  const int emin = e4m3 ? -6 : -14;  // smallest normal exponent
  const double maxv = e4m3 ? 448.0 : 57344.0;
  const double a = std::fabs(y);
  if (a == 0) return y;
  int e = std::ilogb(a);
  if (e < emin) e = emin;
  const double step = std::ldexp(1.0, e - mant);
  double q = std::nearbyint(a / step) * step;  // default rounding mode: ties to even
  if (q > maxv) q = maxv;
  return std::copysign(q, y);
}

namespace detail {

/// @brief Asymmetric min–max round trip of one group gathered in `x`; writes back, returns step.
inline double quantize_group(std::vector<double>& x, int bits, quantize_record& rec, double& sq_err) {
  double lo = x[0], hi = x[0];
  for (double v : x) { lo = std::min(lo, v); hi = std::max(hi, v); }
  const double levels = static_cast<double>((1 << bits) - 1);
  const float zero = static_cast<float>(lo);
  const float scale = static_cast<float>((hi - static_cast<double>(zero)) / levels);
  for (double& v : x) {
    double q = 0;
    if (scale > 0) q = std::clamp(std::nearbyint((v - zero) / static_cast<double>(scale)), 0.0, levels);
    const double back = static_cast<double>(zero) + q * static_cast<double>(scale);
    const double err = std::fabs(v - back);
    rec.max_abs_error = std::max(rec.max_abs_error, err);
    if (scale > 0) rec.max_error_over_half_step = std::max(rec.max_error_over_half_step, err / (0.5 * static_cast<double>(scale)));
    sq_err += err * err;
    v = back;
  }
  return scale;
}

}  // namespace detail

/// @brief Quantizes and dequantizes K and V of every present row in place (the result is rounded
/// once to the block's dtype) and reports the quantized payload size.
/// @throws invalid_argument if group_size < 1 for an integer scheme or the scheme is unknown.
inline quantize_record quantize_roundtrip(kv_block& block, const quantize_spec& spec) {
  constexpr std::string_view fn = "quantize_roundtrip";
  const bool integer = spec.scheme == quant_scheme::int8 || spec.scheme == quant_scheme::int4;
  if (!integer && spec.scheme != quant_scheme::fp8_e4m3 && spec.scheme != quant_scheme::fp8_e5m2)
    detail::throw_invalid(fn, "spec.scheme", "must be int8, int4, fp8_e4m3 or fp8_e5m2");
  if (integer) detail::check_in_range(fn, "spec.group_size", spec.group_size, 1, 1 << 20);
  quantize_record rec;
  rec.scheme = spec.scheme;
  rec.group_size = integer ? spec.group_size : 0;
  const int bits = spec.scheme == quant_scheme::int4 ? 4 : 8;
  const std::int32_t H = block.n_kv_heads();
  double sq_err = 0;
  std::uint64_t count = 0, codes = 0;  // elements seen, code bytes
  for (std::size_t i = 0; i < block.n_layers(); ++i) {
    std::vector<std::int64_t> rows;
    for (std::int64_t t = 0; t < block.n_tokens(); ++t)
      if (block.token_present(i, t)) rows.push_back(t);
    for (int part = 0; part < 2; ++part) {
      const bool value = part == 1;
      const std::int32_t D = value ? block.head_dim_v() : block.head_dim_k();
      const std::uint64_t n = rows.size() * static_cast<std::uint64_t>(H) * static_cast<std::uint64_t>(D);
      if (n == 0) continue;
      rec.original_bytes += n * dtype_size(block.type());
      count += n;
      if (!integer) {
        const bool e4m3 = spec.scheme == quant_scheme::fp8_e4m3;
        double amax = 0;
        for (auto t : rows)
          for (std::int32_t h = 0; h < H; ++h)
            for (std::int32_t d = 0; d < D; ++d) amax = std::max(amax, static_cast<double>(std::fabs(block.get(i, value, t, h, d))));
        const float scale = static_cast<float>(amax / (e4m3 ? 448.0 : 57344.0));
        ++rec.groups;
        codes += n;
        for (auto t : rows)
          for (std::int32_t h = 0; h < H; ++h)
            for (std::int32_t d = 0; d < D; ++d) {
              const double x = block.get(i, value, t, h, d);
              const double back = scale > 0 ? round_to_fp8(x / static_cast<double>(scale), e4m3) * static_cast<double>(scale) : 0.0;
              const double err = std::fabs(x - back);
              rec.max_abs_error = std::max(rec.max_abs_error, err);
              sq_err += err * err;
              block.set(i, value, t, h, d, static_cast<float>(back));
            }
        continue;
      }
      const bool per_channel = !value && spec.keys_per_channel;
      std::vector<double> g;
      std::vector<std::int64_t> gt;  // token of each group element (per channel) or dim (per token)
      if (per_channel) {
        for (std::int32_t h = 0; h < H; ++h)
          for (std::int32_t d = 0; d < D; ++d)
            for (std::size_t r0 = 0; r0 < rows.size(); r0 += static_cast<std::size_t>(spec.group_size)) {
              const std::size_t r1 = std::min(rows.size(), r0 + static_cast<std::size_t>(spec.group_size));
              g.clear();
              for (std::size_t r = r0; r < r1; ++r) g.push_back(block.get(i, value, rows[r], h, d));
              detail::quantize_group(g, bits, rec, sq_err);
              for (std::size_t r = r0; r < r1; ++r) block.set(i, value, rows[r], h, d, static_cast<float>(g[r - r0]));
              ++rec.groups;
              codes += bits == 4 ? (r1 - r0 + 1) / 2 : r1 - r0;
            }
      } else {
        for (auto t : rows)
          for (std::int32_t h = 0; h < H; ++h)
            for (std::int32_t d0 = 0; d0 < D; d0 += spec.group_size) {
              const std::int32_t d1 = std::min(D, d0 + spec.group_size);
              g.clear();
              for (std::int32_t d = d0; d < d1; ++d) g.push_back(block.get(i, value, t, h, d));
              detail::quantize_group(g, bits, rec, sq_err);
              for (std::int32_t d = d0; d < d1; ++d) block.set(i, value, t, h, d, static_cast<float>(g[static_cast<std::size_t>(d - d0)]));
              ++rec.groups;
              codes += bits == 4 ? static_cast<std::uint64_t>(d1 - d0 + 1) / 2 : static_cast<std::uint64_t>(d1 - d0);
            }
      }
    }
  }
  // codes: one byte each (int8, fp8); int4 packs two a byte, each group padded to a whole byte
  rec.quantized_bytes = codes;
  rec.quantized_bytes += rec.groups * (integer ? 8u : 4u);
  rec.rms_error = count > 0 ? std::sqrt(sq_err / static_cast<double>(count)) : 0.0;
  return rec;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_QUANTIZE_HPP
