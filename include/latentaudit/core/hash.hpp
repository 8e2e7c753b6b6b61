// SPDX-License-Identifier: MIT
// latentaudit: checksums and authentication — CRC32C (Castagnoli), SHA-256 (FIPS 180-4) and
// HMAC-SHA256 (RFC 2104), streaming, dependency-free. CRC32C uses the SSE4.2 instruction when the
// processor has it (checked at run time; three interleaved lanes), carry-less multiplication folding
// on 512-bit registers when it has VPCLMULQDQ and AVX-512 (on 128-bit registers when it has only
// PCLMULQDQ), and slicing-by-8 tables otherwise;
// SHA-256 uses the x86 SHA extensions (sha256rnds2 / sha256msg1 / sha256msg2) when the processor has
// them (checked at run time with cpuid) and portable code otherwise — the same digests either way.
#ifndef LATENTAUDIT_CORE_HASH_HPP
#define LATENTAUDIT_CORE_HASH_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define LATENTAUDIT_SHA_NI 1
#endif

namespace latentaudit {

namespace detail {

/// @brief Slicing-by-8 tables of the reflected Castagnoli polynomial 0x82F63B78.
struct crc32c_tables {
  std::uint32_t t[8][256];
  constexpr crc32c_tables() : t{} {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
      t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFu];
  }
};
inline constexpr crc32c_tables crc32c_table{};

/// @brief Portable CRC32C update (no pre/post inversion).
inline std::uint32_t crc32c_sw(std::uint32_t crc, const unsigned char* p, std::size_t n) noexcept {
  const auto& T = crc32c_table.t;
  while (n >= 8) {
    std::uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = T[7][lo & 0xFF] ^ T[6][(lo >> 8) & 0xFF] ^ T[5][(lo >> 16) & 0xFF] ^ T[4][lo >> 24] ^
          T[3][hi & 0xFF] ^ T[2][(hi >> 8) & 0xFF] ^ T[1][(hi >> 16) & 0xFF] ^ T[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ T[0][(crc ^ *p++) & 0xFF];
  return crc;
}

/// @brief a·b mod P for reflected CRC32C register values (bit 31 is x^0), bit by bit.
constexpr std::uint32_t crc32c_multmodp(std::uint32_t a, std::uint32_t b) noexcept {
  std::uint32_t m = 1u << 31, p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1u) ? (b >> 1) ^ 0x82F63B78u : b >> 1;
  }
  return p;
}

/// @brief x^(8·n) mod P: the operator that advances a CRC register over n zero bytes.
constexpr std::uint32_t crc32c_x8n(std::uint64_t n) noexcept {
  std::uint32_t p = 1u << 31;   // x^0
  std::uint32_t sq = 1u << 23;  // x^8 (one byte)
  while (n != 0) {
    if (n & 1u) p = crc32c_multmodp(sq, p);
    sq = crc32c_multmodp(sq, sq);
    n >>= 1;
  }
  return p;
}

/// @brief Bytes per lane of the three-way interleaved hardware CRC.
inline constexpr std::size_t crc32c_lane_bytes = 4096;

/// @brief Tables that advance a CRC register over crc32c_lane_bytes zero bytes, one per byte of
/// the register (the operation is linear, so the four lookups are XORed).
struct crc32c_shift_tables {
  std::uint32_t t[4][256];
  constexpr crc32c_shift_tables() : t{} {
    const std::uint32_t x = crc32c_x8n(crc32c_lane_bytes);
    for (int k = 0; k < 4; ++k)
      for (std::uint32_t b = 0; b < 256; ++b) t[k][b] = crc32c_multmodp(x, b << (8 * k));
  }
  /// @brief The register c advanced over crc32c_lane_bytes zero bytes.
  [[nodiscard]] constexpr std::uint32_t shift(std::uint32_t c) const noexcept {
    return t[0][c & 0xFFu] ^ t[1][(c >> 8) & 0xFFu] ^ t[2][(c >> 16) & 0xFFu] ^ t[3][c >> 24];
  }
};
inline constexpr crc32c_shift_tables crc32c_shift{};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/// @brief CRC32C update with the SSE4.2 crc32 instruction: three independent lanes of
/// crc32c_lane_bytes bytes each (the instruction's latency is three times its throughput),
/// combined with the shift tables, then the tail in one lane.
__attribute__((target("sse4.2"))) inline std::uint32_t crc32c_hw(std::uint32_t crc, const unsigned char* p,
                                                                 std::size_t n) noexcept {
  constexpr std::size_t L = crc32c_lane_bytes;
  std::uint64_t c = crc;
  while (n >= 3 * L) {
    std::uint64_t c1 = 0, c2 = 0;
    for (std::size_t i = 0; i < L; i += 8) {
      std::uint64_t w0, w1, w2;
      std::memcpy(&w0, p + i, 8);
      std::memcpy(&w1, p + L + i, 8);
      std::memcpy(&w2, p + 2 * L + i, 8);
      c = __builtin_ia32_crc32di(c, w0);
      c1 = __builtin_ia32_crc32di(c1, w1);
      c2 = __builtin_ia32_crc32di(c2, w2);
    }
    // registers are linear: R(s, A‖B) = shift_|B|(R(s, A)) ⊕ R(0, B)
    c = crc32c_shift.shift(crc32c_shift.shift(static_cast<std::uint32_t>(c)) ^
                           static_cast<std::uint32_t>(c1)) ^
        static_cast<std::uint32_t>(c2);
    p += 3 * L;
    n -= 3 * L;
  }
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    c = __builtin_ia32_crc32di(c, w);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}
inline bool have_sse42() noexcept {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

/// @brief x^m mod P as a reflected CRC32C register value (bit 31 is x^0), for any m ≥ 0.
constexpr std::uint32_t crc32c_xpow(std::uint64_t m) noexcept {
  return crc32c_multmodp(crc32c_x8n(m / 8), 1u << (31 - m % 8));
}

/// @brief Two carry-less multipliers, one per quadword of a 128-bit lane.
struct crc32c_fold_pair {
  std::uint64_t lo;  ///< for the lane's low quadword (its first 8 bytes)
  std::uint64_t hi;  ///< for the lane's high quadword
};

/// @brief The pair of carry-less multipliers that folds a 16-byte lane of CRC32C data `bytes`
/// bytes forward. A lane X, loaded little-endian, is the reflected polynomial
/// X_lo·x^64 + X_hi (X_lo = its first 8 bytes); X·x^(8·bytes) ≡ X_lo·x^(8·bytes+64) + X_hi·x^(8·bytes)
/// (mod P). pclmulqdq of two reflected 64-bit operands yields their product shifted down by one
/// degree when read as a reflected 128-bit lane, so the multipliers are x^(8·bytes+63) mod P (for
/// X_lo, low quadword) and x^(8·bytes−1) mod P (for X_hi, high quadword), each a reflected 32-bit
/// register value placed in bits 32..63 (bit 63 − d holds x^d).
constexpr crc32c_fold_pair crc32c_fold_constants(std::uint64_t bytes) noexcept {
  return {std::uint64_t{crc32c_xpow(8 * bytes + 63)} << 32, std::uint64_t{crc32c_xpow(8 * bytes - 1)} << 32};
}
/// @brief Fold multipliers for the distances the kernels use (256: the main loop; 192, 128, 64:
/// accumulators onto the last; 48, 32, 16: lanes onto the last; the 128-bit kernel: 64 in its main
/// loop, 48, 32, 16 to fold its accumulators onto the last).
inline constexpr crc32c_fold_pair crc32c_fold_256 = crc32c_fold_constants(256);
inline constexpr crc32c_fold_pair crc32c_fold_192 = crc32c_fold_constants(192);
inline constexpr crc32c_fold_pair crc32c_fold_128 = crc32c_fold_constants(128);
inline constexpr crc32c_fold_pair crc32c_fold_64 = crc32c_fold_constants(64);
inline constexpr crc32c_fold_pair crc32c_fold_48 = crc32c_fold_constants(48);
inline constexpr crc32c_fold_pair crc32c_fold_32 = crc32c_fold_constants(32);
inline constexpr crc32c_fold_pair crc32c_fold_16 = crc32c_fold_constants(16);

/// @brief Tests set this to cap the CRC32C kernel (to exercise each fallback on any machine):
/// 3 = 512-bit carry-less-multiplication folding when present, 2 = at most the 128-bit folding,
/// 1 = at most the SSE4.2 lanes, 0 = portable.
inline int crc32c_kernel_cap = 3;

/// @brief Inputs shorter than this go to the SSE4.2 lanes: the fold needs one 256-byte block (and
/// is faster from there on: 12 ns against 32 ns for 256 bytes on a Sapphire Rapids core).
inline constexpr std::size_t crc32c_fold_min_bytes = 256;

/// @brief Inputs shorter than this go from the 128-bit folding kernel to the SSE4.2 lanes: it needs
/// one 64-byte block (and is already ahead there: 6.6 ns against 8 ns for 64 bytes, 8.2 ns against
/// 16 ns for 128, on a Sapphire Rapids core).
inline constexpr std::size_t crc32c_fold128_min_bytes = 64;

/// @brief How far ahead of the line it copies the fused copy prefetches the source (the hardware
/// prefetchers do not cross 4 KiB pages).
inline constexpr std::size_t crc32c_copy_prefetch = 4096;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LATENTAUDIT_CRC32C_FOLD 1
#define LATENTAUDIT_CRC32C_FOLD_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.2")))

/// @brief Whether the processor has 512-bit carry-less multiplication (VPCLMULQDQ, AVX-512F/BW/VL)
/// and SSE4.2, as the folding kernel needs.
inline bool have_crc32c_fold() noexcept {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq") &&
                          __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
  return yes;
}

/// @brief x folded 16·k bytes forward with the multipliers in m (per 128-bit lane), XORed into y.
LATENTAUDIT_CRC32C_FOLD_TARGET inline __m512i crc32c_fold_into(__m512i x, __m512i m, __m512i y) noexcept {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, m, 0x00), _mm512_clmulepi64_epi128(x, m, 0x11),
                                   y, 0x96);
}
/// @brief A fold pair in every 128-bit lane of a 512-bit register.
LATENTAUDIT_CRC32C_FOLD_TARGET inline __m512i crc32c_broadcast(crc32c_fold_pair k) noexcept {
  return _mm512_set_epi64(static_cast<long long>(k.hi), static_cast<long long>(k.lo),
                          static_cast<long long>(k.hi), static_cast<long long>(k.lo),
                          static_cast<long long>(k.hi), static_cast<long long>(k.lo),
                          static_cast<long long>(k.hi), static_cast<long long>(k.lo));
}

