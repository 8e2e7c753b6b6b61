// SPDX-License-Identifier: MIT
// latentaudit: the counter-based random generator (Philox4x32-10) and stream derivation.
//
// Every random stream in the library is a pure function of (seed, item, arm, replicate): the
// Philox key is a 64-bit mix of (seed, item), the two high counter words hold arm and replicate,
// and the two low counter words count 128-bit blocks inside the stream. Any worker can therefore
// produce any stream, at any position, in any order: results are bit-identical for every thread
// count and execution order. Bulk normals for noise (bulk_normal_batch) take one Philox block per
// batch of 1024 deviates and expand it with SplitMix64 (still a pure function of the stream and
// the element index; see docs/kv-transfer.md).
#ifndef LATENTAUDIT_CORE_RNG_HPP
#define LATENTAUDIT_CORE_RNG_HPP

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>
#include <utility>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wuninitialized reports
// where they are inlined; the diagnostics are located in the header, so silence them there.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

namespace latentaudit {

/// @brief Identifies one random stream: an experiment seed, the item (task), the arm, and a
/// replicate (bootstrap replicate, layer, seed index — whatever the caller iterates over).
struct stream_id {
  std::uint64_t seed = 0;       ///< the experiment's master seed
  std::uint64_t item = 0;       ///< item (task) index
  std::uint32_t arm = 0;        ///< arm index
  std::uint32_t replicate = 0;  ///< replicate / layer / sub-stream index
};

namespace detail {
/// @brief SplitMix64 finaliser: a bijective 64-bit mixer (Steele, Lea & Flood 2014).
constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
}  // namespace detail

/// @brief Philox4x32-10 (Salmon, Moraes, Dror & Shaw, SC'11 "Parallel random numbers: as easy as
/// 1, 2, 3"), a counter-based generator: block(counter, key) is a bijection of the 128-bit counter
/// for each 64-bit key, passing BigCrush. Satisfies std::uniform_random_bit_generator.
class philox4x32 {
 public:
  using result_type = std::uint32_t;                  ///< one 32-bit word per call
  using counter_type = std::array<std::uint32_t, 4>;  ///< the 128-bit counter
  using key_type = std::array<std::uint32_t, 2>;      ///< the 64-bit key

  /// @brief Generator with the given key and counter (low 64 bits = block index).
  constexpr explicit philox4x32(key_type key = {0, 0}, counter_type counter = {0, 0, 0, 0}) noexcept
      : key_(key), ctr_(counter) {}

  /// @brief The generator of a stream: key = mix(seed, item), counter = (0, 0, arm, replicate).
  static constexpr philox4x32 for_stream(const stream_id& s) noexcept {
    const std::uint64_t k = detail::mix64(detail::mix64(s.seed ^ 0x6C61746E61756469ULL) ^ s.item);
    return philox4x32({static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(k >> 32)},
                      {0, 0, s.arm, s.replicate});
  }

  /// @brief The raw Philox4x32-10 bijection of one counter under one key.
  static constexpr counter_type block(counter_type ctr, key_type key) noexcept {
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        key[0] += 0x9E3779B9u;
        key[1] += 0xBB67AE85u;
      }
      const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * ctr[0];
      const std::uint64_t p1 = std::uint64_t{0xCD9E8D57u} * ctr[2];
      ctr = {static_cast<std::uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<std::uint32_t>(p1),
             static_cast<std::uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<std::uint32_t>(p0)};
    }
    return ctr;
  }

  /// @brief The 128 random bits of block `index` of this stream (random access, no state change).
  [[nodiscard]] constexpr counter_type block_at(std::uint64_t index) const noexcept {
    return block(
        {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), ctr_[2], ctr_[3]}, key_);
  }

  /// @brief Next 32 random bits.
  constexpr result_type operator()() noexcept {
    if (used_ == 4) refill();
    return buf_[used_++];
  }

  /// @brief Next 64 random bits (two consecutive words, low word first).
  constexpr std::uint64_t next_u64() noexcept {
    const std::uint64_t lo = (*this)();
    const std::uint64_t hi = (*this)();
    return lo | (hi << 32);
  }

  /// @brief Skips n 32-bit words in O(1).
  constexpr void discard(std::uint64_t n) noexcept {
    const std::uint64_t pos = position() + n;
    set_block(pos / 4);
    used_ = 4;
    if (pos % 4 != 0) {
      refill();
      used_ = static_cast<unsigned>(pos % 4);
    }
  }

  /// @brief Number of 32-bit words consumed so far in this stream.
  [[nodiscard]] constexpr std::uint64_t position() const noexcept {
    const std::uint64_t blk = std::uint64_t{ctr_[0]} | (std::uint64_t{ctr_[1]} << 32);
    return used_ == 4 ? blk * 4 : (blk - 1) * 4 + used_;
  }

  /// @brief The key (for records and tests).
  [[nodiscard]] constexpr key_type key() const noexcept { return key_; }
  /// @brief The two fixed high counter words (arm and replicate of a stream).
  [[nodiscard]] constexpr std::array<std::uint32_t, 2> counter_words() const noexcept {
    return {ctr_[2], ctr_[3]};
  }

  /// @brief Smallest value returned.
  static constexpr result_type min() noexcept { return 0; }
  /// @brief Largest value returned.
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

 private:
  constexpr void set_block(std::uint64_t b) noexcept {
    ctr_[0] = static_cast<std::uint32_t>(b);
    ctr_[1] = static_cast<std::uint32_t>(b >> 32);
  }
  constexpr void refill() noexcept {
    buf_ = block(ctr_, key_);
    const std::uint64_t b = (std::uint64_t{ctr_[0]} | (std::uint64_t{ctr_[1]} << 32)) + 1;
    set_block(b);
    used_ = 0;
  }

  key_type key_;
  counter_type ctr_;    // next block to generate (low 64 bits) and stream words
  counter_type buf_{};  // current block
  unsigned used_ = 4;   // words of buf_ already returned
};

