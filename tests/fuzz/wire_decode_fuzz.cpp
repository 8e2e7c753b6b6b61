// SPDX-License-Identifier: MIT
// libFuzzer target for the relay decoder: any byte string must either decode or throw a
// latentaudit::error — never crash, leak, read out of bounds or allocate what a header claims
// beyond the limits. Decoded unquantized frames are re-encoded and must give the same bytes.
#include <latentaudit/kv/wire.hpp>

#include <cstdint>
#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace latentaudit;
  const auto bytes = std::as_bytes(std::span(data, size));
  wire_limits limits;
  limits.max_payload_bytes = 1u << 24;  // keep the fuzzer's memory small
  limits.max_tokens = 1 << 16;
  static const std::byte key[] = {std::byte{'k'}, std::byte{'e'}, std::byte{'y'}};
  for (int with_key = 0; with_key < 2; ++with_key) {
    try {
      wire_decode_options o{.limits = limits};
      if (with_key) o.hmac_key = key;
      const auto d = decode_relay(bytes, o);
      // a frame that decodes re-encodes to the same bytes (without a key the tag is dropped)
      if (!d.has_tag && !d.quantization) {
        const auto again = d.kind == relay_kind::kv ? encode_relay(d.kv) : encode_relay(d.text);
        if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
      }
    } catch (const latentaudit::error&) {
    }
  }
  return 0;
}
