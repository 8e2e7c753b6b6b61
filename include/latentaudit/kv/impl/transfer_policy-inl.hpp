// SPDX-License-Identifier: MIT
// latentaudit: definitions of kv/transfer_policy.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_KV_IMPL_TRANSFER_POLICY_INL_HPP
#define LATENTAUDIT_KV_IMPL_TRANSFER_POLICY_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../transfer_policy.hpp"

namespace latentaudit {

// The selection a policy resolves against a block (kv_policy::apply).
namespace detail {

inline kv_selection resolve_selection(const kv_block& b, const std::vector<layer_index>& layers_req,
                                      const token_spec& spec, const policy_context& ctx) {
  constexpr std::string_view fn = "kv_policy::apply";
  std::vector<layer_index> layers =
      layers_req.empty() ? std::vector<layer_index>(b.layers().begin(), b.layers().end()) : layers_req;
  std::sort(layers.begin(), layers.end());
  const std::int64_t n = b.n_tokens();
  return std::visit(
      [&](const auto& s) -> kv_selection {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, all_tokens>) {
          return uniform_selection(layers, tokens_range(n, 0, n));
        } else if constexpr (std::is_same_v<S, token_range_spec>) {
          const std::int64_t f = std::clamp<std::int64_t>(s.first, 0, n),
                             l = std::clamp<std::int64_t>(s.last, f, n);
          return uniform_selection(layers, tokens_range(n, f, l));
        } else if constexpr (std::is_same_v<S, token_fraction_spec>) {
          return uniform_selection(
              layers, s.last ? tokens_last_fraction(n, s.fraction) : tokens_first_fraction(n, s.fraction));
        } else if constexpr (std::is_same_v<S, token_stride_spec>) {
          return uniform_selection(layers, tokens_stride(n, s.stride, s.offset));
        } else if constexpr (std::is_same_v<S, sinks_window_spec>) {
          return uniform_selection(layers, tokens_sinks_window(n, s.sinks, s.window));
        } else if constexpr (std::is_same_v<S, heavy_hitter_spec>) {
          if (ctx.token_scores.size() != static_cast<std::size_t>(n))
            throw_invalid(fn, "ctx.token_scores", "must hold one score per token for H2O selection");
          return uniform_selection(layers, tokens_heavy_hitters(ctx.token_scores, s.heavy, s.recent));
        } else if constexpr (std::is_same_v<S, snapkv_spec>) {
          if (ctx.window_attention.empty())
            throw_invalid(fn, "ctx.window_attention", "is needed for SnapKV selection");
          // a block shorter than the observation window observes all of its tokens
          const std::int64_t w = std::min(s.window, n);
          return uniform_selection(layers, tokens_snapkv(ctx.window_attention, n, w, s.budget, s.kernel));
        } else if constexpr (std::is_same_v<S, pyramid_spec>) {
          if (ctx.layer_token_scores.size() != b.n_layers() * static_cast<std::size_t>(n))
            throw_invalid(fn, "ctx.layer_token_scores",
                          "must hold [present layers][tokens] scores for PyramidKV selection");
          const auto budgets = pyramid_budgets(static_cast<std::int32_t>(b.n_layers()), s.average, s.beta);
          kv_selection sel;
          for (std::size_t i = 0; i < b.n_layers(); ++i) {
            if (!std::binary_search(layers.begin(), layers.end(), b.layers()[i])) continue;
            sel.layers.push_back(b.layers()[i]);
            sel.tokens.push_back(tokens_heavy_hitters(
                ctx.layer_token_scores.subspan(i * static_cast<std::size_t>(n), static_cast<std::size_t>(n)),
                budgets[i], s.window));
          }
          return sel;
        } else {
          kv_selection sel;
          for (auto l : layers) {
            sel.layers.push_back(l);
            sel.tokens.push_back(std::binary_search(s.selected.begin(), s.selected.end(), l)
                                     ? tokens_range(n, 0, n)
                                     : tokens_range(n, 0, std::min(s.sinks, n)));
          }
          return sel;
        }
      },
      spec);
}

}  // namespace detail

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