/// @brief The CRC register of the data whose fold state is the four accumulators a0..a3 (256
/// consecutive bytes, a0 first): folds them into one 128-bit lane, which is congruent to the data
/// modulo P, and reduces that lane with two crc32 instructions (feeding its 16 bytes to a zero
/// register computes lane·x^32 mod P, which is the CRC register of the data).
LATENTAUDIT_CRC32C_FOLD_TARGET inline std::uint32_t crc32c_fold_finish(__m512i a0, __m512i a1, __m512i a2,
                                                                       __m512i a3) noexcept {
  a3 = crc32c_fold_into(a0, crc32c_broadcast(crc32c_fold_192), a3);
  a3 = crc32c_fold_into(a1, crc32c_broadcast(crc32c_fold_128), a3);
  a3 = crc32c_fold_into(a2, crc32c_broadcast(crc32c_fold_64), a3);
  // lanes 0, 1, 2 folded 48, 32, 16 bytes forward onto lane 3
  const __m512i m = _mm512_set_epi64(
      0, 0, static_cast<long long>(crc32c_fold_16.hi), static_cast<long long>(crc32c_fold_16.lo),
      static_cast<long long>(crc32c_fold_32.hi), static_cast<long long>(crc32c_fold_32.lo),
      static_cast<long long>(crc32c_fold_48.hi), static_cast<long long>(crc32c_fold_48.lo));
  const __m512i t =
      _mm512_xor_si512(_mm512_clmulepi64_epi128(a3, m, 0x00), _mm512_clmulepi64_epi128(a3, m, 0x11));
  // lane 3 of a3 joins the three folded lanes; XOR the four lanes into lane 0 (the zero-masking
  // forms with all-ones masks: GCC 12's unmasked ones trip -Wmaybe-uninitialized)
  const __m512i x = _mm512_mask_blend_epi64(0xC0, t, a3);
  const __m512i y = _mm512_xor_si512(x, _mm512_maskz_shuffle_i64x2(0xFF, x, x, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512i z = _mm512_xor_si512(y, _mm512_maskz_shuffle_i64x2(0xFF, y, y, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m128i r = _mm512_maskz_extracti32x4_epi32(0xF, z, 0);
  std::uint64_t c = __builtin_ia32_crc32di(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(r)));
  c = __builtin_ia32_crc32di(c, static_cast<std::uint64_t>(_mm_extract_epi64(r, 1)));
  return static_cast<std::uint32_t>(c);
}

/// @brief CRC32C update by carry-less multiplication folding (the method of Gopal et al., "Fast
/// CRC computation for generic polynomials using PCLMULQDQ", Intel 2009, on 512-bit registers):
/// four 512-bit accumulators fold 256 bytes per step, then are reduced to one 128-bit lane and to
/// 32 bits; the remaining (< 256) bytes go through crc32. The register crc enters by XOR into the
/// first four bytes. Requires have_crc32c_fold(); short inputs go to crc32c_hw.
LATENTAUDIT_CRC32C_FOLD_TARGET inline std::uint32_t crc32c_fold(std::uint32_t crc, const unsigned char* p,
                                                                std::size_t n) noexcept {
  if (n < crc32c_fold_min_bytes) return crc32c_hw(crc, p, n);
  __m512i a0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                                _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(crc))));
  __m512i a1 = _mm512_loadu_si512(p + 64), a2 = _mm512_loadu_si512(p + 128), a3 = _mm512_loadu_si512(p + 192);
  p += 256;
  n -= 256;
  const __m512i k = crc32c_broadcast(crc32c_fold_256);
  for (; n >= 256; p += 256, n -= 256) {
    a0 = crc32c_fold_into(a0, k, _mm512_loadu_si512(p));
    a1 = crc32c_fold_into(a1, k, _mm512_loadu_si512(p + 64));
    a2 = crc32c_fold_into(a2, k, _mm512_loadu_si512(p + 128));
    a3 = crc32c_fold_into(a3, k, _mm512_loadu_si512(p + 192));
  }
  return crc32c_hw(crc32c_fold_finish(a0, a1, a2, a3), p, n);
}

