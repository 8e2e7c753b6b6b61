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
#include <string_view>
#include <vector>

#include "../core/detail/check.hpp"
#include "../core/rng.hpp"
#include "kv_block.hpp"
#include "noise.hpp"
#include "rope.hpp"

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
[[nodiscard]] inline kv_block zeroed_placebo(const kv_block& real) {
  kv_block z(real.fingerprint(), std::vector<layer_index>(real.layers().begin(), real.layers().end()),
             real.n_tokens(), real.type());
  std::copy(real.positions().begin(), real.positions().end(), z.positions().begin());
  if (real.has_token_mask())
    z.set_token_mask(std::vector<std::uint8_t>(real.token_mask().begin(), real.token_mask().end()));
  return z;
}

/// @brief A moment-matched random cache: for each (layer, K|V, head), entries N(μ, σ²) with the
/// real cache's mean and (population) variance over its present tokens and dims; positions and
/// mask copied. Stream (seed, item, arm = 4 + part, replicate = layer id).
[[nodiscard]] inline kv_block random_placebo(const kv_block& real, std::uint64_t seed, std::uint64_t item) {
  kv_block r = zeroed_placebo(real);
  for (std::size_t i = 0; i < real.n_layers(); ++i)
    for (int part = 0; part < 2; ++part) {
      const bool value = part == 1;
      const std::int32_t D = value ? real.head_dim_v() : real.head_dim_k();
      auto g = make_stream({.seed = seed,
                            .item = item,
                            .arm = 4u + static_cast<std::uint32_t>(part),
                            .replicate = static_cast<std::uint32_t>(real.layers()[i])});
      for (std::int32_t h = 0; h < real.n_kv_heads(); ++h) {
        double s = 0, ss = 0, n = 0;
        for (std::int64_t t = 0; t < real.n_tokens(); ++t) {
          if (!real.token_present(i, t)) continue;
          for (std::int32_t d = 0; d < D; ++d) {
            const double x = real.get(i, value, t, h, d);
            s += x;
            n += 1;
          }
        }
        if (n == 0) continue;
        const double mu = s / n;
        for (std::int64_t t = 0; t < real.n_tokens(); ++t) {
          if (!real.token_present(i, t)) continue;
          for (std::int32_t d = 0; d < D; ++d) {
            const double x = real.get(i, value, t, h, d) - mu;
            ss += x * x;
          }
        }
        const double sd = std::sqrt(ss / n);
        for (std::int64_t t = 0; t < real.n_tokens(); ++t) {
          if (!real.token_present(i, t)) continue;
          for (std::int32_t d = 0; d < D; ++d)
            r.set(i, value, t, h, d, static_cast<float>(mu + sd * standard_normal(g)));
        }
      }
    }
  return r;
}

/// @brief Cuts or cycles `donor` to `n_tokens` tokens (keeping its first tokens, repeating them
/// cyclically when it is shorter) and places them at positions first_position, +1, ... with keys
/// re-rotated, so a placebo differs from the real relay in content, not in length or positions.
/// @throws invalid_argument if n_tokens < 0 or the donor is empty while n_tokens > 0.
[[nodiscard]] inline kv_block length_matched(const kv_block& donor, std::int64_t n_tokens,
                                             position_t first_position = 0) {
  constexpr std::string_view fn = "length_matched";
  detail::check_in_range(fn, "n_tokens", n_tokens, 0, std::int64_t{1} << 31);
  if (n_tokens > 0 && donor.n_tokens() == 0) detail::throw_invalid(fn, "donor", "is empty but n_tokens > 0");
  kv_block out(donor.fingerprint(), std::vector<layer_index>(donor.layers().begin(), donor.layers().end()),
               n_tokens, donor.type());
  std::vector<std::uint8_t> mask(donor.n_layers() * static_cast<std::size_t>(n_tokens), 1);
  for (std::size_t i = 0; i < donor.n_layers(); ++i)
    for (std::int64_t t = 0; t < n_tokens; ++t) {
      const std::int64_t s = t % donor.n_tokens();
      mask[i * static_cast<std::size_t>(n_tokens) + static_cast<std::size_t>(t)] =
          donor.token_present(i, s) ? 1 : 0;
      for (std::int32_t h = 0; h < donor.n_kv_heads(); ++h) {
        for (std::int32_t d = 0; d < donor.head_dim_k(); ++d)
          out.set(i, false, t, h, d, donor.get(i, false, s, h, d));
        for (std::int32_t d = 0; d < donor.head_dim_v(); ++d)
          out.set(i, true, t, h, d, donor.get(i, true, s, h, d));
      }
    }
  for (std::int64_t t = 0; t < n_tokens; ++t)
    out.positions()[static_cast<std::size_t>(t)] =
        donor.positions()[static_cast<std::size_t>(t % donor.n_tokens())];
  out.set_token_mask(std::move(mask));
  // re-rotate each token from its donor position to its new contiguous position
  std::vector<position_t> target(static_cast<std::size_t>(n_tokens));
  for (std::size_t t = 0; t < target.size(); ++t)
    target[t] = static_cast<position_t>(first_position + static_cast<position_t>(t));
  set_positions(out, target);
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_PLACEBO_HPP
