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
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 conversions start from _mm512_undefined_*(), which -Wuninitialized reports
// where they are inlined; the diagnostics are located in the header, so silence them there.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/parallel.hpp"
#include "kv_block.hpp"
#include "policy_spec.hpp"

namespace latentaudit {

/// @brief What a round trip did.
struct quantize_record {
  quant_scheme scheme = quant_scheme::int8;  ///< the scheme
  std::int32_t group_size = 0;               ///< group size (0 for fp8)
  std::uint64_t original_bytes = 0;          ///< payload bytes before (present rows, block dtype)
  std::uint64_t quantized_bytes = 0;         ///< codes + scales + zero points
  std::uint64_t groups = 0;                  ///< groups (or tensors, for fp8)
  double max_abs_error = 0;             ///< largest |x − dequant(x)| before rounding to the block dtype
  double max_error_over_half_step = 0;  ///< largest |x − dequant(x)| / (step / 2) (integer schemes; ≤ 1)
  double rms_error = 0;                 ///< RMS of x − dequant(x)
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

/// @brief The FP8 code (sign, exponent, mantissa bits) of a value that is exactly representable
/// in the format (as returned by round_to_fp8).
[[nodiscard]] inline std::uint8_t encode_fp8(double q, bool e4m3) noexcept {
  const int mant = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, emin = e4m3 ? -6 : -14;
  const auto sign = static_cast<std::uint8_t>(std::signbit(q) ? 0x80 : 0);
  const double a = std::fabs(q);
  if (a == 0) return sign;
  const int e = std::ilogb(a);
  if (e < emin)
    return static_cast<std::uint8_t>(sign | static_cast<std::uint8_t>(std::ldexp(a, mant - emin)));
  const auto m = static_cast<unsigned>(std::ldexp(a, mant - e)) - (1u << mant);
  return static_cast<std::uint8_t>(sign | static_cast<unsigned>(e + bias) << mant | m);
}

/// @brief The value of an FP8 code, or NaN for the codes that are not finite numbers
/// (E4M3: S.1111.111; E5M2: exponent 11111).
[[nodiscard]] inline double decode_fp8(std::uint8_t code, bool e4m3) noexcept {
  const int mant = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, emin = e4m3 ? -6 : -14;
  const unsigned m = code & ((1u << mant) - 1), e = (code & 0x7Fu) >> mant;
  const double sign = (code & 0x80u) ? -1.0 : 1.0;
  if (e4m3 ? (e == 15 && m == 7) : (e == 31)) return std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), emin - mant);
  return sign * std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -mant), static_cast<int>(e) - bias);
}

namespace detail {

/// @brief Errors and sizes accumulated over one (layer, part) unit.
struct quant_stats {
  double max_abs = 0, max_ratio = 0, sq = 0;
  std::uint64_t groups = 0, elements = 0, original_bytes = 0;
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
    elements += o.elements;
    original_bytes += o.original_bytes;
  }
};

inline bool is_integer_scheme(quant_scheme s) noexcept {
  return s == quant_scheme::int8 || s == quant_scheme::int4;
}
inline std::uint64_t code_bytes(quant_scheme s, std::uint64_t m) noexcept {
  return s == quant_scheme::int4 ? (m + 1) / 2 : m;
}

/// @brief Bytes of one (layer, part) unit with `rows` present rows of C = H·D channels.
inline std::uint64_t unit_bytes(quant_scheme s, std::uint64_t rows, std::uint64_t H, std::uint64_t D,
                                bool value, const quantize_spec& spec) {
  const std::uint64_t C = H * D;
  if (rows == 0) return 0;
  if (!is_integer_scheme(s)) return 4 + rows * C;
  const std::uint64_t G = static_cast<std::uint64_t>(spec.group_size);
  std::uint64_t bytes = 0;
  if (!value && spec.keys_per_channel) {
    for (std::uint64_t r0 = 0; r0 < rows; r0 += G) bytes += C * (8 + code_bytes(s, std::min(G, rows - r0)));
  } else {
    std::uint64_t per_head = 0;
    for (std::uint64_t d0 = 0; d0 < D; d0 += G) per_head += 8 + code_bytes(s, std::min(G, D - d0));
    bytes = rows * H * per_head;
  }
  return bytes;
}

inline void put_f32(std::byte*& p, float v) noexcept {
  std::memcpy(p, &v, 4);
  p += 4;
}
inline float get_f32(const std::byte*& p) noexcept {
  float v;
  std::memcpy(&v, p, 4);
  p += 4;
  return v;
}

/// @brief Writes the codes of one group (q values in [0, levels]) and advances p.
inline void put_codes(std::byte*& p, const std::vector<std::uint8_t>& q, bool int4) noexcept {
  if (!int4) {
    std::memcpy(p, q.data(), q.size());
    p += q.size();
    return;
  }
  for (std::size_t j = 0; j < q.size(); j += 2) {
    const unsigned lo = q[j], hi = j + 1 < q.size() ? q[j + 1] : 0u;
    *p++ = static_cast<std::byte>(lo | (hi << 4));
  }
}

/// @brief Encodes one (layer, part) unit: x holds [tokens][H][D] in the block's type; rows lists
/// the present tokens. Returns the dequantized values' errors in `st`.
template <class T>
void encode_unit(std::span<const T> x, const std::vector<std::size_t>& rows, std::size_t H, std::size_t D,
                 bool value, const quantize_spec& spec, std::byte* out, quant_stats& st) {
  const std::size_t C = H * D;
  auto at = [&](std::size_t row, std::size_t c) {
    return static_cast<double>(static_cast<float>(x[row * C + c]));
  };
  std::byte* p = out;
  if (rows.empty()) return;
  if (!is_integer_scheme(spec.scheme)) {
    const bool e4m3 = spec.scheme == quant_scheme::fp8_e4m3;
    double amax = 0;
    for (auto r : rows)
      for (std::size_t c = 0; c < C; ++c) amax = std::max(amax, std::fabs(at(r, c)));
    const float scale = static_cast<float>(amax / (e4m3 ? 448.0 : 57344.0));
    put_f32(p, scale);
    st.groups += 1;
    for (auto r : rows)
      for (std::size_t c = 0; c < C; ++c) {
        const double v = at(r, c);
        const double q = scale > 0 ? round_to_fp8(v / static_cast<double>(scale), e4m3) : 0.0;
        *p++ = static_cast<std::byte>(encode_fp8(q, e4m3));
        st.add(std::fabs(v - static_cast<double>(static_cast<float>(q * static_cast<double>(scale)))), 0.0);
      }
    return;
  }
  const bool int4 = spec.scheme == quant_scheme::int4;
  const double levels = int4 ? 15.0 : 255.0;
  const std::size_t G = static_cast<std::size_t>(spec.group_size);
  std::vector<std::uint8_t> q;
  auto group = [&](auto&& value_of, std::size_t m) {
    double lo = value_of(0), hi = lo;
    for (std::size_t j = 1; j < m; ++j) {
      lo = std::min(lo, value_of(j));
      hi = std::max(hi, value_of(j));
    }
    const float zero = static_cast<float>(lo);
    const float scale = static_cast<float>((hi - static_cast<double>(zero)) / levels);
    put_f32(p, zero);
    put_f32(p, scale);
    q.resize(m);
    for (std::size_t j = 0; j < m; ++j) {
      const double v = value_of(j);
      double k =
          scale > 0 ? std::nearbyint((v - static_cast<double>(zero)) / static_cast<double>(scale)) : 0.0;
      if (!(k >= 0.0)) k = 0.0;  // also a NaN element (later elements of a group do not enter its range)
      if (k > levels) k = levels;
      q[j] = static_cast<std::uint8_t>(k);
      const double back = static_cast<float>(static_cast<double>(zero) + k * static_cast<double>(scale));
      st.add(std::fabs(v - back), 0.5 * static_cast<double>(scale));
    }
    put_codes(p, q, int4);
    st.groups += 1;
  };
  if (!value && spec.keys_per_channel) {
    for (std::size_t r0 = 0; r0 < rows.size(); r0 += G) {
      const std::size_t m = std::min(G, rows.size() - r0);
      for (std::size_t c = 0; c < C; ++c) group([&](std::size_t j) { return at(rows[r0 + j], c); }, m);
    }
  } else {
    for (auto r : rows)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t d0 = 0; d0 < D; d0 += G)
          group([&](std::size_t j) { return at(r, h * D + d0 + j); }, std::min(G, D - d0));
  }
}

[[noreturn]] inline void quant_corrupt(const std::string& what) {
  LATENTAUDIT_THROW(corrupt_data("dequantize_payload: " + what));
}