/// @brief The generator of stream (seed, item, arm, replicate).
[[nodiscard]] constexpr philox4x32 make_stream(const stream_id& s) noexcept {
  return philox4x32::for_stream(s);
}

/// @brief Uniform double in [0, 1) with 53 random bits.
template <class Engine>
[[nodiscard]] inline double uniform01(Engine& g) noexcept {
  return static_cast<double>(g.next_u64() >> 11) * 0x1.0p-53;
}

/// @brief Uniform double in (0, 1): never 0, so log() is safe.
template <class Engine>
[[nodiscard]] inline double uniform_open01(Engine& g) noexcept {
  return (static_cast<double>(g.next_u64() >> 11) + 0.5) * 0x1.0p-53;
}

/// @brief Unbiased uniform integer in [0, n), n >= 1, by Lemire's multiply-and-reject
/// (ACM TOMACS 2019). Uses one 32-bit word except with probability < n / 2^32.
/// @pre 1 <= n <= 2^32 - 1.
template <class Engine>
[[nodiscard]] inline std::uint32_t uniform_index(Engine& g, std::uint32_t n) noexcept {
  std::uint64_t m = std::uint64_t{g()} * n;
  auto low = static_cast<std::uint32_t>(m);
  if (low < n) [[unlikely]] {
    const std::uint32_t threshold = static_cast<std::uint32_t>(-n) % n;
    while (low < threshold) {
      m = std::uint64_t{g()} * n;
      low = static_cast<std::uint32_t>(m);
    }
  }
  return static_cast<std::uint32_t>(m >> 32);
}

/// @brief Standard normal deviate by the Box–Muller transform, consuming exactly four 32-bit
/// words per call (the sine branch is discarded so the word count per deviate is fixed).
template <class Engine>
[[nodiscard]] inline double standard_normal(Engine& g) noexcept {
  const double u1 = uniform_open01(g);
  const double u2 = uniform01(g);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// ---- bulk normals in binary32 ------------------------------------------------------------------

/// @brief Deviates per standard_normal_batch call: 256 Philox blocks, four deviates a block.
inline constexpr std::size_t normal_batch_size = 1024;

namespace detail {

/// @brief Philox4x32-10 of blocks first, …, first + n − 1 of a stream (key k0, k1; counter words
/// 2 and 3 fixed), word-major: w[j·n + i] is word j of block first + i. Written so that the
/// compiler vectorizes it across blocks.
[[gnu::always_inline]] inline void philox_blocks_body(std::uint32_t k0, std::uint32_t k1, std::uint32_t c2,
                                                      std::uint32_t c3, std::uint64_t first, std::size_t n,
                                                      std::uint32_t* w) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t b = first + i;
    std::uint32_t x0 = static_cast<std::uint32_t>(b), x1 = static_cast<std::uint32_t>(b >> 32), x2 = c2,
                  x3 = c3;
    std::uint32_t ka = k0, kb = k1;
#pragma GCC unroll 10
    for (int r = 0; r < 10; ++r) {
      const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * x0;
      const std::uint64_t p1 = std::uint64_t{0xCD9E8D57u} * x2;
      const std::uint32_t y0 = static_cast<std::uint32_t>(p1 >> 32) ^ x1 ^ ka,
                          y1 = static_cast<std::uint32_t>(p1);
      const std::uint32_t y2 = static_cast<std::uint32_t>(p0 >> 32) ^ x3 ^ kb,
                          y3 = static_cast<std::uint32_t>(p0);
      x0 = y0;
      x1 = y1;
      x2 = y2;
      x3 = y3;
      ka += 0x9E3779B9u;
      kb += 0xBB67AE85u;
    }
    w[i] = x0;
    w[n + i] = x1;
    w[2 * n + i] = x2;
    w[3 * n + i] = x3;
  }
}

