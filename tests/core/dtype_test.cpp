// SPDX-License-Identifier: MIT
// Tests for core/dtype.hpp: sizes, names, and f16/bf16 round trips with round-to-nearest-even.
#include <latentaudit/core/dtype.hpp>

#include <cstring>
#include <vector>

#include "support/catch.hpp"

using latentaudit::dtype;

TEST_CASE("dtype sizes and names round-trip", "[core][dtype]") {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::i8, dtype::u8, dtype::i32}) {
    CHECK(latentaudit::parse_dtype(latentaudit::dtype_name(t)) == t);
  }
  CHECK(latentaudit::dtype_size(dtype::bf16) == 2);
  CHECK(latentaudit::dtype_size(dtype::i32) == 4);
  CHECK(latentaudit::parse_dtype("BF16") == dtype::bf16);
  CHECK_FALSE(latentaudit::parse_dtype("f64").has_value());
  STATIC_REQUIRE(latentaudit::dtype_of<Eigen::bfloat16>::value == dtype::bf16);
  STATIC_REQUIRE(latentaudit::cache_scalar<Eigen::half>);
  STATIC_REQUIRE_FALSE(latentaudit::cache_scalar<double>);
}

TEST_CASE("bf16 and f16 encode with round-to-nearest-even and decode exactly", "[core][dtype]") {
  // 1 + 2^-8 is exactly halfway between two bf16 values (1 and 1 + 2^-7): ties to even -> 1.
  // 1 + 3*2^-8 is halfway between 1+2^-7 and 1+2^-6: ties to even -> 1 + 2^-6.
  const std::vector<float> in{1.0f, 1.0f + 0x1.0p-8f, 1.0f + 3 * 0x1.0p-8f, -2.5f, 65504.0f, 0.0f};
  std::vector<std::byte> bytes(in.size() * 2);
  latentaudit::encode_from_float(dtype::bf16, in, bytes);
  std::vector<float> out(in.size());
  latentaudit::decode_to_float(dtype::bf16, bytes, out);
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == 1.0f);
  CHECK(out[2] == 1.0f + 0x1.0p-6f);
  CHECK(out[3] == -2.5f);
  latentaudit::encode_from_float(dtype::f16, in, bytes);
  latentaudit::decode_to_float(dtype::f16, bytes, out);
  CHECK(out[3] == -2.5f);
  CHECK(out[4] == 65504.0f);
  // f32 is a plain copy
  std::vector<std::byte> b32(in.size() * 4);
  latentaudit::encode_from_float(dtype::f32, in, b32);
  CHECK(std::memcmp(b32.data(), in.data(), b32.size()) == 0);
}

TEST_CASE("dtype conversions reject bad arguments", "[core][dtype]") {
  std::vector<float> out(2);
  std::vector<std::byte> bytes(3);
  CHECK_THROWS_AS(latentaudit::decode_to_float(dtype::f16, bytes, out), latentaudit::shape_mismatch);
  CHECK_THROWS_AS(latentaudit::decode_to_float(dtype::i8, bytes, out), latentaudit::invalid_argument);
}
