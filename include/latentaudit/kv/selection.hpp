// SPDX-License-Identifier: MIT
// latentaudit: what to relay — layer and token selections, and applying them to a block.
//
// A kv_selection names, for each relayed layer, the token indices (into the exported block) it
// keeps. Uniform selections keep the same tokens in every layer; ragged ones (PyramidKV budgets,
// KVComm's sink-only layers) give a block with a per-layer token mask.
//
// Token scorers follow the papers: StreamingLLM (Xiao et al. 2024: attention sinks + a recent
// window), H2O (Zhang et al. 2023: heavy hitters by accumulated attention + recent tokens),
// SnapKV (Li et al. 2024: votes of an observation window of queries, pooled), PyramidKV (Cai et
// al. 2024: per-layer budgets decreasing with depth), KVComm (unselected layers keep sinks only).
#ifndef LATENTAUDIT_KV_SELECTION_HPP
#define LATENTAUDIT_KV_SELECTION_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "kv_block.hpp"

namespace latentaudit {

/// @brief Which layers are relayed and which tokens each keeps.
struct kv_selection {
  std::vector<layer_index> layers;                ///< model layer ids, strictly increasing
  std::vector<std::vector<std::int64_t>> tokens;  ///< per selected layer: token indices, increasing
  /// @brief Equality.
  friend bool operator==(const kv_selection&, const kv_selection&) = default;
};

// ---- layers -------------------------------------------------------------------------------------

/// @brief Layers [first, last) of a model with n_layers layers.
/// @throws invalid_argument unless 0 <= first <= last <= n_layers.
[[nodiscard]] inline std::vector<layer_index> layers_range(std::int32_t n_layers, std::int32_t first,
                                                           std::int32_t last) {
  constexpr std::string_view fn = "layers_range";
  detail::check_in_range(fn, "n_layers", n_layers, 1, 1 << 16);
  detail::check_in_range(fn, "first", first, 0, n_layers);
  detail::check_in_range(fn, "last", last, first, n_layers);
  std::vector<layer_index> out(static_cast<std::size_t>(last - first));
  std::iota(out.begin(), out.end(), first);
  return out;
}

/// @brief An explicit list of layers (sorted, duplicates removed).
///
/// @code
/// layers_list(8, {5, 1, 5});  // {1, 5}
/// @endcode
/// @throws invalid_argument if a layer is outside [0, n_layers).
[[nodiscard]] inline std::vector<layer_index> layers_list(std::int32_t n_layers,
                                                          std::vector<layer_index> list) {
  for (auto l : list) detail::check_in_range("layers_list", "list", l, 0, n_layers - 1);
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
  return list;
}

/// @brief The layers whose mask entry is true (mask.size() is the number of layers).
///
/// @code
/// layers_mask({true, false, true});  // {0, 2}
/// @endcode
[[nodiscard]] inline std::vector<layer_index> layers_mask(const std::vector<bool>& mask) {
  std::vector<layer_index> out;
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) out.push_back(static_cast<layer_index>(i));
  return out;
}

/// @brief Every k-th layer starting at `offset`: offset, offset + k, ...
///
/// @code
/// layers_every(8, 3, 1);  // {1, 4, 7}
/// @endcode
/// @throws invalid_argument if k < 1 or offset outside [0, n_layers).
[[nodiscard]] inline std::vector<layer_index> layers_every(std::int32_t n_layers, std::int32_t k,
                                                           std::int32_t offset = 0) {
  detail::check_in_range("layers_every", "k", k, 1, 1 << 16);
  detail::check_in_range("layers_every", "offset", offset, 0, n_layers - 1);
  std::vector<layer_index> out;
  for (std::int32_t l = offset; l < n_layers; l += k) out.push_back(l);
  return out;
}

