// SPDX-License-Identifier: MIT
// latentaudit: fast bootstrap index draws. A buffered reader of one Philox4x32-10 stream that
// yields exactly the word sequence of make_stream(id) (blocks 0, 1, 2, ... in counter order), and
// Lemire's unbiased bounded integers on top of it: draw j of a replicate is bit-identical to the
// j-th call of uniform_index(make_stream(id), n), only faster (16 blocks are generated per refill,
// 8 at a time in AVX2 lanes when the CPU has them (runtime check, GCC/Clang on x86-64), else 4 at
// a time in SSE2 lanes, else one by one).
#ifndef LATENTAUDIT_ESTIMATORS_DETAIL_BOOTSTRAP_DRAW_HPP
#define LATENTAUDIT_ESTIMATORS_DETAIL_BOOTSTRAP_DRAW_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "../../core/rng.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define LATENTAUDIT_DETAIL_AVX2_DISPATCH 1
#endif

namespace latentaudit::detail {

/// @brief Sequential reader of the stream make_stream(id), 64 words per refill.
///
/// Word w of the reader is word w of make_stream(id): block b = w / 4 is
/// Philox4x32-10({b_lo, b_hi, id.arm, id.replicate}, key(id.seed, id.item)), word w % 4 of it.
class index_drawer {
 public:
  /// @brief Reader positioned at the start of stream `id`.
  explicit index_drawer(const stream_id& id) noexcept
      : key_(philox4x32::for_stream(id).key()), arm_(id.arm), replicate_(id.replicate) {}

  /// @brief The next 32-bit word of the stream.
  [[nodiscard]] std::uint32_t word() noexcept {
    if (pos_ == words_per_refill) [[unlikely]]
      refill();
    return buf_[pos_++];
  }

  /// @brief Unbiased integer in [0, n) by Lemire's multiply-and-reject; identical to
  /// uniform_index(stream, n). @pre 1 <= n <= 2^32 - 1.
  [[nodiscard]] std::uint32_t index(std::uint32_t n) noexcept {
    std::uint64_t m = std::uint64_t{word()} * n;
    auto low = static_cast<std::uint32_t>(m);
    if (low < n) [[unlikely]] {
      const std::uint32_t threshold = static_cast<std::uint32_t>(-n) % n;
      while (low < threshold) {
        m = std::uint64_t{word()} * n;
        low = static_cast<std::uint32_t>(m);
      }
    }
    return static_cast<std::uint32_t>(m >> 32);
  }

  /// @brief Fills `out` with out.size() draws from [0, n).
  void fill(std::span<std::uint32_t> out, std::uint32_t n) noexcept {
    for (auto& v : out) v = index(n);
  }

 private:
  static constexpr unsigned blocks_per_refill = 16;
  static constexpr unsigned words_per_refill = 4 * blocks_per_refill;

  // Philox4x32-10 on 16 consecutive counters (same arithmetic as philox4x32::block). With SSE2
  // (every x86-64) the 16 blocks run as 4 vectors of 4 lanes, two vectors interleaved; otherwise
  // the portable loop over philox4x32::block.
#if defined(__SSE2__)
  // 32x32 -> 64-bit products of the four lanes of a by the constant m: high and low halves.
  static void mul_hi_lo(__m128i a, __m128i m, __m128i& hi, __m128i& lo) noexcept {
    const __m128i lo_mask = _mm_set1_epi64x(0xFFFFFFFFLL);
    const __m128i even = _mm_mul_epu32(a, m);                     // lanes 0, 2
    const __m128i odd = _mm_mul_epu32(_mm_srli_epi64(a, 32), m);  // lanes 1, 3
    lo = _mm_or_si128(_mm_and_si128(even, lo_mask), _mm_slli_epi64(odd, 32));
    hi = _mm_or_si128(_mm_srli_epi64(even, 32), _mm_andnot_si128(lo_mask, odd));
  }

#if defined(LATENTAUDIT_DETAIL_AVX2_DISPATCH)
  // Whether the CPU runs AVX2 (checked once; the AVX2 refill produces the same words).
  static bool cpu_has_avx2() noexcept {
    static const bool has = [] {
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") != 0;
    }();
    return has;
  }