/// @brief c ? a : b by bit masks (if-converted and vectorized even under -ftrapping-math).
[[gnu::always_inline]] inline float select_bits(bool c, float a, float b) noexcept {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<std::uint32_t>(a) & m) | (std::bit_cast<std::uint32_t>(b) & ~m));
}

/// @brief ln x for x in [2^-126, 1] (Cephes logf: relative error below 2·10⁻⁷), vectorizable.
[[gnu::always_inline]] inline float bulk_logf(float x) noexcept {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
  float e = static_cast<float>(static_cast<std::int32_t>((b >> 23) & 0xFFu) - 126);
  float m = std::bit_cast<float>((b & 0x007FFFFFu) | 0x3F000000u);  // [0.5, 1)
  const bool small = m < 0.707106781186547524f;
  e = select_bits(small, e - 1.0f, e);
  m = select_bits(small, m + m - 1.0f, m - 1.0f);
  const float z = m * m;
  float p = 7.0376836292e-2f;
  p = p * m - 1.1514610310e-1f;
  p = p * m + 1.1676998740e-1f;
  p = p * m - 1.2420140846e-1f;
  p = p * m + 1.4249322787e-1f;
  p = p * m - 1.6668057665e-1f;
  p = p * m + 2.0000714765e-1f;
  p = p * m - 2.4999993993e-1f;
  p = p * m + 3.3333331174e-1f;
  float y = m * (z * p);
  y += e * -2.12194440e-4f;
  y += -0.5f * z;
  y = m + y;
  return y + e * 0.693359375f;
}

/// @brief √v for v in [0, 100] by three Newton steps on 1/√v (relative error below 3·10⁻⁷);
/// std::sqrt would not vectorize without -fno-math-errno. √0 gives 10⁻¹⁵.
[[gnu::always_inline]] inline float bulk_sqrtf(float v) noexcept {
  v = select_bits(v > 1e-30f, v, 1e-30f);
  float y = std::bit_cast<float>(0x5F375A86u - (std::bit_cast<std::uint32_t>(v) >> 1));
  const float h = 0.5f * v;
  y = y * (1.5f - h * y * y);
  y = y * (1.5f - h * y * y);
  y = y * (1.5f - h * y * y);
  return v * y;
}

/// @brief Four standard normal deviates per Philox block by the Box–Muller transform in binary32:
/// words (a, b) give r = √(−2 ln u), u = (⌊a/2⌋ + 2^−2)·2^−31 ∈ (0, 1], and the angle
/// φ = (π/2)(q + f) − π/4 with q the top two bits of b and f its other 30 bits as a fraction
/// (a rotation of the uniform angle by π/4, which leaves the distribution unchanged); sin and cos
/// on [−π/4, π/4) by Cephes' polynomials (error below 2·10⁻⁷), |z| ≤ 6.8. Output is component-
/// major: out[k·n + i] is deviate k (r_A cos φ_A, r_A sin φ_A, r_B cos φ_B, r_B sin φ_B) of block i.
[[gnu::always_inline]] inline void normals_from_words_body(const std::uint32_t* w, std::size_t n,
                                                           float* out) noexcept {
  for (std::size_t pair = 0; pair < 2; ++pair) {
    const std::uint32_t* wa = w + 2 * pair * n;
    const std::uint32_t* wb = wa + n;
    float* oc = out + 2 * pair * n;
    float* os = oc + n;
    for (std::size_t i = 0; i < n; ++i) {
      const float u = (static_cast<float>(static_cast<std::int32_t>(wa[i] >> 1)) + 0.25f) * 0x1p-31f;
      const float r = bulk_sqrtf(-2.0f * bulk_logf(u));
      const std::uint32_t q = wb[i] >> 30;
      const float f = static_cast<float>(static_cast<std::int32_t>(wb[i] & 0x3FFFFFFFu)) * 0x1p-30f;
      const float t = (f - 0.5f) * 1.57079632679489662f;  // [−π/4, π/4)
      const float z = t * t;
      const float sn = t + t * z * ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f);
      const float cs =
          1.0f - 0.5f * z +
          z * z * ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f);
      // rotate by q quarter turns: (cos, sin) of q·π/2 + t
      const bool odd = (q & 1u) != 0;
      const float a = select_bits(odd, sn, cs), b = select_bits(odd, cs, sn);
      const std::uint32_t flip_cos = ((q + 1u) >> 1) & 1u, flip_sin = q >> 1;
      oc[i] = r * std::bit_cast<float>(std::bit_cast<std::uint32_t>(a) ^ (flip_cos << 31));
      os[i] = r * std::bit_cast<float>(std::bit_cast<std::uint32_t>(b) ^ (flip_sin << 31));
    }
  }
}