/// @brief Decodes one unit into x (the inverse of encode_unit); validates parameters and codes.
template <class T>
void decode_unit(std::span<T> x, const std::vector<std::size_t>& rows, std::size_t H, std::size_t D,
                 bool value, const quantize_spec& spec, const std::byte* in) {
  const std::size_t C = H * D;
  const std::byte* p = in;
  if (rows.empty()) return;
  auto store = [&](std::size_t row, std::size_t c, double v) {
    x[row * C + c] = static_cast<T>(static_cast<float>(v));
  };
  if (!is_integer_scheme(spec.scheme)) {
    const bool e4m3 = spec.scheme == quant_scheme::fp8_e4m3;
    const float scale = get_f32(p);
    if (!(std::isfinite(scale) && scale >= 0)) quant_corrupt("an FP8 scale is not finite and non-negative");
    for (auto r : rows)
      for (std::size_t c = 0; c < C; ++c) {
        const double q = decode_fp8(static_cast<std::uint8_t>(*p++), e4m3);
        if (std::isnan(q)) quant_corrupt("an FP8 code is not a finite number");
        store(r, c, q * static_cast<double>(scale));
      }
    return;
  }
  const bool int4 = spec.scheme == quant_scheme::int4;
  const std::size_t G = static_cast<std::size_t>(spec.group_size);
  auto group = [&](auto&& store_j, std::size_t m) {
    const float zero = get_f32(p), scale = get_f32(p);
    if (!std::isfinite(zero) || !(std::isfinite(scale) && scale >= 0))
      quant_corrupt("a group's zero point or scale is not finite (or the scale is negative)");
    for (std::size_t j = 0; j < m; ++j) {
      unsigned k;
      if (int4) {
        const auto b = static_cast<unsigned>(p[j / 2]);
        k = (j % 2 == 0) ? (b & 0xFu) : (b >> 4);
      } else {
        k = static_cast<unsigned>(p[j]);
      }
      store_j(j, static_cast<double>(zero) + static_cast<double>(k) * static_cast<double>(scale));
    }
    if (int4 && m % 2 == 1 && (static_cast<unsigned>(p[m / 2]) >> 4) != 0)
      quant_corrupt("int4 padding nibble is not zero");
    p += code_bytes(spec.scheme, m);
  };
  if (!value && spec.keys_per_channel) {
    for (std::size_t r0 = 0; r0 < rows.size(); r0 += G) {
      const std::size_t m = std::min(G, rows.size() - r0);
      for (std::size_t c = 0; c < C; ++c)
        group([&](std::size_t j, double v) { store(rows[r0 + j], c, v); }, m);
    }
  } else {
    for (auto r : rows)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t d0 = 0; d0 < D; d0 += G)
          group([&](std::size_t j, double v) { store(r, h * D + d0 + j, v); }, std::min(G, D - d0));
  }
}

inline void check_quantize_spec(std::string_view fn, const quantize_spec& spec) {
  if (std::find(all_quant_schemes.begin(), all_quant_schemes.end(), spec.scheme) == all_quant_schemes.end()) {
    std::string names;
    for (std::size_t i = 0; i < all_quant_schemes.size(); ++i)
      names.append(i == 0                              ? ""
                   : i + 1 == all_quant_schemes.size() ? " or "
                                                       : ", ")
          .append(quant_scheme_name(all_quant_schemes[i]));
    throw_invalid(fn, "spec.scheme", "must be " + names);
  }
  if (is_integer_scheme(spec.scheme)) check_in_range(fn, "spec.group_size", spec.group_size, 1, 1 << 20);
}

// ---- fused integer round trip -------------------------------------------------------------------
//
// quantize_roundtrip for int8/int4 does not materialize the payload: per group it computes zero
// point and scale exactly as encode_unit does, the code k = clamp(nearbyint((x − zero) / scale),
// 0, levels) in binary64 as encode_unit does, and the value decode_unit would write,
// (float)(zero + k · scale). The code is found in binary32 with a reciprocal — within 5·10⁻⁵ of
// the binary64 quotient (q ≤ 255.0001, three roundings of 2⁻²⁴) — and every element whose
// binary32 quotient lies within 10⁻⁴ of a rounding boundary (or is not finite) is recomputed in
// binary64, so the codes, and hence the values, are exactly those of quantize → dequantize.

/// @brief Tests set this to run the portable kernels on machines with AVX2 too.
inline bool force_portable_kernels = false;
/// @brief Tests set this to run the AVX2 kernels on machines with AVX-512 too.
inline bool force_avx2_kernels = false;
/// @brief Whether the AVX-512 kernels may round to bf16 with vcvtne2ps2bf16 where the CPU has
/// AVX512_BF16 (used through inline assembly); tests clear it to run the integer rounding there.
inline bool bf16_convert_allowed = true;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LATENTAUDIT_QUANT_DISPATCH 1
#if !defined(__clang__)
// AVX-512 clones (GCC): the block's values are unchanged by FMA contraction (k·scale is exact in
// binary64; a contracted code quotient is caught by the boundary check), only the binary32
// error sums of the record may differ in their last bits.
#define LATENTAUDIT_QUANT_AVX512 \
  __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,prefer-vector-width=512")))
inline bool have_avx512() noexcept {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return yes && !force_portable_kernels && !force_avx2_kernels;
}
inline bool have_avx512bf16() noexcept {
  static const bool yes = __builtin_cpu_supports("avx512bf16");
  return yes && bf16_convert_allowed;
}
#endif
inline bool have_avx2() noexcept {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes && !force_portable_kernels;
}
#endif

/// @brief Pass 1 over n elements: codes k (as floats) and, per element, the distance of the
/// binary32 quotient to its nearest integer (t); returns non-zero if some t is not below the
/// safe bound (or is NaN), i.e. some code must be recomputed in binary64.
template <class T>
[[gnu::always_inline]] inline int int_codes_body(const std::byte* x, std::size_t n, const float* zero,
                                                 const float* inv, float levels, float* k,
                                                 float* t) noexcept {
  int bad = 0;
  for (std::size_t c = 0; c < n; ++c) {
    const float v = load_cache<T>(x, c);
    const float q = (v - zero[c]) * inv[c];
    const float r = (q + 0x1p23f) - 0x1p23f;  // nearest integer, ties to even (0 <= q < 2^23)
    const float d = std::fabs(q - r);
    t[c] = d;
    bad |= static_cast<int>(!(d < 0.4999f));
    k[c] = r < levels ? r : levels;
  }
  return bad;
}

/// @brief Pass 2: the decoded values (float)(zero + k·scale) written back as T, and per-element
/// running error statistics. k is overwritten with the decoded values and e with the errors.
/// (Three loops: GCC vectorizes each, but not their fusion.)
template <class T>
[[gnu::always_inline]] inline void int_values_body(std::byte* x, std::size_t n, const float* zero,
                                                   const float* scale, const float* two_over, float* k,
                                                   float* e, float* err_max, float* ratio_max,
                                                   float* sq) noexcept {
  for (std::size_t c = 0; c < n; ++c)
    k[c] = static_cast<float>(static_cast<double>(zero[c]) +
                              static_cast<double>(k[c]) * static_cast<double>(scale[c]));
  for (std::size_t c = 0; c < n; ++c) {
    const float back = k[c];
    const float err = std::fabs(load_cache<T>(x, c) - back);
    e[c] = err;
    err_max[c] = err > err_max[c] ? err : err_max[c];
    sq[c] += err * err;
    store_cache<T>(x, c, back);
  }
  for (std::size_t c = 0; c < n; ++c) {
    const float ratio = e[c] * two_over[c];
    ratio_max[c] = ratio > ratio_max[c] ? ratio : ratio_max[c];
  }
}

/// @brief Zero point and scale of n groups from their minima and maxima, exactly as
/// encode_unit computes them, plus 1/scale (0 for a zero scale, NaN for a positive scale below
/// 2^-100, whose codes are then all found in binary64) and 2/scale (0 for those); returns
/// non-zero if some zero point or scale is not finite (or the scale is negative).
[[gnu::always_inline]] inline int group_params_body(const float* lo, const float* hi, std::size_t n,
                                                    float levels, float* zero, float* scale, float* inv,
                                                    float* two_over) noexcept {
  int bad = 0;
  for (std::size_t c = 0; c < n; ++c) {
    const float z = lo[c];
    const float sc = static_cast<float>((static_cast<double>(hi[c]) - static_cast<double>(z)) /
                                        static_cast<double>(levels));
    bad |= static_cast<int>(!(std::fabs(z) <= std::numeric_limits<float>::max())) |
           static_cast<int>(!(sc >= 0.0f && sc <= std::numeric_limits<float>::max()));
    const bool normal = sc >= 0x1p-100f;
    const float r = 1.0f / sc, r2 = 2.0f / sc;
    zero[c] = z;
    scale[c] = sc;
    inv[c] = sc == 0.0f ? 0.0f : (normal ? r : std::numeric_limits<float>::quiet_NaN());
    two_over[c] = normal ? r2 : 0.0f;
  }
  return bad;
}

/// @brief The code encode_unit chooses, in binary64 (a NaN element gets code 0).
inline double exact_int_code(float v, float zero, float scale, double levels) noexcept {
  if (!(scale > 0)) return 0.0;
  const double k =
      std::nearbyint((static_cast<double>(v) - static_cast<double>(zero)) / static_cast<double>(scale));
  if (!(k >= 0.0)) return 0.0;
  return k > levels ? levels : k;
}

/// @brief lo = std::min(lo, x), hi = std::max(hi, x) elementwise over a row of n elements.
template <class T>
[[gnu::always_inline]] inline void row_min_max_body(const std::byte* x, std::size_t n, float* lo,
                                                    float* hi) noexcept {
  for (std::size_t c = 0; c < n; ++c) {
    const float v = load_cache<T>(x, c);
    lo[c] = v < lo[c] ? v : lo[c];
    hi[c] = hi[c] < v ? v : hi[c];
  }
}

#ifdef LATENTAUDIT_QUANT_DISPATCH
template <class T>
__attribute__((target("avx2"))) void row_min_max_avx2(const std::byte* x, std::size_t n, float* lo,
                                                      float* hi) noexcept {
  row_min_max_body<T>(x, n, lo, hi);
}
#ifdef LATENTAUDIT_QUANT_AVX512
template <class T>
LATENTAUDIT_QUANT_AVX512 void row_min_max_avx512(const std::byte* x, std::size_t n, float* lo,
                                                 float* hi) noexcept {
  row_min_max_body<T>(x, n, lo, hi);
}
#endif
#endif

template <class T>
void row_min_max(const std::byte* x, std::size_t n, float* lo, float* hi) noexcept {
#ifdef LATENTAUDIT_QUANT_DISPATCH
#ifdef LATENTAUDIT_QUANT_AVX512
  if (have_avx512()) return row_min_max_avx512<T>(x, n, lo, hi);
#endif
  if (have_avx2()) return row_min_max_avx2<T>(x, n, lo, hi);
#endif
  row_min_max_body<T>(x, n, lo, hi);
}

