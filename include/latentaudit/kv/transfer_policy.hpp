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
#include "policy_spec.hpp"
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

static_assert(transfer_policy<kv_policy>);

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/transfer_policy-inl.hpp"
#endif

#endif  // LATENTAUDIT_KV_TRANSFER_POLICY_HPP
