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
#include "../core/parallel.hpp"
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

/// @brief Accumulates the errors of one quantized element.
struct quant_stats {
  double max_abs = 0, max_ratio = 0, sq = 0;
  std::uint64_t groups = 0, code_bytes = 0, elements = 0, original_bytes = 0;
  void add(double err, double half_step) noexcept {
    max_abs = std::max(max_abs, err);
    if (half_step > 0) max_ratio = std::max(max_ratio, err / half_step);
    sq += err * err;
  }
  void merge(const quant_stats& o) noexcept {
    max_abs = std::max(max_abs, o.max_abs);
    max_ratio = std::max(max_ratio, o.max_ratio);
    sq += o.sq;
    groups += o.groups;
    code_bytes += o.code_bytes;
    elements += o.elements;
    original_bytes += o.original_bytes;
  }
};

/// @brief Scale and zero point (stored as f32) of a group with range [lo, hi].
inline void group_params(double lo, double hi, double levels, float& zero, float& scale) noexcept {
  zero = static_cast<float>(lo);
  scale = static_cast<float>((hi - static_cast<double>(zero)) / levels);
}

/// @brief Round trip of one value given its group's parameters.
inline double quant_value(double v, float zero, float scale, double levels) noexcept {
  if (!(scale > 0)) return static_cast<double>(zero);
  const double q = std::clamp(std::nearbyint((v - static_cast<double>(zero)) / static_cast<double>(scale)), 0.0, levels);
  return static_cast<double>(zero) + q * static_cast<double>(scale);
}

}  // namespace detail

