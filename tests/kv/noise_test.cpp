// SPDX-License-Identifier: MIT
// Tests for kv/noise.hpp: σ = 0 is the identity, realized σ and SNR match the request (seeded,
// stated tolerance), bands and parts are respected, streams do not depend on the other layers,
// zeroing and token dropout.
#include <latentaudit/kv/noise.hpp>

#include <bit>
#include <cmath>
#include <utility>
#include <vector>

#include "support/catch.hpp"
#include "support/kv_fixtures.hpp"

using namespace latentaudit;

TEST_CASE("sigma = 0 leaves the block bit-for-bit unchanged", "[kv][noise]") {
  for (auto scale :
       {noise_scale::absolute, noise_scale::rms_layer, noise_scale::rms_head, noise_scale::rms_channel}) {
    auto b = test::random_block(5, dtype::bf16, 2);
    b.set(0, false, 0, 0, 0, -0.0f);
    const auto before = b;
    const auto rec = add_noise(b, {.sigma = 0.0, .scale = scale, .seed = 1});
    CHECK(b == before);
    CHECK(rec.realized_snr_db == std::numeric_limits<double>::infinity());
  }
}

TEST_CASE("realized noise matches the requested scale (seed 77, 5% tolerance)", "[kv][noise]") {
  // 64 tokens x 2 heads x 8 dims x 4 layers x 2 parts = 7168 draws: sd of the sample sd ~ 0.8%.
  const auto base = test::random_block(64, dtype::f32, 5);
  auto b = base;
  const auto rec = add_noise(b, {.sigma = 0.5, .scale = noise_scale::absolute, .seed = 77});
  const auto x = base.to_floats(), y = b.to_floats();
  double ss = 0;
  for (std::size_t j = 0; j < x.size(); ++j) ss += (y[j] - x[j]) * (y[j] - x[j]);
  CHECK(std::fabs(std::sqrt(ss / static_cast<double>(x.size())) - 0.5) < 0.025);
  CHECK(rec.sigma_applied_rms == Approx(0.5));
  CHECK(rec.elements == x.size());
  // SNR target 10 dB: realized within 0.5 dB
  auto c = base;
  const auto snr = add_noise(c, {.sigma = 10.0, .scale = noise_scale::snr_db, .seed = 78});
  CHECK(std::fabs(snr.realized_snr_db - 10.0) < 0.5);
  // relative to the layer RMS (entries are N(0,1), so RMS ~ 1)
  auto d = base;
  const auto rel = add_noise(d, {.sigma = 0.1, .scale = noise_scale::rms_layer, .seed = 79});
  CHECK(std::fabs(rel.sigma_applied_rms / rel.signal_rms - 0.1) < 0.005);
}

TEST_CASE("noise respects part, layer and token bands", "[kv][noise]") {
  const auto base = test::random_block(6, dtype::f32, 8);
  auto b = base;
  add_noise(b, {.sigma = 1.0,
                .scale = noise_scale::absolute,
                .part = kv_part::values,
                .layers = {1, 3},
                .tokens = {2, 4},
                .seed = 3});
  for (std::size_t i = 0; i < 4; ++i)
    for (std::int64_t t = 0; t < 6; ++t) {
      CHECK(b.get(i, false, t, 1, 1) == base.get(i, false, t, 1, 1));  // keys untouched
      const bool inside = (i == 1 || i == 2) && t >= 2 && t < 4;
      CHECK((b.get(i, true, t, 1, 1) != base.get(i, true, t, 1, 1)) == inside);
    }
}

TEST_CASE("a layer's noise does not depend on which other layers are perturbed", "[kv][noise]") {
  const auto base = test::random_block(4, dtype::f32, 9);
  auto all = base, one = base;
  add_noise(all, {.sigma = 0.3, .scale = noise_scale::absolute, .seed = 5, .item = 2});
  add_noise(one, {.sigma = 0.3, .scale = noise_scale::absolute, .layers = {2, 3}, .seed = 5, .item = 2});
  for (std::int64_t t = 0; t < 4; ++t) CHECK(all.get(2, true, t, 0, 3) == one.get(2, true, t, 0, 3));
  auto other = base;
  add_noise(other, {.sigma = 0.3, .scale = noise_scale::absolute, .seed = 5, .item = 3});
  CHECK(other.get(2, true, 0, 0, 3) != all.get(2, true, 0, 0, 3));
}

