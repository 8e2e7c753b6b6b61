// SPDX-License-Identifier: MIT
// latentaudit: the counter-based random generator (Philox4x32-10) and stream derivation.
//
// Every random stream in the library is a pure function of (seed, item, arm, replicate): the
// Philox key is a 64-bit mix of (seed, item), the two high counter words hold arm and replicate,
// and the two low counter words count 128-bit blocks inside the stream. Any worker can therefore
// produce any stream, at any position, in any order: results are bit-identical for every thread
// count and execution order.
#ifndef LATENTAUDIT_CORE_RNG_HPP
#define LATENTAUDIT_CORE_RNG_HPP

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <utility>

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
  using result_type = std::uint32_t;           ///< one 32-bit word per call
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
    return block({static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), ctr_[2],
                  ctr_[3]},
                 key_);
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
  counter_type ctr_;        // next block to generate (low 64 bits) and stream words
  counter_type buf_{};      // current block
  unsigned used_ = 4;       // words of buf_ already returned
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

/// @brief Two independent standard normal deviates by the Box–Muller transform from exactly
/// four 32-bit words (u1 from the first two, u2 from the next two): (r·cos 2πu2, r·sin 2πu2),
/// r = √(−2 ln u1). Twice the throughput of standard_normal for bulk noise.
template <class Engine>
[[nodiscard]] inline std::pair<double, double> standard_normal_pair(Engine& g) noexcept {
  const double u1 = uniform_open01(g);
  const double u2 = uniform01(g);
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double a = 2.0 * std::numbers::pi * u2;
  return {r * std::cos(a), r * std::sin(a)};
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_RNG_HPP