/// @brief Recomputes in binary64 the codes the binary32 pass flagged (t not below the bound);
/// returns the largest error / half step among flagged elements of tiny-scale groups.
template <class T>
double fix_flagged_codes(const std::byte* row, std::size_t n, const float* zero, const float* scale,
                         const float* two_over, float levels, float* k, const float* t) noexcept {
  double ratio = 0;
  for (std::size_t c0 = 0; c0 < n; c0 += 64) {
    const std::size_t c1 = std::min(n, c0 + 64);
    int any = 0;
    for (std::size_t c = c0; c < c1; ++c) any |= static_cast<int>(!(t[c] < 0.4999f));
    if (any == 0) continue;
    for (std::size_t c = c0; c < c1; ++c) {
      if (t[c] < 0.4999f) continue;
      const float v = load_cache<T>(row, c);
      k[c] = static_cast<float>(exact_int_code(v, zero[c], scale[c], static_cast<double>(levels)));
      if (scale[c] > 0.0f && two_over[c] == 0.0f) {
        const double back = static_cast<float>(static_cast<double>(zero[c]) +
                                               static_cast<double>(k[c]) * static_cast<double>(scale[c]));
        ratio =
            std::max(ratio, std::fabs(static_cast<double>(v) - back) / (0.5 * static_cast<double>(scale[c])));
      }
    }
  }
  return ratio;
}

#ifdef LATENTAUDIT_QUANT_DISPATCH
__attribute__((target("avx2"))) inline int group_params_avx2(const float* lo, const float* hi, std::size_t n,
                                                             float levels, float* zero, float* scale,
                                                             float* inv, float* two_over) noexcept {
  return group_params_body(lo, hi, n, levels, zero, scale, inv, two_over);
}
#endif

inline void group_params(const float* lo, const float* hi, std::size_t n, float levels, float* zero,
                         float* scale, float* inv, float* two_over) {
  int bad;
#ifdef LATENTAUDIT_QUANT_DISPATCH
  if (have_avx2()) {
    bad = group_params_avx2(lo, hi, n, levels, zero, scale, inv, two_over);
  } else
#endif
  {
    bad = group_params_body(lo, hi, n, levels, zero, scale, inv, two_over);
  }
  if (bad != 0) quant_corrupt("a group's zero point or scale is not finite (or the scale is negative)");
}

#ifdef LATENTAUDIT_QUANT_DISPATCH
template <class T>
__attribute__((target("avx2"))) int int_codes_avx2(const std::byte* x, std::size_t n, const float* zero,
                                                   const float* inv, float levels, float* k,
                                                   float* t) noexcept {
  return int_codes_body<T>(x, n, zero, inv, levels, k, t);
}
template <class T>
__attribute__((target("avx2"))) void int_values_avx2(std::byte* x, std::size_t n, const float* zero,
                                                     const float* scale, const float* two_over, float* k,
                                                     float* e, float* err_max, float* ratio_max,
                                                     float* sq) noexcept {
  int_values_body<T>(x, n, zero, scale, two_over, k, e, err_max, ratio_max, sq);
}
#ifdef LATENTAUDIT_QUANT_AVX512
template <class T>
LATENTAUDIT_QUANT_AVX512 int int_codes_avx512(const std::byte* x, std::size_t n, const float* zero,
                                              const float* inv, float levels, float* k, float* t) noexcept {
  return int_codes_body<T>(x, n, zero, inv, levels, k, t);
}
template <class T>
LATENTAUDIT_QUANT_AVX512 void int_values_avx512(std::byte* x, std::size_t n, const float* zero,
                                                const float* scale, const float* two_over, float* k, float* e,
                                                float* err_max, float* ratio_max, float* sq) noexcept {
  int_values_body<T>(x, n, zero, scale, two_over, k, e, err_max, ratio_max, sq);
}
#endif
#endif

template <class T>
int int_codes(const std::byte* x, std::size_t n, const float* zero, const float* inv, float levels, float* k,
              float* t) noexcept {
#ifdef LATENTAUDIT_QUANT_DISPATCH
#ifdef LATENTAUDIT_QUANT_AVX512
  if (have_avx512()) return int_codes_avx512<T>(x, n, zero, inv, levels, k, t);
#endif
  if (have_avx2()) return int_codes_avx2<T>(x, n, zero, inv, levels, k, t);
#endif
  return int_codes_body<T>(x, n, zero, inv, levels, k, t);
}

template <class T>
void int_values(std::byte* x, std::size_t n, const float* zero, const float* scale, const float* two_over,
                float* k, float* e, float* err_max, float* ratio_max, float* sq) noexcept {
#ifdef LATENTAUDIT_QUANT_DISPATCH
#ifdef LATENTAUDIT_QUANT_AVX512
  if (have_avx512()) return int_values_avx512<T>(x, n, zero, scale, two_over, k, e, err_max, ratio_max, sq);
#endif
  if (have_avx2()) return int_values_avx2<T>(x, n, zero, scale, two_over, k, e, err_max, ratio_max, sq);
#endif
  int_values_body<T>(x, n, zero, scale, two_over, k, e, err_max, ratio_max, sq);
}

/// @brief Minimum and maximum of m elements with encode_unit's semantics (sequential
/// std::min / std::max from the first element: a NaN first element wins, later NaNs are ignored,
/// among equal zeros the first is kept). Eight lanes when that cannot differ.
template <class T>
[[gnu::always_inline]] inline void group_min_max(const std::byte* p, std::size_t m, float& lo,
                                                 float& hi) noexcept {
  auto sequential = [&] {
    lo = hi = load_cache<T>(p, 0);
    for (std::size_t j = 1; j < m; ++j) {
      const float v = load_cache<T>(p, j);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  };
  if (m < 16 || m % 8 != 0) {
    sequential();
    return;
  }
  float l[8], h[8];
  int nan = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    l[i] = h[i] = load_cache<T>(p, i);
    nan |= static_cast<int>(l[i] != l[i]);
  }
  for (std::size_t j = 8; j < m; j += 8)
    for (std::size_t i = 0; i < 8; ++i) {
      const float v = load_cache<T>(p, j + i);
      l[i] = v < l[i] ? v : l[i];
      h[i] = h[i] < v ? v : h[i];
      nan |= static_cast<int>(v != v);
    }
  lo = l[0];
  hi = h[0];
  for (std::size_t i = 1; i < 8; ++i) {
    lo = l[i] < lo ? l[i] : lo;
    hi = hi < h[i] ? h[i] : hi;
  }
  if (nan != 0 || lo == 0.0f || hi == 0.0f) sequential();  // order-dependent cases
}

/// @brief Per-element group parameters of one row grouped per token (G consecutive dims of a
/// head); gbuf holds 6 · H · ⌈D/G⌉ floats of scratch. Returns non-zero on a non-finite group.
template <class T>
[[gnu::always_inline]] inline int token_row_params_body(const std::byte* row, std::size_t H, std::size_t D,
                                                        std::size_t G, float levels, float* gbuf, float* zero,
                                                        float* scale, float* inv, float* two_over) noexcept {
  const std::size_t per_head = (D + G - 1) / G, ng = H * per_head;
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t g = 0; g < per_head; ++g) {
      const std::size_t d0 = g * G;
      group_min_max<T>(row + (h * D + d0) * sizeof(T), std::min(G, D - d0), gbuf[h * per_head + g],
                       gbuf[ng + h * per_head + g]);
    }
  const int bad = group_params_body(gbuf, gbuf + ng, ng, levels, gbuf + 2 * ng, gbuf + 3 * ng, gbuf + 4 * ng,
                                    gbuf + 5 * ng);
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t g = 0; g < per_head; ++g) {
      const std::size_t j = h * per_head + g, c0 = h * D + g * G, c1 = h * D + std::min(D, (g + 1) * G);
      const float z = gbuf[2 * ng + j], sc = gbuf[3 * ng + j], iv = gbuf[4 * ng + j], tw = gbuf[5 * ng + j];
      for (std::size_t c = c0; c < c1; ++c) {
        zero[c] = z;
        scale[c] = sc;
        inv[c] = iv;
        two_over[c] = tw;
      }
    }
  return bad;
}

#ifdef LATENTAUDIT_QUANT_DISPATCH
template <class T>
__attribute__((target("avx2"))) int token_row_params_avx2(const std::byte* row, std::size_t H, std::size_t D,
                                                          std::size_t G, float levels, float* gbuf,
                                                          float* zero, float* scale, float* inv,
                                                          float* two_over) noexcept {
  return token_row_params_body<T>(row, H, D, G, levels, gbuf, zero, scale, inv, two_over);
}
#ifdef LATENTAUDIT_QUANT_AVX512
template <class T>
LATENTAUDIT_QUANT_AVX512 int token_row_params_avx512(const std::byte* row, std::size_t H, std::size_t D,
                                                     std::size_t G, float levels, float* gbuf, float* zero,
                                                     float* scale, float* inv, float* two_over) noexcept {
  return token_row_params_body<T>(row, H, D, G, levels, gbuf, zero, scale, inv, two_over);
}
#endif
#endif

template <class T>
void token_row_params(const std::byte* row, std::size_t H, std::size_t D, std::size_t G, float levels,
                      float* gbuf, float* zero, float* scale, float* inv, float* two_over) {
  int bad;
#ifdef LATENTAUDIT_QUANT_DISPATCH
#ifdef LATENTAUDIT_QUANT_AVX512
  if (have_avx512()) {
    bad = token_row_params_avx512<T>(row, H, D, G, levels, gbuf, zero, scale, inv, two_over);
  } else
#endif
      if (have_avx2()) {
    bad = token_row_params_avx2<T>(row, H, D, G, levels, gbuf, zero, scale, inv, two_over);
  } else
#endif
  {
    bad = token_row_params_body<T>(row, H, D, G, levels, gbuf, zero, scale, inv, two_over);
  }
  if (bad != 0) quant_corrupt("a group's zero point or scale is not finite (or the scale is negative)");
}

