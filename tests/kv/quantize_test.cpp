// SPDX-License-Identifier: MIT
// Tests for kv/quantize.hpp: error within half a step, exact payload byte counts (codes, scales,
// zero points), FP8 rounding against hand-checked values, idempotence of a second round trip.
#include <latentaudit/kv/quantize.hpp>

#include "support/catch.hpp"
#include "support/kv_fixtures.hpp"

using namespace latentaudit;

TEST_CASE("integer round trips stay within half a step and count bytes exactly", "[kv][quantize]") {
  for (auto scheme : {quant_scheme::int8, quant_scheme::int4}) {
    auto b = test::random_block(10, dtype::f32, 3);
    const auto rec = quantize_roundtrip(b, {.scheme = scheme, .group_size = 4});
    CHECK(rec.max_error_over_half_step <= 1.0 + 1e-6);
    CHECK(rec.max_abs_error > 0);
    // keys per channel: 4 layers x 2 heads x 8 dims channels x ceil(10/4) = 3 groups (4,4,2)
    // values per token: 4 layers x 10 tokens x 2 heads x ceil(6/4) = 2 groups (4,2)
    const std::uint64_t kgroups = 4 * 2 * 8 * 3, vgroups = 4 * 10 * 2 * 2;
    CHECK(rec.groups == kgroups + vgroups);
    const std::uint64_t elements = 4 * 10 * 2 * (8 + 6);
    const std::uint64_t codes = scheme == quant_scheme::int8 ? elements : (4 * 2 * 8 * (2 + 2 + 1) + 4 * 10 * 2 * (2 + 1));
    CHECK(rec.quantized_bytes == codes + 8 * (kgroups + vgroups));
    CHECK(rec.original_bytes == elements * 4);
  }
}

TEST_CASE("int8 error is far below int4 error; a second round trip changes little", "[kv][quantize]") {
  auto a = test::random_block(32, dtype::f32, 4), b = a;
  const auto r8 = quantize_roundtrip(a, {.scheme = quant_scheme::int8, .group_size = 32});
  const auto r4 = quantize_roundtrip(b, {.scheme = quant_scheme::int4, .group_size = 32});
  CHECK(r8.rms_error * 8 < r4.rms_error);
  auto c = a;
  const auto again = quantize_roundtrip(c, {.scheme = quant_scheme::int8, .group_size = 32});
  CHECK(again.max_abs_error <= r8.max_abs_error);
}

TEST_CASE("constant groups round-trip exactly", "[kv][quantize]") {
  auto b = kv_block::all_layers(test::small_fingerprint(), 4, dtype::bf16);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::int64_t t = 0; t < 4; ++t)
      for (std::int32_t h = 0; h < 2; ++h) {
        for (std::int32_t d = 0; d < 8; ++d) b.set(i, false, t, h, d, 1.5f);
        for (std::int32_t d = 0; d < 6; ++d) b.set(i, true, t, h, d, -2.0f);
      }
  const auto before = b;
  const auto rec = quantize_roundtrip(b, {.scheme = quant_scheme::int4});
  CHECK(b == before);
  CHECK(rec.max_abs_error == 0.0);
}

TEST_CASE("FP8 rounding: E4M3 and E5M2 grids, ties to even, saturation", "[kv][quantize]") {
  CHECK(round_to_fp8(448.0, true) == 448.0);
  CHECK(round_to_fp8(1000.0, true) == 448.0);
  CHECK(round_to_fp8(-1000.0, true) == -448.0);
  CHECK(round_to_fp8(1.0625, true) == 1.0);     // halfway between 1 and 1.125: even mantissa -> 1
  CHECK(round_to_fp8(1.1875, true) == 1.25);    // halfway between 1.125 and 1.25 -> 1.25 (even)
  CHECK(round_to_fp8(0x1.0p-9, true) == 0x1.0p-9);  // smallest E4M3 subnormal
  CHECK(round_to_fp8(0x1.0p-11, true) == 0.0);
  CHECK(round_to_fp8(57344.0, false) == 57344.0);
  CHECK(round_to_fp8(1.125, false) == 1.0);     // E5M2 has 2 mantissa bits: 1, 1.25: tie -> 1
  CHECK(round_to_fp8(0x1.0p-16, false) == 0x1.0p-16);
  auto b = test::random_block(8, dtype::f32, 6);
  const auto rec = quantize_roundtrip(b, {.scheme = quant_scheme::fp8_e4m3});
  CHECK(rec.groups == 8);  // one scale per (layer, K|V)
  CHECK(rec.quantized_bytes == 4 * 8 * 2 * (8 + 6) + 8 * 4);
  CHECK(rec.rms_error < 0.05);
  CHECK_THROWS_AS(quantize_roundtrip(b, {.scheme = quant_scheme::int8, .group_size = 0}), invalid_argument);
}

TEST_CASE("quantization is bit-identical at 1 and 4 threads", "[kv][quantize]") {
  const auto base = test::random_block(20, dtype::bf16, 7);
  for (auto scheme : {quant_scheme::int8, quant_scheme::int4, quant_scheme::fp8_e5m2}) {
    auto a = base, b = base;
    const auto ra = quantize_roundtrip(a, {.scheme = scheme, .group_size = 8}, 1);
    const auto rb = quantize_roundtrip(b, {.scheme = scheme, .group_size = 8}, 4);
    CHECK(a == b);
    CHECK(ra.quantized_bytes == rb.quantized_bytes);
    CHECK(ra.rms_error == rb.rms_error);
  }
}
