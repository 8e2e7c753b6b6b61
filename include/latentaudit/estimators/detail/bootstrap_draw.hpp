// SPDX-License-Identifier: MIT
// latentaudit: fast bootstrap index draws. A buffered reader of one Philox4x32-10 stream that
// yields exactly the word sequence of make_stream(id) (blocks 0, 1, 2, ... in counter order), and
// Lemire's unbiased bounded integers on top of it: draw j of a replicate is bit-identical to the
// j-th call of uniform_index(make_stream(id), n), only faster (16 blocks are generated per refill
// in structure-of-arrays form, which the compiler can keep in registers / vectorise).
#ifndef LATENTAUDIT_ESTIMATORS_DETAIL_BOOTSTRAP_DRAW_HPP
#define LATENTAUDIT_ESTIMATORS_DETAIL_BOOTSTRAP_DRAW_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "../../core/rng.hpp"

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
    if (pos_ == words_per_refill) [[unlikely]] refill();
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

  // Philox4x32-10 on 16 consecutive counters at once (same arithmetic as philox4x32::block).
  void refill() noexcept {
    std::uint32_t c0[blocks_per_refill], c1[blocks_per_refill], c2[blocks_per_refill],
        c3[blocks_per_refill];
    for (unsigned l = 0; l < blocks_per_refill; ++l) {
      const std::uint64_t b = next_block_ + l;
      c0[l] = static_cast<std::uint32_t>(b);
      c1[l] = static_cast<std::uint32_t>(b >> 32);
      c2[l] = arm_;
      c3[l] = replicate_;
    }
    std::uint32_t k0 = key_[0], k1 = key_[1];
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
      }
      for (unsigned l = 0; l < blocks_per_refill; ++l) {
        const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c0[l];
        const std::uint64_t p1 = std::uint64_t{0xCD9E8D57u} * c2[l];
        const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1[l] ^ k0;
        const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3[l] ^ k1;
        c1[l] = static_cast<std::uint32_t>(p1);
        c3[l] = static_cast<std::uint32_t>(p0);
        c0[l] = n0;
        c2[l] = n2;
      }
    }
    for (unsigned l = 0; l < blocks_per_refill; ++l) {
      buf_[4 * l] = c0[l];
      buf_[4 * l + 1] = c1[l];
      buf_[4 * l + 2] = c2[l];
      buf_[4 * l + 3] = c3[l];
    }
    next_block_ += blocks_per_refill;
    pos_ = 0;
  }

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