/// @brief Copies n bytes from s to d (not overlapping) and returns crc advanced over them, reading
/// each 64-byte line once: it is folded into the CRC and written with a non-temporal (streaming)
/// store, so the destination is not read into the cache. The head up to d's next 64-byte boundary
/// and the tail (< 256 bytes) are copied with memcpy and checksummed with crc32; the streaming
/// stores are fenced before return. Requires have_crc32c_fold().
LATENTAUDIT_CRC32C_FOLD_TARGET inline std::uint32_t crc32c_copy_fold(std::uint32_t crc, unsigned char* d,
                                                                     const unsigned char* s,
                                                                     std::size_t n) noexcept {
  const std::size_t head = (64 - (reinterpret_cast<std::uintptr_t>(d) & 63u)) & 63u;
  if (n < head + crc32c_fold_min_bytes) {
    if (n != 0) std::memcpy(d, s, n);
    return crc32c_hw(crc, s, n);
  }
  if (head != 0) {
    std::memcpy(d, s, head);
    crc = crc32c_hw(crc, s, head);
    d += head;
    s += head;
    n -= head;
  }
  __m512i a0 = _mm512_loadu_si512(s), a1 = _mm512_loadu_si512(s + 64), a2 = _mm512_loadu_si512(s + 128),
          a3 = _mm512_loadu_si512(s + 192);
  _mm512_stream_si512(reinterpret_cast<__m512i*>(d), a0);
  _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 64), a1);
  _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 128), a2);
  _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 192), a3);
  a0 = _mm512_xor_si512(a0, _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(crc))));
  s += 256;
  d += 256;
  n -= 256;
  const __m512i k = crc32c_broadcast(crc32c_fold_256);
  for (; n >= 256; s += 256, d += 256, n -= 256) {
    _mm_prefetch(reinterpret_cast<const char*>(s + crc32c_copy_prefetch), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(s + crc32c_copy_prefetch + 64), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(s + crc32c_copy_prefetch + 128), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(s + crc32c_copy_prefetch + 192), _MM_HINT_T0);
    const __m512i b0 = _mm512_loadu_si512(s), b1 = _mm512_loadu_si512(s + 64),
                  b2 = _mm512_loadu_si512(s + 128), b3 = _mm512_loadu_si512(s + 192);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d), b0);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 64), b1);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 128), b2);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 192), b3);
    a0 = crc32c_fold_into(a0, k, b0);
    a1 = crc32c_fold_into(a1, k, b1);
    a2 = crc32c_fold_into(a2, k, b2);
    a3 = crc32c_fold_into(a3, k, b3);
  }
  _mm_sfence();
  if (n != 0) std::memcpy(d, s, n);
  return crc32c_hw(crc32c_fold_finish(a0, a1, a2, a3), s, n);
}