/// @brief The k layers with the highest scores (ties: lower layer first), returned in layer order.
///
/// @code
/// const std::vector<double> s{0.1, 0.9, 0.5, 0.9};
/// layers_top_k(s, 2);  // {1, 3}
/// @endcode
/// @throws invalid_argument if scores hold NaN or k is outside [0, scores.size()].
[[nodiscard]] inline std::vector<layer_index> layers_top_k(std::span<const double> scores, std::size_t k) {
  detail::check_finite("layers_top_k", "scores", scores);
  detail::check_in_range("layers_top_k", "k", static_cast<long long>(k), 0,
                         static_cast<long long>(scores.size()));
  std::vector<layer_index> idx(scores.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](auto a, auto b) {
    return scores[static_cast<std::size_t>(a)] > scores[static_cast<std::size_t>(b)];
  });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

// ---- tokens -------------------------------------------------------------------------------------

/// @brief Tokens [first, last) of n.
/// @throws invalid_argument unless 0 <= first <= last <= n.
[[nodiscard]] inline std::vector<std::int64_t> tokens_range(std::int64_t n, std::int64_t first,
                                                            std::int64_t last) {
  detail::check_in_range("tokens_range", "first", first, 0, n);
  detail::check_in_range("tokens_range", "last", last, first, n);
  std::vector<std::int64_t> out(static_cast<std::size_t>(last - first));
  std::iota(out.begin(), out.end(), first);
  return out;
}

/// @brief The first ⌈f·n⌉ tokens.
/// @throws invalid_argument unless 0 <= f <= 1.
[[nodiscard]] inline std::vector<std::int64_t> tokens_first_fraction(std::int64_t n, double f) {
  detail::check_closed_unit("tokens_first_fraction", "fraction", f);
  return tokens_range(n, 0, static_cast<std::int64_t>(std::ceil(f * static_cast<double>(n) - 1e-9)));
}

/// @brief The last ⌈f·n⌉ tokens.
/// @throws invalid_argument unless 0 <= f <= 1.
[[nodiscard]] inline std::vector<std::int64_t> tokens_last_fraction(std::int64_t n, double f) {
  detail::check_closed_unit("tokens_last_fraction", "fraction", f);
  const auto k = static_cast<std::int64_t>(std::ceil(f * static_cast<double>(n) - 1e-9));
  return tokens_range(n, n - k, n);
}

/// @brief Tokens offset, offset + stride, ...
/// @throws invalid_argument if stride < 1 or offset < 0.
[[nodiscard]] inline std::vector<std::int64_t> tokens_stride(std::int64_t n, std::int64_t stride,
                                                             std::int64_t offset = 0) {
  detail::check_in_range("tokens_stride", "stride", stride, 1, std::int64_t{1} << 40);
  detail::check_in_range("tokens_stride", "offset", offset, 0, std::int64_t{1} << 40);
  std::vector<std::int64_t> out;
  for (std::int64_t t = offset; t < n; t += stride) out.push_back(t);
  return out;
}

/// @brief An explicit list of token indices (sorted, duplicates removed).
///
/// @code
/// tokens_list(10, {7, 2, 7});  // {2, 7}
/// @endcode
/// @throws invalid_argument if an index is outside [0, n).
[[nodiscard]] inline std::vector<std::int64_t> tokens_list(std::int64_t n, std::vector<std::int64_t> list) {
  for (auto t : list) detail::check_in_range("tokens_list", "list", t, 0, n - 1);
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
  return list;
}

/// @brief StreamingLLM: the first `sinks` tokens and the last `window` tokens.
[[nodiscard]] inline std::vector<std::int64_t> tokens_sinks_window(std::int64_t n, std::int64_t sinks,
                                                                   std::int64_t window) {
  detail::check_in_range("tokens_sinks_window", "sinks", sinks, 0, std::int64_t{1} << 40);
  detail::check_in_range("tokens_sinks_window", "window", window, 0, std::int64_t{1} << 40);
  std::vector<std::int64_t> out;  // [0, sinks) then [n - window, n), ascending, each token once
  const std::int64_t head = std::clamp<std::int64_t>(sinks, 0, std::max<std::int64_t>(n, 0));
  for (std::int64_t t = 0; t < head; ++t) out.push_back(t);
  for (std::int64_t t = std::max(head, n - window); t < n; ++t) out.push_back(t);
  return out;
}

