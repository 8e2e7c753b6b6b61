// SPDX-License-Identifier: MIT
// Tests for kv/selection.hpp: layer and token selectors, the published scorers (StreamingLLM,
// H2O, SnapKV, PyramidKV, KVComm), applying selections (uniform and ragged) and idempotence.
#include <latentaudit/kv/selection.hpp>

#include <cstring>

#include "support/catch.hpp"
#include "support/kv_fixtures.hpp"

using namespace latentaudit;
using V = std::vector<std::int64_t>;
using L = std::vector<layer_index>;

TEST_CASE("layer selectors", "[kv][selection]") {
  CHECK(layers_range(8, 2, 5) == L{2, 3, 4});
  CHECK(layers_list(8, {5, 1, 5}) == L{1, 5});
  CHECK(layers_mask({true, false, true}) == L{0, 2});
  CHECK(layers_every(8, 3, 1) == L{1, 4, 7});
  const std::vector<double> s{0.1, 0.9, 0.5, 0.9};
  CHECK(layers_top_k(s, 2) == L{1, 3});
  CHECK_THROWS_AS(layers_range(8, 5, 2), invalid_argument);
  CHECK_THROWS_AS(layers_list(8, {8}), invalid_argument);
  CHECK_THROWS_AS(layers_every(8, 0), invalid_argument);
  CHECK_THROWS_AS(layers_top_k(s, 5), invalid_argument);
}

TEST_CASE("token selectors", "[kv][selection]") {
  CHECK(tokens_range(10, 3, 6) == V{3, 4, 5});
  CHECK(tokens_first_fraction(10, 0.25) == V{0, 1, 2});
  CHECK(tokens_last_fraction(10, 0.2) == V{8, 9});
  CHECK(tokens_last_fraction(10, 0.0).empty());
  CHECK(tokens_stride(10, 4, 1) == V{1, 5, 9});
  CHECK(tokens_list(10, {7, 2, 7}) == V{2, 7});
  CHECK(tokens_sinks_window(10, 2, 3) == V{0, 1, 7, 8, 9});
  CHECK(tokens_sinks_window(4, 3, 3) == V{0, 1, 2, 3});
  CHECK_THROWS_AS(tokens_first_fraction(10, 1.5), invalid_argument);
  CHECK_THROWS_AS(tokens_list(10, {10}), invalid_argument);
}

TEST_CASE("H2O keeps the recent window and the heavy hitters", "[kv][selection]") {
  const std::vector<double> s{5, 0, 3, 0, 9, 1, 1, 0};
  CHECK(tokens_heavy_hitters(s, 2, 2) == V{0, 4, 6, 7});
  CHECK(tokens_heavy_hitters(s, 0, 0).empty());
  const std::vector<double> bad{1, -1};
  CHECK_THROWS_AS(tokens_heavy_hitters(bad, 1, 0), invalid_argument);
}

TEST_CASE("SnapKV votes over the observation window with max pooling", "[kv][selection]") {
  // n = 8 tokens, window = 2 queries over the 6 prefix tokens
  std::vector<double> a(2 * 8, 0.0);
  a[0 * 8 + 1] = 1.0;  // both queries attend to token 1 and token 4
  a[1 * 8 + 4] = 2.0;
  CHECK(tokens_snapkv(a, 8, 2, 1, 1) == V{4, 6, 7});
  CHECK(tokens_snapkv(a, 8, 2, 2, 1) == V{1, 4, 6, 7});
  // kernel 3 spreads token 4's votes to 3 and 5 (ties broken by position)
  CHECK(tokens_snapkv(a, 8, 2, 3, 3) == V{3, 4, 5, 6, 7});
  CHECK_THROWS_AS(tokens_snapkv(a, 8, 2, 1, 2), invalid_argument);
  CHECK_THROWS_AS(tokens_snapkv(a, 9, 2, 1, 1), shape_mismatch);
}

TEST_CASE("PyramidKV budgets decrease with depth and average to the target", "[kv][selection]") {
  const auto b = pyramid_budgets(5, 100, 20.0);
  CHECK(b.front() == 195);
  CHECK(b.back() == 5);
  for (std::size_t i = 1; i < b.size(); ++i) CHECK(b[i] < b[i - 1]);
  CHECK(std::accumulate(b.begin(), b.end(), std::int64_t{0}) == 500);
  CHECK_THROWS_AS(pyramid_budgets(5, 100, 0.5), invalid_argument);
}

TEST_CASE("apply_selection keeps rows, positions and bytes exactly", "[kv][selection]") {
  const auto b = test::random_block(6, dtype::bf16, 31);
  const auto s = uniform_selection(layers_range(4, 1, 3), tokens_sinks_window(6, 1, 2));
  const auto out = apply_selection(b, s);
  CHECK(out.n_layers() == 2);
  CHECK(out.n_tokens() == 3);
  CHECK_FALSE(out.has_token_mask());
  CHECK(out.positions()[1] == 4);
  CHECK(out.get(0, false, 1, 1, 3) == b.get(1, false, 4, 1, 3));
  CHECK(out.get(1, true, 2, 0, 5) == b.get(2, true, 5, 0, 5));
  CHECK(out.payload_bytes() == b.payload_bytes() * 2 / 4 * 3 / 6);
  // idempotent: applying the same spec to the result changes nothing
  const auto again =
      apply_selection(out, uniform_selection(layers_range(4, 1, 3), tokens_sinks_window(3, 1, 2)));
  CHECK(again == out);
  // the identity selection is the identity
  CHECK(apply_selection(b, uniform_selection(layers_range(4, 0, 4), tokens_range(6, 0, 6))) == b);
  CHECK_THROWS_AS(apply_selection(out, uniform_selection({0}, {0})), invalid_argument);
  CHECK_THROWS_AS(apply_selection(b, uniform_selection({0}, {6})), invalid_argument);
}