[[gnu::always_inline]] inline void normal_batch_body(std::uint32_t k0, std::uint32_t k1, std::uint32_t c2,
                                                     std::uint32_t c3, std::uint64_t batch,
                                                     float* out) noexcept {
  constexpr std::size_t n = normal_batch_size / 4;
  alignas(64) std::uint32_t w[4 * n];
  philox_blocks_body(k0, k1, c2, c3, batch * n, n, w);
  normals_from_words_body(w, n, out);
}

/// @brief Tests set this to run the portable kernels (normals, bulk noise) on machines with AVX2 too.
inline bool force_portable_normals = false;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) inline void normal_batch_avx2(std::uint32_t k0, std::uint32_t k1,
                                                              std::uint32_t c2, std::uint32_t c3,
                                                              std::uint64_t batch, float* out) noexcept {
  normal_batch_body(k0, k1, c2, c3, batch, out);
}
#if !defined(__clang__)
// Philox is integer arithmetic: its AVX-512 clone gives the same bits as every other. (The
// binary32 transform stays AVX2: AVX-512 implies FMA, and contracted products would change bits.)
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,prefer-vector-width=512"))) inline void
philox_blocks_avx512(std::uint32_t k0, std::uint32_t k1, std::uint32_t c2, std::uint32_t c3,
                     std::uint64_t first, std::size_t n, std::uint32_t* w) noexcept {
  philox_blocks_body(k0, k1, c2, c3, first, n, w);
}
__attribute__((target("avx2"))) inline void normals_from_words_avx2(const std::uint32_t* w, std::size_t n,
                                                                    float* out) noexcept {
  normals_from_words_body(w, n, out);
}
inline bool normals_have_avx512() noexcept {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx2");
  return yes && !force_portable_normals;
}
#define LATENTAUDIT_PHILOX_AVX512 1
#endif
inline bool normals_have_avx2() noexcept {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes && !force_portable_normals;
}
#endif

}  // namespace detail

/// @brief Batch `batch` of standard normal deviates in binary32 of the stream of generator g
/// (its key and counter words 2, 3; its position is ignored): normal_batch_size deviates from
/// Philox blocks 256·batch … 256·batch + 255, four a block by Box–Muller in binary32 (see
/// detail::normals_from_words_body; density and moments as the normal's to the
/// accuracy of binary32; |z| ≤ 6.8). A pure function of (stream, batch): bulk noise for any thread count.
///
/// @code
/// const auto g = make_stream({.seed = 31});
/// std::array<float, normal_batch_size> z;
/// standard_normal_batch(g, 17, z);  // deviates 17 408 … 18 431 of the stream, the same on every run
/// @endcode
inline void standard_normal_batch(const philox4x32& g, std::uint64_t batch,
                                  std::span<float, normal_batch_size> out) noexcept {
  const auto key = g.key();
  const auto words = g.counter_words();
#ifdef LATENTAUDIT_PHILOX_AVX512
  if (detail::normals_have_avx512()) {
    constexpr std::size_t n = normal_batch_size / 4;
    alignas(64) std::uint32_t w[4 * n];
    detail::philox_blocks_avx512(key[0], key[1], words[0], words[1], batch * n, n, w);
    detail::normals_from_words_avx2(w, n, out.data());
    return;
  }
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (detail::normals_have_avx2()) {
    detail::normal_batch_avx2(key[0], key[1], words[0], words[1], batch, out.data());
    return;
  }
#endif
  detail::normal_batch_body(key[0], key[1], words[0], words[1], batch, out.data());
}

// ---- bulk normals for noise: one Philox block a batch, SplitMix64 within it -------------------

/// @brief Deviates per bulk_normal_batch call (stream elements 1024·batch … 1024·batch + 1023).
inline constexpr std::size_t bulk_normal_batch_size = 1024;