namespace detail {
/// @brief Indices of the `budget` largest scores among `candidates` (ties: earlier token first).
inline std::vector<std::int64_t> top_tokens(std::span<const double> scores,
                                            std::vector<std::int64_t> candidates, std::size_t budget) {
  std::stable_sort(candidates.begin(), candidates.end(), [&](auto a, auto b) {
    return scores[static_cast<std::size_t>(a)] > scores[static_cast<std::size_t>(b)];
  });
  if (candidates.size() > budget) candidates.resize(budget);
  return candidates;
}
}  // namespace detail

/// @brief H2O heavy hitters: the `recent` most recent tokens plus the `heavy` tokens with the
/// largest accumulated attention among the rest. `scores[t]` is the attention mass token t
/// received (summed over queries and heads), e.g. from an engine's attention capture.
/// @throws invalid_argument on NaN or negative scores.
[[nodiscard]] inline std::vector<std::int64_t> tokens_heavy_hitters(std::span<const double> scores,
                                                                    std::int64_t heavy, std::int64_t recent) {
  constexpr std::string_view fn = "tokens_heavy_hitters";
  detail::check_finite(fn, "scores", scores);
  for (double s : scores)
    if (s < 0) detail::throw_invalid(fn, "scores", "must be non-negative attention mass");
  detail::check_in_range(fn, "heavy", heavy, 0, std::int64_t{1} << 40);
  detail::check_in_range(fn, "recent", recent, 0, std::int64_t{1} << 40);
  const auto n = static_cast<std::int64_t>(scores.size());
  std::vector<std::int64_t> older;
  std::vector<std::int64_t> out;
  for (std::int64_t t = 0; t < n; ++t) (t >= n - recent ? out : older).push_back(t);
  auto top = detail::top_tokens(scores, std::move(older), static_cast<std::size_t>(heavy));
  out.insert(out.end(), top.begin(), top.end());
  std::sort(out.begin(), out.end());
  return out;
}

/// @brief SnapKV voting: `attention` holds, for the last `window` queries (the observation
/// window), their attention over the n prefix tokens, summed over heads: row-major
/// [window][n]. Votes per token are summed over the window, smoothed by max pooling with an odd
/// `kernel`, and the `budget` best prefix tokens are kept together with the window tokens
/// themselves (the last `window` tokens); a budget beyond the n − window prefix tokens keeps them all.
/// @throws invalid_argument on NaN, negative entries, an even kernel, a negative budget, or sizes
///         that disagree.
[[nodiscard]] inline std::vector<std::int64_t> tokens_snapkv(std::span<const double> attention,
                                                             std::int64_t n, std::int64_t window,
                                                             std::int64_t budget, std::int64_t kernel = 7) {
  constexpr std::string_view fn = "tokens_snapkv";
  detail::check_in_range(fn, "window", window, 1, n);
  detail::check_same_size(fn, "attention", attention.size(), "window * n",
                          static_cast<std::size_t>(window * n));
  detail::check_finite(fn, "attention", attention);
  detail::check_in_range(fn, "kernel", kernel, 1, 1 << 20);
  if (kernel % 2 == 0) detail::throw_invalid(fn, "kernel", "must be odd, got " + std::to_string(kernel));
  detail::check_in_range(fn, "budget", budget, 0, std::int64_t{1} << 40);
  const std::int64_t prefix = n - window;
  budget = std::min(budget, prefix);
  std::vector<double> votes(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t q = 0; q < window; ++q)
    for (std::int64_t t = 0; t < prefix; ++t) {
      const double a = attention[static_cast<std::size_t>(q * n + t)];
      if (a < 0) detail::throw_invalid(fn, "attention", "must be non-negative");
      votes[static_cast<std::size_t>(t)] += a;
    }
  std::vector<double> pooled(static_cast<std::size_t>(n), 0.0);
  const std::int64_t r = kernel / 2;
  for (std::int64_t t = 0; t < prefix; ++t) {
    double m = 0;
    for (std::int64_t u = std::max<std::int64_t>(0, t - r); u <= std::min(prefix - 1, t + r); ++u)
      m = std::max(m, votes[static_cast<std::size_t>(u)]);
    pooled[static_cast<std::size_t>(t)] = m;
  }
  std::vector<std::int64_t> cand(static_cast<std::size_t>(prefix));
  std::iota(cand.begin(), cand.end(), 0);
  auto out = detail::top_tokens(pooled, std::move(cand), static_cast<std::size_t>(budget));
  for (std::int64_t t = prefix; t < n; ++t) out.push_back(t);
  std::sort(out.begin(), out.end());
  return out;
}