#ifdef LATENTAUDIT_QUANT_AVX512
// ---- AVX-512 group kernels ------------------------------------------------------------------------
//
// Hand-vectorized fused round trip for the common shapes: keys per channel with C = H·D a
// multiple of 32 and groups of at most 256 tokens (16 channels a register, the group running
// down the rows: min/max, codes and errors are vertical operations, the group parameters live in
// registers), and values per token with D a multiple of G and G a multiple of 32 (one group's
// parameters broadcast over its 32-element chunks; the minima/maxima of 16 groups are reduced
// together by a transposing shuffle tree). Each pass reads 32 elements as two 16-lane binary32
// vectors (bf16: even and odd elements, so conversion is one shift or mask each way).
//
// Exactness. Codes: as the portable kernels (binary32 quotient, lanes within 10⁻⁴ of a rounding
// boundary, or not finite, recomputed in binary64 by exact_int_code). Values: decode_unit writes
// (T)(float)(zero + k·scale) evaluated in binary64. Here, for a group whose exponents satisfy
// |E(zero) − E(scale)| ≤ 12 (or zero = 0, or scale = 0), the value is fmaf(k, scale, zero): with
// k ≤ 255 the exact sum e = zero + k·scale is a multiple of 2^(min(E(zero), E(scale)) − 23) ≥
// 2^(E(scale) − 35) below 2^(E(scale) + 14) in magnitude, i.e. an integer under 2^49 times a power
// of two, so binary64 holds it exactly and (float)(double)e = fmaf(k, scale, zero) (one rounding
// of e either way). Other groups use binary64 as decode_unit does. Rounding to bf16 is
// vcvtne2ps2bf16 (AVX512_BF16: round to nearest even, but subnormals flushed) for groups whose
// zero and scale are 0 or at least 2^-90 (every value is then 0 or at least 2^-113), else the
// integer round-to-nearest-even of store_cache; f16 uses vcvtps2ph (round to nearest even).
// Error maxima use vrangeps (which drops a quiet NaN beside a number) only in groups without a
// NaN element and with hi − lo finite in binary32; key tiles with either take NaN-safe variants.
// Groups whose result could depend on the order of the min/max (a NaN, a zero extreme — per
// token only, as the tree changes the order), whose parameters are not finite, or whose scale is
// below 2^-100 are left to the portable row code before anything is written.

#define LATENTAUDIT_QUANT_AVX512_INLINE [[gnu::always_inline]] inline LATENTAUDIT_QUANT_AVX512

// GCC 12 reports the _mm512_undefined_*() inside its conversion intrinsics as uninitialized
// where they are inlined into these functions.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/// @brief Loads 32 consecutive elements as two 16-lane vectors (bf16: even, odd elements).
template <class T>
LATENTAUDIT_QUANT_AVX512_INLINE void q512_load32(const std::byte* p, __m512& a, __m512& b) noexcept {
  if constexpr (std::is_same_v<T, float>) {
    a = _mm512_loadu_ps(p);
    b = _mm512_loadu_ps(p + 64);
  } else if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    const __m512i w = _mm512_loadu_si512(p);
    a = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    b = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  } else {
    a = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    b = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)));
  }
}

/// @brief bf16 bits (in the upper half) of binary32 values, rounded to nearest even as store_cache.
LATENTAUDIT_QUANT_AVX512_INLINE __m512i q512_round_bf16(__m512 v) noexcept {
  const __m512i b = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  return _mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
}

/// @brief Stores two 16-lane vectors as 32 elements in q512_load32's order.
template <class T>
LATENTAUDIT_QUANT_AVX512_INLINE void q512_store32(std::byte* p, __m512 a, __m512 b) noexcept {
  if constexpr (std::is_same_v<T, float>) {
    _mm512_storeu_ps(p, a);
    _mm512_storeu_ps(p + 64, b);
  } else if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    const __m512i lo = _mm512_srli_epi32(q512_round_bf16(a), 16), hi = q512_round_bf16(b);
    // (hi & 0xFFFF0000) | lo
    _mm512_storeu_si512(
        p, _mm512_ternarylogic_epi32(lo, hi, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)), 0xD8));
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + 32),
                        _mm512_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

/// @brief The flagged lanes of r recomputed in binary64 as exact_int_code does (clamp to
/// [0, levels]; code 0 for a zero scale or a NaN quotient).
LATENTAUDIT_QUANT_AVX512_INLINE __m256 q512_exact_codes8(__m512d v, __m512d z, __m512d s,
                                                         __m512d levels) noexcept {
  const __m512d k = _mm512_roundscale_pd(_mm512_div_pd(_mm512_sub_pd(v, z), s),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __mmask8 keep = _mm512_cmp_pd_mask(s, _mm512_setzero_pd(), _CMP_GT_OQ) &
                        _mm512_cmp_pd_mask(k, _mm512_setzero_pd(), _CMP_GE_OQ);
  return _mm512_cvtpd_ps(_mm512_min_pd(_mm512_maskz_mov_pd(keep, k), levels));
}

LATENTAUDIT_QUANT_AVX512 inline __m512 q512_fix_codes(__m512 r, __mmask16 bad, __m512 v, __m512 z, __m512 s,
                                                      double levels) noexcept {
  const __m512d L = _mm512_set1_pd(levels);
  const __m256 k0 = q512_exact_codes8(_mm512_cvtps_pd(_mm512_castps512_ps256(v)),
                                      _mm512_cvtps_pd(_mm512_castps512_ps256(z)),
                                      _mm512_cvtps_pd(_mm512_castps512_ps256(s)), L);
  const __m256 k1 = q512_exact_codes8(_mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)),
                                      _mm512_cvtps_pd(_mm512_extractf32x8_ps(z, 1)),
                                      _mm512_cvtps_pd(_mm512_extractf32x8_ps(s, 1)), L);
  return _mm512_mask_mov_ps(r, bad, _mm512_insertf32x8(_mm512_castps256_ps512(k0), k1, 1));
}

/// @brief Codes of the two halves of a chunk (binary32 quotients; lanes near a rounding boundary,
/// or not finite, recomputed in binary64). NoNan: no element is NaN, so vrangeps (which drops a
/// quiet NaN beside a number) may find the larger distance of the two halves.
template <bool NoNan>
LATENTAUDIT_QUANT_AVX512_INLINE void q512_codes(__m512 a, __m512 b, __m512 za, __m512 zb, __m512 ia,
                                                __m512 ib, __m512 sa, __m512 sb, double levels, __m512& ka,
                                                __m512& kb) noexcept {
  const __m512 qa = _mm512_mul_ps(_mm512_sub_ps(a, za), ia), qb = _mm512_mul_ps(_mm512_sub_ps(b, zb), ib);
  ka = _mm512_roundscale_ps(qa, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  kb = _mm512_roundscale_ps(qb, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // q ∈ [0, levels + 10⁻⁴) for finite v (v ≥ zero; see group_params_body), so no clamp is needed;
  // a NaN or infinite quotient is flagged and clamped by exact_int_code
  const __m512 bound = _mm512_set1_ps(0.4999f);
  const __m512 da = _mm512_sub_ps(qa, ka), db = _mm512_sub_ps(qb, kb);
  bool any;
  if constexpr (NoNan) {
    // max(|da|, |db|): every distance is finite here (no NaN element, and hi − lo finite in binary32,
    // so v − zero and the quotient are finite)
    any = _mm512_cmp_ps_mask(_mm512_range_ps(da, db, 0x0B), bound, _CMP_NLT_UQ) != 0;
  } else {
    any = (_mm512_cmp_ps_mask(_mm512_abs_ps(da), bound, _CMP_NLT_UQ) |
           _mm512_cmp_ps_mask(_mm512_abs_ps(db), bound, _CMP_NLT_UQ)) != 0;
  }
  if (any) [[unlikely]] {
    const __mmask16 fa = _mm512_cmp_ps_mask(_mm512_abs_ps(da), bound, _CMP_NLT_UQ);
    const __mmask16 fb = _mm512_cmp_ps_mask(_mm512_abs_ps(db), bound, _CMP_NLT_UQ);
    if (fa != 0) ka = q512_fix_codes(ka, fa, a, za, sa, levels);
    if (fb != 0) kb = q512_fix_codes(kb, fb, b, zb, sb, levels);
  }
}

/// @brief (float)(zero + k·scale) in binary64, 16 lanes (zero and scale given as 2 × 8 doubles).
LATENTAUDIT_QUANT_AVX512_INLINE __m512 q512_value_f64(__m512 k, __m512d z0, __m512d z1, __m512d s0,
                                                      __m512d s1) noexcept {
  const __m512d k0 = _mm512_cvtps_pd(_mm512_castps512_ps256(k)),
                k1 = _mm512_cvtps_pd(_mm512_extractf32x8_ps(k, 1));
  const __m256 v0 = _mm512_cvtpd_ps(_mm512_fmadd_pd(k0, s0, z0)),
               v1 = _mm512_cvtpd_ps(_mm512_fmadd_pd(k1, s1, z1));
  return _mm512_insertf32x8(_mm512_castps256_ps512(v0), v1, 1);
}

LATENTAUDIT_QUANT_AVX512_INLINE __m512d q512_lo_pd(__m512 v) noexcept {
  return _mm512_cvtps_pd(_mm512_castps512_ps256(v));
}
LATENTAUDIT_QUANT_AVX512_INLINE __m512d q512_hi_pd(__m512 v) noexcept {
  return _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
}

/// @brief Parameters of 16 groups from their minima and maxima, as group_params_body computes
/// them; returns the lanes that must go to the portable code (parameters not finite, scale below
/// 2^-100) and sets `fma_ok` to the lanes whose values may be computed with fmaf (see above),
/// `cvt_ok` to those that may be rounded by vcvtne2ps2bf16, `wide` to those whose hi − lo
/// overflows binary32.
LATENTAUDIT_QUANT_AVX512_INLINE __mmask16 q512_params(__m512 lo, __m512 hi, double levels, __m512& scale,
                                                      __m512& inv, __m512& two_over, __mmask16& fma_ok,
                                                      __mmask16& cvt_ok, __mmask16& wide) noexcept {
  const __m512d L = _mm512_set1_pd(levels);
  const __m256 s0 = _mm512_cvtpd_ps(_mm512_div_pd(_mm512_sub_pd(q512_lo_pd(hi), q512_lo_pd(lo)), L));
  const __m256 s1 = _mm512_cvtpd_ps(_mm512_div_pd(_mm512_sub_pd(q512_hi_pd(hi), q512_hi_pd(lo)), L));
  const __m512 s = _mm512_insertf32x8(_mm512_castps256_ps512(s0), s1, 1);
  const __m512 zero = _mm512_setzero_ps(), fmax = _mm512_set1_ps(std::numeric_limits<float>::max());
  const __mmask16 z_ok = _mm512_cmp_ps_mask(_mm512_abs_ps(lo), fmax, _CMP_LE_OQ);
  const __mmask16 s_ok = _mm512_cmp_ps_mask(s, zero, _CMP_GE_OQ) & _mm512_cmp_ps_mask(s, fmax, _CMP_LE_OQ);
  const __mmask16 s_zero = _mm512_cmp_ps_mask(s, zero, _CMP_EQ_OQ);
  const __mmask16 s_normal = _mm512_cmp_ps_mask(s, _mm512_set1_ps(0x1p-100f), _CMP_GE_OQ);
  const __mmask16 bad = static_cast<__mmask16>(~(z_ok & s_ok & (s_zero | s_normal)));
  scale = s;
  inv = _mm512_maskz_div_ps(s_normal, _mm512_set1_ps(1.0f), s);
  two_over = _mm512_maskz_div_ps(s_normal, _mm512_set1_ps(2.0f), s);
  const __m512 gap = _mm512_abs_ps(_mm512_sub_ps(_mm512_getexp_ps(lo), _mm512_getexp_ps(s)));
  fma_ok = static_cast<__mmask16>(s_zero | _mm512_cmp_ps_mask(lo, zero, _CMP_EQ_OQ) |
                                  (s_normal & _mm512_cmp_ps_mask(gap, _mm512_set1_ps(12.0f), _CMP_LE_OQ)));
  // zero and scale 0 or at least 2^-90: every value zero + k·scale (k ≤ 255) is 0 or a multiple of
  // 2^-113, so no binary32 subnormal reaches vcvtne2ps2bf16 (which flushes subnormals)
  const __m512 e90 = _mm512_set1_ps(-90.0f);
  cvt_ok = static_cast<__mmask16>(
      (_mm512_cmp_ps_mask(lo, zero, _CMP_EQ_OQ) | _mm512_cmp_ps_mask(_mm512_getexp_ps(lo), e90, _CMP_GE_OQ)) &
      (s_zero | _mm512_cmp_ps_mask(_mm512_getexp_ps(s), e90, _CMP_GE_OQ)));
  // hi − lo overflows binary32: x − zero may be infinite (its quotient's distance NaN)
  wide = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(hi, lo)), fmax, _CMP_NLE_UQ);
  return bad;
}