#define LATENTAUDIT_CRC32C_FOLD128_TARGET __attribute__((target("pclmul,sse4.2")))

/// @brief Whether the processor has PCLMULQDQ and SSE4.2, as the 128-bit folding kernel needs.
inline bool have_crc32c_fold128() noexcept {
  static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
  return yes;
}

/// @brief x folded forward with the multipliers in m (one 128-bit lane), XORed into y.
LATENTAUDIT_CRC32C_FOLD128_TARGET inline __m128i crc32c_fold128_into(__m128i x, __m128i m,
                                                                     __m128i y) noexcept {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, m, 0x00), _mm_clmulepi64_si128(x, m, 0x11)), y);
}
/// @brief A fold pair in a 128-bit register.
LATENTAUDIT_CRC32C_FOLD128_TARGET inline __m128i crc32c_pair128(crc32c_fold_pair k) noexcept {
  return _mm_set_epi64x(static_cast<long long>(k.hi), static_cast<long long>(k.lo));
}

/// @brief CRC32C update by carry-less multiplication folding on 128-bit registers, for processors
/// with PCLMULQDQ but not VPCLMULQDQ / AVX-512 (the method of crc32c_fold): four 128-bit
/// accumulators fold 64 bytes per step, fold onto the last (48, 32, 16 bytes forward), and that lane
/// is reduced with two crc32 instructions; the remaining (< 64) bytes go through crc32. The register
/// crc enters by XOR into the first four bytes. Requires have_crc32c_fold128(); short inputs go to
/// crc32c_hw.
LATENTAUDIT_CRC32C_FOLD128_TARGET inline std::uint32_t crc32c_fold128(std::uint32_t crc,
                                                                      const unsigned char* p,
                                                                      std::size_t n) noexcept {
  if (n < crc32c_fold128_min_bytes) return crc32c_hw(crc, p, n);
  const auto load = [](const unsigned char* q) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  };
  __m128i a0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i a1 = load(p + 16), a2 = load(p + 32), a3 = load(p + 48);
  p += 64;
  n -= 64;
  const __m128i k = crc32c_pair128(crc32c_fold_64);
  for (; n >= 64; p += 64, n -= 64) {
    a0 = crc32c_fold128_into(a0, k, load(p));
    a1 = crc32c_fold128_into(a1, k, load(p + 16));
    a2 = crc32c_fold128_into(a2, k, load(p + 32));
    a3 = crc32c_fold128_into(a3, k, load(p + 48));
  }
  a3 = crc32c_fold128_into(a0, crc32c_pair128(crc32c_fold_48), a3);
  a3 = crc32c_fold128_into(a1, crc32c_pair128(crc32c_fold_32), a3);
  a3 = crc32c_fold128_into(a2, crc32c_pair128(crc32c_fold_16), a3);
  // the lane is congruent to the data modulo P: two crc32 on a zero register give lane·x^32 mod P
  std::uint64_t c = __builtin_ia32_crc32di(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(a3)));
  c = __builtin_ia32_crc32di(c, static_cast<std::uint64_t>(_mm_extract_epi64(a3, 1)));
  return crc32c_hw(static_cast<std::uint32_t>(c), p, n);
}
#endif