/// @brief PyramidKV budgets: per-layer token budgets decreasing linearly with depth, averaging
/// `average` tokens per layer. Layer L−1 gets average/β, layer 0 gets 2·average − average/β, linear
/// in between; rounded so that the budgets sum to exactly average · n_layers.
/// @throws invalid_argument if β < 1 or average < 0.
[[nodiscard]] inline std::vector<std::int64_t> pyramid_budgets(std::int32_t n_layers, std::int64_t average,
                                                               double beta = 20.0) {
  constexpr std::string_view fn = "pyramid_budgets";
  detail::check_in_range(fn, "n_layers", n_layers, 1, 1 << 16);
  detail::check_in_range(fn, "average", average, 0, std::int64_t{1} << 40);
  if (!(beta >= 1.0) || !std::isfinite(beta)) detail::throw_invalid(fn, "beta", "must be >= 1 and finite");
  const double top = static_cast<double>(average) / beta, bottom = 2.0 * static_cast<double>(average) - top;
  // Real budgets on the line, floored, then the remainder handed out by largest fractional part
  // (ties to the lower layer) so the budgets sum to exactly average · n_layers.
  std::vector<std::int64_t> out(static_cast<std::size_t>(n_layers));
  std::vector<double> frac(out.size());
  std::int64_t used = 0;
  for (std::int32_t l = 0; l < n_layers; ++l) {
    const double f = n_layers == 1 ? 0.0 : static_cast<double>(l) / (n_layers - 1);
    const double real = n_layers == 1 ? static_cast<double>(average) : bottom + (top - bottom) * f;
    out[static_cast<std::size_t>(l)] = static_cast<std::int64_t>(std::floor(real + 1e-9));
    frac[static_cast<std::size_t>(l)] = real - static_cast<double>(out[static_cast<std::size_t>(l)]);
    used += out[static_cast<std::size_t>(l)];
  }
  std::vector<std::size_t> order(out.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return frac[a] > frac[b]; });
  for (std::size_t k = 0; used < average * n_layers && k < order.size(); ++k, ++used) ++out[order[k]];
  return out;
}

/// @brief Reductions of a prefill's captured attention that the score-based selections read
/// (filled into policy_context by the trial driver from the sender's prefill_capture): keys are
/// the cached tokens, queries the prefilled ones.
struct attention_scores {
  std::int64_t tokens = 0;               ///< keys (cached tokens)
  std::vector<double> token;             ///< [tokens]: mass each token received, summed over layers, heads
                                         ///< and queries (H2O's accumulated attention)
  std::vector<double> layer_token;       ///< [layers][tokens]: the same per captured layer (PyramidKV)
  std::int64_t window = 0;               ///< rows of window_attention
  std::vector<double> window_attention;  ///< [window][tokens]: attention of the last `window` queries,
                                         ///< summed over layers and heads (SnapKV's observation window)
  /// @brief The last `w` rows of window_attention (all rows when w >= window), for a SnapKV
  /// selection with a smaller observation window.
  [[nodiscard]] std::span<const double> last_window(std::int64_t w) const noexcept {
    const std::int64_t r = std::clamp<std::int64_t>(w, 0, window);
    return std::span<const double>(window_attention)
        .subspan(static_cast<std::size_t>((window - r) * tokens), static_cast<std::size_t>(r * tokens));
  }
};

