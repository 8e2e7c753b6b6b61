// SPDX-License-Identifier: MIT
// latentaudit: definitions of trial/detail/relay_stage.hpp (compiled once in compiled mode).
#ifndef LATENTAUDIT_TRIAL_DETAIL_IMPL_RELAY_STAGE_INL_HPP
#define LATENTAUDIT_TRIAL_DETAIL_IMPL_RELAY_STAGE_INL_HPP

#include "../relay_stage.hpp"

#include "../../../kv/placebo.hpp"
#include "../../record_builder.hpp"

namespace latentaudit::detail {

LATENTAUDIT_INLINE std::vector<std::byte> relay_encode_text(const text_relay& t,
                                                            const wire_encode_options& o) {
  return encode_relay(t, o);
}

LATENTAUDIT_INLINE std::vector<std::byte> relay_encode_kv(const kv_block& b, const wire_encode_options& o) {
  return encode_relay(b, o);
}

LATENTAUDIT_INLINE decoded_relay relay_decode(std::span<const std::byte> bytes,
                                              const wire_decode_options& o) {
  return decode_relay(bytes, o);
}

LATENTAUDIT_INLINE transfer_record relay_apply_policy(const kv_policy& policy, kv_block& block,
                                                      const policy_context& ctx) {
  return policy.apply(block, ctx);
}

LATENTAUDIT_INLINE kv_block relay_zeroed_placebo(const kv_block& real) { return zeroed_placebo(real); }

LATENTAUDIT_INLINE kv_block relay_random_placebo(const kv_block& real, std::uint64_t seed,
                                                 std::uint64_t item) {
  return random_placebo(real, seed, item);
}

LATENTAUDIT_INLINE kv_block relay_length_matched(const kv_block& donor, std::int64_t n_tokens,
                                                 position_t first_position) {
  return length_matched(donor, n_tokens, first_position);
}

LATENTAUDIT_INLINE json_value relay_transfer_json(const transfer_record& tr,
                                                  const std::optional<quantize_spec>& wire_quantization) {
  return transfer_record_json(tr, wire_quantization);
}

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_TRIAL_DETAIL_IMPL_RELAY_STAGE_INL_HPP