namespace detail {

/// @brief The Weyl increment of SplitMix64 (2^64 / golden ratio, odd).
inline constexpr std::uint64_t bulk_gamma = 0x9E3779B97F4A7C15ULL;

/// @brief Seed of bulk batch `batch` of the stream of g: words 0 and 1 of its Philox4x32-10
/// block `batch` (so every batch of every stream starts at an independent random point of the
/// SplitMix64 sequence).
[[nodiscard]] constexpr std::uint64_t bulk_batch_seed(const philox4x32& g, std::uint64_t batch) noexcept {
  const auto w = g.block_at(batch);
  return std::uint64_t{w[0]} | (std::uint64_t{w[1]} << 32);
}

/// @brief One Box–Muller pair in binary32 from a radius word uw and an angle word aw, written so
/// that no product feeds a sum except through an explicit fused multiply-add (std::fma here,
/// the FMA instruction in the vector kernels): the AVX-512, AVX2 and portable kernels therefore
/// round identically, whatever the compiler's -ffp-contract. r = √(−2 ln u) with
/// u = (⌊uw/2⌋ + 2^−2)·2^−31 ∈ (0, 1] (ln by Cephes' logf polynomial, √ correctly rounded);
/// φ = (π/2)(q + f) − π/4 with q the top two bits of aw and f its low 30 bits as a fraction, a
/// rotation of the uniform angle by π/4 (sin, cos on [−π/4, π/4] by Cephes' polynomials).
/// c = r cos φ, s = r sin φ; |c|, |s| ≤ 6.8.
[[gnu::always_inline]] inline void bulk_pair(std::uint32_t uw, std::uint32_t aw, float& c,
                                             float& s) noexcept {
  const float u = std::fma(static_cast<float>(static_cast<std::int32_t>(uw >> 1)), 0x1p-31f, 0x1p-33f);
  // ln u = e·ln 2 + log1p(x): u = M·2^E, M ∈ [1, 2); x = M − 1 when M < √2, else M/2 − 1 (e = E + 1)
  const std::uint32_t b = std::bit_cast<std::uint32_t>(u);
  const std::uint32_t sig = b & 0x007FFFFFu;
  const bool hi = sig >= 0x003504F3u;
  const float x = std::bit_cast<float>(sig | (hi ? 0x3F000000u : 0x3F800000u)) - 1.0f;
  const float e =
      static_cast<float>(static_cast<std::int32_t>(b >> 23) - 127 + static_cast<std::int32_t>(hi));
  const float z = x * x;
  float p = 7.0376836292e-2f;
  p = std::fma(p, x, -1.1514610310e-1f);
  p = std::fma(p, x, 1.1676998740e-1f);
  p = std::fma(p, x, -1.2420140846e-1f);
  p = std::fma(p, x, 1.4249322787e-1f);
  p = std::fma(p, x, -1.6668057665e-1f);
  p = std::fma(p, x, 2.0000714765e-1f);
  p = std::fma(p, x, -2.4999993993e-1f);
  p = std::fma(p, x, 3.3333331174e-1f);
  const float zp = z * p;
  float y = x * zp;
  y = std::fma(e, -2.12194440e-4f, y);
  y = std::fma(-0.5f, z, y);
  y = x + y;
  y = std::fma(e, 0.693359375f, y);
  const float r = std::sqrt(y * -2.0f);
  // angle
  const float f = static_cast<float>(static_cast<std::int32_t>(aw & 0x3FFFFFFFu));
  const float t = std::fma(f, 0x1.921FB6p-30f, -0x1.921FB6p-1f);  // (π/2)·2^−30, −π/4
  const float t2 = t * t;
  const float ps = std::fma(std::fma(-1.9515295891e-4f, t2, 8.3321608736e-3f), t2, -1.6666654611e-1f);
  const float tt2 = t * t2;
  const float sn = std::fma(tt2, ps, t);
  const float pc =
      std::fma(std::fma(2.443315711809948e-5f, t2, -1.388731625493765e-3f), t2, 4.166664568298827e-2f);
  const float t4 = t2 * t2;
  const float cs = std::fma(t4, pc, std::fma(-0.5f, t2, 1.0f));
  // rotate by q quarter turns: cos(qπ/2 + t) = ±(cs | sn), sin(qπ/2 + t) = ±(sn | cs)
  const bool odd = (aw & 0x40000000u) != 0;
  const float a = odd ? sn : cs, bb = odd ? cs : sn;
  const std::uint32_t rb = std::bit_cast<std::uint32_t>(r);
  const float rc = std::bit_cast<float>(rb ^ ((aw ^ (aw << 1)) & 0x80000000u));
  const float rs = std::bit_cast<float>(rb ^ (aw & 0x80000000u));
  c = rc * a;
  s = rs * bb;
}

/// @brief The 16 SplitMix64 outputs of group `group` (0…31) of a bulk batch with seed `seed`:
/// h[j] = mix64(seed + (16·group + j + 1)·γ).
[[gnu::always_inline]] inline void bulk_group_hashes(std::uint64_t seed, std::size_t group,
                                                     std::uint64_t* h) noexcept {
  for (std::size_t j = 0; j < 16; ++j) h[j] = mix64(seed + (16 * group + j + 1) * bulk_gamma);
}

/// @brief Portable kernel: the 32 deviates of group `group` of a bulk batch, in element order.
/// Pair i (0…15) takes its radius word from 32-bit half i mod 2 of h[i/2] and its angle word
/// from the same half of h[8 + i/2]; it gives elements 2i (r cos φ) and 2i + 1 (r sin φ).
inline void bulk_group_portable(std::uint64_t seed, std::size_t group, float* out) noexcept {
  std::uint64_t h[16];
  bulk_group_hashes(seed, group, h);
  for (std::size_t i = 0; i < 16; ++i) {
    const unsigned shift = 32u * static_cast<unsigned>(i & 1u);
    bulk_pair(static_cast<std::uint32_t>(h[i >> 1] >> shift),
              static_cast<std::uint32_t>(h[8 + (i >> 1)] >> shift), out[2 * i], out[2 * i + 1]);
  }
}

/// @brief Tests set this to skip the AVX-512 kernels (bulk normals, fused bf16 noise), so that
/// the AVX2 ones can be compared with them on an AVX-512 machine.
inline bool force_avx2_normals = false;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/// @brief Whether the AVX2+FMA bulk kernels run (CPU support, not forced portable).
inline bool bulk_have_avx2_fma() noexcept {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes && !force_portable_normals;
}
/// @brief Groups g0 … g1 − 1 of a bulk batch in element order: the portable code compiled for AVX2+FMA.
__attribute__((target("avx2,fma"))) inline void bulk_groups_avx2(std::uint64_t seed, std::size_t g0,
                                                                 std::size_t g1, float* out) noexcept {
  for (std::size_t g = g0; g < g1; ++g) {
    std::uint64_t h[16];
    bulk_group_hashes(seed, g, h);
    for (std::size_t i = 0; i < 16; ++i) {
      const unsigned shift = 32u * static_cast<unsigned>(i & 1u);
      bulk_pair(static_cast<std::uint32_t>(h[i >> 1] >> shift),
                static_cast<std::uint32_t>(h[8 + (i >> 1)] >> shift), out[32 * (g - g0) + 2 * i],
                out[32 * (g - g0) + 2 * i + 1]);
    }
  }
}

// GCC 12 reports its own AVX-512 intrinsics' _mm512_undefined_*() as uninitialized where they
// are inlined (when <immintrin.h> was first included without the pragmas above).
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define LATENTAUDIT_BULK_AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma,avx2")))
/// @brief Whether the AVX-512 bulk kernels run (CPU support, not forced portable or AVX2).
inline bool bulk_have_avx512() noexcept {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("fma");
  return yes && !force_portable_normals && !force_avx2_normals;
}

#define LATENTAUDIT_BULK_EACH _Pragma("GCC unroll 4") for (int k = 0; k < N; ++k)

/// @brief mix64 on N vectors of eight 64-bit lanes (interleaved: N independent chains).
template <int N>
[[gnu::always_inline]] LATENTAUDIT_BULK_AVX512_TARGET inline void mix64_avx512(__m512i* z) noexcept {
  const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(0xBF58476D1CE4E5B9ULL));
  const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(0x94D049BB133111EBULL));
  LATENTAUDIT_BULK_EACH z[k] = _mm512_mullo_epi64(_mm512_xor_si512(z[k], _mm512_srli_epi64(z[k], 30)), m1);
  LATENTAUDIT_BULK_EACH z[k] = _mm512_mullo_epi64(_mm512_xor_si512(z[k], _mm512_srli_epi64(z[k], 27)), m2);
  LATENTAUDIT_BULK_EACH z[k] = _mm512_xor_si512(z[k], _mm512_srli_epi64(z[k], 31));
}