  // AVX2 version of mul_hi_lo: eight lanes.
  __attribute__((target("avx2"))) static void mul_hi_lo8(__m256i a, __m256i m, __m256i& hi,
                                                         __m256i& lo) noexcept {
    const __m256i lo_mask = _mm256_set1_epi64x(0xFFFFFFFFLL);
    const __m256i even = _mm256_mul_epu32(a, m);
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    lo = _mm256_or_si256(_mm256_and_si256(even, lo_mask), _mm256_slli_epi64(odd, 32));
    hi = _mm256_or_si256(_mm256_srli_epi64(even, 32), _mm256_andnot_si256(lo_mask, odd));
  }

  // Counter words (low, high) of blocks b .. b+7.
  __attribute__((target("avx2"))) static void counters8(std::uint64_t b, __m256i& w0, __m256i& w1) noexcept {
    alignas(32) std::uint32_t lo[8], hi[8];
    for (unsigned l = 0; l < 8; ++l) {
      lo[l] = static_cast<std::uint32_t>(b + l);
      hi[l] = static_cast<std::uint32_t>((b + l) >> 32);
    }
    w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
    w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  }

  // Transposes eight blocks held as four word vectors into buf_ at block `first`.
  __attribute__((target("avx2"))) void store8(unsigned first, __m256i c0, __m256i c1, __m256i c2,
                                              __m256i c3) noexcept {
    const __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpacklo_epi32(c2, c3);
    const __m256i t2 = _mm256_unpackhi_epi32(c0, c1), t3 = _mm256_unpackhi_epi32(c2, c3);
    const __m256i r0 = _mm256_unpacklo_epi64(t0, t1);  // blocks 0 | 4
    const __m256i r1 = _mm256_unpackhi_epi64(t0, t1);  // blocks 1 | 5
    const __m256i r2 = _mm256_unpacklo_epi64(t2, t3);  // blocks 2 | 6
    const __m256i r3 = _mm256_unpackhi_epi64(t2, t3);  // blocks 3 | 7
    auto* out = reinterpret_cast<__m256i*>(buf_.data() + 4 * first);
    _mm256_storeu_si256(out, _mm256_permute2x128_si256(r0, r1, 0x20));
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(r2, r3, 0x20));
    _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(r0, r1, 0x31));
    _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(r2, r3, 0x31));
  }

  // 16 blocks as two interleaved vectors of 8 lanes.
  __attribute__((target("avx2"))) void refill_avx2() noexcept {
    const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
    const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
    __m256i a0, a1, b0, b1;
    counters8(next_block_, a0, a1);
    counters8(next_block_ + 8, b0, b1);
    __m256i a2 = _mm256_set1_epi32(static_cast<int>(arm_)),
            a3 = _mm256_set1_epi32(static_cast<int>(replicate_));
    __m256i b2 = a2, b3 = a3;
    std::uint32_t k0 = key_[0], k1 = key_[1];
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
      }
      const __m256i kk0 = _mm256_set1_epi32(static_cast<int>(k0)),
                    kk1 = _mm256_set1_epi32(static_cast<int>(k1));
      __m256i ah0, al0, ah1, al1, bh0, bl0, bh1, bl1;
      mul_hi_lo8(a0, m0, ah0, al0);
      mul_hi_lo8(a2, m1, ah1, al1);
      mul_hi_lo8(b0, m0, bh0, bl0);
      mul_hi_lo8(b2, m1, bh1, bl1);
      a0 = _mm256_xor_si256(_mm256_xor_si256(ah1, a1), kk0);
      a2 = _mm256_xor_si256(_mm256_xor_si256(ah0, a3), kk1);
      a1 = al1;
      a3 = al0;
      b0 = _mm256_xor_si256(_mm256_xor_si256(bh1, b1), kk0);
      b2 = _mm256_xor_si256(_mm256_xor_si256(bh0, b3), kk1);
      b1 = bl1;
      b3 = bl0;
    }
    store8(0, a0, a1, a2, a3);
    store8(8, b0, b1, b2, b3);
    next_block_ += blocks_per_refill;
    pos_ = 0;
  }
