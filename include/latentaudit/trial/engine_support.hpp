// SPDX-License-Identifier: MIT
// latentaudit: which arms and metrics an engine can support, read from its declared
// engine_capabilities (engine/capabilities.hpp). The trial driver refuses up front a design with
// an arm its engine cannot run, naming the arm and the reason; restrict_to_engine drops such arms
// and returns the reasons so a caller (the CLI's audit) can run the rest and write them into the
// design and the report; unavailable_metrics names the metrics an engine cannot produce, which the
// driver records as absent with the reason (trial_record::unavailable), never as a zero.
#ifndef LATENTAUDIT_TRIAL_ENGINE_SUPPORT_HPP
#define LATENTAUDIT_TRIAL_ENGINE_SUPPORT_HPP

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "../engine/concepts.hpp"
#include "arm.hpp"
#include "design.hpp"
#include "record.hpp"

namespace latentaudit {

/// @brief The capabilities an engine really offers: its declared flags, with attention_capture
/// cleared when the engine type has no prefill_capture (attention_capturing_engine).
template <inference_engine B>
[[nodiscard]] engine_capabilities capabilities_of(const B& engine) {
  engine_capabilities c = engine.info().caps;
  if constexpr (!attention_capturing_engine<B>) c.attention_capture = false;
  return c;
}

/// @brief Whether a policy's token selection needs attention scores (H2O, SnapKV, PyramidKV),
/// which the driver fills into policy_context from the sender's prefill_capture.
[[nodiscard]] inline bool needs_attention_scores(const kv_policy& p) noexcept {
  return std::holds_alternative<heavy_hitter_spec>(p.tokens) ||
         std::holds_alternative<snapkv_spec>(p.tokens) || std::holds_alternative<pyramid_spec>(p.tokens);
}

namespace detail {
// Whether a preserve-mode relay under `p` always keeps the document's last token, so that B's own
// tokens (at the document's length) continue the relayed positions without a gap.
[[nodiscard]] inline bool keeps_last_token(const kv_policy& p) {
  for (const auto& t : p.transforms)
    if (std::holds_alternative<dropout_spec>(t)) return false;  // may drop the last token
  return std::visit(
      [](const auto& s) -> bool {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, all_tokens>)
          return true;
        else if constexpr (std::is_same_v<S, token_fraction_spec>)
          return s.fraction >= 1.0 || (s.last && s.fraction > 0);
        else if constexpr (std::is_same_v<S, token_stride_spec>)
          return s.stride == 1;
        else if constexpr (std::is_same_v<S, sinks_window_spec>)
          return s.window >= 1;
        else if constexpr (std::is_same_v<S, heavy_hitter_spec>)
          return s.recent >= 1;
        else if constexpr (std::is_same_v<S, snapkv_spec>)
          return s.window >= 1;
        else if constexpr (std::is_same_v<S, pyramid_spec>)
          return s.window >= 1;
        else if constexpr (std::is_same_v<S, token_range_spec>)
          return s.last == std::numeric_limits<std::int64_t>::max();
        else
          return !s.selected.empty();  // kvcomm: the selected layers keep every token
      },
      p.tokens);
}
}  // namespace detail

/// @brief Why `arm` cannot run on an engine with capabilities `caps` and `n_layers` layers (and a
/// partner engine, for cross_model), or nothing when it can:
///  - an arm whose sender is the partner (cross_model, kv_mapped) without a partner engine;
///  - a KV policy relaying a subset of the layers needs caps.partial_layer_import (B must not see
///    the relayed tokens in the other layers: a per-layer visibility mask);
///  - PyramidKV and KVComm selections give ragged blocks and need caps.token_mask_import;
///  - H2O, SnapKV and PyramidKV selections need attention scores: caps.attention_capture;
///  - a preserve-mode relay that may not keep the document's last token (a first fraction, a
///    range, a stride, dropout) leaves a position gap before B's own tokens: caps.position_gaps.
/// Only the plans that select (arm_plan::selects: kv_full and kv_policy) are checked further: the
/// other arms relay full-length, full-layer blocks.
[[nodiscard]] inline std::optional<std::string> arm_unsupported_reason(const trial_arm& arm,
                                                                       const engine_capabilities& caps,
                                                                       std::int32_t n_layers,
                                                                       bool has_partner) {
  const arm_plan plan = arm.plan();
  if (arm.needs_partner() && !has_partner)
    return std::string(arm_kind_name(arm.kind)) + " needs a partner engine (another model)";
  if (!plan.selects) return std::nullopt;
  const kv_policy& p = arm.policy;
  if (!p.layers.empty() && !caps.partial_layer_import) {
    std::vector<layer_index> l = p.layers;
    std::sort(l.begin(), l.end());
    l.erase(std::unique(l.begin(), l.end()), l.end());
    const bool all =
        static_cast<std::int32_t>(l.size()) == n_layers && l.front() == 0 && l.back() == n_layers - 1;
    if (!all)
      return "relays a subset of the layers, and the engine cannot import part of the layers (no per-layer "
             "visibility mask: engine_capabilities::partial_layer_import)";
  }
  if ((std::holds_alternative<pyramid_spec>(p.tokens) || std::holds_alternative<kvcomm_spec>(p.tokens)) &&
      !caps.token_mask_import)
    return "its selection keeps different tokens per layer, and the engine cannot import a ragged block "
           "(engine_capabilities::token_mask_import)";
  if (needs_attention_scores(p) && !caps.attention_capture)
    return "its selection needs attention scores, and the engine does not capture attention "
           "(engine_capabilities::attention_capture)";
  if (p.mode == position_mode::preserve && !caps.position_gaps && !detail::keeps_last_token(p))
    return "it keeps the relayed tokens' positions but may drop the document's last token, so B's own tokens "
           "would follow a position gap, which the engine refuses (engine_capabilities::position_gaps; "
           "the same relay with @rebase runs)";
  return std::nullopt;
}