/// @brief Quantizes and dequantizes K and V of every present row in place (the result is rounded
/// once to the block's dtype) and reports the quantized payload size. Work is split over (layer,
/// K|V) units on `threads` threads; the result does not depend on the thread count.
/// @throws invalid_argument if group_size < 1 for an integer scheme or the scheme is unknown.
inline quantize_record quantize_roundtrip(kv_block& block, const quantize_spec& spec, unsigned threads = 1) {
  constexpr std::string_view fn = "quantize_roundtrip";
  const bool integer = spec.scheme == quant_scheme::int8 || spec.scheme == quant_scheme::int4;
  if (!integer && spec.scheme != quant_scheme::fp8_e4m3 && spec.scheme != quant_scheme::fp8_e5m2)
    detail::throw_invalid(fn, "spec.scheme", "must be int8, int4, fp8_e4m3 or fp8_e5m2");
  if (integer) detail::check_in_range(fn, "spec.group_size", spec.group_size, 1, 1 << 20);
  const int bits = spec.scheme == quant_scheme::int4 ? 4 : 8;
  const double levels = static_cast<double>((1 << bits) - 1);
  const bool e4m3 = spec.scheme == quant_scheme::fp8_e4m3;
  const std::size_t H = static_cast<std::size_t>(block.n_kv_heads());
  const std::size_t G = static_cast<std::size_t>(std::max(1, spec.group_size));
  auto code_bytes = [&](std::size_t m) -> std::uint64_t { return bits == 4 ? (m + 1) / 2 : m; };
  std::vector<detail::quant_stats> stats(2 * block.n_layers());
  visit_cache_type(block.type(), [&](auto tag) {
    using T = decltype(tag);
    parallel_chunks(stats.size(), 1, threads, [&](std::size_t u0, std::size_t u1) {
      for (std::size_t u = u0; u < u1; ++u) {
        const std::size_t i = u / 2;
        const bool value = (u % 2) == 1;
        auto& st = stats[u];
        const std::size_t D = static_cast<std::size_t>(value ? block.head_dim_v() : block.head_dim_k());
        const std::size_t C = H * D;
        std::span<T> x = value ? block.template v<T>(i) : block.template k<T>(i);
        std::vector<std::size_t> rows;
        for (std::int64_t t = 0; t < block.n_tokens(); ++t)
          if (block.token_present(i, t)) rows.push_back(static_cast<std::size_t>(t));
        if (rows.empty()) continue;
        st.elements = rows.size() * C;
        st.original_bytes = st.elements * dtype_size(block.type());
        auto at = [&](std::size_t row, std::size_t c) -> T& { return x[row * C + c]; };
        if (!integer) {
          double amax = 0;
          for (auto r : rows)
            for (std::size_t c = 0; c < C; ++c) amax = std::max(amax, static_cast<double>(std::fabs(static_cast<float>(at(r, c)))));
          const float scale = static_cast<float>(amax / (e4m3 ? 448.0 : 57344.0));
          st.groups = 1;
          st.code_bytes = st.elements;
          for (auto r : rows)
            for (std::size_t c = 0; c < C; ++c) {
              const double v = static_cast<float>(at(r, c));
              const double back = scale > 0 ? round_to_fp8(v / static_cast<double>(scale), e4m3) * static_cast<double>(scale) : 0.0;
              st.add(std::fabs(v - back), 0.0);
              at(r, c) = static_cast<T>(static_cast<float>(back));
            }
        } else if (!value && spec.keys_per_channel) {
          // keys per channel: groups of G consecutive present tokens, all channels at once
          std::vector<double> lo(C), hi(C);
          std::vector<float> zero(C), scale(C);
          for (std::size_t r0 = 0; r0 < rows.size(); r0 += G) {
            const std::size_t r1 = std::min(rows.size(), r0 + G);
            for (std::size_t c = 0; c < C; ++c) lo[c] = hi[c] = static_cast<float>(at(rows[r0], c));
            for (std::size_t r = r0 + 1; r < r1; ++r)
              for (std::size_t c = 0; c < C; ++c) {
                const double v = static_cast<float>(at(rows[r], c));
                lo[c] = std::min(lo[c], v);
                hi[c] = std::max(hi[c], v);
              }
            for (std::size_t c = 0; c < C; ++c) detail::group_params(lo[c], hi[c], levels, zero[c], scale[c]);
            for (std::size_t r = r0; r < r1; ++r)
              for (std::size_t c = 0; c < C; ++c) {
                const double v = static_cast<float>(at(rows[r], c));
                const double back = detail::quant_value(v, zero[c], scale[c], levels);
                st.add(std::fabs(v - back), 0.5 * static_cast<double>(scale[c]));
                at(rows[r], c) = static_cast<T>(static_cast<float>(back));
              }
            st.groups += C;
            st.code_bytes += C * code_bytes(r1 - r0);
          }
        } else {
          // per token: groups of G consecutive dims of one (token, head)
          for (auto r : rows)
            for (std::size_t h = 0; h < H; ++h)
              for (std::size_t d0 = 0; d0 < D; d0 += G) {
                const std::size_t d1 = std::min(D, d0 + G);
                double lo = static_cast<float>(at(r, h * D + d0)), hi = lo;
                for (std::size_t d = d0 + 1; d < d1; ++d) {
                  const double v = static_cast<float>(at(r, h * D + d));
                  lo = std::min(lo, v);
                  hi = std::max(hi, v);
                }
                float zero, scale;
                detail::group_params(lo, hi, levels, zero, scale);
                for (std::size_t d = d0; d < d1; ++d) {
                  const double v = static_cast<float>(at(r, h * D + d));
                  const double back = detail::quant_value(v, zero, scale, levels);
                  st.add(std::fabs(v - back), 0.5 * static_cast<double>(scale));
                  at(r, h * D + d) = static_cast<T>(static_cast<float>(back));
                }
                ++st.groups;
                st.code_bytes += code_bytes(d1 - d0);
              }
        }
      }
    });
  });
  detail::quant_stats all;
  for (const auto& st : stats) all.merge(st);
  quantize_record rec;
  rec.scheme = spec.scheme;
  rec.group_size = integer ? spec.group_size : 0;
  rec.original_bytes = all.original_bytes;
  rec.groups = all.groups;
  // codes: one byte each (int8, fp8); int4 packs two a byte, each group padded to a whole byte;
  // plus f32 scale and zero point per integer group, one f32 scale per fp8 tensor
  rec.quantized_bytes = all.code_bytes + all.groups * (integer ? 8u : 4u);
  rec.max_abs_error = all.max_abs;
  rec.max_error_over_half_step = all.max_ratio;
  rec.rms_error = all.elements > 0 ? std::sqrt(all.sq / static_cast<double>(all.elements)) : 0.0;
  return rec;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_QUANTIZE_HPP