/// @brief Reduces attention weights, row-major [layers][heads][queries][keys] (an engine's
/// attention_capture), to the scores of H2O, PyramidKV and SnapKV; `window` is the largest SnapKV
/// observation window needed (clamped to the queries).
/// @throws invalid_argument if weights.size() != layers · heads · queries · keys, a size is not
///         positive, or a weight is negative or not finite.
[[nodiscard]] inline attention_scores reduce_attention(std::span<const float> weights, std::size_t layers,
                                                       std::int64_t heads, std::int64_t queries,
                                                       std::int64_t keys, std::int64_t window) {
  constexpr std::string_view fn = "reduce_attention";
  if (layers == 0 || heads <= 0 || queries <= 0 || keys <= 0)
    detail::throw_invalid(fn, "sizes", "layers, heads, queries and keys must be positive");
  const auto H = static_cast<std::size_t>(heads), Q = static_cast<std::size_t>(queries),
             K = static_cast<std::size_t>(keys);
  detail::check_same_size(fn, "weights", weights.size(), "layers * heads * queries * keys",
                          layers * H * Q * K);
  attention_scores s;
  s.tokens = keys;
  s.window = std::clamp<std::int64_t>(window, 0, queries);
  s.token.assign(K, 0.0);
  s.layer_token.assign(layers * K, 0.0);
  s.window_attention.assign(static_cast<std::size_t>(s.window) * K, 0.0);
  const std::size_t first_window_query = Q - static_cast<std::size_t>(s.window);
  for (std::size_t l = 0; l < layers; ++l)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t q = 0; q < Q; ++q) {
        const float* w = weights.data() + ((l * H + h) * Q + q) * K;
        double* lt = s.layer_token.data() + l * K;
        double* wa =
            q >= first_window_query ? s.window_attention.data() + (q - first_window_query) * K : nullptr;
        for (std::size_t k = 0; k < K; ++k) {
          const double x = w[k];
          if (!(x >= 0) || !std::isfinite(x))
            detail::throw_invalid(fn, "weights", "must be finite and non-negative, got " + number_text(x));
          lt[k] += x;
          if (wa != nullptr) wa[k] += x;
        }
      }
  for (std::size_t l = 0; l < layers; ++l)
    for (std::size_t k = 0; k < K; ++k) s.token[k] += s.layer_token[l * K + k];
  return s;
}

// ---- selections ---------------------------------------------------------------------------------

/// @brief The same tokens in each of `layers`.
[[nodiscard]] inline kv_selection uniform_selection(std::vector<layer_index> layers,
                                                    std::vector<std::int64_t> tokens) {
  kv_selection s;
  s.tokens.assign(layers.size(), tokens);
  s.layers = std::move(layers);
  return s;
}

/// @brief KVComm's mode: every layer is relayed, but layers not in `selected` keep only the first
/// `sinks` tokens (Ye et al. 2025, "KVComm").
[[nodiscard]] inline kv_selection kvcomm_selection(std::int32_t n_layers, std::int64_t n_tokens,
                                                   const std::vector<layer_index>& selected,
                                                   std::int64_t sinks) {
  kv_selection s;
  s.layers = layers_range(n_layers, 0, n_layers);
  const auto all = tokens_range(n_tokens, 0, n_tokens);
  const auto sink = tokens_range(n_tokens, 0, std::min(sinks, n_tokens));
  for (auto l : s.layers)
    s.tokens.push_back(std::binary_search(selected.begin(), selected.end(), l) ? all : sink);
  return s;
}

