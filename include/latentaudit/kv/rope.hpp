// SPDX-License-Identifier: MIT
// latentaudit: RoPE-consistent positions for relayed caches.
//
// A cached key is stored rotated for its position p: k = R(p·ω) k₀. Because rotations compose,
// R((p+δ)·ω) = R(δ·ω) R(p·ω), a cached key moves to position p+δ by one more rotation by δ — the
// operation llama.cpp's K-shift performs. This header rotates, unrotates and re-rotates keys for
// both pairing conventions, applies a relay's position mode, and gates blocks whose positions are
// inconsistent: not increasing, colliding, beyond the context, or — given pre-RoPE reference keys
// — not the phases the keys actually carry (LatentMAS's truncation modes keep rotated keys and
// reuse their position ids: exactly the silent bug this gate catches).
#ifndef LATENTAUDIT_KV_ROPE_HPP
#define LATENTAUDIT_KV_ROPE_HPP

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "kv_block.hpp"
#include "policy_spec.hpp"

namespace latentaudit {

/// @brief Rotary frequencies ω_i = θ^(−2i/R), i ∈ [0, R/2), R = rotary dims (HF's inv_freq,
/// computed in double).
/// @throws invalid_argument if rotary dims are odd or exceed head_dim.
[[nodiscard]] inline std::vector<double> rope_frequencies(const rope_descriptor& rope,
                                                          std::int32_t head_dim) {
  constexpr std::string_view fn = "rope_frequencies";
  const std::int32_t rot = rope.rotary_dims == 0 ? head_dim : rope.rotary_dims;
  detail::check_in_range(fn, "rotary_dims", rot, 2, head_dim);
  if (rot % 2 != 0) detail::throw_invalid(fn, "rotary_dims", "must be even, got " + std::to_string(rot));
  detail::check_positive(fn, "theta", static_cast<double>(rope.theta));
  std::vector<double> w(static_cast<std::size_t>(rot / 2));
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] =
        std::pow(static_cast<double>(rope.theta), -2.0 * static_cast<double>(i) / static_cast<double>(rot));
  return w;
}

/// @brief Rotates one head vector x (length head_dim) by angle `position`·ω in place, for the
/// pairing of `rope` (neox: pairs (i, i+R/2); norm: pairs (2i, 2i+1)). Dims ≥ R are untouched.
/// A negative position unrotates. `freq` must come from rope_frequencies(rope, x.size()).
inline void rotate_head(std::span<float> x, double position, const rope_descriptor& rope,
                        std::span<const double> freq) noexcept {
  if (rope.pairing == rope_pairing::none || position == 0.0) return;
  const std::size_t half = freq.size();
  for (std::size_t i = 0; i < half; ++i) {
    const double a = position * freq[i];
    const double c = std::cos(a), s = std::sin(a);
    const std::size_t i0 = rope.pairing == rope_pairing::neox ? i : 2 * i;
    const std::size_t i1 = rope.pairing == rope_pairing::neox ? i + half : 2 * i + 1;
    const double x0 = x[i0], x1 = x[i1];
    x[i0] = static_cast<float>(x0 * c - x1 * s);
    x[i1] = static_cast<float>(x1 * c + x0 * s);
  }
}

/// @brief Rotates every key of token t of `block` by delta[t] (in place, in f32 then rounded
/// once to the block's dtype) and adds delta[t] to its position. V is untouched.
/// @throws shape_mismatch if delta.size() != n_tokens; invalid_argument if a position overflows.
inline void shift_keys(kv_block& block, std::span<const std::int64_t> delta) {
  constexpr std::string_view fn = "shift_keys";
  detail::check_same_size(fn, "delta", delta.size(), "block tokens",
                          static_cast<std::size_t>(block.n_tokens()));
  const auto& rope = block.fingerprint().rope;
  for (std::size_t t = 0; t < delta.size(); ++t) {
    const std::int64_t p = std::int64_t{block.positions()[t]} + delta[t];
    if (p < INT32_MIN || p > INT32_MAX)
      detail::throw_invalid(fn, "delta", "moves a position outside int32 at token " + std::to_string(t));
  }
  if (rope.pairing != rope_pairing::none) {
    const auto freq = rope_frequencies(rope, block.head_dim_k());
    std::vector<float> head(static_cast<std::size_t>(block.head_dim_k()));
    for (std::size_t i = 0; i < block.n_layers(); ++i)
      for (std::int64_t t = 0; t < block.n_tokens(); ++t) {
        if (delta[static_cast<std::size_t>(t)] == 0) continue;
        for (std::int32_t h = 0; h < block.n_kv_heads(); ++h) {
          for (std::int32_t d = 0; d < block.head_dim_k(); ++d)
            head[static_cast<std::size_t>(d)] = block.get(i, false, t, h, d);
          rotate_head(head, static_cast<double>(delta[static_cast<std::size_t>(t)]), rope, freq);
          for (std::int32_t d = 0; d < block.head_dim_k(); ++d)
            block.set(i, false, t, h, d, head[static_cast<std::size_t>(d)]);
        }
      }
  }
  for (std::size_t t = 0; t < delta.size(); ++t)
    block.positions()[t] = static_cast<position_t>(block.positions()[t] + delta[t]);
}