/// @brief Why `arm` cannot force-import its sender's cache into B's model, or nothing: a forced
/// import (cross_model, drifted) places the sender's cache as it is, so the two caches must have
/// one shape (layers, KV heads, head dims); a sender of another shape is relayed through a cache
/// map (kv_mapped) instead.
/// @param receiver B's model
/// @param partner the sender's model (the partner, or the arm's named sender)
[[nodiscard]] inline std::optional<std::string> foreign_shape_reason(const trial_arm& arm,
                                                                     const model_fingerprint& receiver,
                                                                     const model_fingerprint& partner) {
  if (!arm.plan().forced_import) return std::nullopt;
  if (receiver.n_layers == partner.n_layers && receiver.n_kv_heads == partner.n_kv_heads &&
      receiver.head_dim_k == partner.head_dim_k && receiver.head_dim_v == partner.head_dim_v)
    return std::nullopt;
  return "the sender's cache has another shape (" + std::to_string(partner.n_layers) + " layers x " +
         std::to_string(partner.n_kv_heads) + " KV heads x " + std::to_string(partner.head_dim_k) +
         " dims against " + std::to_string(receiver.n_layers) + " x " + std::to_string(receiver.n_kv_heads) +
         " x " + std::to_string(receiver.head_dim_k) +
         "): it cannot be imported as it is; relay it through a cache map "
         "(kv_mapped, --map)";
}

/// @brief An arm left out of a design, and why.
struct skipped_arm {
  std::string arm;     ///< the arm's label
  std::string reason;  ///< arm_unsupported_reason's text
};

/// @brief A design restricted to what an engine supports.
struct engine_restriction {
  trial_design design;               ///< the input design without the unsupported arms (order kept)
  std::vector<skipped_arm> skipped;  ///< the arms left out, in design order
};

/// @brief Drops the arms `engine` (and `partner`, if given) cannot run, listing why.
template <inference_engine B, inference_engine P = B>
[[nodiscard]] engine_restriction restrict_to_engine(trial_design d, const B& engine,
                                                    const P* partner = nullptr) {
  engine_restriction out;
  const auto caps = capabilities_of(engine);
  const auto layers = engine.info().fingerprint.n_layers;
  std::vector<trial_arm> kept;
  for (auto& a : d.arms) {
    if (auto why = arm_unsupported_reason(a, caps, layers, partner != nullptr))
      out.skipped.push_back({a.label, std::move(*why)});
    else if (auto shape =
                 partner != nullptr && a.needs_partner()
                     ? foreign_shape_reason(a, engine.info().fingerprint, partner->info().fingerprint)
                     : std::nullopt)
      out.skipped.push_back({a.label, std::move(*shape)});
    else
      kept.push_back(std::move(a));
  }
  d.arms = std::move(kept);
  out.design = std::move(d);
  return out;
}

/// @brief The record metrics an engine with capabilities `caps` cannot produce: attention_mass
/// without attention capture, hidden_cosine without the final hidden state.
[[nodiscard]] inline std::vector<unavailable_metric> unavailable_metrics(const engine_capabilities& caps) {
  std::vector<unavailable_metric> out;
  if (!caps.attention_capture)
    out.push_back(
        {"attention_mass", "the engine does not capture attention (engine_capabilities::attention_capture)"});
  if (!caps.hidden_state)
    out.push_back({"hidden_cosine",
                   "the engine does not return the final hidden state (engine_capabilities::hidden_state)"});
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_ENGINE_SUPPORT_HPP