/// @brief Running error statistics of the AVX-512 kernels (per lane; squares summed in binary64).
struct q512_stats {
  alignas(64) float err_max[16] = {};
  alignas(64) float ratio_max[16] = {};
  alignas(64) double sq[16] = {};
};

/// @brief Folds one tile's or row's per-lane errors into acc: err_max, err_max · two_over, and
/// the binary32 sums of squares qa, qb.
LATENTAUDIT_QUANT_AVX512_INLINE void q512_fold(q512_stats& acc, __m512 ea, __m512 eb, __m512 ta, __m512 tb,
                                               __m512 qa, __m512 qb) noexcept {
  _mm512_store_ps(acc.err_max, _mm512_max_ps(_mm512_load_ps(acc.err_max), _mm512_max_ps(ea, eb)));
  const __m512 r = _mm512_max_ps(_mm512_mul_ps(ea, ta), _mm512_mul_ps(eb, tb));
  _mm512_store_ps(acc.ratio_max, _mm512_max_ps(_mm512_load_ps(acc.ratio_max), r));
  _mm512_store_pd(acc.sq,
                  _mm512_add_pd(_mm512_load_pd(acc.sq), _mm512_add_pd(q512_lo_pd(qa), q512_lo_pd(qb))));
  _mm512_store_pd(acc.sq + 8,
                  _mm512_add_pd(_mm512_load_pd(acc.sq + 8), _mm512_add_pd(q512_hi_pd(qa), q512_hi_pd(qb))));
}

/// @brief Prefetches the 32 elements at p (the next group's), for the pass after this one.
template <class T>
LATENTAUDIT_QUANT_AVX512_INLINE void q512_prefetch32(const std::byte* p) noexcept {
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
  if constexpr (sizeof(T) == 4) _mm_prefetch(reinterpret_cast<const char*>(p + 64), _MM_HINT_T0);
}

/// @brief Round trip of one 32-element chunk in place with per-lane parameters (a: the first
/// vector of q512_load32, b: the second); zd, sd: zero and scale of a then b as 4 × 8 doubles
/// (used unless Fma). Accumulates the errors' maxima (ea, eb) and squares (qa, qb).
/// @brief Variants of q512_chunk: values by fmaf (else binary64), bf16 rounding by
/// vcvtne2ps2bf16 (else integer), and error maxima by vrangeps (no NaN element; else NaN-ignoring
/// vmaxps).
enum : int { q512_fma = 1, q512_cvt = 2, q512_no_nan = 4 };

/// @brief bf16 bits of 32 elements (a: even, b: odd ones) by vcvtne2ps2bf16 (round to nearest
/// even; inputs must not be binary32 subnormals), interleaved back into memory order.
LATENTAUDIT_QUANT_AVX512_INLINE __m512i q512_cvt_bf16(__m512 a, __m512 b) noexcept {
  __m512i r;
  asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(r) : "v"(b), "v"(a));  // words 0..15 from a, 16..31 from b
  alignas(64) static constexpr std::uint16_t idx[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                        21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                        11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_permutexvar_epi16(_mm512_load_si512(idx), r);
}

template <class T, int Mode>
LATENTAUDIT_QUANT_AVX512_INLINE void q512_chunk(std::byte* p, __m512 za, __m512 zb, __m512 ia, __m512 ib,
                                                __m512 sa, __m512 sb, const __m512d* zd, const __m512d* sd,
                                                double levels, __m512& ea, __m512& eb, __m512& qa,
                                                __m512& qb) noexcept {
  __m512 a, b;
  q512_load32<T>(p, a, b);
  __m512 ka, kb;
  q512_codes<(Mode & q512_no_nan) != 0>(a, b, za, zb, ia, ib, sa, sb, levels, ka, kb);
  __m512 va, vb;
  if constexpr ((Mode & q512_fma) != 0) {
    va = _mm512_fmadd_ps(ka, sa, za);
    vb = _mm512_fmadd_ps(kb, sb, zb);
  } else {
    va = q512_value_f64(ka, zd[0], zd[1], sd[0], sd[1]);
    vb = q512_value_f64(kb, zd[2], zd[3], sd[2], sd[3]);
  }
  if constexpr (std::is_same_v<T, Eigen::bfloat16> && (Mode & q512_cvt) != 0) {
    _mm512_storeu_si512(p, q512_cvt_bf16(va, vb));
  } else {
    q512_store32<T>(p, va, vb);
  }
  const __m512 da = _mm512_sub_ps(a, va), db = _mm512_sub_ps(b, vb);
  if constexpr ((Mode & q512_no_nan) != 0) {
    ea = _mm512_range_ps(da, ea, 0x0B);  // max(|da|, |ea|)
    eb = _mm512_range_ps(db, eb, 0x0B);
  } else {
    ea = _mm512_max_ps(_mm512_abs_ps(da), ea);  // ignores a NaN error, as std::max(max_abs, err)
    eb = _mm512_max_ps(_mm512_abs_ps(db), eb);
  }
  qa = _mm512_fmadd_ps(da, da, qa);
  qb = _mm512_fmadd_ps(db, db, qb);
}

/// @brief Pass 2 of q512_key_group over one tile of 32 channels (offset `off`) in m rows.
template <class T, int Mode>
LATENTAUDIT_QUANT_AVX512_INLINE void q512_key_rows(std::byte* const* rp, std::size_t m,
                                                   std::byte* const* next_rp, std::size_t next_m,
                                                   std::size_t off, __m512 za, __m512 zb, __m512 ia,
                                                   __m512 ib, __m512 sa, __m512 sb, double levels, __m512& ea,
                                                   __m512& eb, __m512& qa, __m512& qb) noexcept {
  __m512d zd[4] = {}, sd[4] = {};
  if constexpr ((Mode & q512_fma) == 0) {
    zd[0] = q512_lo_pd(za), zd[1] = q512_hi_pd(za), zd[2] = q512_lo_pd(zb), zd[3] = q512_hi_pd(zb);
    sd[0] = q512_lo_pd(sa), sd[1] = q512_hi_pd(sa), sd[2] = q512_lo_pd(sb), sd[3] = q512_hi_pd(sb);
  }
  for (std::size_t j = 0; j < m; ++j) {
    if (j < next_m) q512_prefetch32<T>(next_rp[j] + off);
    q512_chunk<T, Mode>(rp[j] + off, za, zb, ia, ib, sa, sb, zd, sd, levels, ea, eb, qa, qb);
  }
}