/// @brief PyramidKV: in each layer, the `budgets[l]` tokens with the largest per-layer scores
/// (scores row-major [n_layers][n_tokens]) plus the last `window` tokens.
/// @throws invalid_argument on NaN scores or sizes that disagree.
[[nodiscard]] inline kv_selection pyramid_selection(std::span<const double> scores, std::int32_t n_layers,
                                                    std::int64_t n_tokens,
                                                    std::span<const std::int64_t> budgets,
                                                    std::int64_t window) {
  constexpr std::string_view fn = "pyramid_selection";
  detail::check_same_size(fn, "scores", scores.size(), "n_layers * n_tokens",
                          static_cast<std::size_t>(n_layers) * static_cast<std::size_t>(n_tokens));
  detail::check_same_size(fn, "budgets", budgets.size(), "n_layers", static_cast<std::size_t>(n_layers));
  kv_selection s;
  s.layers = layers_range(n_layers, 0, n_layers);
  for (std::int32_t l = 0; l < n_layers; ++l)
    s.tokens.push_back(
        tokens_heavy_hitters(scores.subspan(static_cast<std::size_t>(l) * static_cast<std::size_t>(n_tokens),
                                            static_cast<std::size_t>(n_tokens)),
                             budgets[static_cast<std::size_t>(l)], window));
  return s;
}