/// @brief v in every lane.
[[gnu::always_inline]] LATENTAUDIT_BULK_AVX512_TARGET inline __m512 bulk_set1(float v) noexcept {
  return _mm512_set1_ps(v);
}

/// @brief N × 16 Box–Muller pairs (bulk_pair on 16 lanes, the same operations in the same
/// order), the N groups interleaved so that their dependency chains overlap: radius words hu[k],
/// angle words ha[k]; cos deviates to zc[k], sin deviates to zs[k].
template <int N>
[[gnu::always_inline]] LATENTAUDIT_BULK_AVX512_TARGET inline void bulk_pairs_avx512(const __m512i* hu,
                                                                                    const __m512i* ha,
                                                                                    __m512* zc,
                                                                                    __m512* zs) noexcept {
  __m512 x[N], e[N], z[N], p[N], y[N], r[N], t[N], t2[N], sn[N], cs[N];
  LATENTAUDIT_BULK_EACH {
    const __m512 u = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(hu[k], 1)), bulk_set1(0x1p-31f),
                                     bulk_set1(0x1p-33f));
    // u is normal and positive: getmant gives M (the significand bits under exponent 0, exactly
    // the portable kernel's sig | 0x3F800000) and getexp gives E, both exact. M ≥ √2 (the
    // portable test sig ≥ 0x3504F3) halves M (exactly) and adds one to E.
    const __m512 m = _mm512_getmant_ps(u, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_src);
    const __mmask16 hi = _mm512_cmp_ps_mask(m, bulk_set1(0x1.6A09E6p+0f), _CMP_GE_OQ);
    x[k] = _mm512_sub_ps(_mm512_mask_mul_ps(m, hi, m, bulk_set1(0.5f)), bulk_set1(1.0f));
    const __m512 e0 = _mm512_getexp_ps(u);
    e[k] = _mm512_mask_add_ps(e0, hi, e0, bulk_set1(1.0f));
  }
  LATENTAUDIT_BULK_EACH z[k] = _mm512_mul_ps(x[k], x[k]);
  LATENTAUDIT_BULK_EACH p[k] =
      _mm512_fmadd_ps(bulk_set1(7.0376836292e-2f), x[k], bulk_set1(-1.1514610310e-1f));
  LATENTAUDIT_BULK_EACH p[k] = _mm512_fmadd_ps(p[k], x[k], bulk_set1(1.1676998740e-1f));
  LATENTAUDIT_BULK_EACH p[k] = _mm512_fmadd_ps(p[k], x[k], bulk_set1(-1.2420140846e-1f));
  LATENTAUDIT_BULK_EACH p[k] = _mm512_fmadd_ps(p[k], x[k], bulk_set1(1.4249322787e-1f));
  LATENTAUDIT_BULK_EACH p[k] = _mm512_fmadd_ps(p[k], x[k], bulk_set1(-1.6668057665e-1f));
  LATENTAUDIT_BULK_EACH p[k] = _mm512_fmadd_ps(p[k], x[k], bulk_set1(2.0000714765e-1f));
  LATENTAUDIT_BULK_EACH p[k] = _mm512_fmadd_ps(p[k], x[k], bulk_set1(-2.4999993993e-1f));
  LATENTAUDIT_BULK_EACH p[k] = _mm512_fmadd_ps(p[k], x[k], bulk_set1(3.3333331174e-1f));
  LATENTAUDIT_BULK_EACH y[k] = _mm512_mul_ps(x[k], _mm512_mul_ps(z[k], p[k]));
  LATENTAUDIT_BULK_EACH y[k] = _mm512_fmadd_ps(e[k], bulk_set1(-2.12194440e-4f), y[k]);
  LATENTAUDIT_BULK_EACH y[k] = _mm512_fmadd_ps(bulk_set1(-0.5f), z[k], y[k]);
  LATENTAUDIT_BULK_EACH y[k] = _mm512_add_ps(x[k], y[k]);
  LATENTAUDIT_BULK_EACH y[k] = _mm512_fmadd_ps(e[k], bulk_set1(0.693359375f), y[k]);
  LATENTAUDIT_BULK_EACH r[k] = _mm512_sqrt_ps(_mm512_mul_ps(y[k], bulk_set1(-2.0f)));
  LATENTAUDIT_BULK_EACH {
    const __m512 f = _mm512_cvtepi32_ps(_mm512_and_si512(ha[k], _mm512_set1_epi32(0x3FFFFFFF)));
    t[k] = _mm512_fmadd_ps(f, bulk_set1(0x1.921FB6p-30f), bulk_set1(-0x1.921FB6p-1f));
  }
  LATENTAUDIT_BULK_EACH t2[k] = _mm512_mul_ps(t[k], t[k]);
  LATENTAUDIT_BULK_EACH sn[k] =
      _mm512_fmadd_ps(bulk_set1(-1.9515295891e-4f), t2[k], bulk_set1(8.3321608736e-3f));
  LATENTAUDIT_BULK_EACH cs[k] =
      _mm512_fmadd_ps(bulk_set1(2.443315711809948e-5f), t2[k], bulk_set1(-1.388731625493765e-3f));
  LATENTAUDIT_BULK_EACH sn[k] = _mm512_fmadd_ps(sn[k], t2[k], bulk_set1(-1.6666654611e-1f));
  LATENTAUDIT_BULK_EACH cs[k] = _mm512_fmadd_ps(cs[k], t2[k], bulk_set1(4.166664568298827e-2f));
  LATENTAUDIT_BULK_EACH sn[k] = _mm512_fmadd_ps(_mm512_mul_ps(t[k], t2[k]), sn[k], t[k]);
  LATENTAUDIT_BULK_EACH cs[k] = _mm512_fmadd_ps(_mm512_mul_ps(t2[k], t2[k]), cs[k],
                                                _mm512_fmadd_ps(bulk_set1(-0.5f), t2[k], bulk_set1(1.0f)));
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  LATENTAUDIT_BULK_EACH {
    const __mmask16 odd = _mm512_test_epi32_mask(ha[k], _mm512_set1_epi32(0x40000000));
    const __m512 a = _mm512_mask_blend_ps(odd, cs[k], sn[k]), bb = _mm512_mask_blend_ps(odd, sn[k], cs[k]);
    const __m512i rb = _mm512_castps_si512(r[k]);
    // rb ^ ((ha ^ (ha << 1)) & sign);  rb ^ (ha & sign)
    const __m512i rc =
        _mm512_xor_si512(rb, _mm512_ternarylogic_epi32(ha[k], _mm512_slli_epi32(ha[k], 1), sign, 0x28));
    const __m512i rs = _mm512_ternarylogic_epi32(rb, ha[k], sign, 0x78);
    zc[k] = _mm512_mul_ps(_mm512_castsi512_ps(rc), a);
    zs[k] = _mm512_mul_ps(_mm512_castsi512_ps(rs), bb);
  }
}