/// @brief Keys per channel: one group of m rows (row pointers `rp`) across C channels. Pass 1
/// finds every channel's parameters (into `par`, 4·C floats) and returns false, having written
/// nothing, if some group needs the portable code; pass 2 writes codes' values and errors, and
/// prefetches the next group's rows (`next_rp`, `next_m` ≤ m; none when next_m is 0).
template <class T>
LATENTAUDIT_QUANT_AVX512 bool q512_key_group(std::byte* const* rp, std::size_t m, std::byte* const* next_rp,
                                             std::size_t next_m, std::size_t C, double levels, bool cvt,
                                             float* par, std::uint8_t* mode_tile, q512_stats& acc) noexcept {
  const std::size_t tiles = C / 32;
  float* zp = par;
  float* sp = par + C;
  float* ip = par + 2 * C;
  float* tp = par + 3 * C;
  unsigned bad = 0;
  for (std::size_t t = 0; t < tiles; ++t) {
    const std::size_t off = t * 32 * sizeof(T);
    __m512 la, lb;
    q512_load32<T>(rp[0] + off, la, lb);
    __m512 ha = la, hb = lb;
    __mmask16 nan = _mm512_cmp_ps_mask(la, lb, _CMP_UNORD_Q);
    for (std::size_t j = 1; j < m; ++j) {
      __m512 a, b;
      q512_load32<T>(rp[j] + off, a, b);
      nan |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
      la = _mm512_min_ps(a, la);  // = std::min(lo, v), as encode_unit
      lb = _mm512_min_ps(b, lb);
      ha = _mm512_max_ps(a, ha);  // = std::max(hi, v)
      hb = _mm512_max_ps(b, hb);
    }
    __m512 sa, ia, ta, sb, ib, tb;
    __mmask16 fa, fb, ca, cb, wa, wb;
    bad |= q512_params(la, ha, levels, sa, ia, ta, fa, ca, wa);
    bad |= q512_params(lb, hb, levels, sb, ib, tb, fb, cb, wb);
    nan |= wa | wb;  // (an infinite x − zero takes the NaN-safe variant too)
    mode_tile[t] = static_cast<std::uint8_t>((fa == 0xFFFF && fb == 0xFFFF ? q512_fma : 0) |
                                             (cvt && ca == 0xFFFF && cb == 0xFFFF ? q512_cvt : 0) |
                                             (nan == 0 ? q512_no_nan : 0));
    float* z = zp + t * 32;
    _mm512_storeu_ps(z, la);
    _mm512_storeu_ps(z + 16, lb);
    _mm512_storeu_ps(sp + t * 32, sa);
    _mm512_storeu_ps(sp + t * 32 + 16, sb);
    _mm512_storeu_ps(ip + t * 32, ia);
    _mm512_storeu_ps(ip + t * 32 + 16, ib);
    _mm512_storeu_ps(tp + t * 32, ta);
    _mm512_storeu_ps(tp + t * 32 + 16, tb);
  }
  if (bad != 0) return false;
  for (std::size_t t = 0; t < tiles; ++t) {
    const std::size_t off = t * 32 * sizeof(T);
    const __m512 za = _mm512_loadu_ps(zp + t * 32), zb = _mm512_loadu_ps(zp + t * 32 + 16);
    const __m512 sa = _mm512_loadu_ps(sp + t * 32), sb = _mm512_loadu_ps(sp + t * 32 + 16);
    const __m512 ia = _mm512_loadu_ps(ip + t * 32), ib = _mm512_loadu_ps(ip + t * 32 + 16);
    __m512 ea = _mm512_setzero_ps(), eb = ea, qa = ea, qb = ea;
#define LATENTAUDIT_Q512_KEY_ROWS(M)                                                                  \
  case M:                                                                                             \
    q512_key_rows<T, M>(rp, m, next_rp, next_m, off, za, zb, ia, ib, sa, sb, levels, ea, eb, qa, qb); \
    break;
    switch (mode_tile[t]) {
      LATENTAUDIT_Q512_KEY_ROWS(0)
      LATENTAUDIT_Q512_KEY_ROWS(1)
      LATENTAUDIT_Q512_KEY_ROWS(2)
      LATENTAUDIT_Q512_KEY_ROWS(3)
      LATENTAUDIT_Q512_KEY_ROWS(4)
      LATENTAUDIT_Q512_KEY_ROWS(5)
      LATENTAUDIT_Q512_KEY_ROWS(6)
      default:
        LATENTAUDIT_Q512_KEY_ROWS(7)
    }
#undef LATENTAUDIT_Q512_KEY_ROWS
    q512_fold(acc, ea, eb, _mm512_loadu_ps(tp + t * 32), _mm512_loadu_ps(tp + t * 32 + 16), qa, qb);
  }
  return true;
}

template <bool Max>
LATENTAUDIT_QUANT_AVX512_INLINE __m512 q512_op(__m512 a, __m512 b) noexcept {
  return Max ? _mm512_max_ps(a, b) : _mm512_min_ps(a, b);
}