/// @brief CRC32C register update (no pre/post inversion) on the fastest kernel this processor has,
/// at most crc32c_kernel_cap: 512-bit folding, then 128-bit folding, then the SSE4.2 lanes, then
/// the portable tables.
inline std::uint32_t crc32c_update(std::uint32_t crc, const unsigned char* p, std::size_t n) noexcept {
#ifdef LATENTAUDIT_CRC32C_FOLD
  if (crc32c_kernel_cap >= 3 && have_crc32c_fold()) return crc32c_fold(crc, p, n);
  if (crc32c_kernel_cap >= 2 && have_crc32c_fold128()) return crc32c_fold128(crc, p, n);
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (crc32c_kernel_cap >= 1 && have_sse42()) return crc32c_hw(crc, p, n);
#endif
  return crc32c_sw(crc, p, n);
}

/// @brief Whether crc32c_copy_stream runs the fused kernel (copy and checksum in one pass).
inline bool crc32c_copy_fused() noexcept {
#ifdef LATENTAUDIT_CRC32C_FOLD
  return crc32c_kernel_cap >= 3 && have_crc32c_fold();
#else
  return false;
#endif
}

/// @brief Copies n bytes from s to d (not overlapping) with streaming stores and returns crc
/// advanced over them, in one pass (crc32c_copy_fold). Requires crc32c_copy_fused(); callers
/// fall back to a copy followed by crc32c_update otherwise.
inline std::uint32_t crc32c_copy_stream(std::uint32_t crc, std::byte* d, const std::byte* s,
                                        std::size_t n) noexcept {
#ifdef LATENTAUDIT_CRC32C_FOLD
  return crc32c_copy_fold(crc, reinterpret_cast<unsigned char*>(d), reinterpret_cast<const unsigned char*>(s),
                          n);
#else
  (void)d;
  (void)s;
  (void)n;
  return crc;
#endif
}