/// @brief Applies a selection to a block, writing the result into `out` (whose payload storage
/// is reused when it is large enough and of the same dtype, so repeated slicing allocates and
/// page-faults nothing): keeps the selected layers (which must be present) and the union of the
/// selected tokens; if layers keep different tokens the result carries a token mask. Positions
/// travel with their tokens (no re-rotation). Runs of consecutive tokens are copied at once.
/// @throws invalid_argument if `out` is `block`, a layer is absent from the block, a token index
///         is out of range, lists are not increasing, or the sizes of layers and tokens differ
///         (`out` is then left empty or unchanged).
inline void apply_selection(const kv_block& block, const kv_selection& sel, kv_block& out) {
  constexpr std::string_view fn = "apply_selection";
  if (&out == &block) detail::throw_invalid(fn, "out", "must not be the input block");
  detail::check_same_size(fn, "selection.layers", sel.layers.size(), "selection.tokens", sel.tokens.size());
  std::vector<std::size_t> src_layer;
  for (std::size_t i = 0; i < sel.layers.size(); ++i) {
    const auto j = block.find_layer(sel.layers[i]);
    if (j < 0)
      detail::throw_invalid(
          fn, "selection.layers",
          "names layer " + std::to_string(sel.layers[i]) + ", which the block does not hold");
    if (i > 0 && sel.layers[i] <= sel.layers[i - 1])
      detail::throw_invalid(fn, "selection.layers", "must be strictly increasing");
    src_layer.push_back(static_cast<std::size_t>(j));
    for (std::size_t k = 0; k < sel.tokens[i].size(); ++k) {
      detail::check_in_range(fn, "selection.tokens", sel.tokens[i][k], 0, block.n_tokens() - 1);
      if (k > 0 && sel.tokens[i][k] <= sel.tokens[i][k - 1])
        detail::throw_invalid(fn, "selection.tokens", "must be strictly increasing in each layer");
    }
  }
  // the union of the selected tokens (each list is increasing; identical lists are the common case)
  std::vector<std::int64_t> uni;
  bool same = true;
  for (std::size_t i = 1; i < sel.tokens.size() && same; ++i) same = sel.tokens[i] == sel.tokens[0];
  if (same && !sel.tokens.empty()) {
    uni = sel.tokens[0];
  } else {
    for (const auto& t : sel.tokens) uni.insert(uni.end(), t.begin(), t.end());
    std::sort(uni.begin(), uni.end());
    uni.erase(std::unique(uni.begin(), uni.end()), uni.end());
  }
  detail::kv_block_access::reshape_unwritten(out, block.fingerprint(), sel.layers,
                                             static_cast<std::int64_t>(uni.size()), block.type(), fn);
  for (std::size_t u = 0; u < uni.size(); ++u)
    out.positions()[u] = block.positions()[static_cast<std::size_t>(uni[u])];
  const std::size_t es = dtype_size(block.type());
  const auto src = block.payload();
  auto dst = out.payload_mut();
  const std::size_t T = static_cast<std::size_t>(block.n_tokens()), U = uni.size();
  const std::size_t krow =
      static_cast<std::size_t>(block.n_kv_heads()) * static_cast<std::size_t>(block.head_dim_k()) * es;
  const std::size_t vrow =
      static_cast<std::size_t>(block.n_kv_heads()) * static_cast<std::size_t>(block.head_dim_v()) * es;
  bool ragged = false;
  std::vector<std::uint8_t> mask(sel.layers.size() * U, 0);
  std::vector<std::uint8_t> keep(U);
  // copies are merged while they are contiguous in both blocks (a whole-layer selection is one
  // copy); bulk outputs are written with streaming stores
  const bool bulk = dst.size() >= detail::stream_copy_min_bytes;
  std::size_t pend_dst = 0, pend_src = 0, pend_n = 0;
  auto flush = [&] {
    if (pend_n == 0) return;
    if (bulk && pend_n < (std::size_t{64} << 20)) {  // huge pieces: memcpy's own streaming path
      detail::stream_copy(dst.data() + pend_dst, src.data() + pend_src, pend_n);
    } else {
      std::memcpy(dst.data() + pend_dst, src.data() + pend_src, pend_n);
    }
    pend_n = 0;
  };
  auto copy = [&](std::size_t d, std::size_t s, std::size_t n) {
    if (pend_n != 0 && pend_dst + pend_n == d && pend_src + pend_n == s) {
      pend_n += n;
      return;
    }
    flush();
    pend_dst = d;
    pend_src = s;
    pend_n = n;
  };
  for (std::size_t i = 0; i < sel.layers.size(); ++i) {
    std::size_t k = 0;
    for (std::size_t u = 0; u < U; ++u) {
      const bool listed = k < sel.tokens[i].size() && sel.tokens[i][k] == uni[u];
      if (listed) ++k;
      keep[u] = static_cast<std::uint8_t>(listed && block.token_present(src_layer[i], uni[u]));
      mask[i * U + u] = keep[u];
      ragged = ragged || keep[u] == 0;
    }
    const std::size_t sb = src_layer[i] * T * (krow + vrow), db = i * U * (krow + vrow);
    // runs [u, e) of kept rows whose source tokens are consecutive: one copy each for K and V;
    // rows not kept are zeroed
    for (std::size_t u = 0; u < U;) {
      std::size_t e = u + 1;
      while (e < U && keep[e] == keep[u] && (keep[u] == 0 || uni[e] == uni[e - 1] + 1)) ++e;
      const std::size_t n = e - u;
      if (keep[u] != 0) {
        const auto t = static_cast<std::size_t>(uni[u]);
        copy(db + u * krow, sb + t * krow, n * krow);
        copy(db + U * krow + u * vrow, sb + T * krow + t * vrow, n * vrow);
      } else {
        std::memset(dst.data() + db + u * krow, 0, n * krow);
        std::memset(dst.data() + db + U * krow + u * vrow, 0, n * vrow);
      }
      u = e;
    }
  }
  flush();
  if (ragged) out.set_token_mask(std::move(mask));
}

/// @brief Applies a selection to a block (see the overload writing into a caller's block).
/// @returns a new block with the selected layers and tokens.
/// @throws invalid_argument if a layer is absent from the block, a token index is out of range,
///         lists are not increasing, or the sizes of layers and tokens differ.
[[nodiscard]] inline kv_block apply_selection(const kv_block& block, const kv_selection& sel) {
  kv_block out;
  apply_selection(block, sel, out);
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_SELECTION_HPP
