// SPDX-License-Identifier: MIT
// Tests for kv/llama_state.hpp and convert_pairing: llama.cpp sequence-state blobs and state files
// round-trip (token-major and transposed V, one or several streams), the byte layout matches the
// documented format (8-byte blob header; the file's 'ggsq' header and tokens), malformed blobs are
// refused and a blob is not taken for a file or vice versa; NEOX↔NORM key permutation commutes with
// rotation. Blobs written by llama.cpp itself are tested in engine/llama_cpp_state_test.cpp.
#include <latentaudit/kv/llama_state.hpp>
#include <latentaudit/kv/rope.hpp>

#include "support/catch.hpp"
#include "support/kv_fixtures.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;

TEST_CASE("llama.cpp sequence-state blobs round-trip", "[kv][llama_state]") {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16})
    for (bool vt : {false, true})
      for (std::uint32_t streams : {1u, 3u}) {
        auto b = test::random_block(5, t, 3);
        for (int i = 0; i < 5; ++i) b.positions()[static_cast<std::size_t>(i)] = 7 + i;
        const auto blob = to_llama_seq_state(b, {.seq_id = 3, .v_trans = vt, .n_stream = streams});
        // header (magic, seq id), n_stream, cell_count, 5 x (pos, n_seq_id, seq_id), v_trans,
        // n_layer, K sections, V sections, then the empty streams' cell counts
        const std::size_t es = dtype_size(t);
        const std::size_t k = 4 * (4 + 8 + 5 * 2 * 8 * es), v = 4 * (4 + 8 + 5 * 2 * 6 * es);
        CHECK(blob.size() == 8 + 4 + 4 + 5 * 12 + 4 + 4 + k + v + 4 * (streams - 1));
        std::uint32_t magic, n_stream;
        std::int32_t seq, first_pos;
        std::memcpy(&magic, blob.data(), 4);
        std::memcpy(&seq, blob.data() + 4, 4);
        std::memcpy(&n_stream, blob.data() + 8, 4);
        std::memcpy(&first_pos, blob.data() + 16, 4);
        CHECK(magic == 0xaf143cd8u);
        CHECK(seq == 3);
        CHECK(n_stream == streams);
        CHECK(first_pos == 7);
        const auto back = from_llama_seq_state(blob, b.fingerprint());
        CHECK(back == b);
        // the state-file framing: 'ggsq', version 3, the tokens, the same cache layout
        const std::vector<std::int32_t> tokens{0, 5, 9};
        const auto file = to_llama_seq_state_file(b, tokens, {.v_trans = vt, .n_stream = streams});
        CHECK(file.size() == 12 + 12 + blob.size() - 8);
        const auto blob0 = to_llama_seq_state(b, {.seq_id = 0, .v_trans = vt, .n_stream = streams});
        CHECK(std::memcmp(file.data() + 24, blob0.data() + 8, blob0.size() - 8) == 0);
        const auto parsed = from_llama_seq_state_file(file, b.fingerprint());
        CHECK(parsed.tokens == tokens);
        CHECK(parsed.block == b);
        // neither framing is taken for the other
        CHECK_THROWS_WITH(from_llama_seq_state(file, b.fingerprint()),
                          Contains("llama_state_seq_save_file file"));
        CHECK_THROWS_WITH(from_llama_seq_state_file(blob, b.fingerprint()),
                          Contains("llama_state_seq_get_data blob"));
        CHECK_THROWS_WITH(from_llama_seq_state(std::span(blob).subspan(8), b.fingerprint()),
                          Contains("cache layout without the header"));
      }
  const auto empty = to_llama_seq_state(kv_block::all_layers(test::small_fingerprint(), 0, dtype::f32));
  CHECK(empty.size() == 16);
  CHECK(from_llama_seq_state(empty, test::small_fingerprint()).n_tokens() == 0);
  const auto empty3 =
      to_llama_seq_state(kv_block::all_layers(test::small_fingerprint(), 0, dtype::f32), {.n_stream = 3});
  CHECK(empty3.size() == 8 + 4 + 3 * 4);
  CHECK(from_llama_seq_state(empty3, test::small_fingerprint()).n_tokens() == 0);
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
  std::memcpy(huge.data() + 12, &cells, 4);
  CHECK_THROWS_WITH(from_llama_seq_state(huge, b.fingerprint()), Contains("exceeds the blob"));
  auto streams = blob;
  const std::uint32_t many = 5000;
  std::memcpy(streams.data() + 8, &many, 4);
  CHECK_THROWS_WITH(from_llama_seq_state(streams, b.fingerprint()), Contains("n_stream 5000"));
  auto quant = blob;
  const std::int32_t q8 = 8;
  std::memcpy(quant.data() + 8 + 8 + 2 * 12 + 8, &q8, 4);
  CHECK_THROWS_WITH(from_llama_seq_state(quant, b.fingerprint()), Contains("quantized"));
  auto magic = blob;
  magic[0] = std::byte{0};
  CHECK_THROWS_WITH(from_llama_seq_state(magic, b.fingerprint()), Contains("no sequence-state magic"));
  for (std::size_t n = 0; n < blob.size(); ++n)
    CHECK_THROWS_AS(from_llama_seq_state(std::span(blob).subspan(0, n), b.fingerprint()), corrupt_data);
  auto trailing = blob;
  trailing.push_back(std::byte{0});
  CHECK_THROWS_WITH(from_llama_seq_state(trailing, b.fingerprint()), Contains("1 trailing bytes"));
  // state files: version, token count beyond the file, truncation
  const std::vector<std::int32_t> tokens{1, 2};
  const auto file = to_llama_seq_state_file(b, tokens);
  auto version = file;
  const std::uint32_t v2 = 2;
  std::memcpy(version.data() + 4, &v2, 4);
  CHECK_THROWS_WITH(from_llama_seq_state_file(version, b.fingerprint()), Contains("version 2, expected 3"));
  auto count = file;
  const std::uint32_t lots = 0x40000000;
  std::memcpy(count.data() + 8, &lots, 4);
  CHECK_THROWS_WITH(from_llama_seq_state_file(count, b.fingerprint()), Contains("tokens exceed the file"));
  for (std::size_t n = 0; n < file.size(); ++n)
    CHECK_THROWS_AS(from_llama_seq_state_file(std::span(file).subspan(0, n), b.fingerprint()), corrupt_data);
  kv_block partial(b.fingerprint(), {0, 1}, 2, dtype::f16);
  CHECK_THROWS_AS(to_llama_seq_state(partial), invalid_argument);
  CHECK_THROWS_AS(to_llama_seq_state(b, {.n_stream = 0}), invalid_argument);
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
