// SPDX-License-Identifier: MIT
// latentaudit: transfer policies — what happens to a cache between an engine's export and the
// receiver's import: select → transform → position mode. Policies never run inside engines, so
// audits compare across engines. Each application returns a record of what it did, for trials.
// Quantization is the wire's (wire_encode_options::quantize, a trial arm's wire_quantize: codes and
// scales on the wire) and a placebo the arm plan's (trial/arm.hpp, kv/placebo.hpp), never a policy step.
#ifndef LATENTAUDIT_KV_TRANSFER_POLICY_HPP
#define LATENTAUDIT_KV_TRANSFER_POLICY_HPP

#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "kv_block.hpp"
#include "noise.hpp"
#include "placebo.hpp"
#include "rope.hpp"
#include "selection.hpp"

namespace latentaudit {

/// @brief Inputs a policy may need besides the block.
struct policy_context {
  std::uint64_t seed = 0;                        ///< experiment seed
  std::uint64_t item = 0;                        ///< item (task) index
  position_t receiver_next = 0;                  ///< the receiver's next free position (append_after)
  std::span<const double> token_scores{};        ///< accumulated attention per block token (H2O)
  std::span<const double> layer_token_scores{};  ///< [present layers][tokens] scores (PyramidKV)
  std::span<const double> window_attention{};    ///< [window][tokens] attention of the last queries (SnapKV)
};

/// @brief What a policy did to one block.
struct transfer_record {
  std::string policy;                        ///< the policy's name
  std::vector<layer_index> layers;           ///< layers relayed
  std::int64_t tokens_in = 0;                ///< tokens exported
  std::int64_t tokens_kept = 0;              ///< tokens relayed (union over layers)
  std::uint64_t bytes_before = 0;            ///< content bytes of the exported block
  std::uint64_t bytes_after = 0;             ///< content bytes relayed
  std::vector<noise_record> noise;           ///< each noise transform applied
  std::optional<placebo_kind> placebo;       ///< the placebo the trial driver substituted (arm_plan::placebo)
  std::vector<std::int64_t> dropped_tokens;  ///< token dropout: removed indices
  position_mode mode = position_mode::preserve;  ///< position mode applied
  position_t first_position = 0;                 ///< first relayed position after the mode
};

/// @brief A transfer policy: applies itself to an exported block in place and records what it did.
template <class P>
concept transfer_policy = requires(const P& p, kv_block& b, const policy_context& c) {
  { p.apply(b, c) } -> std::same_as<transfer_record>;
  { p.name() } -> std::convertible_to<std::string>;
};

// ---- selection specs (resolved against the block at apply time) ---------------------------------

/// @brief Every token.
struct all_tokens {};
/// @brief Tokens [first, last) (clamped to the block).
struct token_range_spec {
  std::int64_t first = 0;
  std::int64_t last = 0;
};
/// @brief The first (or last) fraction of tokens.
struct token_fraction_spec {
  double fraction = 1.0;
  bool last = false;
};
/// @brief Every stride-th token from offset.
struct token_stride_spec {
  std::int64_t stride = 1;
  std::int64_t offset = 0;
};
/// @brief Attention sinks + recent window (StreamingLLM).
struct sinks_window_spec {
  std::int64_t sinks = 4;
  std::int64_t window = 64;
};
/// @brief H2O heavy hitters (needs policy_context::token_scores).
struct heavy_hitter_spec {
  std::int64_t heavy = 32;
  std::int64_t recent = 32;
};
/// @brief SnapKV (needs policy_context::window_attention).
struct snapkv_spec {
  std::int64_t window = 16;
  std::int64_t budget = 64;
  std::int64_t kernel = 7;
};
/// @brief PyramidKV (needs policy_context::layer_token_scores).
struct pyramid_spec {
  std::int64_t average = 64;
  double beta = 20.0;
  std::int64_t window = 8;
};
/// @brief KVComm: layers in `selected` keep every token, the others keep `sinks` tokens.
struct kvcomm_spec {
  std::vector<layer_index> selected;
  std::int64_t sinks = 4;
};

/// @brief How tokens are selected.
using token_spec = std::variant<all_tokens, token_range_spec, token_fraction_spec, token_stride_spec,
                                sinks_window_spec, heavy_hitter_spec, snapkv_spec, pyramid_spec, kvcomm_spec>;

/// @brief Zero K and/or V in bands (a transform).
struct zero_spec {
  kv_part part = kv_part::both;                                     ///< which tensors
  index_range layers{0, std::numeric_limits<std::int64_t>::max()};  ///< model layer band
  index_range tokens{0, std::numeric_limits<std::int64_t>::max()};  ///< token band
};
/// @brief Token dropout with probability p (a transform).
struct dropout_spec {
  double p = 0.1;
};
/// @brief One transform step.
using transform_spec = std::variant<noise_spec, zero_spec, dropout_spec>;

/// @brief The composable policy: select layers (empty = all present) and tokens, apply the
/// transforms in order, then the position mode.
struct kv_policy {
  std::string label = "kv_full";                 ///< name used in records
  std::vector<layer_index> layers;               ///< layers to relay (empty: all present)
  token_spec tokens = all_tokens{};              ///< token selection
  std::vector<transform_spec> transforms;        ///< applied in order after selection
  position_mode mode = position_mode::preserve;  ///< placement at the receiver
  position_t first_position = 0;                 ///< base for rebase_contiguous

  /// @brief The policy's label.
  [[nodiscard]] std::string name() const { return label; }

  /// @brief Applies the policy to `block` in place.
  /// @throws invalid_argument if a selection needs scores the context does not provide, or any
  ///         step rejects its parameters.
  transfer_record apply(kv_block& block, const policy_context& ctx) const;
};

static_assert(transfer_policy<kv_policy>);

// ---- implementation ------------------------------------------------------------------------------

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

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/transfer_policy-inl.hpp"
#endif

#endif  // LATENTAUDIT_KV_TRANSFER_POLICY_HPP
