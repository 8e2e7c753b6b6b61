// SPDX-License-Identifier: MIT
// latentaudit: placebo caches, as in the causal audit of latent communication (arXiv 2608.04893):
// a relay is compared with caches that keep its presence but not its content.
//   deranged       — another item's cache, through a recorded permutation with no fixed point
//   zeroed         — the same shape, all zeros
//   random         — Gaussian with the real cache's per-(layer, part, head) mean and variance
//   length-matched — any placebo cut or cycled to the real cache's token count
#ifndef LATENTAUDIT_KV_PLACEBO_HPP
#define LATENTAUDIT_KV_PLACEBO_HPP

#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/rng.hpp"
#include "kv_block.hpp"

namespace latentaudit {

/// @brief Kinds of placebo cache.
enum class placebo_kind : std::uint8_t {
  deranged = 1,  ///< another item's cache
  zeroed = 2,    ///< zeros
  random = 3,    ///< moment-matched Gaussian
};

/// @brief Name of a placebo kind.
[[nodiscard]] constexpr std::string_view placebo_kind_name(placebo_kind k) noexcept {
  switch (k) {
    case placebo_kind::deranged:
      return "deranged";
    case placebo_kind::zeroed:
      return "zeroed";
    case placebo_kind::random:
      return "random";
  }
  return "unknown";
}

/// @brief A uniformly random derangement of {0, ..., n−1} (π(i) ≠ i for all i): uniform
/// permutations by Fisher–Yates from stream (seed, item = 0, arm = 3, replicate = attempt),
/// rejected until fixed-point free (expected e ≈ 2.72 attempts).
/// @throws invalid_argument if n < 2 (no derangement exists for n = 1).
[[nodiscard]] inline std::vector<std::size_t> random_derangement(std::size_t n, std::uint64_t seed) {
  detail::check_min_size("random_derangement", "n", n, 2);
  if (n > 0xFFFFFFFFu) detail::throw_invalid("random_derangement", "n", "must be < 2^32");
  std::vector<std::size_t> p(n);
  for (std::uint32_t attempt = 0;; ++attempt) {
    auto g = make_stream({.seed = seed, .item = 0, .arm = 3, .replicate = attempt});
    std::iota(p.begin(), p.end(), std::size_t{0});
    for (std::size_t i = n - 1; i > 0; --i)
      std::swap(p[i], p[uniform_index(g, static_cast<std::uint32_t>(i + 1))]);
    bool ok = true;
    for (std::size_t i = 0; i < n && ok; ++i) ok = p[i] != i;
    if (ok) return p;
  }
}

/// @brief A zeroed copy: same layers, tokens, positions and mask, K = V = 0.
[[nodiscard]] LATENTAUDIT_INLINE kv_block zeroed_placebo(const kv_block& real);

/// @brief A moment-matched random cache: for each (layer, K|V, head), entries N(μ, σ²) with the
/// real cache's mean and (population) variance over its present tokens and dims; positions and
/// mask copied. Stream (seed, item, arm = 4 + part, replicate = layer id).
[[nodiscard]] LATENTAUDIT_INLINE kv_block random_placebo(const kv_block& real, std::uint64_t seed,
                                                         std::uint64_t item);

/// @brief The placebo of kind `k` made from the real cache alone: the one dispatch the trial driver
/// calls for an arm whose plan's transform is arm_transform::placebo (trial/arm.hpp), so a new
/// placebo of this kind is its placebo_kind, its name and its case here. zeroed → zeroed_placebo(real);
/// random → random_placebo(real, seed, item).
/// @throws invalid_argument for deranged (another item's cache: the trial driver builds it with
/// random_derangement and length_matched).
[[nodiscard]] inline kv_block cache_placebo(placebo_kind k, const kv_block& real, std::uint64_t seed,
                                            std::uint64_t item) {
  switch (k) {
    case placebo_kind::zeroed:
      return zeroed_placebo(real);
    case placebo_kind::random:
      return random_placebo(real, seed, item);
    case placebo_kind::deranged:
      break;
  }
  detail::throw_invalid("cache_placebo", "k",
                        "must be a placebo made from the cache itself (zeroed, random), got '" +
                            std::string(placebo_kind_name(k)) + "'");
}

/// @brief Cuts or cycles `donor` to `n_tokens` tokens (keeping its first tokens, repeating them
/// cyclically when it is shorter) and places them at positions first_position, +1, ... with keys
/// re-rotated, so a placebo differs from the real relay in content, not in length or positions.
/// @throws invalid_argument if n_tokens < 0 or the donor is empty while n_tokens > 0.
[[nodiscard]] LATENTAUDIT_INLINE kv_block length_matched(const kv_block& donor, std::int64_t n_tokens,
                                                         position_t first_position = 0);

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/placebo-inl.hpp"
#endif

#endif  // LATENTAUDIT_KV_PLACEBO_HPP