#endif

  void refill() noexcept {
#if defined(LATENTAUDIT_DETAIL_AVX2_DISPATCH)
    if (cpu_has_avx2()) {
      refill_avx2();
      return;
    }
#endif
    refill_sse2();
  }

  void refill_sse2() noexcept {
    const __m128i m0 = _mm_set1_epi32(static_cast<int>(0xD2511F53u));
    const __m128i m1 = _mm_set1_epi32(static_cast<int>(0xCD9E8D57u));
    auto counters = [&](std::uint64_t b, __m128i& w0, __m128i& w1) {
      w0 = _mm_setr_epi32(static_cast<int>(static_cast<std::uint32_t>(b)),
                          static_cast<int>(static_cast<std::uint32_t>(b + 1)),
                          static_cast<int>(static_cast<std::uint32_t>(b + 2)),
                          static_cast<int>(static_cast<std::uint32_t>(b + 3)));
      w1 = _mm_setr_epi32(static_cast<int>(static_cast<std::uint32_t>(b >> 32)),
                          static_cast<int>(static_cast<std::uint32_t>((b + 1) >> 32)),
                          static_cast<int>(static_cast<std::uint32_t>((b + 2) >> 32)),
                          static_cast<int>(static_cast<std::uint32_t>((b + 3) >> 32)));
    };
    auto store = [&](unsigned first_block, __m128i c0, __m128i c1, __m128i c2, __m128i c3) {
      const __m128i t0 = _mm_unpacklo_epi32(c0, c1), t1 = _mm_unpacklo_epi32(c2, c3);
      const __m128i t2 = _mm_unpackhi_epi32(c0, c1), t3 = _mm_unpackhi_epi32(c2, c3);
      auto* out = reinterpret_cast<__m128i*>(buf_.data() + 4 * first_block);
      _mm_storeu_si128(out, _mm_unpacklo_epi64(t0, t1));
      _mm_storeu_si128(out + 1, _mm_unpackhi_epi64(t0, t1));
      _mm_storeu_si128(out + 2, _mm_unpacklo_epi64(t2, t3));
      _mm_storeu_si128(out + 3, _mm_unpackhi_epi64(t2, t3));
    };
    for (unsigned v = 0; v < blocks_per_refill; v += 8) {
      __m128i a0, a1, b0, b1;
      counters(next_block_ + v, a0, a1);
      counters(next_block_ + v + 4, b0, b1);
      __m128i a2 = _mm_set1_epi32(static_cast<int>(arm_)), a3 = _mm_set1_epi32(static_cast<int>(replicate_));
      __m128i b2 = a2, b3 = a3;
      std::uint32_t k0 = key_[0], k1 = key_[1];
      for (int round = 0; round < 10; ++round) {
        if (round > 0) {
          k0 += 0x9E3779B9u;
          k1 += 0xBB67AE85u;
        }
        const __m128i kk0 = _mm_set1_epi32(static_cast<int>(k0)), kk1 = _mm_set1_epi32(static_cast<int>(k1));
        __m128i ah0, al0, ah1, al1, bh0, bl0, bh1, bl1;
        mul_hi_lo(a0, m0, ah0, al0);
        mul_hi_lo(a2, m1, ah1, al1);
        mul_hi_lo(b0, m0, bh0, bl0);
        mul_hi_lo(b2, m1, bh1, bl1);
        a0 = _mm_xor_si128(_mm_xor_si128(ah1, a1), kk0);
        a2 = _mm_xor_si128(_mm_xor_si128(ah0, a3), kk1);
        a1 = al1;
        a3 = al0;
        b0 = _mm_xor_si128(_mm_xor_si128(bh1, b1), kk0);
        b2 = _mm_xor_si128(_mm_xor_si128(bh0, b3), kk1);
        b1 = bl1;
        b3 = bl0;
      }
      store(v, a0, a1, a2, a3);
      store(v + 4, b0, b1, b2, b3);
    }
    next_block_ += blocks_per_refill;
    pos_ = 0;
  }
