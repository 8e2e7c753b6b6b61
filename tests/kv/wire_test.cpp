// SPDX-License-Identifier: MIT
// Tests for kv/wire.hpp: lossless round trips (KV in every dtype, token and UTF-8 text, bytes and
// streams), exact byte accounting, tamper detection (every single-bit flip), HMAC authentication,
// fingerprint refusal and limits enforced before allocation.
#include <latentaudit/kv/wire.hpp>

#include <cstring>
#include <sstream>

#include "support/catch.hpp"
#include "support/kv_fixtures.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;

namespace {
std::vector<std::byte> key_of(const std::string& s) {
  const auto b = std::as_bytes(std::span(s.data(), s.size()));
  return {b.begin(), b.end()};
}
}  // namespace

TEST_CASE("KV relays round-trip losslessly in every dtype", "[kv][wire]") {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
    auto b = test::random_block(7, t, 4);
    b.positions()[0] = 10;
    for (int i = 1; i < 7; ++i) b.positions()[static_cast<std::size_t>(i)] = 10 + 2 * i;
    const auto bytes = encode_relay(b);
    CHECK(bytes.size() == relay_wire_bytes(b));
    const auto d = decode_relay(bytes);
    CHECK(d.kind == relay_kind::kv);
    CHECK(d.kv == b);
    CHECK_FALSE(d.has_tag);
    CHECK(d.wire_bytes == bytes.size());
  }
  // a layer subset
  kv_block sub(test::small_fingerprint(), {1, 3}, 2, dtype::bf16);
  sub.set(1, true, 1, 1, 5, 3.5f);
  CHECK(decode_relay(encode_relay(sub)).kv == sub);
  // zero tokens
  kv_block empty(test::small_fingerprint(), {0}, 0, dtype::f32);
  CHECK(decode_relay(encode_relay(empty)).kv == empty);
}

TEST_CASE("text relays use the same framing", "[kv][wire]") {
  text_relay tok{.as_tokens = true, .tokens = {1, 5, 9, 33, 2}};
  const auto a = encode_relay(tok);
  CHECK(a.size() == relay_wire_bytes(tok));
  CHECK(a.size() == 20 + 8 + 5 * 4 + 4);
  CHECK(decode_relay(a).text == tok);
  text_relay utf{.as_tokens = false, .utf8 = "k1 v1 k2 v2 — π"};
  const auto b = encode_relay(utf);
  CHECK(decode_relay(b).kind == relay_kind::text_utf8);
  CHECK(decode_relay(b).text == utf);
  text_relay bad{.as_tokens = false, .utf8 = "\xC0\xAF"};  // overlong '/'
  CHECK_THROWS_AS(encode_relay(bad), invalid_argument);
}

TEST_CASE("stream encode/decode reads frames back to back", "[kv][wire]") {
  const auto b = test::random_block(3, dtype::f16, 8);
  const auto key = key_of("a shared secret");
  std::stringstream ss;
  const auto n1 = encode_relay(b, ss, {.hmac_key = key});
  const auto n2 = encode_relay(text_relay{.as_tokens = true, .tokens = {4, 2}}, ss);
  CHECK(n1 == relay_wire_bytes(b, true));
  CHECK(static_cast<std::uint64_t>(ss.str().size()) == n1 + n2);
  const auto d1 = decode_relay(ss, {.hmac_key = key, .require_authentication = true});
  CHECK(d1.authenticated);
  CHECK(d1.kv == b);
  const auto d2 = decode_relay(ss);
  CHECK(d2.text.tokens == std::vector<token_id>{4, 2});
  CHECK_THROWS_WITH(decode_relay(ss), Contains("truncated"));
}

TEST_CASE("every single-bit flip of a relay is rejected", "[kv][wire]") {
  const auto b = test::random_block(2, dtype::bf16, 12);
  const auto good = encode_relay(b);
  std::size_t rejected = 0;
  for (std::size_t i = 0; i < good.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      auto bad = good;
      bad[i] ^= static_cast<std::byte>(1u << bit);
      try {
        (void)decode_relay(bad);
      } catch (const corrupt_data&) {
        ++rejected;
      }
    }
  CHECK(rejected == good.size() * 8);
}