TEST_CASE("zeroing and token dropout", "[kv][noise]") {
  auto b = test::random_block(10, dtype::f32, 10);
  CHECK(zero_kv(b, kv_part::keys, {0, 1}) == 10 * 2 * 8);
  CHECK(b.get(0, false, 7, 1, 7) == 0.0f);
  CHECK(b.get(0, true, 7, 1, 5) != 0.0f);
  std::vector<std::int64_t> dropped;
  const auto d = drop_tokens(b, 0.5, 1, 2, &dropped);
  CHECK(d.n_tokens() + static_cast<std::int64_t>(dropped.size()) == 10);
  CHECK(drop_tokens(b, 0.0, 1, 2) == b);
  CHECK(drop_tokens(b, 1.0, 1, 2).n_tokens() == 0);
  CHECK_THROWS_AS(drop_tokens(b, 1.5, 1, 2), invalid_argument);
  CHECK_THROWS_AS(add_noise(b, {.sigma = -1.0, .scale = noise_scale::absolute}), invalid_argument);
  CHECK_THROWS_AS(add_noise(b, {.sigma = std::nan("")}), invalid_argument);
}

TEST_CASE("noise is bit-identical at 1, 2 and 8 threads", "[kv][noise]") {
  const auto base = test::random_block(16, dtype::bf16, 14);
  auto a = base, b = base, c = base;
  add_noise(a, {.sigma = 0.2, .seed = 3, .threads = 1});
  add_noise(b, {.sigma = 0.2, .seed = 3, .threads = 2});
  add_noise(c, {.sigma = 0.2, .seed = 3, .threads = 8});
  CHECK(a == b);
  CHECK(a == c);
  CHECK_FALSE(a == base);
}

TEST_CASE(
    "bulk noise: vector and portable kernels agree bit for bit, bf16 noise has the requested sigma (seed 91)",
    "[kv][noise]") {
  // 300 tokens x 2 heads x 8 (K) / 6 (V) dims x 4 layers: 33600 draws, sd of the sample sd ~ 0.4%
  const auto base = test::random_block(300, dtype::bf16, 90);
  auto a = base, b = base;
  const auto ra = add_noise(a, {.sigma = 0.25, .scale = noise_scale::absolute, .seed = 91, .threads = 2});
  detail::force_portable_normals = true;
  const auto rb = add_noise(b, {.sigma = 0.25, .scale = noise_scale::absolute, .seed = 91});
  detail::force_portable_normals = false;
  CHECK(a == b);
  CHECK(ra.realized_snr_db == rb.realized_snr_db);
  const auto x = base.to_floats(), y = a.to_floats();
  double ss = 0;
  for (std::size_t j = 0; j < x.size(); ++j) ss += (y[j] - x[j]) * (y[j] - x[j]);
  CHECK(std::fabs(std::sqrt(ss / static_cast<double>(x.size())) - 0.25) < 0.25 * 0.02);  // 5 sd
  // the signal RMS (summed in the noise pass for an absolute sigma) is the block's RMS
  double s0 = 0;
  for (float v : x) s0 += static_cast<double>(v) * v;
  CHECK(ra.signal_rms == Approx(std::sqrt(s0 / static_cast<double>(x.size()))).epsilon(1e-6));
  auto c = base;
  CHECK(add_noise(c, {.sigma = 0.25, .scale = noise_scale::rms_layer, .seed = 91}).signal_rms ==
        Approx(ra.signal_rms).epsilon(1e-6));
  // the recorded noise power is the power actually added (after rounding to bf16)
  CHECK(10.0 * std::log10(ra.signal_rms * ra.signal_rms * static_cast<double>(x.size()) / ss) ==
        Approx(ra.realized_snr_db).epsilon(1e-4));
}

namespace {
// Runs f with the bulk kernels limited to: 0 portable, 1 AVX2 (+FMA), 2 the best available
// (on an AVX-512 machine the fused bf16 kernel for rows of a multiple of 32 elements).
template <class F>
void with_kernel(int level, F&& f) {
  detail::force_portable_normals = level == 0;
  detail::force_avx2_normals = level == 1;
  f();
  detail::force_portable_normals = false;
  detail::force_avx2_normals = false;
}

// 2 layers, 2 kv heads, head dims 32 (K: 64-element rows) and 16 (V: 32-element rows)
model_fingerprint wide_fingerprint() {
  return {.architecture = "LlamaForCausalLM",
          .n_layers = 2,
          .n_heads = 4,
          .n_kv_heads = 2,
          .head_dim_k = 32,
          .head_dim_v = 16,
          .rope = {.pairing = rope_pairing::neox, .theta = 10000.0f},
          .weights_hash = 0x77ULL};
}

// rows of 192 (K) and 160 (V) elements: runs of four groups, single groups, batches crossed mid-row
model_fingerprint wider_fingerprint() {
  return {.architecture = "LlamaForCausalLM",
          .n_layers = 2,
          .n_heads = 4,
          .n_kv_heads = 2,
          .head_dim_k = 96,
          .head_dim_v = 80,
          .rope = {.pairing = rope_pairing::neox, .theta = 10000.0f},
          .weights_hash = 0x78ULL};
}
}  // namespace