#else
  void refill() noexcept {
    for (unsigned l = 0; l < blocks_per_refill; ++l) {
      const std::uint64_t b = next_block_ + l;
      const auto out = philox4x32::block(
          {static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(b >> 32), arm_, replicate_}, key_);
      for (unsigned w = 0; w < 4; ++w) buf_[4 * l + w] = out[w];
    }
    next_block_ += blocks_per_refill;
    pos_ = 0;
  }
#endif

  philox4x32::key_type key_;
  std::uint32_t arm_;
  std::uint32_t replicate_;
  std::uint64_t next_block_ = 0;
  unsigned pos_ = words_per_refill;
  std::array<std::uint32_t, words_per_refill> buf_{};
};

/// @brief Σ values[idx[j]] with four accumulators (j mod 4), combined as (a0 + a1) + (a2 + a3).
/// The fast mean paths accumulate in exactly this order, so a generic statistic that uses
/// resample_view::sum() reproduces them bit for bit.
[[nodiscard]] inline double gather_sum(std::span<const double> values,
                                       std::span<const std::uint32_t> idx) noexcept {
  double a[4] = {0, 0, 0, 0};
  const std::size_t n = idx.size();
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    a[0] += values[idx[j]];
    a[1] += values[idx[j + 1]];
    a[2] += values[idx[j + 2]];
    a[3] += values[idx[j + 3]];
  }
  for (; j < n; ++j) a[j % 4] += values[idx[j]];
  return (a[0] + a[1]) + (a[2] + a[3]);
}

/// @brief Draws n indices of [0, n) from `id` and returns Σ values[idx] accumulated exactly as
/// gather_sum over the same draws, without storing the indices (O(1) memory).
[[nodiscard]] inline double draw_and_sum(const stream_id& id, std::span<const double> values) noexcept {
  index_drawer g(id);
  const auto n = static_cast<std::uint32_t>(values.size());
  double a[4] = {0, 0, 0, 0};
  std::uint32_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const std::uint32_t i0 = g.index(n), i1 = g.index(n), i2 = g.index(n), i3 = g.index(n);
    a[0] += values[i0];
    a[1] += values[i1];
    a[2] += values[i2];
    a[3] += values[i3];
  }
  for (; j < n; ++j) a[j % 4] += values[g.index(n)];
  return (a[0] + a[1]) + (a[2] + a[3]);
}

/// @brief Paired variant: draws n pair indices and returns Σ (a[i] − b[i]) in gather_sum order.
[[nodiscard]] inline double draw_and_sum_differences(const stream_id& id, std::span<const double> a_values,
                                                     std::span<const double> b_values) noexcept {
  index_drawer g(id);
  const auto n = static_cast<std::uint32_t>(a_values.size());
  double a[4] = {0, 0, 0, 0};
  std::uint32_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const std::uint32_t i0 = g.index(n), i1 = g.index(n), i2 = g.index(n), i3 = g.index(n);
    a[0] += a_values[i0] - b_values[i0];
    a[1] += a_values[i1] - b_values[i1];
    a[2] += a_values[i2] - b_values[i2];
    a[3] += a_values[i3] - b_values[i3];
  }
  for (; j < n; ++j) {
    const std::uint32_t i = g.index(n);
    a[j % 4] += a_values[i] - b_values[i];
  }
  return (a[0] + a[1]) + (a[2] + a[3]);
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_ESTIMATORS_DETAIL_BOOTSTRAP_DRAW_HPP