TEST_CASE("with HMAC on, tampered relays are rejected even with a fixed-up CRC", "[kv][wire]") {
  const auto b = test::random_block(2, dtype::f32, 13);
  const auto key = key_of("k3y");
  const auto good = encode_relay(b, {.hmac_key = key});
  CHECK(decode_relay(good, {.hmac_key = key, .require_authentication = true}).authenticated);
  const std::size_t body = good.size() - 32 - 4;
  std::size_t rejected = 0, tried = 0;
  for (std::size_t i = 20; i < body; i += 7) {
    auto bad = good;
    bad[i] ^= std::byte{0x10};
    const std::uint32_t c = crc32c::of(std::span(bad).subspan(0, body));
    std::memcpy(bad.data() + body, &c, 4);  // an attacker recomputes the CRC
    ++tried;
    try {
      (void)decode_relay(bad, {.hmac_key = key});
    } catch (const authentication_failed&) {
      ++rejected;
    } catch (const corrupt_data&) {
      ++rejected;  // header fields may already fail validation
    }
  }
  CHECK(rejected == tried);
  // wrong key, missing tag, missing key
  CHECK_THROWS_AS(decode_relay(good, {.hmac_key = key_of("other")}), authentication_failed);
  CHECK_THROWS_AS(decode_relay(encode_relay(b), {.hmac_key = key, .require_authentication = true}),
                  authentication_failed);
  CHECK_THROWS_AS(decode_relay(good, {.require_authentication = true}), authentication_failed);
  CHECK_FALSE(decode_relay(good).authenticated);  // tag present, not checked without a key
}

TEST_CASE("a relay from another model is refused", "[kv][wire]") {
  const auto b = test::random_block(2);
  auto other = test::small_fingerprint();
  other.weights_hash = 777;
  CHECK_THROWS_AS(decode_relay(encode_relay(b), {.expected_fingerprint = &other}), incompatible_model);
  const auto same = test::small_fingerprint();
  CHECK_NOTHROW(decode_relay(encode_relay(b), {.expected_fingerprint = &same}));
}

TEST_CASE("limits are enforced before allocation", "[kv][wire]") {
  const auto b = test::random_block(4);
  const auto bytes = encode_relay(b);
  wire_limits small{};
  small.max_tokens = 3;
  CHECK_THROWS_WITH(decode_relay(bytes, {.limits = small}), Contains("n_tokens"));
  small = {};
  small.max_payload_bytes = 100;
  CHECK_THROWS_WITH(decode_relay(bytes, {.limits = small}), Contains("payload length"));
  // a header claiming 2^40 tokens with a tiny frame: refused by the limit, nothing allocated
  auto huge = bytes;
  const std::size_t hlen_off = 8;
  std::uint32_t hlen;
  std::memcpy(&hlen, huge.data() + hlen_off, 4);
  // n_tokens sits 8 + 4 bytes before the end of the header (i64 n_tokens, u32 count, 4 x i32 ids)
  const std::size_t ntok_off = 20 + hlen - 4 * 4 - 4 - 8;
  const std::int64_t big = std::int64_t{1} << 40;
  std::memcpy(huge.data() + ntok_off, &big, 8);
  CHECK_THROWS_WITH(decode_relay(huge), Contains("n_tokens"));
  CHECK_THROWS_WITH(decode_relay(std::span(bytes).subspan(0, 10)), Contains("truncated"));
  auto trailing = bytes;
  trailing.push_back(std::byte{0});
  CHECK_THROWS_WITH(decode_relay(trailing), Contains("trailing"));
}

TEST_CASE("ragged (token-masked) blocks round-trip and carry only present rows", "[kv][wire]") {
  auto b = test::random_block(5, dtype::bf16, 21);
  std::vector<std::uint8_t> mask(4 * 5, 1);
  for (int t = 2; t < 5; ++t)
    mask[static_cast<std::size_t>(3 * 5 + t)] = 0;  // layer 3 keeps tokens 0, 1 only
  mask[1 * 5 + 4] = 0;
  b.set_token_mask(mask);
  CHECK(b.has_token_mask());
  CHECK(b.present_tokens(3) == 2);
  CHECK(b.get(3, false, 4, 1, 2) == 0.0f);
  const std::size_t rows = 4 * 5 - 4;
  CHECK(b.content_bytes() == rows * b.row_bytes() + 5 * 4 + 3);
  const auto bytes = encode_relay(b);
  CHECK(bytes.size() == relay_wire_bytes(b));
  const auto d = decode_relay(bytes);
  CHECK(d.kv == b);
  std::size_t rejected = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto bad = bytes;
    bad[i] ^= std::byte{0x04};
    try {
      (void)decode_relay(bad);
    } catch (const corrupt_data&) {
      ++rejected;
    }
  }
  CHECK(rejected == bytes.size());
  // an all-ones mask is no mask
  auto c = test::random_block(2);
  c.set_token_mask(std::vector<std::uint8_t>(8, 1));
  CHECK_FALSE(c.has_token_mask());
  CHECK_THROWS_AS(c.set_token_mask(std::vector<std::uint8_t>(3, 1)), shape_mismatch);
}

