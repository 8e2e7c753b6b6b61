// SPDX-License-Identifier: MIT
// latentaudit: the engine-independent stages of one relay (transfer policy or placebo, wire
// encoding, decoding and verification, the policy's record) behind plain functions, so that
// trial_driver<Backend> instantiates only its engine calls. In compiled mode these bodies (about
// 10 s of g++ -O3 per translation unit that instantiates the driver) compile once, in
// src/trial/detail/relay_stage.cpp (docs/building.md); header-only mode includes them inline.
// Each function only forwards to the kv/ or record-builder function it names.
#ifndef LATENTAUDIT_TRIAL_DETAIL_RELAY_STAGE_HPP
#define LATENTAUDIT_TRIAL_DETAIL_RELAY_STAGE_HPP

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "../../config.hpp"
#include "../../core/json.hpp"
#include "../../kv/kv_block.hpp"
#include "../../kv/quantize.hpp"
#include "../../kv/transfer_policy.hpp"
#include "../../kv/wire.hpp"

namespace latentaudit::detail {

/// @brief encode_relay of a text relay (kv/wire.hpp).
LATENTAUDIT_INLINE std::vector<std::byte> relay_encode_text(const text_relay& t,
                                                            const wire_encode_options& o);

/// @brief encode_relay of a KV block (kv/wire.hpp).
LATENTAUDIT_INLINE std::vector<std::byte> relay_encode_kv(const kv_block& b, const wire_encode_options& o);

/// @brief decode_relay of a whole frame (kv/wire.hpp).
LATENTAUDIT_INLINE decoded_relay relay_decode(std::span<const std::byte> bytes, const wire_decode_options& o);

/// @brief policy.apply(block, ctx) (kv/transfer_policy.hpp).
LATENTAUDIT_INLINE transfer_record relay_apply_policy(const kv_policy& policy, kv_block& block,
                                                      const policy_context& ctx);

/// @brief zeroed_placebo(real) (kv/placebo.hpp).
LATENTAUDIT_INLINE kv_block relay_zeroed_placebo(const kv_block& real);

/// @brief random_placebo(real, seed, item) (kv/placebo.hpp).
LATENTAUDIT_INLINE kv_block relay_random_placebo(const kv_block& real, std::uint64_t seed,
                                                 std::uint64_t item);

/// @brief length_matched(donor, n_tokens, first_position) (kv/placebo.hpp).
LATENTAUDIT_INLINE kv_block relay_length_matched(const kv_block& donor, std::int64_t n_tokens,
                                                 position_t first_position);

/// @brief transfer_record_json(tr, wire_quantization) (trial/record_builder.hpp).
LATENTAUDIT_INLINE json_value relay_transfer_json(const transfer_record& tr,
                                                  const std::optional<quantize_spec>& wire_quantization);

}  // namespace latentaudit::detail

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/relay_stage-inl.hpp"
#endif

#endif  // LATENTAUDIT_TRIAL_DETAIL_RELAY_STAGE_HPP
