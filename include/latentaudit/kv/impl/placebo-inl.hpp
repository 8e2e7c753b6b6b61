// SPDX-License-Identifier: MIT
// latentaudit: definitions of kv/placebo.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_KV_IMPL_PLACEBO_INL_HPP
#define LATENTAUDIT_KV_IMPL_PLACEBO_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../placebo.hpp"
#include "../rope.hpp"

namespace latentaudit {

[[nodiscard]] LATENTAUDIT_INLINE kv_block zeroed_placebo(const kv_block& real) {
  kv_block z(real.fingerprint(), std::vector<layer_index>(real.layers().begin(), real.layers().end()),
             real.n_tokens(), real.type());
  std::copy(real.positions().begin(), real.positions().end(), z.positions().begin());
  if (real.has_token_mask())
    z.set_token_mask(std::vector<std::uint8_t>(real.token_mask().begin(), real.token_mask().end()));
  return z;
}

[[nodiscard]] LATENTAUDIT_INLINE kv_block random_placebo(const kv_block& real, std::uint64_t seed,
                                                         std::uint64_t item) {
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

[[nodiscard]] LATENTAUDIT_INLINE kv_block length_matched(const kv_block& donor, std::int64_t n_tokens,
                                                         position_t first_position) {
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

#endif  // LATENTAUDIT_KV_IMPL_PLACEBO_INL_HPP