TEST_CASE("quantized relays carry codes, scales and zero points and decode to the round trip", "[kv][wire]") {
  for (dtype t : {dtype::f32, dtype::bf16})
    for (auto spec :
         {quantize_spec{.scheme = quant_scheme::int8, .group_size = 4},
          quantize_spec{.scheme = quant_scheme::int4, .group_size = 3},
          quantize_spec{.scheme = quant_scheme::int4, .group_size = 3, .keys_per_channel = false},
          quantize_spec{.scheme = quant_scheme::fp8_e4m3}, quantize_spec{.scheme = quant_scheme::fp8_e5m2}})
      for (bool masked : {false, true}) {
        auto b = test::random_block(7, t, 31);
        if (masked) {
          std::vector<std::uint8_t> m(4 * 7, 1);
          m[2 * 7 + 5] = m[2 * 7 + 6] = m[0] = 0;
          b.set_token_mask(m);
        }
        const wire_encode_options o{.quantize = spec};
        const auto bytes = encode_relay(b, o);
        CHECK(bytes.size() == relay_wire_bytes(b, o));
        CHECK(bytes.size() < relay_wire_bytes(b) * (t == dtype::f32 ? 1 : 2));
        auto expected = b;
        const auto rec = quantize_roundtrip(expected, spec);
        const std::uint64_t header_and_frame = relay_wire_bytes(b, o) - rec.quantized_bytes;
        CHECK(header_and_frame < 200);  // prefix, header, positions, mask, CRC
        const auto d = decode_relay(bytes);
        REQUIRE(d.quantization.has_value());
        CHECK(d.quantization->scheme == spec.scheme);
        CHECK(d.kv == expected);
        // every single-bit flip is still rejected
        std::size_t rejected = 0;
        for (std::size_t i = 0; i < bytes.size(); i += 3) {
          auto bad = bytes;
          bad[i] ^= std::byte{0x01};
          try {
            (void)decode_relay(bad);
          } catch (const corrupt_data&) {
            ++rejected;
          }
        }
        CHECK(rejected == (bytes.size() + 2) / 3);
      }
}

TEST_CASE("a quantized relay with an invalid scale is refused even with a valid CRC", "[kv][wire]") {
  const auto b = test::random_block(3, dtype::f32, 32);
  auto bytes = encode_relay(b, {.quantize = quantize_spec{.scheme = quant_scheme::fp8_e4m3}});
  // the first unit's scale follows prefix, header and positions
  std::uint32_t hlen;
  std::memcpy(&hlen, bytes.data() + 8, 4);
  const std::size_t scale_at = 20 + hlen + 3 * 4;
  const float nan = std::nanf("");
  std::memcpy(bytes.data() + scale_at, &nan, 4);
  const std::uint32_t c = crc32c::of(std::span(bytes).subspan(0, bytes.size() - 4));
  std::memcpy(bytes.data() + bytes.size() - 4, &c, 4);
  CHECK_THROWS_WITH(decode_relay(bytes), Contains("scale"));
}