/// @brief Moves every token to new_positions[t], re-rotating its keys by the difference.
/// @throws shape_mismatch if the sizes differ.
inline void set_positions(kv_block& block, std::span<const position_t> new_positions) {
  detail::check_same_size("set_positions", "new_positions", new_positions.size(), "block tokens",
                          static_cast<std::size_t>(block.n_tokens()));
  std::vector<std::int64_t> delta(new_positions.size());
  for (std::size_t t = 0; t < delta.size(); ++t)
    delta[t] = std::int64_t{new_positions[t]} - block.positions()[t];
  shift_keys(block, delta);
}

/// @brief Unrotates every key to position 0 (the pre-RoPE keys); positions become 0.
inline void unrotate_keys(kv_block& block) {
  std::vector<std::int64_t> delta(static_cast<std::size_t>(block.n_tokens()));
  for (std::size_t t = 0; t < delta.size(); ++t) delta[t] = -std::int64_t{block.positions()[t]};
  shift_keys(block, delta);
}

/// @brief Converts the keys of a block to another pairing convention by permuting the rotary
/// dims of every key head (neox (i, i+R/2) ↔ norm (2i, 2i+1)) and updates the fingerprint. This is
/// the fixed permutation between HF and llama.cpp keys of the same Llama checkpoint (llama.cpp's
/// converter permutes Q/K weight rows), needed when a cache crosses engines.
/// @throws invalid_argument if either pairing is `none` while the other is not.
inline void convert_pairing(kv_block& block, rope_pairing target) {
  constexpr std::string_view fn = "convert_pairing";
  auto fp = block.fingerprint();
  if (fp.rope.pairing == target) return;
  if (fp.rope.pairing == rope_pairing::none || target == rope_pairing::none)
    detail::throw_invalid(fn, "target", "cannot convert to or from pairing 'none'");
  const std::int32_t rot = fp.rope.rotary_dims == 0 ? fp.head_dim_k : fp.rope.rotary_dims, half = rot / 2;
  std::vector<float> src(static_cast<std::size_t>(rot));
  for (std::size_t i = 0; i < block.n_layers(); ++i)
    for (std::int64_t t = 0; t < block.n_tokens(); ++t)
      for (std::int32_t h = 0; h < block.n_kv_heads(); ++h) {
        for (std::int32_t d = 0; d < rot; ++d)
          src[static_cast<std::size_t>(d)] = block.get(i, false, t, h, d);
        for (std::int32_t j = 0; j < half; ++j) {
          if (target == rope_pairing::norm) {  // from neox
            block.set(i, false, t, h, 2 * j, src[static_cast<std::size_t>(j)]);
            block.set(i, false, t, h, 2 * j + 1, src[static_cast<std::size_t>(j + half)]);
          } else {  // from norm
            block.set(i, false, t, h, j, src[static_cast<std::size_t>(2 * j)]);
            block.set(i, false, t, h, j + half, src[static_cast<std::size_t>(2 * j + 1)]);
          }
        }
      }
  fp.rope.pairing = target;
  block.set_fingerprint(std::move(fp));
}

/// @brief Applies a position mode: for rebase_contiguous the block moves to first_position,
/// first_position+1, ...; for append_after to receiver_next, receiver_next+1, ...; keys are
/// re-rotated so phases stay consistent.
/// @throws invalid_argument if a position would be negative or overflow.
inline void apply_position_mode(kv_block& block, position_mode mode, position_t first_position = 0,
                                position_t receiver_next = 0) {
  constexpr std::string_view fn = "apply_position_mode";
  if (mode == position_mode::preserve) return;
  const position_t base = mode == position_mode::rebase_contiguous ? first_position : receiver_next;
  if (base < 0)
    detail::throw_invalid(fn, mode == position_mode::rebase_contiguous ? "first_position" : "receiver_next",
                          "must be >= 0, got " + std::to_string(base));
  if (std::int64_t{base} + block.n_tokens() > INT32_MAX)
    detail::throw_invalid(fn, "block", "would overflow int32 positions");
  std::vector<position_t> p(static_cast<std::size_t>(block.n_tokens()));
  for (std::size_t t = 0; t < p.size(); ++t)
    p[t] = static_cast<position_t>(base + static_cast<position_t>(t));
  set_positions(block, p);
}

