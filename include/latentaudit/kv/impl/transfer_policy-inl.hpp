// SPDX-License-Identifier: MIT
// latentaudit: definitions of kv/transfer_policy.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_KV_IMPL_TRANSFER_POLICY_INL_HPP
#define LATENTAUDIT_KV_IMPL_TRANSFER_POLICY_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../transfer_policy.hpp"

namespace latentaudit {

LATENTAUDIT_INLINE transfer_record kv_policy::apply(kv_block& block, const policy_context& ctx) const {
  transfer_record rec;
  rec.policy = label;
  rec.tokens_in = block.n_tokens();
  rec.bytes_before = block.content_bytes();
  const auto sel = detail::resolve_selection(block, layers, tokens, ctx);
  const bool identity = sel.layers.size() == block.n_layers() &&
                        std::equal(sel.layers.begin(), sel.layers.end(), block.layers().begin()) &&
                        std::all_of(sel.tokens.begin(), sel.tokens.end(), [&](const auto& t) {
                          return static_cast<std::int64_t>(t.size()) == block.n_tokens();
                        });
  if (!identity) block = apply_selection(block, sel);
  for (const auto& t : transforms) {
    std::visit(
        [&](const auto& s) {
          using S = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<S, noise_spec>) {
            auto spec = s;
            spec.seed = ctx.seed;
            spec.item = ctx.item;
            rec.noise.push_back(add_noise(block, spec));
          } else if constexpr (std::is_same_v<S, zero_spec>) {
            zero_kv(block, s.part, s.layers, s.tokens);
          } else {
            static_assert(std::is_same_v<S, dropout_spec>);
            std::vector<std::int64_t> dropped;
            block = drop_tokens(block, s.p, ctx.seed, ctx.item, &dropped);
            rec.dropped_tokens.insert(rec.dropped_tokens.end(), dropped.begin(), dropped.end());
          }
        },
        t);
  }
  apply_position_mode(block, mode, first_position, ctx.receiver_next);
  rec.mode = mode;
  rec.first_position = block.n_tokens() > 0 ? block.positions()[0] : 0;
  rec.layers.assign(block.layers().begin(), block.layers().end());
  rec.tokens_kept = block.n_tokens();
  rec.bytes_after = block.content_bytes();
  return rec;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_IMPL_TRANSFER_POLICY_INL_HPP