TEST_CASE("the wire reads the quantization schemes from the one table (all_quant_schemes)", "[kv][wire]") {
  const auto b = test::random_block(3, dtype::f32, 33);
  for (const quant_scheme q : all_quant_schemes) {  // every scheme of the table is carried under its id
    INFO(quant_scheme_name(q));
    const auto d = decode_relay(encode_relay(b, {.quantize = quantize_spec{.scheme = q, .group_size = 8}}));
    REQUIRE(d.quantization.has_value());
    CHECK(d.quantization->scheme == q);
  }
  // an id past the table is refused, naming the table's schemes; the encoding is the first header
  // byte where an int8 frame and an fp8_e4m3 frame of the same block differ
  const auto i8 = encode_relay(b, {.quantize = quantize_spec{.scheme = quant_scheme::int8, .group_size = 8}});
  auto f8 = encode_relay(b, {.quantize = quantize_spec{.scheme = quant_scheme::fp8_e4m3}});
  std::size_t at = 20;
  while (at < f8.size() && i8[at] == f8[at]) ++at;
  REQUIRE(std::to_integer<int>(f8[at]) == static_cast<int>(quant_scheme::fp8_e4m3));
  f8[at] = static_cast<std::byte>(all_quant_schemes.size() + 1);
  const std::uint32_t c = crc32c::of(std::span(f8).subspan(0, f8.size() - 4));
  std::memcpy(f8.data() + f8.size() - 4, &c, 4);
  CHECK_THROWS_WITH(
      decode_relay(f8),
      Contains("'encoding' is 5") && Contains("0 (raw), 1 (int8), 2 (int4), 3 (fp8_e4m3) or 4 (fp8_e5m2)"));
  auto q = b;  // the spec check reads the same table
  CHECK_THROWS_WITH(quantize_roundtrip(q, {.scheme = static_cast<quant_scheme>(9)}),
                    Contains("must be int8, int4, fp8_e4m3 or fp8_e5m2"));
}

TEST_CASE("encode and decode into caller-owned buffers equal the returning forms", "[kv][wire]") {
  std::vector<std::byte> bytes(3, std::byte{0x55});  // stale contents are replaced
  decoded_relay d;
  const auto key = key_of("k");
  for (dtype t : {dtype::bf16, dtype::f32, dtype::bf16}) {
    for (std::int64_t tokens : {9, 4, 11}) {
      auto b = test::random_block(tokens, t, 60 + static_cast<std::uint64_t>(tokens));
      const auto written = encode_relay(b, bytes, {.hmac_key = key});
      CHECK(written == bytes.size());
      CHECK(bytes == encode_relay(b, {.hmac_key = key}));
      decode_relay(bytes, d, {.hmac_key = key, .require_authentication = true});
      CHECK(d.kv == b);
      CHECK(d.authenticated);
      CHECK(d.wire_bytes == bytes.size());
      // ragged and quantized relays through the same objects
      std::vector<std::uint8_t> m(4 * static_cast<std::size_t>(tokens), 1);
      m[1] = m[2 * static_cast<std::size_t>(tokens) + 3] = 0;
      b.set_token_mask(m);
      encode_relay(b, bytes);
      decode_relay(bytes, d);
      CHECK(d.kv == b);
      CHECK(d.kv.get(0, false, 1, 0, 0) == 0.0f);
      const wire_encode_options q{.quantize = quantize_spec{.scheme = quant_scheme::int8, .group_size = 4}};
      encode_relay(b, bytes, q);
      decode_relay(bytes, d);
      CHECK(d.kv == decode_relay(bytes).kv);
      CHECK_FALSE(d.authenticated);
    }
  }
  // text resets the block; a failed decode resets the whole relay
  const text_relay tok{.as_tokens = true, .tokens = {4, 2}};
  encode_relay(test::random_block(3), bytes);
  decode_relay(bytes, d);
  const auto text = encode_relay(tok);
  decode_relay(text, d);
  CHECK(d.kind == relay_kind::text_tokens);
  CHECK(d.text == tok);
  CHECK(d.kv.n_layers() == 0);
  decode_relay(bytes, d);
  bytes[bytes.size() / 2] ^= std::byte{1};
  CHECK_THROWS_AS(decode_relay(bytes, d), corrupt_data);
  CHECK(d.kv.n_layers() == 0);
  CHECK(d.wire_bytes == 0);
  std::stringstream ss;
  encode_relay(test::random_block(2, dtype::f16, 70), ss);
  decode_relay(ss, d);
  CHECK(d.kv == test::random_block(2, dtype::f16, 70));
}