TEST_CASE("KVComm and PyramidKV selections give ragged blocks", "[kv][selection]") {
  const auto b = test::random_block(6, dtype::f32, 41);
  const auto k = apply_selection(b, kvcomm_selection(4, 6, {1, 2}, 2));
  CHECK(k.n_layers() == 4);
  CHECK(k.n_tokens() == 6);
  CHECK(k.has_token_mask());
  CHECK(k.present_tokens(0) == 2);
  CHECK(k.present_tokens(1) == 6);
  CHECK(k.get(0, false, 4, 0, 0) == 0.0f);
  CHECK(k.get(1, false, 4, 0, 0) == b.get(1, false, 4, 0, 0));
  std::vector<double> scores(4 * 6, 0.0);
  for (int l = 0; l < 4; ++l) scores[static_cast<std::size_t>(l * 6 + l)] = 1.0;
  const std::vector<std::int64_t> budgets{2, 1, 1, 0};
  const auto p = apply_selection(b, pyramid_selection(scores, 4, 6, budgets, 1));
  CHECK(p.present_tokens(0) == 3);
  CHECK(p.present_tokens(3) == 1);
  CHECK(
      p.token_present(2, static_cast<std::int64_t>(std::find(p.positions().begin(), p.positions().end(), 2) -
                                                   p.positions().begin())));
  // a ragged block re-selected with its own full spec is unchanged
  CHECK(apply_selection(k, kvcomm_selection(4, 6, {1, 2}, 2)) == k);
}

TEST_CASE("apply_selection into a caller's block reuses it and equals the returning form",
          "[kv][selection]") {
  const auto b = test::random_block(9, dtype::bf16, 51);
  // a previous, larger result of another dtype, then of the same dtype: stale bytes everywhere
  kv_block out = test::random_block(12, dtype::f32, 52);
  const auto full = uniform_selection(layers_range(4, 0, 4), tokens_range(9, 0, 9));
  apply_selection(b, full, out);
  CHECK(out == b);
  const auto ragged = kvcomm_selection(4, 9, {2}, 3);
  apply_selection(b, ragged, out);  // storage of the full selection reused: absent rows must be zeroed
  CHECK(out == apply_selection(b, ragged));
  CHECK(out.get(0, true, 5, 1, 2) == 0.0f);
  const auto strided = uniform_selection(layers_range(4, 1, 4), tokens_stride(9, 2, 1));  // runs of one token
  apply_selection(b, strided, out);
  CHECK(out == apply_selection(b, strided));
  CHECK(out.get(2, false, 3, 1, 7) == b.get(3, false, 7, 1, 7));
  const auto runs = uniform_selection(layers_range(4, 0, 2), V{0, 1, 2, 5, 6, 8});  // runs of 3, 2, 1
  apply_selection(b, runs, out);
  CHECK(out == apply_selection(b, runs));
  CHECK(out.positions()[3] == 5);
  // a failed call leaves the output unchanged; the input cannot be the output
  const auto before = out;
  CHECK_THROWS_AS(apply_selection(b, uniform_selection({0}, {9}), out), invalid_argument);
  CHECK(out == before);
  kv_block same = b;
  CHECK_THROWS_AS(apply_selection(same, full, same), invalid_argument);
}

TEST_CASE("bulk slices (merged and streamed copies) keep every byte", "[kv][selection]") {
  // 4 layers x 2100 tokens x 8 heads x (128 + 128) x bf16 = 34.4 MB
  const model_fingerprint fp{.architecture = "LlamaForCausalLM",
                             .n_layers = 4,
                             .n_heads = 8,
                             .n_kv_heads = 8,
                             .head_dim_k = 128,
                             .head_dim_v = 128,
                             .rope = {},
                             .weights_hash = 7};
  auto b = kv_block::all_layers(fp, 2100, dtype::bf16);
  auto bytes = b.payload_mut();
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<std::byte>((i * 2654435761u) >> 9 & 0x3F);
  kv_block out;
  for (const auto& sel : {uniform_selection(layers_range(4, 0, 4), tokens_range(2100, 0, 2100)),
                          uniform_selection(layers_range(4, 1, 3), tokens_range(2100, 0, 2100)),
                          uniform_selection(L{0, 3}, tokens_range(2100, 0, 2100)),
                          uniform_selection(layers_range(4, 0, 4), tokens_range(2100, 7, 2001))}) {
    apply_selection(b, sel, out);
    REQUIRE(out.n_tokens() == static_cast<std::int64_t>(sel.tokens[0].size()));
    const std::size_t row = b.row_bytes() / 2;  // K (or V) row bytes
    const std::size_t T = 2100, U = sel.tokens[0].size();
    bool same = true;
    for (std::size_t i = 0; i < sel.layers.size(); ++i) {
      const auto* s0 = b.payload().data() + static_cast<std::size_t>(sel.layers[i]) * T * 2 * row;
      const auto* d0 = out.payload().data() + i * U * 2 * row;
      const auto t0 = static_cast<std::size_t>(sel.tokens[0][0]);
      same = same && std::memcmp(d0, s0 + t0 * row, U * row) == 0 &&
             std::memcmp(d0 + U * row, s0 + T * row + t0 * row, U * row) == 0;
    }
    CHECK(same);
  }
}