TEST_CASE("bulk noise: fused AVX-512 bf16 kernel, AVX2 and portable agree bit for bit (seed 93)",
          "[kv][noise]") {
  // rows of 64 and 32, and 192 and 160 elements (the fused path on AVX-512), some tokens absent, a token
  // band, a channel of zeros (σ = 0 there under rms_channel), and every scale; f32 and bf16
  for (auto [type, fp] :
       {std::pair{dtype::bf16, wide_fingerprint()}, std::pair{dtype::bf16, wider_fingerprint()},
        std::pair{dtype::f32, wide_fingerprint()}}) {
    auto base = test::random_block(97, type, 92, fp);
    std::vector<std::uint8_t> mask(2 * 97, 1);
    for (std::size_t t = 0; t < 97; t += 7) mask[t] = 0;
    mask[97 + 40] = 0;
    base.set_token_mask(mask);
    for (std::int64_t t = 0; t < 97; ++t) base.set(1, true, t, 1, 3, 0.0f);
    for (auto scale : {noise_scale::absolute, noise_scale::rms_layer, noise_scale::rms_channel}) {
      for (index_range tokens : {index_range{0, 1000}, index_range{5, 61}}) {
        kv_block out[3] = {base, base, base};
        noise_record rec[3];
        for (int level = 0; level < 3; ++level)
          with_kernel(level, [&] {
            rec[level] = add_noise(
                out[level], {.sigma = 0.3, .scale = scale, .tokens = tokens, .seed = 93, .threads = 2});
          });
        INFO("dtype " << static_cast<int>(type) << " scale " << noise_scale_name(scale) << " tokens "
                      << tokens.first);
        CHECK(out[0] == out[1]);
        CHECK(out[0] == out[2]);
        CHECK_FALSE(out[0] == base);
        CHECK(rec[0].realized_snr_db == rec[1].realized_snr_db);
        CHECK(rec[0].realized_snr_db == rec[2].realized_snr_db);
        CHECK(rec[0].signal_rms == rec[2].signal_rms);
        if (scale == noise_scale::rms_channel)
          for (std::int64_t t = 0; t < 97; ++t)
            CHECK(std::bit_cast<std::uint32_t>(out[2].get(1, true, t, 1, 3)) == 0u);  // +0 kept
      }
    }
  }
}

TEST_CASE(
    "bulk noise on 32-element-aligned bf16 rows has the requested sigma and no neighbour correlation (seed "
    "95)",
    "[kv][noise]") {
  // 2000 tokens x 64 (K) + 32 (V) dims x 2 layers = 384000 draws on the fused path (on AVX-512):
  // sd of the sample sd ~ 0.11%, tolerance 1% (bf16 rounding of N(0,1) + N(0, 0.25²) adds < 0.1%);
  // lag-1 and lag-32 correlations of the added noise below 5/sqrt(n).
  const auto base = test::random_block(2000, dtype::bf16, 94, wide_fingerprint());
  auto a = base;
  const auto rec = add_noise(a, {.sigma = 0.25, .scale = noise_scale::absolute, .seed = 95});
  const auto x = base.to_floats(), y = a.to_floats();
  std::vector<double> d(x.size());
  double ss = 0;
  for (std::size_t j = 0; j < x.size(); ++j) {
    d[j] = static_cast<double>(y[j]) - x[j];
    ss += d[j] * d[j];
  }
  const double n = static_cast<double>(x.size());
  CHECK(rec.elements == x.size());
  CHECK(std::fabs(std::sqrt(ss / n) - 0.25) < 0.25 * 0.01);
  for (std::size_t lag : {1, 2, 32}) {
    double sxy = 0;
    for (std::size_t j = 0; j + lag < d.size(); ++j) sxy += d[j] * d[j + lag];
    INFO("lag " << lag);
    CHECK(std::fabs(sxy / ss) < 5.0 / std::sqrt(n));
  }
}