/// @brief Groups g0 … g1 − 1 of a bulk batch, in element order (cos and sin interleaved).
LATENTAUDIT_BULK_AVX512_TARGET inline void bulk_groups_avx512(std::uint64_t seed, std::size_t g0,
                                                              std::size_t g1, float* out) noexcept {
  const __m512i gam = _mm512_set1_epi64(static_cast<long long>(bulk_gamma));
  const __m512i step = _mm512_set1_epi64(static_cast<long long>(16 * bulk_gamma));
  const __m512i j1 = _mm512_set_epi64(8, 7, 6, 5, 4, 3, 2, 1);
  __m512i s0 = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(seed + 16 * g0 * bulk_gamma)),
                                _mm512_mullo_epi64(j1, gam));
  __m512i s8 = _mm512_add_epi64(s0, _mm512_set1_epi64(static_cast<long long>(8 * bulk_gamma)));
  const __m512i lo_idx = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi_idx = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  std::size_t g = g0;
  for (; g + 2 <= g1; g += 2) {  // two groups at a time (independent chains)
    __m512i h[4] = {s0, _mm512_add_epi64(s0, step), s8, _mm512_add_epi64(s8, step)};
    mix64_avx512<4>(h);
    __m512 zc[2], zs[2];
    bulk_pairs_avx512<2>(h, h + 2, zc, zs);
    for (int k = 0; k < 2; ++k) {
      _mm512_storeu_ps(out + 32 * (g + k - g0), _mm512_permutex2var_ps(zc[k], lo_idx, zs[k]));
      _mm512_storeu_ps(out + 32 * (g + k - g0) + 16, _mm512_permutex2var_ps(zc[k], hi_idx, zs[k]));
    }
    s0 = _mm512_add_epi64(s0, _mm512_add_epi64(step, step));
    s8 = _mm512_add_epi64(s8, _mm512_add_epi64(step, step));
  }
  if (g < g1) {
    __m512i h[2] = {s0, s8};
    mix64_avx512<2>(h);
    __m512 zc[1], zs[1];
    bulk_pairs_avx512<1>(h, h + 1, zc, zs);
    _mm512_storeu_ps(out + 32 * (g - g0), _mm512_permutex2var_ps(zc[0], lo_idx, zs[0]));
    _mm512_storeu_ps(out + 32 * (g - g0) + 16, _mm512_permutex2var_ps(zc[0], hi_idx, zs[0]));
  }
}
#undef LATENTAUDIT_BULK_EACH
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#define LATENTAUDIT_BULK_AVX512 1
#endif

}  // namespace detail