/// @brief Min or max of each of 16 vectors, lane i of the result from vector perm-ordered input i
/// (see q512_tree_order).
template <bool Max>
LATENTAUDIT_QUANT_AVX512_INLINE __m512 q512_tree(const __m512* v) noexcept {
  __m512 m1[8], m2[4], m3[2];
  for (int i = 0; i < 8; ++i)
    m1[i] = q512_op<Max>(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  for (int i = 0; i < 4; ++i)
    m2[i] = q512_op<Max>(_mm512_shuffle_f32x4(m1[2 * i], m1[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(m1[2 * i], m1[2 * i + 1], 0xDD));
  for (int i = 0; i < 2; ++i)
    m3[i] = q512_op<Max>(_mm512_shuffle_ps(m2[2 * i], m2[2 * i + 1], 0x44),
                         _mm512_shuffle_ps(m2[2 * i], m2[2 * i + 1], 0xEE));
  return q512_op<Max>(_mm512_shuffle_ps(m3[0], m3[1], 0x88), _mm512_shuffle_ps(m3[0], m3[1], 0xDD));
}

/// @brief slot[g]: the input position of q512_tree whose result lands in lane g.
LATENTAUDIT_QUANT_AVX512 inline void q512_tree_order(int* slot) noexcept {
  __m512 v[16];
  for (int i = 0; i < 16; ++i) v[i] = _mm512_set1_ps(static_cast<float>(i));
  alignas(64) float lane[16];
  _mm512_store_ps(lane, q512_tree<false>(v));
  for (int g = 0; g < 16; ++g) slot[g] = static_cast<int>(lane[g]);
}

/// @brief Pass 2 of q512_token_row over groups g0 … g1 − 1 of a row (all of variant Mode):
/// prefetches the next row's groups, accumulates the errors' maxima (ea), maxima / half step (eb)
/// and squares (qa, qb).
template <class T, int Mode>
LATENTAUDIT_QUANT_AVX512_INLINE void q512_token_groups(std::byte* row, const std::byte* next_row,
                                                       std::size_t g0, std::size_t g1, std::size_t chunks,
                                                       const float* zp, const float* sp, const float* ip,
                                                       const float* tp, double levels, __m512& ea, __m512& eb,
                                                       __m512& qa, __m512& qb) noexcept {
  const std::size_t gbytes = chunks * 32 * sizeof(T);
  for (std::size_t g = g0; g < g1; ++g) {
    std::byte* p = row + g * gbytes;
    if (next_row != nullptr)
      for (std::size_t c = 0; c < chunks; ++c) q512_prefetch32<T>(next_row + g * gbytes + c * 32 * sizeof(T));
    const __m512 z = _mm512_set1_ps(zp[g]), s = _mm512_set1_ps(sp[g]), inv = _mm512_set1_ps(ip[g]);
    __m512d zd[4] = {}, sd[4] = {};
    if constexpr ((Mode & q512_fma) == 0)
      zd[0] = zd[1] = zd[2] = zd[3] = q512_lo_pd(z), sd[0] = sd[1] = sd[2] = sd[3] = q512_lo_pd(s);
    __m512 ga = _mm512_setzero_ps(), gb = ga;
    for (std::size_t c = 0; c < chunks; ++c)
      q512_chunk<T, Mode>(p + c * 32 * sizeof(T), z, z, inv, inv, s, s, zd, sd, levels, ga, gb, qa, qb);
    // the group's largest error, scaled by its 2/scale (max(e·c) = max(e)·c for c ≥ 0)
    const __m512 e = _mm512_max_ps(ga, gb);
    ea = _mm512_max_ps(ea, e);
    eb = _mm512_max_ps(eb, _mm512_mul_ps(e, _mm512_set1_ps(tp[g])));
  }
}

/// @brief Values per token: one row of C elements in groups of G (a multiple of 32 dividing D).
/// Returns false, having written nothing, if the row needs the portable code; prefetches
/// `next_row` (unless null) while writing. `par` holds
/// 4·⌈C/G/16⌉·16 floats, `fma_ok` ⌈C/G/16⌉ masks.
template <class T>
LATENTAUDIT_QUANT_AVX512 bool q512_token_row(std::byte* row, const std::byte* next_row, std::size_t C,
                                             std::size_t G, double levels, bool cvt, const int* slot,
                                             float* par, __mmask16* fma_ok, __mmask16* cvt_ok,
                                             q512_stats& acc) noexcept {
  const std::size_t ng = C / G, nblk = (ng + 15) / 16, chunks = G / 32, gbytes = G * sizeof(T);
  float* zp = par;
  float* sp = par + 16 * nblk;
  float* ip = par + 32 * nblk;
  float* tp = par + 48 * nblk;
  __mmask16 nan = 0;
  unsigned bad = 0;
  const __m512 zero = _mm512_setzero_ps();
  for (std::size_t blk = 0; blk < nblk; ++blk) {
    __m512 lo[16], hi[16];
    for (std::size_t g = 0; g < 16; ++g) {
      const std::size_t gg = std::min(blk * 16 + g, ng - 1);  // a short last block repeats a group
      const std::byte* p = row + gg * gbytes;
      __m512 a, b;
      q512_load32<T>(p, a, b);
      nan |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);  // a NaN in a or b
      __m512 l = _mm512_min_ps(a, b), h = _mm512_max_ps(a, b);
      for (std::size_t c = 1; c < chunks; ++c) {
        q512_load32<T>(p + c * 32 * sizeof(T), a, b);
        nan |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
        l = _mm512_min_ps(l, _mm512_min_ps(a, b));
        h = _mm512_max_ps(h, _mm512_max_ps(a, b));
      }
      lo[slot[g]] = l;
      hi[slot[g]] = h;
    }
    const __m512 l = q512_tree<false>(lo), h = q512_tree<true>(hi);
    __m512 s, inv, two;
    __mmask16 fo, co;
    // a zero extreme: its sign could depend on the order of the comparisons
    bad |= _mm512_cmp_ps_mask(l, zero, _CMP_EQ_OQ) | _mm512_cmp_ps_mask(h, zero, _CMP_EQ_OQ);
    __mmask16 wide;
    bad |= q512_params(l, h, levels, s, inv, two, fo, co, wide);
    bad |= wide;  // (the variants below assume finite x − zero)
    fma_ok[blk] = fo;
    cvt_ok[blk] = cvt ? co : 0;
    _mm512_storeu_ps(zp + 16 * blk, l);
    _mm512_storeu_ps(sp + 16 * blk, s);
    _mm512_storeu_ps(ip + 16 * blk, inv);
    _mm512_storeu_ps(tp + 16 * blk, two);
  }
  if (bad != 0 || nan != 0) return false;
  __m512 ea = _mm512_setzero_ps(), eb = ea, qa = ea, qb = ea;
  // no NaN here (the row would have been refused): every variant takes vrangeps
#define LATENTAUDIT_Q512_TOKEN_GROUPS(M, g0, g1)                                                             \
  q512_token_groups<T, q512_no_nan | (M)>(row, next_row, g0, g1, chunks, zp, sp, ip, tp, levels, ea, eb, qa, \
                                          qb)
  for (std::size_t blk = 0; blk < nblk; ++blk) {
    const std::size_t g0 = 16 * blk, g1 = std::min(ng, g0 + 16);
    const auto all = static_cast<__mmask16>((1u << (g1 - g0)) - 1u);
    if ((fma_ok[blk] & all) == all && (cvt_ok[blk] & all) == all) {  // the common cases: one variant
      LATENTAUDIT_Q512_TOKEN_GROUPS(q512_fma | q512_cvt, g0, g1);
      continue;
    }
    if ((fma_ok[blk] & all) == all && (cvt_ok[blk] & all) == 0) {
      LATENTAUDIT_Q512_TOKEN_GROUPS(q512_fma, g0, g1);
      continue;
    }
    for (std::size_t g = g0; g < g1; ++g) {
      const int mode = (((fma_ok[blk] >> (g - g0)) & 1u) != 0 ? q512_fma : 0) |
                       (((cvt_ok[blk] >> (g - g0)) & 1u) != 0 ? q512_cvt : 0);
      switch (mode) {
        case 0:
          LATENTAUDIT_Q512_TOKEN_GROUPS(0, g, g + 1);
          break;
        case q512_fma:
          LATENTAUDIT_Q512_TOKEN_GROUPS(q512_fma, g, g + 1);
          break;
        case q512_cvt:
          LATENTAUDIT_Q512_TOKEN_GROUPS(q512_cvt, g, g + 1);
          break;
        default:
          LATENTAUDIT_Q512_TOKEN_GROUPS(q512_fma | q512_cvt, g, g + 1);
          break;
      }
    }
  }
#undef LATENTAUDIT_Q512_TOKEN_GROUPS
  // ea: the row's largest errors, eb: its largest error / half step
  _mm512_store_ps(acc.err_max, _mm512_max_ps(_mm512_load_ps(acc.err_max), ea));
  _mm512_store_ps(acc.ratio_max, _mm512_max_ps(_mm512_load_ps(acc.ratio_max), eb));
  _mm512_store_pd(acc.sq,
                  _mm512_add_pd(_mm512_load_pd(acc.sq), _mm512_add_pd(q512_lo_pd(qa), q512_lo_pd(qb))));
  _mm512_store_pd(acc.sq + 8,
                  _mm512_add_pd(_mm512_load_pd(acc.sq + 8), _mm512_add_pd(q512_hi_pd(qa), q512_hi_pd(qb))));
  return true;
}

#pragma GCC diagnostic pop
#endif  // LATENTAUDIT_QUANT_AVX512

/// @brief Fused int8/int4 round trip of one (layer, part) unit in place (see above); the same
/// groups, codes and values as encode_unit followed by decode_unit.
/// @throws corrupt_data where decode_unit would (a zero point or scale that is not finite).
template <class T>
void roundtrip_int_unit(std::span<T> x, const std::vector<std::size_t>& rows, std::size_t H, std::size_t D,
                        bool value, const quantize_spec& spec, quant_stats& st) {
  if (rows.empty()) return;
  const std::size_t C = H * D;
  const bool int4 = spec.scheme == quant_scheme::int4;
  const float levels = int4 ? 15.0f : 255.0f;
  const std::size_t G = static_cast<std::size_t>(spec.group_size);
  std::byte* const base = std::as_writable_bytes(x).data();
  const std::size_t row_bytes = C * sizeof(T);
  std::vector<float> buf(12 * C);
  float* zero = buf.data();
  float* scale = zero + C;
  float* inv = scale + C;
  float* two_over = inv + C;
  float* k = two_over + C;
  float* t = k + C;
  float* err_max = t + C;
  float* ratio_max = err_max + C;
  float* sq = ratio_max + C;
  float* lo = sq + C;
  float* hi = lo + C;
  std::fill(err_max, err_max + 3 * C, 0.0f);  // err_max, ratio_max, sq
  double sq_total = 0, ratio_extra = 0;
  auto process_row = [&](std::byte* row) {
    if (int_codes<T>(row, C, zero, inv, levels, k, t) != 0)
      ratio_extra = std::max(ratio_extra, fix_flagged_codes<T>(row, C, zero, scale, two_over, levels, k, t));
    int_values<T>(row, C, zero, scale, two_over, k, t, err_max, ratio_max, sq);
  };
  std::vector<double> sq_wide(C, 0.0);
  auto flush_sq = [&] {
    double* w = sq_wide.data();
    float* f = sq;
    for (std::size_t c = 0; c < C; ++c) {
      w[c] += static_cast<double>(f[c]);
      f[c] = 0.0f;
    }
  };
#ifdef LATENTAUDIT_QUANT_AVX512
  // the AVX-512 group kernels where the shape allows; a group they refuse goes to the code below
  const bool fast = have_avx512() && C % 32 == 0;
  const bool cvt = std::is_same_v<T, Eigen::bfloat16> && fast && have_avx512bf16();
  q512_stats acc;
  std::vector<float> par;
  std::vector<std::uint8_t> mode_tile;
  std::vector<std::byte*> rp;
#endif
  if (!value && spec.keys_per_channel) {
#ifdef LATENTAUDIT_QUANT_AVX512
    const bool fast_keys = fast && G <= 256;
    if (fast_keys) {
      par.resize(4 * C);
      mode_tile.resize(C / 32);
      rp.resize(2 * G);
    }
#endif
    for (std::size_t r0 = 0; r0 < rows.size(); r0 += G) {
      const std::size_t m = std::min(G, rows.size() - r0);
#ifdef LATENTAUDIT_QUANT_AVX512
      if (fast_keys) {
        const std::size_t next_m = r0 + m < rows.size() ? std::min(m, rows.size() - r0 - m) : 0;
        for (std::size_t j = 0; j < m + next_m; ++j) rp[j] = base + rows[r0 + j] * row_bytes;
        if (q512_key_group<T>(rp.data(), m, rp.data() + m, next_m, C, static_cast<double>(levels), cvt,
                              par.data(), mode_tile.data(), acc)) {
          st.groups += C;
          continue;
        }
      }
#endif
      const std::byte* first = base + rows[r0] * row_bytes;
      for (std::size_t c = 0; c < C; ++c) lo[c] = hi[c] = load_cache<T>(first, c);
      for (std::size_t j = 1; j < m; ++j) row_min_max<T>(base + rows[r0 + j] * row_bytes, C, lo, hi);
      group_params(lo, hi, C, levels, zero, scale, inv, two_over);
      st.groups += C;
      for (std::size_t j = 0; j < m; ++j) process_row(base + rows[r0 + j] * row_bytes);
      flush_sq();
    }
  } else {
    std::size_t since_flush = 0;
    const std::size_t per_head = (D + G - 1) / G, ng = H * per_head;
    std::vector<float> gbuf(6 * ng);  // per group: lo, hi, zero, scale, inv, two_over
#ifdef LATENTAUDIT_QUANT_AVX512
    const bool fast_tokens = fast && G % 32 == 0 && D % G == 0;
    const std::size_t nblk = (ng + 15) / 16;
    std::vector<__mmask16> fma_ok, cvt_ok;
    int slot[16];
    if (fast_tokens) {
      par.resize(64 * nblk);
      fma_ok.resize(nblk);
      cvt_ok.resize(nblk);
      q512_tree_order(slot);
    }
#endif
    for (std::size_t ri = 0; ri < rows.size(); ++ri) {
      std::byte* row = base + rows[ri] * row_bytes;
#ifdef LATENTAUDIT_QUANT_AVX512
      const std::byte* next = ri + 1 < rows.size() ? base + rows[ri + 1] * row_bytes : nullptr;
      if (fast_tokens && q512_token_row<T>(row, next, C, G, static_cast<double>(levels), cvt, slot,
                                           par.data(), fma_ok.data(), cvt_ok.data(), acc)) {
        st.groups += ng;
        continue;
      }
#endif
      token_row_params<T>(row, H, D, G, levels, gbuf.data(), zero, scale, inv, two_over);
      st.groups += ng;
      process_row(row);
      if (++since_flush == 32) {
        flush_sq();
        since_flush = 0;
      }
    }
    flush_sq();
  }
  for (std::size_t c = 0; c < C; ++c) {
    st.max_abs = std::max(st.max_abs, static_cast<double>(err_max[c]));
    st.max_ratio = std::max(st.max_ratio, static_cast<double>(ratio_max[c]));
  }
  st.max_ratio = std::max(st.max_ratio, ratio_extra);
#ifdef LATENTAUDIT_QUANT_AVX512
  for (std::size_t l = 0; l < 16; ++l) {
    st.max_abs = std::max(st.max_abs, static_cast<double>(acc.err_max[l]));
    st.max_ratio = std::max(st.max_ratio, static_cast<double>(acc.ratio_max[l]));
    sq_total += acc.sq[l];
  }
#endif
  for (double w : sq_wide) sq_total += w;
  st.sq += sq_total;
}

inline std::vector<std::size_t> present_rows(const kv_block& b, std::size_t i) {
  std::vector<std::size_t> rows;
  for (std::int64_t t = 0; t < b.n_tokens(); ++t)
    if (b.token_present(i, t)) rows.push_back(static_cast<std::size_t>(t));
  return rows;
}

}  // namespace detail

/// @brief Bytes of the quantized payload of `block` under `spec`: per present layer, the K unit
/// then the V unit; a unit is, per group, zero point and scale (f32 each) followed by the codes
/// (int8: a byte each; int4: two a byte, low nibble first, padded per group), or for FP8 one f32
/// scale followed by one code byte per element. Groups follow quantize_spec (docs/kv-transfer.md).
/// @throws invalid_argument on a bad spec.
[[nodiscard]] inline std::uint64_t quantized_payload_bytes(const kv_block& block, const quantize_spec& spec) {
  detail::check_quantize_spec("quantized_payload_bytes", spec);
  std::uint64_t total = 0;
  const auto H = static_cast<std::uint64_t>(block.n_kv_heads());
  for (std::size_t i = 0; i < block.n_layers(); ++i) {
    const auto rows = static_cast<std::uint64_t>(block.present_tokens(i));
    total +=
        detail::unit_bytes(spec.scheme, rows, H, static_cast<std::uint64_t>(block.head_dim_k()), false, spec);
    total +=
        detail::unit_bytes(spec.scheme, rows, H, static_cast<std::uint64_t>(block.head_dim_v()), true, spec);
  }
  return total;
}

/// @brief Quantizes the present rows of `block` into the payload layout of
/// quantized_payload_bytes, on `threads` threads (0 = all cores; the bytes do not depend on it).
/// `record`, when non-null, receives the errors of the dequantized values and the sizes.
/// @throws invalid_argument on a bad spec.
[[nodiscard]] inline std::vector<std::byte> quantize_payload(const kv_block& block, const quantize_spec& spec,
                                                             unsigned threads = 1,
                                                             quantize_record* record = nullptr) {
  detail::check_quantize_spec("quantize_payload", spec);
  const std::size_t H = static_cast<std::size_t>(block.n_kv_heads());
  const std::size_t units = 2 * block.n_layers();
  std::vector<std::uint64_t> offset(units + 1, 0);
  std::vector<std::vector<std::size_t>> rows(block.n_layers());
  for (std::size_t i = 0; i < block.n_layers(); ++i) rows[i] = detail::present_rows(block, i);
  for (std::size_t u = 0; u < units; ++u) {
    const bool value = u % 2 == 1;
    offset[u + 1] = offset[u] + detail::unit_bytes(
                                    spec.scheme, rows[u / 2].size(), H,
                                    static_cast<std::size_t>(value ? block.head_dim_v() : block.head_dim_k()),
                                    value, spec);
  }
  std::vector<std::byte> out(offset[units]);
  std::vector<detail::quant_stats> stats(units);
  visit_cache_type(block.type(), [&](auto tag) {
    using T = decltype(tag);
    parallel_chunks(units, 1, threads, [&](std::size_t u0, std::size_t u1) {
      for (std::size_t u = u0; u < u1; ++u) {
        const std::size_t i = u / 2;
        const bool value = u % 2 == 1;
        const std::size_t D = static_cast<std::size_t>(value ? block.head_dim_v() : block.head_dim_k());
        std::span<const T> x = value ? block.template v<T>(i) : block.template k<T>(i);
        stats[u].elements = rows[i].size() * H * D;
        stats[u].original_bytes = stats[u].elements * dtype_size(block.type());
        detail::encode_unit<T>(x, rows[i], H, D, value, spec, out.data() + offset[u], stats[u]);
      }
    });
  });
  if (record != nullptr) {
    detail::quant_stats all;
    for (const auto& st : stats) all.merge(st);
    *record = {};
    record->scheme = spec.scheme;
    record->group_size = detail::is_integer_scheme(spec.scheme) ? spec.group_size : 0;
    record->original_bytes = all.original_bytes;
    record->quantized_bytes = out.size();
    record->groups = all.groups;
    record->max_abs_error = all.max_abs;
    record->max_error_over_half_step = all.max_ratio;
    record->rms_error = all.elements > 0 ? std::sqrt(all.sq / static_cast<double>(all.elements)) : 0.0;
  }
  return out;
}

/// @brief Writes the dequantized values of `payload` into the present rows of `block` (whose
/// shape, dtype and mask must be those the payload was made from).
/// @throws corrupt_data if the payload size disagrees or a parameter or code is invalid.
inline void dequantize_payload(kv_block& block, const quantize_spec& spec, std::span<const std::byte> payload,
                               unsigned threads = 1) {
  detail::check_quantize_spec("dequantize_payload", spec);
  const std::uint64_t expected = quantized_payload_bytes(block, spec);
  if (payload.size() != expected)
    detail::quant_corrupt("payload has " + std::to_string(payload.size()) + " bytes, the shape needs " +
                          std::to_string(expected));
  const std::size_t H = static_cast<std::size_t>(block.n_kv_heads());
  const std::size_t units = 2 * block.n_layers();
  std::vector<std::vector<std::size_t>> rows(block.n_layers());
  for (std::size_t i = 0; i < block.n_layers(); ++i) rows[i] = detail::present_rows(block, i);
  std::vector<std::uint64_t> offset(units + 1, 0);
  for (std::size_t u = 0; u < units; ++u) {
    const bool value = u % 2 == 1;
    offset[u + 1] = offset[u] + detail::unit_bytes(
                                    spec.scheme, rows[u / 2].size(), H,
                                    static_cast<std::size_t>(value ? block.head_dim_v() : block.head_dim_k()),
                                    value, spec);
  }
  visit_cache_type(block.type(), [&](auto tag) {
    using T = decltype(tag);
    parallel_chunks(units, 1, threads, [&](std::size_t u0, std::size_t u1) {
      for (std::size_t u = u0; u < u1; ++u) {
        const std::size_t i = u / 2;
        const bool value = u % 2 == 1;
        const std::size_t D = static_cast<std::size_t>(value ? block.head_dim_v() : block.head_dim_k());
        std::span<T> x = value ? block.template v<T>(i) : block.template k<T>(i);
        detail::decode_unit<T>(x, rows[i], H, D, value, spec, payload.data() + offset[u]);
      }
    });
  });
}

/// @brief Quantizes and dequantizes K and V of every present row in place — exactly what a
/// receiver decodes from a quantized relay (the values are rounded once to the block's dtype) —
/// and reports errors and the true payload bytes (codes, scales and zero points). Work is split
/// over (layer, K|V) units on `threads` threads; the result does not depend on the thread count.
/// @throws invalid_argument if group_size < 1 for an integer scheme or the scheme is unknown.
inline quantize_record quantize_roundtrip(kv_block& block, const quantize_spec& spec, unsigned threads = 1) {
  detail::check_quantize_spec("quantize_roundtrip", spec);
  if (detail::is_integer_scheme(spec.scheme)) {
    // fused: no payload is materialized (same codes and values as quantize → dequantize)
    const std::size_t H = static_cast<std::size_t>(block.n_kv_heads());
    const std::size_t units = 2 * block.n_layers();
    std::vector<std::vector<std::size_t>> rows(block.n_layers());
    for (std::size_t i = 0; i < block.n_layers(); ++i) rows[i] = detail::present_rows(block, i);
    std::vector<detail::quant_stats> stats(units);
    visit_cache_type(block.type(), [&](auto tag) {
      using T = decltype(tag);
      parallel_chunks(units, 1, threads, [&](std::size_t u0, std::size_t u1) {
        for (std::size_t u = u0; u < u1; ++u) {
          const std::size_t i = u / 2;
          const bool value = u % 2 == 1;
          const std::size_t D = static_cast<std::size_t>(value ? block.head_dim_v() : block.head_dim_k());
          std::span<T> x = value ? block.template v<T>(i) : block.template k<T>(i);
          stats[u].elements = rows[i].size() * H * D;
          stats[u].original_bytes = stats[u].elements * dtype_size(block.type());
          detail::roundtrip_int_unit<T>(x, rows[i], H, D, value, spec, stats[u]);
        }
      });
    });
    detail::quant_stats all;
    for (const auto& st : stats) all.merge(st);
    quantize_record rec;
    rec.scheme = spec.scheme;
    rec.group_size = spec.group_size;
    rec.original_bytes = all.original_bytes;
    rec.quantized_bytes = quantized_payload_bytes(block, spec);
    rec.groups = all.groups;
    rec.max_abs_error = all.max_abs;
    rec.max_error_over_half_step = all.max_ratio;
    rec.rms_error = all.elements > 0 ? std::sqrt(all.sq / static_cast<double>(all.elements)) : 0.0;
    return rec;
  }
  quantize_record rec;
  const auto payload = quantize_payload(block, spec, threads, &rec);
  dequantize_payload(block, spec, payload, threads);
  return rec;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_QUANTIZE_HPP