/// @brief The SHA-256 round constants (FIPS 180-4 §4.2.2).
alignas(16) inline constexpr std::uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

/// @brief SHA-256 compression of `blocks` 64-byte blocks, portable.
inline void sha256_compress_sw(std::uint32_t* h_, const unsigned char* p, std::size_t blocks) noexcept {
  constexpr auto rotr = [](std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); };
  for (; blocks > 0; --blocks, p += 64) {
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (std::uint32_t{p[4 * i]} << 24) | (std::uint32_t{p[4 * i + 1]} << 16) |
             (std::uint32_t{p[4 * i + 2]} << 8) | std::uint32_t{p[4 * i + 3]};
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t t1 =
          h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
      const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    h_[5] += f;
    h_[6] += g;
    h_[7] += h;
  }
}

#ifdef LATENTAUDIT_SHA_NI
/// @brief SHA-256 compression with the x86 SHA extensions: the state is kept as (ABEF, CDGH), each
/// sha256rnds2 does two rounds, and sha256msg1/msg2 extend the message schedule four words at a
/// time (W[g] from W[g−4], W[g−3], W[g−2], W[g−1] in groups of four words).
__attribute__((target("sha,sse4.1,ssse3"))) inline void sha256_compress_ni(std::uint32_t* h,
                                                                           const unsigned char* p,
                                                                           std::size_t blocks) noexcept {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)), 0xB1);     // CDAB
  __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4)), 0x1B);  // EFGH
  __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);                                                        // ABEF
  s1 = _mm_blend_epi16(s1, tmp, 0xF0);                                                             // CDGH
  for (; blocks > 0; --blocks, p += 64) {
    const __m128i abef = s0, cdgh = s1;
    __m128i w[4];
#pragma GCC unroll 16
    for (int g = 0; g < 16; ++g) {
      if (g < 4) {
        w[g] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)), bswap);
      } else {
        __m128i x = _mm_sha256msg1_epu32(w[(g - 4) & 3], w[(g - 3) & 3]);
        x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g - 1) & 3], w[(g - 2) & 3], 4));
        w[g & 3] = _mm_sha256msg2_epu32(x, w[(g - 1) & 3]);
      }
      __m128i m = _mm_add_epi32(w[g & 3], _mm_load_si128(reinterpret_cast<const __m128i*>(sha256_k + 4 * g)));
      s1 = _mm_sha256rnds2_epu32(s1, s0, m);
      m = _mm_shuffle_epi32(m, 0x0E);
      s0 = _mm_sha256rnds2_epu32(s0, s1, m);
    }
    s0 = _mm_add_epi32(s0, abef);
    s1 = _mm_add_epi32(s1, cdgh);
  }
  tmp = _mm_shuffle_epi32(s0, 0x1B);    // FEBA
  s1 = _mm_shuffle_epi32(s1, 0xB1);     // DCHG
  s0 = _mm_blend_epi16(tmp, s1, 0xF0);  // DCBA
  s1 = _mm_alignr_epi8(s1, tmp, 8);     // HGFE
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), s0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), s1);
}