/// @brief Batch `batch` of the bulk standard normal deviates of the stream of generator g (its
/// key and counter words 2, 3; its position is ignored): stream elements 1024·batch …
/// 1024·batch + 1023, in order. The batch's seed S is words 0, 1 of Philox4x32-10 block `batch`
/// of the stream (detail::bulk_batch_seed); group k (0…31) of 32 elements takes the SplitMix64
/// outputs h[j] = mix64(S + (16k + j + 1)·γ), j = 0…15, and turns them into 16 Box–Muller pairs
/// in binary32 (detail::bulk_group_portable, detail::bulk_pair). A pure function of
/// (stream, batch), bit-identical on the AVX-512, AVX2 and portable kernels; this is the noise
/// stream of add_noise. About 5× cheaper a deviate than
/// standard_normal_batch (docs/kv-transfer.md, "The bulk noise stream").
inline void bulk_normal_batch(const philox4x32& g, std::uint64_t batch,
                              std::span<float, bulk_normal_batch_size> out) noexcept {
  const std::uint64_t seed = detail::bulk_batch_seed(g, batch);
#ifdef LATENTAUDIT_BULK_AVX512
  if (detail::bulk_have_avx512()) return detail::bulk_groups_avx512(seed, 0, 32, out.data());
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (detail::bulk_have_avx2_fma()) return detail::bulk_groups_avx2(seed, 0, 32, out.data());
#endif
  for (std::size_t k = 0; k < 32; ++k) detail::bulk_group_portable(seed, k, out.data() + 32 * k);
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_RNG_HPP
