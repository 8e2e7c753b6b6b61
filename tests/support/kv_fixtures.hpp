// SPDX-License-Identifier: MIT
// Test support: small fingerprints and blocks filled with seeded values.
#ifndef LATENTAUDIT_TESTS_SUPPORT_KV_FIXTURES_HPP
#define LATENTAUDIT_TESTS_SUPPORT_KV_FIXTURES_HPP

#include <latentaudit/core/rng.hpp>
#include <latentaudit/kv/kv_block.hpp>

namespace latentaudit::test {

/// A small GQA model: 4 layers, 4 heads, 2 kv heads, head dims 8 (K) and 6 (V), NEOX RoPE.
inline model_fingerprint small_fingerprint() {
  return {.architecture = "LlamaForCausalLM",
          .n_layers = 4,
          .n_heads = 4,
          .n_kv_heads = 2,
          .head_dim_k = 8,
          .head_dim_v = 6,
          .rope = {.pairing = rope_pairing::neox, .theta = 10000.0f},
          .weights_hash = 0x1234abcdULL};
}

/// A block with every layer, `tokens` tokens, entries N(0, 1) from stream (seed, 0, 0, 0).
inline kv_block random_block(std::int64_t tokens, dtype type = dtype::f32, std::uint64_t seed = 1,
                             model_fingerprint fp = small_fingerprint()) {
  auto b = kv_block::all_layers(std::move(fp), tokens, type);
  auto g = make_stream({.seed = seed});
  for (std::size_t i = 0; i < b.n_layers(); ++i)
    for (int value = 0; value < 2; ++value)
      for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int32_t h = 0; h < b.n_kv_heads(); ++h)
          for (std::int32_t d = 0; d < (value ? b.head_dim_v() : b.head_dim_k()); ++d)
            b.set(i, value != 0, t, h, d, static_cast<float>(standard_normal(g)));
  return b;
}

}  // namespace latentaudit::test

#endif
