// SPDX-License-Identifier: MIT
// Tests for kv/kv_block.hpp: construction checks, byte accounting, element layout, dtype
// conversion, fingerprint checks and HF layout round trips.
#include <latentaudit/kv/kv_block.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "support/catch.hpp"
#include "support/kv_fixtures.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;

TEST_CASE("kv_block byte accounting is exact", "[kv][kv_block]") {
  auto fp = test::small_fingerprint();
  const kv_block b(fp, {0, 2}, 5, dtype::bf16);
  CHECK(b.n_layers() == 2);
  CHECK(b.k_elements() == 5 * 2 * 8);
  CHECK(b.v_elements() == 5 * 2 * 6);
  CHECK(b.payload_bytes() == 2 * (5 * 2 * 8 + 5 * 2 * 6) * 2);
  CHECK(b.content_bytes() == b.payload_bytes() + 5 * 4);
  CHECK(b.find_layer(2) == 1);
  CHECK(b.find_layer(1) == -1);
  CHECK(b.positions()[4] == 4);
}

TEST_CASE("kv_block element layout is [tokens][kv_heads][head_dim], K before V per layer", "[kv][kv_block]") {
  kv_block b = kv_block::all_layers(test::small_fingerprint(), 3, dtype::f32);
  b.set(1, false, 2, 1, 5, 7.0f);
  b.set(1, true, 0, 1, 3, -2.0f);
  auto k = b.k<float>(1);
  CHECK(k[(2 * 2 + 1) * 8 + 5] == 7.0f);
  auto v = b.v<float>(1);
  CHECK(v[(0 * 2 + 1) * 6 + 3] == -2.0f);
  CHECK(b.get(1, false, 2, 1, 5) == 7.0f);
  CHECK_THROWS_AS(b.k<Eigen::half>(0), invalid_argument);
  CHECK_THROWS_AS(b.k<float>(4), invalid_argument);
}

TEST_CASE("kv_block conversion rounds once and keeps metadata", "[kv][kv_block]") {
  const auto b = test::random_block(4);
  const auto h = b.converted(dtype::bf16);
  CHECK(h.type() == dtype::bf16);
  CHECK(h.fingerprint() == b.fingerprint());
  const auto back = h.converted(dtype::f32);
  const auto x = b.to_floats(), y = back.to_floats();
  for (std::size_t j = 0; j < x.size(); ++j) CHECK(std::fabs(x[j] - y[j]) <= std::fabs(x[j]) * 0x1.0p-8f);
  CHECK(back.converted(dtype::bf16) == h);
}

TEST_CASE("kv_block rejects bad construction arguments", "[kv][kv_block]") {
  auto fp = test::small_fingerprint();
  CHECK_THROWS_WITH(kv_block(fp, {2, 1}, 3, dtype::f32), Contains("kv_block") && Contains("layers"));
  CHECK_THROWS_AS(kv_block(fp, {4}, 3, dtype::f32), invalid_argument);
  CHECK_THROWS_AS(kv_block(fp, {0}, -1, dtype::f32), invalid_argument);
  CHECK_THROWS_AS(kv_block(fp, {0}, 1, dtype::i8), invalid_argument);
  auto bad = fp;
  bad.n_kv_heads = 3;
  CHECK_THROWS_WITH(kv_block(bad, {0}, 1, dtype::f32), Contains("n_kv_heads") && Contains("divide"));
  bad = fp;
  bad.rope.rotary_dims = 7;
  CHECK_THROWS_WITH(kv_block(bad, {0}, 1, dtype::f32), Contains("rotary_dims") && Contains("even"));
}

TEST_CASE("fingerprint checks name the differing fields", "[kv][kv_block]") {
  auto a = test::small_fingerprint();
  auto b = a;
  CHECK_NOTHROW(check_fingerprint("import_kv", a, b));
  b.weights_hash = 99;
  b.n_kv_heads = 4;
  CHECK_THROWS_AS(check_fingerprint("import_kv", a, b), incompatible_model);
  CHECK_THROWS_WITH(check_fingerprint("import_kv", a, b),
                    Contains("import_kv") && Contains("n_kv_heads 4 vs 2") && Contains("weights_hash"));
}

TEST_CASE("HF layout round trip is lossless", "[kv][kv_block]") {
  const auto b = test::random_block(5);
  kv_block c = kv_block::all_layers(b.fingerprint(), 5, dtype::f32);
  for (std::size_t i = 0; i < b.n_layers(); ++i) {
    for (bool value : {false, true}) {
      const auto hf = to_hf_layout(b, i, value);
      // head-major: element (h, t, d) at (h*T + t)*D + d
      CHECK(hf[(1 * 5 + 3) * (value ? 6 : 8) + 2] == b.get(i, value, 3, 1, 2));
      from_hf_layout(c, i, value, hf);
    }
  }
  CHECK(c == b);
  std::vector<float> wrong(3);
  CHECK_THROWS_AS(from_hf_layout(c, 0, false, wrong), shape_mismatch);
}

TEST_CASE("stream_copy equals memcpy for every alignment and length class", "[kv][kv_block]") {
  std::vector<std::byte> src(5 * 4 * 4096 + 333), dst(src.size() + 128);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>((i * 7919u) >> 3);
  for (std::size_t doff :
       {std::size_t{0}, std::size_t{1}, std::size_t{8}, std::size_t{15}, std::size_t{33}, std::size_t{63}}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{4 * 4096 + 63},
                          std::size_t{4 * 4096 + 64}, std::size_t{4 * 4096 + 65}, std::size_t{8 * 4096 + 127},
                          std::size_t{3 * 4 * 4096 + 100}, src.size() - 3}) {
      std::fill(dst.begin(), dst.end(), std::byte{0xEE});
      detail::stream_copy(dst.data() + doff, src.data() + 3, n);
      CHECK(std::memcmp(dst.data() + doff, src.data() + 3, n) == 0);
      CHECK(dst[doff + n] == std::byte{0xEE});                // nothing past the end
      if (doff > 0) CHECK(dst[doff - 1] == std::byte{0xEE});  // nor before the start
    }
  }
}

TEST_CASE("a constructed block is zero-filled even where its storage was reused", "[kv][kv_block]") {
  for (int rep = 0; rep < 3; ++rep) {
    kv_block b(test::small_fingerprint(), {0, 2}, 257, dtype::bf16);
    const auto bytes = b.payload();
    CHECK(std::all_of(bytes.begin(), bytes.end(), [](std::byte x) { return x == std::byte{0}; }));
    b.set(1, true, 256, 1, 5, 2.5f);
  }
}
