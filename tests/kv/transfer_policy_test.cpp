// SPDX-License-Identifier: MIT
// Tests for kv/transfer_policy.hpp: the default policy is the identity, composition order,
// records (layers, tokens, bytes, σ, dropout, positions), missing scores. Quantization is the
// wire's (wire_test.cpp) and a placebo the arm plan's (placebo_test.cpp, trial/arm_plan_test.cpp).
#include <latentaudit/kv/transfer_policy.hpp>

#include "support/catch.hpp"
#include "support/kv_fixtures.hpp"

using namespace latentaudit;

TEST_CASE("the default policy relays the block unchanged", "[kv][transfer_policy]") {
  const auto base = test::random_block(6, dtype::bf16, 1);
  auto b = base;
  const auto rec = kv_policy{}.apply(b, {});
  CHECK(b == base);
  CHECK(rec.policy == "kv_full");
  CHECK(rec.bytes_before == rec.bytes_after);
  CHECK(rec.tokens_kept == 6);
  CHECK(rec.layers.size() == 4);
}

TEST_CASE("select, transform and place are composed and recorded", "[kv][transfer_policy]") {
  const auto base = test::random_block(10, dtype::f32, 2);
  const kv_policy p{.label = "sinks+noise+zero",
                    .layers = {1, 3},
                    .tokens = sinks_window_spec{.sinks = 2, .window = 3},
                    .transforms = {noise_spec{.sigma = 0.1, .scale = noise_scale::rms_layer},
                                   zero_spec{.part = kv_part::values, .tokens = {0, 1}}},
                    .mode = position_mode::append_after};
  auto b = base;
  const auto rec = p.apply(b, {.seed = 9, .item = 4, .receiver_next = 30});
  CHECK(rec.layers == std::vector<layer_index>{1, 3});
  CHECK(rec.tokens_in == 10);
  CHECK(rec.tokens_kept == 5);
  CHECK(rec.noise.size() == 1);
  CHECK(rec.noise[0].sigma_applied_rms > 0);
  CHECK(rec.bytes_after < rec.bytes_before);
  CHECK(rec.bytes_after == b.content_bytes());
  for (std::int32_t h = 0; h < b.n_kv_heads(); ++h)  // the zero step after the noise: token 0's V
    for (std::int32_t d = 0; d < b.head_dim_v(); ++d) CHECK(b.get(0, true, 0, h, d) == 0.0f);
  CHECK(b.get(0, false, 0, 0, 0) != 0.0f);
  CHECK(b.positions()[0] == 30);
  CHECK(rec.first_position == 30);
  // reproducible from (seed, item)
  auto c = base;
  (void)p.apply(c, {.seed = 9, .item = 4, .receiver_next = 30});
  CHECK(c == b);
}

TEST_CASE("dropout is recorded and a policy substitutes no placebo", "[kv][transfer_policy]") {
  auto b = test::random_block(8, dtype::f32, 3);
  const auto rec = kv_policy{.label = "zero_all", .transforms = {zero_spec{}}}.apply(b, {});
  CHECK_FALSE(rec.placebo.has_value());  // the trial driver records the arm plan's placebo
  for (float x : b.to_floats()) CHECK(x == 0.0f);
  auto c = test::random_block(50, dtype::f32, 3);
  const auto d = kv_policy{.transforms = {dropout_spec{0.3}}}.apply(c, {.seed = 1});
  CHECK(static_cast<std::int64_t>(d.dropped_tokens.size()) + d.tokens_kept == 50);
  CHECK_FALSE(d.dropped_tokens.empty());
}

TEST_CASE("score-based selections need their scores", "[kv][transfer_policy]") {
  auto b = test::random_block(8, dtype::f32, 4);
  const kv_policy h2o{.tokens = heavy_hitter_spec{2, 2}};
  CHECK_THROWS_AS(h2o.apply(b, {}), invalid_argument);
  const std::vector<double> s{9, 0, 0, 5, 0, 0, 0, 0};
  const auto rec = kv_policy{.tokens = heavy_hitter_spec{2, 2}}.apply(b, {.token_scores = s});
  CHECK(rec.tokens_kept == 4);
  CHECK(b.positions()[1] == 3);
  auto k = test::random_block(8, dtype::f32, 4);
  const auto kr = kv_policy{.tokens = kvcomm_spec{{0, 2}, 1}}.apply(k, {});
  CHECK(k.has_token_mask());
  CHECK(kr.bytes_after < kr.bytes_before);
}