/// @brief Whether the processor has the SHA extensions (CPUID.(EAX=7,ECX=0):EBX bit 29) and SSE4.1.
inline bool have_sha_ni() noexcept {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    return (b & (1u << 29)) != 0 && __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("ssse3");
  }();
  return yes;
}
#endif

/// @brief SHA-256 compression of `blocks` blocks, on the SHA extensions when present.
inline void sha256_compress(std::uint32_t* h, const unsigned char* p, std::size_t blocks) noexcept {
#ifdef LATENTAUDIT_SHA_NI
  if (have_sha_ni()) return sha256_compress_ni(h, p, blocks);
#endif
  sha256_compress_sw(h, p, blocks);
}

}  // namespace detail

/// @brief Streaming CRC32C (iSCSI polynomial, as in RFC 3720): crc32c("123456789") = 0xE3069283.
class crc32c {
 public:
  /// @brief Feeds bytes.
  void update(std::span<const std::byte> bytes) noexcept {
    state_ =
        detail::crc32c_update(state_, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  }
  /// @brief Copies n bytes from s to d (not overlapping) and feeds them, in one pass with
  /// streaming stores (detail::crc32c_copy_stream). Requires detail::crc32c_copy_fused().
  void copy_stream(std::byte* d, const std::byte* s, std::size_t n) noexcept {
    state_ = detail::crc32c_copy_stream(state_, d, s, n);
  }
  /// @brief The checksum of everything fed so far.
  [[nodiscard]] std::uint32_t value() const noexcept { return ~state_; }
  /// @brief One-shot checksum.
  [[nodiscard]] static std::uint32_t of(std::span<const std::byte> bytes) noexcept {
    crc32c c;
    c.update(bytes);
    return c.value();
  }

 private:
  std::uint32_t state_ = 0xFFFFFFFFu;
};

/// @brief Streaming SHA-256 (FIPS 180-4).
class sha256 {
 public:
  using digest = std::array<std::byte, 32>;  ///< a 256-bit digest

