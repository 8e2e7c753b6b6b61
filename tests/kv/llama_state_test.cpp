// SPDX-License-Identifier: MIT
// Tests for kv/llama_state.hpp and convert_pairing: llama.cpp sequence-state blobs round-trip
// (token-major and transposed V), the byte layout matches the documented format, malformed blobs
// are refused; NEOX↔NORM key permutation commutes with rotation.
#include <latentaudit/kv/llama_state.hpp>
#include <latentaudit/kv/rope.hpp>

#include "support/catch.hpp"
#include "support/kv_fixtures.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;

TEST_CASE("llama.cpp sequence-state blobs round-trip", "[kv][llama_state]") {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16})
    for (bool vt : {false, true}) {
      auto b = test::random_block(5, t, 3);
      for (int i = 0; i < 5; ++i) b.positions()[static_cast<std::size_t>(i)] = 7 + i;
      const auto blob = to_llama_seq_state(b, {.seq_id = 3, .v_trans = vt});
      // size: n_stream, cell_count, 5 x (pos, n_seq_id, seq_id), v_trans, n_layer, K sections, V sections
      const std::size_t es = dtype_size(t);
      const std::size_t k = 4 * (4 + 8 + 5 * 2 * 8 * es), v = 4 * (4 + 8 + 5 * 2 * 6 * es);
      CHECK(blob.size() == 4 + 4 + 5 * 12 + 4 + 4 + k + v);
      std::int32_t first_pos;
      std::memcpy(&first_pos, blob.data() + 8, 4);
      CHECK(first_pos == 7);
      const auto back = from_llama_seq_state(blob, b.fingerprint());
      CHECK(back == b);
    }
  const auto empty = to_llama_seq_state(kv_block::all_layers(test::small_fingerprint(), 0, dtype::f32));
  CHECK(empty.size() == 8);
  CHECK(from_llama_seq_state(empty, test::small_fingerprint()).n_tokens() == 0);
}

TEST_CASE("malformed llama.cpp blobs are refused before allocation", "[kv][llama_state]") {
  const auto b = test::random_block(2, dtype::f16, 4);
  const auto blob = to_llama_seq_state(b);
  auto other = test::small_fingerprint();
  other.n_layers = 5;
  CHECK_THROWS_AS(from_llama_seq_state(blob, other), incompatible_model);
  other = test::small_fingerprint();
  other.head_dim_v = 4;
  CHECK_THROWS_AS(from_llama_seq_state(blob, other), incompatible_model);
  auto huge = blob;
  const std::uint32_t cells = 0x7fffffff;
  std::memcpy(huge.data() + 4, &cells, 4);
  CHECK_THROWS_WITH(from_llama_seq_state(huge, b.fingerprint()), Contains("exceeds the blob"));
  auto quant = blob;
  const std::int32_t q8 = 8;
  std::memcpy(quant.data() + 8 + 2 * 12 + 8, &q8, 4);
  CHECK_THROWS_WITH(from_llama_seq_state(quant, b.fingerprint()), Contains("quantized"));
  CHECK_THROWS_AS(from_llama_seq_state(std::span(blob).subspan(0, blob.size() - 1), b.fingerprint()),
                  corrupt_data);
  kv_block partial(b.fingerprint(), {0, 1}, 2, dtype::f16);
  CHECK_THROWS_AS(to_llama_seq_state(partial), invalid_argument);
}

TEST_CASE("convert_pairing permutes key dims and commutes with rotation", "[kv][rope]") {
  auto a = test::random_block(4, dtype::f32, 5);
  auto pre = a;
  unrotate_keys(pre);
  auto b = pre;
  convert_pairing(b, rope_pairing::norm);
  CHECK(b.fingerprint().rope.pairing == rope_pairing::norm);
  CHECK(b.get(1, false, 2, 1, 2) == pre.get(1, false, 2, 1, 1));  // norm dim 2 = neox dim 1
  CHECK(b.get(1, false, 2, 1, 3) == pre.get(1, false, 2, 1, 5));  // norm dim 3 = neox dim 1 + 4
  // rotate in neox then convert == convert then rotate in norm
  auto x = pre, y = b;
  std::vector<std::int64_t> d{3, 9, 27, 81};
  shift_keys(x, d);
  convert_pairing(x, rope_pairing::norm);
  shift_keys(y, d);
  const auto fx = x.to_floats(), fy = y.to_floats();
  for (std::size_t j = 0; j < fx.size(); ++j) CHECK(std::fabs(fx[j] - fy[j]) < 1e-5);
  convert_pairing(y, rope_pairing::neox);
  convert_pairing(x, rope_pairing::neox);
  CHECK(x == y);
}