TEST_CASE("bulk relays (streamed copies, several checksum lanes) round-trip through fresh and reused buffers",
          "[kv][wire]") {
  // 2 layers x 4100 tokens x 8 heads x (128 + 128) x bf16 = 33.6 MB, above stream_copy_min_bytes
  const model_fingerprint fp{.architecture = "LlamaForCausalLM",
                             .n_layers = 2,
                             .n_heads = 8,
                             .n_kv_heads = 8,
                             .head_dim_k = 128,
                             .head_dim_v = 128,
                             .rope = {},
                             .weights_hash = 7};
  auto b = kv_block::all_layers(fp, 4100, dtype::bf16);
  REQUIRE(b.payload_bytes() >= detail::stream_copy_min_bytes);
  auto bytes_of_block = b.payload_mut();
  for (std::size_t i = 0; i < bytes_of_block.size(); ++i)
    bytes_of_block[i] = static_cast<std::byte>((i * 2654435761u) >> 11 & 0x3F);
  const auto fresh = encode_relay(b);
  CHECK(crc32c::of(std::span(fresh).first(fresh.size() - 4)) == [&] {
    std::uint32_t c;
    std::memcpy(&c, fresh.data() + fresh.size() - 4, 4);
    return c;
  }());
  std::vector<std::byte> reused(fresh.size() + 1);  // capacity suffices: the in-place path
  encode_relay(b, reused);
  CHECK(reused == fresh);
  decoded_relay d;
  decode_relay(fresh, d);
  CHECK(d.kv == b);
  decode_relay(reused, d);  // storage reused
  CHECK(d.kv == b);
  // a frame at an odd address in a larger buffer
  std::vector<std::byte> shifted(fresh.size() + 1);
  std::memcpy(shifted.data() + 1, fresh.data(), fresh.size());
  CHECK(decode_relay(std::span(shifted).subspan(1)).kv == b);
  // a flipped payload bit deep inside is still caught
  reused[reused.size() / 2 + 12345] ^= std::byte{0x10};
  CHECK_THROWS_AS(decode_relay(reused, d), corrupt_data);
}

TEST_CASE("bulk relays give the same bytes through every CRC32C kernel (fused copy, SSE4.2 lanes, tables)",
          "[kv][wire]") {
  // 2 layers x 4100 tokens x 8 heads x (128 + 128) x bf16 = 33.6 MB: the streamed (fused) path
  const model_fingerprint fp{.architecture = "LlamaForCausalLM",
                             .n_layers = 2,
                             .n_heads = 8,
                             .n_kv_heads = 8,
                             .head_dim_k = 128,
                             .head_dim_v = 128,
                             .rope = {},
                             .weights_hash = 7};
  auto b = kv_block::all_layers(fp, 4100, dtype::bf16);
  auto payload = b.payload_mut();
  std::uint64_t x = 77;
  for (auto& e : payload) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    e = static_cast<std::byte>(x >> 31);
  }
  const auto key = key_of("bulk key");
  struct cap_guard {
    ~cap_guard() { detail::crc32c_kernel_cap = 3; }
  } restore;
  // the reference: the portable tables, appending into a new vector (no streaming copy)
  detail::crc32c_kernel_cap = 0;
  const auto ref = encode_relay(b);
  const auto ref_tagged = encode_relay(b, {.hmac_key = key});
  for (int cap : {3, 2, 1, 0}) {
    detail::crc32c_kernel_cap = cap;
    INFO("kernel cap " << cap << ", fused copy " << detail::crc32c_copy_fused());
    CHECK(encode_relay(b) == ref);
    std::vector<std::byte> reused(ref_tagged.size() + 64, std::byte{0x5A});  // in place: streaming stores
    encode_relay(b, reused);
    CHECK(reused == ref);
    encode_relay(b, reused, {.hmac_key = key});  // with a MAC: the fused copy in 256 KiB pieces
    CHECK(reused == ref_tagged);
    decoded_relay d;
    decode_relay(ref, d);
    CHECK(d.kv == b);
    decode_relay(ref_tagged, d, {.hmac_key = key, .require_authentication = true});
    CHECK(d.kv == b);
    CHECK(d.authenticated);
    // at an odd address, and a flipped bit in the last 256 bytes of the payload (the fold's tail)
    std::vector<std::byte> shifted(ref.size() + 3);
    std::memcpy(shifted.data() + 3, ref.data(), ref.size());
    CHECK(decode_relay(std::span(shifted).subspan(3)).kv == b);
    shifted[3 + ref.size() - 4 - 100] ^= std::byte{0x01};
    CHECK_THROWS_AS(decode_relay(std::span(shifted).subspan(3), d), corrupt_data);
    CHECK(d.kv.n_layers() == 0);
  }
}