  /// @brief Feeds bytes.
  void update(std::span<const std::byte> bytes) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    std::size_t n = bytes.size();
    if (n == 0) return;  // an empty span may carry a null pointer, which memcpy must not see
    length_ += n;
    if (fill_ > 0) {
      const std::size_t take = n < 64 - fill_ ? n : 64 - fill_;
      std::memcpy(buf_ + fill_, p, take);
      fill_ += take;
      p += take;
      n -= take;
      if (fill_ == 64) {
        detail::sha256_compress(h_, buf_, 1);
        fill_ = 0;
      }
    }
    if (n >= 64) {
      detail::sha256_compress(h_, p, n / 64);
      p += n / 64 * 64;
      n %= 64;
    }
    if (n > 0) {
      std::memcpy(buf_, p, n);
      fill_ = n;
    }
  }
  /// @brief Feeds the bytes of a string.
  void update(std::string_view s) noexcept { update(std::as_bytes(std::span(s.data(), s.size()))); }

  /// @brief Finishes and returns the digest (the object must not be updated afterwards).
  [[nodiscard]] digest finish() noexcept {
    const std::uint64_t bits = length_ * 8;
    unsigned char pad[72] = {0x80};
    const std::size_t padlen = (fill_ < 56 ? 56 - fill_ : 120 - fill_);
    for (int i = 0; i < 8; ++i)
      pad[padlen + static_cast<std::size_t>(i)] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(std::as_bytes(std::span(pad, padlen + 8)));
    digest d;
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 4; ++j)
        d[static_cast<std::size_t>(4 * i + j)] = static_cast<std::byte>(h_[i] >> (24 - 8 * j));
    return d;
  }
  /// @brief One-shot digest.
  [[nodiscard]] static digest of(std::span<const std::byte> bytes) noexcept {
    sha256 s;
    s.update(bytes);
    return s.finish();
  }

 private:
  std::uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char buf_[64] = {};
  std::size_t fill_ = 0;
  std::uint64_t length_ = 0;
};

/// @brief Streaming HMAC-SHA256 (RFC 2104) with a caller-supplied key of any length.
class hmac_sha256 {
 public:
  /// @brief Starts a MAC under `key`.
  explicit hmac_sha256(std::span<const std::byte> key) noexcept {
    unsigned char k[64] = {};
    if (key.size() > 64) {
      const auto d = sha256::of(key);
      std::memcpy(k, d.data(), 32);
    } else if (!key.empty()) {
      std::memcpy(k, key.data(), key.size());
    }
    unsigned char ipad[64];
    for (int i = 0; i < 64; ++i) {
      ipad[i] = static_cast<unsigned char>(k[i] ^ 0x36);
      opad_[i] = static_cast<unsigned char>(k[i] ^ 0x5c);
    }
    inner_.update(std::as_bytes(std::span(ipad)));
  }
  /// @brief Feeds message bytes.
  void update(std::span<const std::byte> bytes) noexcept { inner_.update(bytes); }
  /// @brief The tag.
  [[nodiscard]] sha256::digest finish() noexcept {
    const auto ih = inner_.finish();
    sha256 outer;
    outer.update(std::as_bytes(std::span(opad_)));
    outer.update(ih);
    return outer.finish();
  }

 private:
  sha256 inner_;
  unsigned char opad_[64];
};

/// @brief Constant-time comparison of two digests (no early exit on the first difference).
[[nodiscard]] inline bool digest_equal(std::span<const std::byte> a, std::span<const std::byte> b) noexcept {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

/// @brief Lower-case hexadecimal text of bytes, two digits a byte (e.g. a sha256 digest as the
/// 64-character identities in design.json and the records).
[[nodiscard]] inline std::string to_hex(std::span<const std::byte> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string h;
  h.reserve(2 * bytes.size());
  for (const auto b : bytes) {
    h.push_back(digits[static_cast<unsigned>(b) >> 4]);
    h.push_back(digits[static_cast<unsigned>(b) & 0xF]);
  }
  return h;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_HASH_HPP
