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
    const std::uint64_t codes =
        scheme == quant_scheme::int8 ? elements : (4 * 2 * 8 * (2 + 2 + 1) + 4 * 10 * 2 * (2 + 1));
    CHECK(rec.quantized_bytes == codes + 8 * (kgroups + vgroups));
    CHECK(rec.original_bytes == elements * 4);
  }
}

TEST_CASE("int8 error is far below int4 error, a second round trip changes little", "[kv][quantize]") {
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
  CHECK(round_to_fp8(1.0625, true) == 1.0);         // halfway between 1 and 1.125: even mantissa -> 1
  CHECK(round_to_fp8(1.1875, true) == 1.25);        // halfway between 1.125 and 1.25 -> 1.25 (even)
  CHECK(round_to_fp8(0x1.0p-9, true) == 0x1.0p-9);  // smallest E4M3 subnormal
  CHECK(round_to_fp8(0x1.0p-11, true) == 0.0);
  CHECK(round_to_fp8(57344.0, false) == 57344.0);
  CHECK(round_to_fp8(1.125, false) == 1.0);  // E5M2 has 2 mantissa bits: 1, 1.25: tie -> 1
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

namespace {
// The reference: quantize to the payload, then dequantize it (what a receiver decodes).
kv_block via_payload(const kv_block& b, const quantize_spec& spec) {
  kv_block out = b;
  dequantize_payload(out, spec, quantize_payload(b, spec));
  return out;
}
}  // namespace

TEST_CASE("the fused integer round trip equals quantize -> dequantize bit for bit", "[kv][quantize]") {
  // the best kernels the machine has (AVX-512 / AVX2), AVX2 at most, the portable ones, and the
  // best without AVX512_BF16 rounding
  const int kernels = GENERATE(0, 1, 2, 3);
  detail::force_avx2_kernels = kernels == 1;
  detail::force_portable_kernels = kernels == 2;
  detail::bf16_convert_allowed = kernels != 3;
  INFO("kernels (0 best, 1 AVX2 at most, 2 portable, 3 best without bf16 conversion): " << kernels);
  // head dim 128 as in real models (eight-lane group minima), plus odd group sizes and a mask
  const model_fingerprint fp{.architecture = "LlamaForCausalLM",
                             .n_layers = 2,
                             .n_heads = 4,
                             .n_kv_heads = 2,
                             .head_dim_k = 128,
                             .head_dim_v = 128,
                             .rope = {},
                             .weights_hash = 3};
  for (dtype type : {dtype::bf16, dtype::f32, dtype::f16}) {
    auto base = test::random_block(70, type, 11, fp);
    // exact ties: a key channel spanning [0, 255/8] in each group of 32 tokens has scale 1/8
    // (int8), and values (n + 1/2)/8 sit exactly between two codes
    for (std::size_t i = 0; i < 2; ++i)
      for (std::int64_t tok = 0; tok < 70; ++tok) {
        const float tie =
            tok % 32 == 0 ? 0.0f
                          : (tok % 32 == 1 ? 31.875f : (static_cast<float>((tok * 5) % 100) + 0.5f) / 8.0f);
        base.set(i, false, tok, 0, 3, tie);
        base.set(i, true, tok, 1, 0, static_cast<float>((tok * 11) % 256) / 16.0f);
        base.set(i, true, tok, 1, 1, 0.5f);  // with values per token: part of a group
      }
    // a constant channel (scale 0), a group with zero minimum and mixed-sign zeros, a tiny range
    for (std::int64_t tok = 0; tok < 70; ++tok) base.set(1, false, tok, 1, 7, 2.0f);
    for (std::int32_t d = 0; d < 32; ++d)
      base.set(0, true, 5, 0, d, d % 3 == 0 ? -0.0f : (d % 3 == 1 ? 0.0f : 1.0f));
    for (std::int32_t d = 32; d < 64; ++d) base.set(0, true, 6, 0, d, 1e-38f * static_cast<float>(d % 5));
    for (bool masked : {false, true}) {
      if (masked) {
        std::vector<std::uint8_t> m(2 * 70, 1);
        for (int tok = 3; tok < 70; tok += 4) m[static_cast<std::size_t>(70 + tok)] = 0;
        base.set_token_mask(m);
      }
      for (auto spec :
           {quantize_spec{.scheme = quant_scheme::int8, .group_size = 32},
            quantize_spec{.scheme = quant_scheme::int8, .group_size = 32, .keys_per_channel = false},
            quantize_spec{.scheme = quant_scheme::int4, .group_size = 5},
            quantize_spec{.scheme = quant_scheme::int4, .group_size = 64, .keys_per_channel = false},
            quantize_spec{.scheme = quant_scheme::int8, .group_size = 128, .keys_per_channel = false}}) {
        auto fused = base;
        const auto rec = quantize_roundtrip(fused, spec, 2);
        CHECK(fused == via_payload(base, spec));
        quantize_record ref;
        (void)quantize_payload(base, spec, 1, &ref);
        CHECK(rec.quantized_bytes == ref.quantized_bytes);
        CHECK(rec.groups == ref.groups);
        CHECK(rec.original_bytes == ref.original_bytes);
        // errors are accumulated in binary32 per element: equal to 1e-6 relative
        CHECK(rec.max_abs_error == Approx(ref.max_abs_error).epsilon(1e-6));
        CHECK(rec.rms_error == Approx(ref.rms_error).epsilon(1e-6));
        CHECK(rec.max_error_over_half_step == Approx(ref.max_error_over_half_step).epsilon(1e-6));
      }
    }
  }
  // a non-finite value makes a non-finite group range: refused as the decoder refuses it
  auto inf = test::random_block(4);
  inf.set(0, false, 0, 0, 0, std::numeric_limits<float>::infinity());
  CHECK_THROWS_AS(quantize_roundtrip(inf, {.scheme = quant_scheme::int8}), corrupt_data);
  detail::force_portable_kernels = false;
  detail::force_avx2_kernels = false;
  detail::bf16_convert_allowed = true;
}

TEST_CASE("every integer kernel path equals quantize -> dequantize bit for bit", "[kv][quantize]") {
  // Paths of the AVX-512 group kernels (and the same inputs through the AVX2 and portable ones):
  // values in binary32 fma or binary64 (zero point far from the scale in exponent), groups handed
  // back to the portable code (zero extremes, NaN, tiny scale), tie fix-ups, ragged key groups,
  // key groups of up to 256 tokens (fast) and beyond (portable), values per token in groups of
  // 32 and 96 (fast; 64 and 128 in the test above) and 16, 48 (portable).
  const int kernels = GENERATE(0, 1, 2, 3);
  detail::force_avx2_kernels = kernels == 1;
  detail::force_portable_kernels = kernels == 2;
  detail::bf16_convert_allowed = kernels != 3;
  INFO("kernels (0 best, 1 AVX2 at most, 2 portable, 3 best without bf16 conversion): " << kernels);
  const model_fingerprint fp{.architecture = "LlamaForCausalLM",
                             .n_layers = 3,
                             .n_heads = 4,
                             .n_kv_heads = 2,
                             .head_dim_k = 128,
                             .head_dim_v = 96,
                             .rope = {},
                             .weights_hash = 5};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (dtype type : {dtype::bf16, dtype::f32, dtype::f16}) {
    // without bf16 conversion (kernels 3) only a bf16 cache takes another path than kernels 0 (the
    // conversion instruction is used for bf16 stores alone): f32 and f16 would repeat kernels 0
    if (kernels == 3 && type != dtype::bf16) continue;
    INFO("dtype " << dtype_name(type));
    auto base = test::random_block(75, type, 21, fp);
    for (std::int64_t tok = 0; tok < 75; ++tok) {
      // layer 0: a key channel near 256 with a range of a few units (|E(zero) - E(scale)| > 12:
      // binary64 values), a key channel with zero point 1e-10 and range 1 (likewise), a key
      // channel of exact ties (scale 1/8)
      base.set(0, false, tok, 0, 5, 256.0f + 2.0f * static_cast<float>(tok % 3));
      base.set(0, false, tok, 1, 9, tok % 7 == 0 ? 1e-10f : static_cast<float>(tok % 11) / 10.0f);
      base.set(0, false, tok, 0, 17,
               tok % 32 == 0
                   ? 0.0f
                   : (tok % 32 == 1 ? 31.875f : (static_cast<float>((tok * 7) % 255) + 0.5f) / 8.0f));
      // values per token: zero point 1e-10 in the first group of head 0, range about 1
      for (std::int32_t d = 0; d < 32; ++d)
        base.set(0, true, tok, 0, d, d == 3 ? 1e-10f : 0.25f + static_cast<float>(d) / 40.0f);
      // layer 1: ties in values per token (scale 1/16 over 255/16), a +0/-0 key minimum, a
      // constant value group
      for (std::int32_t d = 0; d < 32; ++d)
        base.set(1, true, tok, 1, d,
                 d == 0 ? 0.0f
                        : (d == 1 ? 255.0f / 16.0f
                                  : static_cast<float>((tok + 3 * d) % 255) / 16.0f + 1.0f / 32.0f));
      base.set(1, false, tok, 1, 40, tok % 2 == 0 ? 0.0f : (tok % 3 == 0 ? -0.0f : 1.0f));
      for (std::int32_t d = 64; d < 96; ++d) base.set(1, true, tok, 0, d, -3.0f);
    }
    // zero point 1e-20, maximum 0.50390625 (scale s = 0.0019761…): (float)(zero + 5·s) rounded
    // once (fmaf) and via binary64 differ by an ulp, in a value group and a key channel
    for (std::int64_t tok = 0; tok < 75; ++tok) {
      for (std::int32_t d = 0; d < 32; ++d)
        base.set(2, true, tok, 1, d,
                 d == 0 ? 1e-20f : (d == 1 ? 0.50390625f : 0.0098805f * static_cast<float>(1 + d % 3)));
      base.set(2, false, tok, 0, 64,
               tok % 32 == 0 ? 1e-20f
                             : (tok % 32 == 1 ? 0.50390625f : 0.0098805f * static_cast<float>(1 + tok % 3)));
    }
    // a binary32 subnormal minimum (1e-39, kept by bf16 and f32) in a value group and a key channel:
    // vcvtne2ps2bf16 would flush it, the kernels must round it as store_cache does
    for (std::int64_t tok = 0; tok < 75; ++tok) {
      for (std::int32_t d = 64; d < 96; ++d)
        base.set(2, true, tok, 0, d, d == 64 ? 1e-39f : 0.3f + static_cast<float>(d) / 100.0f);
      base.set(1, false, tok, 0, 100, tok % 32 == 0 ? 1e-39f : static_cast<float>(tok % 9) / 8.0f);
    }
    // a tiny range (scale below 2^-100)
    for (std::int64_t tok = 0; tok < 75; ++tok)
      base.set(2, false, tok, 0, 3, 1e-38f * static_cast<float>(tok % 4));
    // NaN as a group's first element: the zero point is NaN, refused as the decoder refuses it
    for (bool keys : {true, false}) {
      auto first_nan = base;
      first_nan.set(1, !keys, 32, 1, 64, nan);  // token 32 starts a key group; d 64 a value group
      const quantize_spec spec{.scheme = quant_scheme::int8, .group_size = 32};
      CHECK_THROWS_AS(quantize_roundtrip(first_nan, spec), corrupt_data);
      CHECK_THROWS_AS(via_payload(first_nan, spec), corrupt_data);
    }
    // on f32/bf16, a key range (and values' errors) that overflow binary32 (x − zero is ±inf)
    auto huge = base;
    if (type != dtype::f16)
      for (std::int64_t tok = 0; tok < 75; ++tok)
        huge.set(2, false, tok, 1, 30, tok % 2 == 0 ? 3e38f : -3e38f);
    // NaN after the first element of a group: the group's range ignores it, its code is 0
    auto with_nan = base;
    with_nan.set(2, false, 4, 1, 100, nan);  // a key channel (group of tokens 0..31 at G = 32)
    with_nan.set(2, true, 7, 0, 50, nan);    // a value group (d 32..63 at G = 32)
    for (bool masked : {false, true}) {
      if (masked) {
        std::vector<std::uint8_t> m(3 * 75, 1);
        for (int tok = 2; tok < 75; tok += 5) m[static_cast<std::size_t>(75 + tok)] = 0;
        base.set_token_mask(m);
        with_nan.set_token_mask(m);
        huge.set_token_mask(m);
      }
      for (const auto& spec :
           {quantize_spec{.scheme = quant_scheme::int8, .group_size = 32},
            quantize_spec{.scheme = quant_scheme::int8, .group_size = 32, .keys_per_channel = false},
            quantize_spec{.scheme = quant_scheme::int8, .group_size = 16, .keys_per_channel = false},
            quantize_spec{.scheme = quant_scheme::int8, .group_size = 48, .keys_per_channel = false},
            quantize_spec{.scheme = quant_scheme::int8, .group_size = 96, .keys_per_channel = false},
            quantize_spec{.scheme = quant_scheme::int4, .group_size = 32},
            quantize_spec{.scheme = quant_scheme::int8, .group_size = 256},
            quantize_spec{.scheme = quant_scheme::int8, .group_size = 300},
            quantize_spec{.scheme = quant_scheme::int4, .group_size = 7}}) {
        INFO("scheme " << quant_scheme_name(spec.scheme) << " group " << spec.group_size
                       << " keys per channel " << spec.keys_per_channel << " masked " << masked);
        for (const kv_block* in : {&base, &with_nan, &huge}) {
          INFO("input " << (in == &base ? "base" : (in == &with_nan ? "with_nan" : "huge")));
          auto fused = *in;
          const auto rec = quantize_roundtrip(fused, spec, 2);
          CHECK(fused == via_payload(*in, spec));
          quantize_record ref;
          (void)quantize_payload(*in, spec, 1, &ref);
          CHECK(rec.quantized_bytes == ref.quantized_bytes);
          CHECK(rec.groups == ref.groups);
          CHECK(rec.max_abs_error == Approx(ref.max_abs_error).epsilon(1e-6));
          CHECK(rec.max_error_over_half_step == Approx(ref.max_error_over_half_step).epsilon(1e-6));
          if (in == &with_nan) {
            CHECK(std::isnan(rec.rms_error));  // as the reference's: a NaN element's error is NaN
            CHECK(std::isnan(ref.rms_error));
          } else if (in == &base) {
            // (not with `huge`: errors near 1e36 overflow the binary32 squares of every kernel)
            CHECK(rec.rms_error == Approx(ref.rms_error).epsilon(1e-6));
          }
        }
      }
    }
  }
  detail::force_portable_kernels = false;
  detail::force_avx2_kernels = false;
  detail::bf16_convert_allowed = true;
}