/// @brief Options of the position-consistency gate.
struct position_gate_options {
  std::int64_t context_length = 0;  ///< positions must lie in [0, context_length); 0 = no limit
  /// Pre-RoPE keys of the same tokens (e.g. recomputed by the receiver, or the sender's
  /// unrotated keys): when given, each token's keys must equal its pre-RoPE keys rotated by its
  /// claimed position, to `phase_tolerance` relative error (RMS over the token's heads).
  const kv_block* prerope_reference = nullptr;
  double phase_tolerance = 1e-2;  ///< relative RMS error allowed (bf16 keys round at ~4e-3)
};

/// @brief What the gate found; `ok` when nothing.
struct position_gate_report {
  bool ok = true;                     ///< whether the block passed
  std::string problem;                ///< first problem found, "" if ok
  std::int64_t first_bad_token = -1;  ///< token index of the first problem, −1 if ok
  double max_phase_error = 0.0;       ///< largest relative RMS key error (when a reference is given)
};

/// @brief Inspects a block's positions (see position_gate_options) without throwing.
[[nodiscard]] inline position_gate_report inspect_positions(const kv_block& block,
                                                            const position_gate_options& o = {}) {
  position_gate_report r;
  auto fail = [&](std::int64_t t, std::string what) {
    if (r.ok) {
      r.ok = false;
      r.first_bad_token = t;
      r.problem = std::move(what);
    }
  };
  const auto pos = block.positions();
  for (std::size_t t = 0; t < pos.size() && r.ok; ++t) {
    if (pos[t] < 0)
      fail(static_cast<std::int64_t>(t), "negative position " + std::to_string(pos[t]));
    else if (o.context_length > 0 && pos[t] >= o.context_length)
      fail(static_cast<std::int64_t>(t), "position " + std::to_string(pos[t]) +
                                             " exceeds the context length " +
                                             std::to_string(o.context_length));
    else if (t > 0 && pos[t] == pos[t - 1])
      fail(static_cast<std::int64_t>(t),
           "position " + std::to_string(pos[t]) + " collides with the previous token");
    else if (t > 0 && pos[t] < pos[t - 1])
      fail(static_cast<std::int64_t>(t), "positions are not increasing (" + std::to_string(pos[t - 1]) +
                                             " then " + std::to_string(pos[t]) + ")");
  }
  if (o.prerope_reference != nullptr && block.fingerprint().rope.pairing != rope_pairing::none) {
    const kv_block& ref = *o.prerope_reference;
    if (ref.n_tokens() != block.n_tokens() || ref.n_kv_heads() != block.n_kv_heads() ||
        ref.head_dim_k() != block.head_dim_k() || ref.n_layers() != block.n_layers()) {
      fail(0, "the pre-RoPE reference does not have the block's shape");
      return r;
    }
    const auto& rope = block.fingerprint().rope;
    const auto freq = rope_frequencies(rope, block.head_dim_k());
    std::vector<float> head(static_cast<std::size_t>(block.head_dim_k()));
    for (std::int64_t t = 0; t < block.n_tokens(); ++t) {
      double err = 0, norm = 0;
      for (std::size_t i = 0; i < block.n_layers(); ++i)
        for (std::int32_t h = 0; h < block.n_kv_heads(); ++h) {
          for (std::int32_t d = 0; d < block.head_dim_k(); ++d)
            head[static_cast<std::size_t>(d)] = ref.get(i, false, t, h, d);
          rotate_head(head, static_cast<double>(pos[static_cast<std::size_t>(t)]), rope, freq);
          for (std::int32_t d = 0; d < block.head_dim_k(); ++d) {
            const double k = block.get(i, false, t, h, d);
            err += (k - head[static_cast<std::size_t>(d)]) * (k - head[static_cast<std::size_t>(d)]);
            norm += k * k;
          }
        }
      const double rel = norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
      if (rel > r.max_phase_error) r.max_phase_error = rel;
      if (rel > o.phase_tolerance)
        fail(t, "keys of token " + std::to_string(t) + " do not carry the phases of position " +
                    std::to_string(pos[static_cast<std::size_t>(t)]) + " (relative error " +
                    number_text(rel) + ")");
    }
  }
  return r;
}

/// @brief The position-consistency gate: refuses a block whose positions are inconsistent.
/// @throws corrupt_data "function: <problem>" naming the first bad token.
inline void check_positions(std::string_view function, const kv_block& block,
                            const position_gate_options& o = {}) {
  const auto r = inspect_positions(block, o);
  if (!r.ok) {
    std::string m(function);
    m.append(": position-consistency gate refused the block: ").append(r.problem);
    LATENTAUDIT_THROW(corrupt_data(m));
  }
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_ROPE_HPP
