// SPDX-License-Identifier: MIT
// Tests for kv/rope.hpp: agreement with HF's rotate_half formula, NORM/NEOX permutation,
// composition and inversion properties, position modes, and the position-consistency gate.
#include <latentaudit/kv/rope.hpp>

#include <cmath>
#include <vector>

#include "support/catch.hpp"
#include "support/kv_fixtures.hpp"

using namespace latentaudit;
using Catch::Matchers::Contains;

namespace {
// HF LlamaRotaryEmbedding + apply_rotary_pos_emb, written out: emb = cat(freqs, freqs),
// k' = k * cos(emb) + rotate_half(k) * sin(emb), rotate_half(x) = cat(-x2, x1).
std::vector<double> hf_rotate(const std::vector<double>& k, double pos, double theta) {
  const std::size_t D = k.size(), half = D / 2;
  std::vector<double> out(D);
  for (std::size_t j = 0; j < D; ++j) {
    const std::size_t i = j % half;
    const double a = pos * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
    const double rot = j < half ? -k[j + half] : k[j - half];
    out[j] = k[j] * std::cos(a) + rot * std::sin(a);
  }
  return out;
}
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}
}  // namespace

TEST_CASE("rotate_head reproduces HF's rotate_half convention (neox)", "[kv][rope]") {
  const rope_descriptor rope{.pairing = rope_pairing::neox, .theta = 10000.0f};
  auto g = make_stream({.seed = 3});
  std::vector<double> k(8);
  for (auto& x : k) x = standard_normal(g);
  for (double pos : {1.0, 7.0, 123.0, 4095.0}) {
    std::vector<float> x(k.begin(), k.end());
    rotate_head(x, pos, rope, rope_frequencies(rope, 8));
    const auto ref = hf_rotate(k, pos, 10000.0);
    for (std::size_t j = 0; j < 8; ++j) CHECK(std::fabs(x[j] - ref[j]) < 1e-5);
  }
}

TEST_CASE("norm pairing equals neox under the interleaving permutation", "[kv][rope]") {
  const std::vector<float> k{0.3f, -1.2f, 0.8f, 2.0f, -0.4f, 0.9f};
  // neox pairs (i, i+3); norm pairs (2i, 2i+1): interleave neox -> norm
  std::vector<float> kn{k[0], k[3], k[1], k[4], k[2], k[5]};
  std::vector<float> a = k, b = kn;
  rope_descriptor neox{.pairing = rope_pairing::neox, .theta = 500000.0f}, norm = neox;
  norm.pairing = rope_pairing::norm;
  rotate_head(a, 37.0, neox, rope_frequencies(neox, 6));
  rotate_head(b, 37.0, norm, rope_frequencies(norm, 6));
  const std::vector<float> a_interleaved{a[0], a[3], a[1], a[4], a[2], a[5]};
  CHECK(max_abs_diff(a_interleaved, b) < 1e-6);
}

TEST_CASE("rotations compose and invert (f32 within 1e-5, bf16 within its step)", "[kv][rope]") {
  for (auto pairing : {rope_pairing::neox, rope_pairing::norm}) {
    auto fp = test::small_fingerprint();
    fp.rope.pairing = pairing;
    const auto base = test::random_block(6, dtype::f32, 5, fp);
    auto a = base, b = base;
    std::vector<std::int64_t> d1{3, 5, 7, 11, 13, 17}, d2{100, -2, 40, 1, 0, 900}, d12(6);
    for (int t = 0; t < 6; ++t)
      d12[static_cast<std::size_t>(t)] = d1[static_cast<std::size_t>(t)] + d2[static_cast<std::size_t>(t)];
    shift_keys(a, d1);
    shift_keys(a, d2);
    shift_keys(b, d12);
    CHECK(max_abs_diff(a.to_floats(), b.to_floats()) < 1e-5);
    CHECK(std::vector<position_t>(a.positions().begin(), a.positions().end()) ==
          std::vector<position_t>(b.positions().begin(), b.positions().end()));
    auto c = a;
    unrotate_keys(c);
    auto u = base;
    unrotate_keys(u);
    CHECK(max_abs_diff(c.to_floats(), u.to_floats()) < 1e-5);
    // V is never touched
    for (std::int64_t t = 0; t < 6; ++t) CHECK(a.get(2, true, t, 1, 4) == base.get(2, true, t, 1, 4));
  }
  auto h = test::random_block(4, dtype::bf16, 9);
  auto h2 = h;
  std::vector<std::int64_t> d{50, 60, 70, 80}, md{-50, -60, -70, -80};
  shift_keys(h2, d);
  shift_keys(h2, md);
  // Two roundings to bf16 (unit roundoff 2^-8 each); rotations preserve norms, so the error
  // of each key head vector is at most 2 * 2^-8 of its norm.
  for (std::size_t i = 0; i < h.n_layers(); ++i)
    for (std::int64_t t = 0; t < 4; ++t)
      for (std::int32_t hd = 0; hd < 2; ++hd) {
        double err = 0, norm = 0;
        for (std::int32_t d = 0; d < 8; ++d) {
          const double a = h.get(i, false, t, hd, d), b = h2.get(i, false, t, hd, d);
          err += (a - b) * (a - b);
          norm += a * a;
        }
        CHECK(std::sqrt(err) <= 2 * 0x1.0p-8 * std::sqrt(norm));
      }
}

TEST_CASE("position modes rebase and append with consistent phases", "[kv][rope]") {
  auto b = test::random_block(5);
  auto pre = b;
  unrotate_keys(pre);  // positions 0..4 were the originals: pre-RoPE keys
  apply_position_mode(b, position_mode::append_after, 0, 20);
  CHECK(b.positions()[0] == 20);
  CHECK(b.positions()[4] == 24);
  // the gate with the pre-RoPE reference accepts the re-rotated block
  CHECK(inspect_positions(b, {.prerope_reference = &pre}).ok);
  apply_position_mode(b, position_mode::rebase_contiguous, 2);
  CHECK(b.positions()[0] == 2);
  CHECK(inspect_positions(b, {.prerope_reference = &pre}).max_phase_error < 1e-5);
  CHECK_THROWS_AS(apply_position_mode(b, position_mode::rebase_contiguous, -1), invalid_argument);
}

TEST_CASE("the position-consistency gate refuses bad blocks and names the token", "[kv][rope]") {
  auto b = test::random_block(4);
  CHECK_NOTHROW(check_positions("import_kv", b, {.context_length = 4}));
  CHECK_THROWS_WITH(check_positions("import_kv", b, {.context_length = 3}),
                    Contains("exceeds the context length 3"));
  auto c = b;
  c.positions()[2] = 1;
  CHECK_THROWS_AS(check_positions("import_kv", c), corrupt_data);
  CHECK_THROWS_WITH(check_positions("import_kv", c), Contains("collides"));
  c.positions()[2] = 0;
  CHECK_THROWS_WITH(check_positions("import_kv", c), Contains("not increasing"));
  c.positions()[2] = -5;
  CHECK_THROWS_WITH(check_positions("import_kv", c), Contains("negative"));
}

TEST_CASE("the gate catches LatentMAS-style truncation that reuses position ids", "[kv][rope]") {
  // Sender prefilled 8 tokens at positions 0..7; a truncation keeps the last 4 tokens' rotated
  // keys but relabels them 0..3 without re-rotating.
  auto full = test::random_block(8);
  auto pre = full;
  unrotate_keys(pre);
  const std::vector<std::int64_t> to_orig{0, 1, 2, 3, 4, 5, 6, 7};
  auto rotated = pre;
  shift_keys(rotated, to_orig);  // keys now carry phases of positions 0..7
  kv_block tail(rotated.fingerprint(), {0, 1, 2, 3}, 4, dtype::f32), tail_pre = tail;
  for (std::size_t i = 0; i < 4; ++i)
    for (int v = 0; v < 2; ++v)
      for (std::int64_t t = 0; t < 4; ++t)
        for (std::int32_t h = 0; h < 2; ++h)
          for (std::int32_t d = 0; d < (v ? 6 : 8); ++d) {
            tail.set(i, v != 0, t, h, d, rotated.get(i, v != 0, t + 4, h, d));
            tail_pre.set(i, v != 0, t, h, d, pre.get(i, v != 0, t + 4, h, d));
          }
  // positions 0..3 (reused ids) while the keys carry 4..7: refused
  const auto r = inspect_positions(tail, {.prerope_reference = &tail_pre});
  CHECK_FALSE(r.ok);
  CHECK(r.first_bad_token == 0);
  CHECK(r.max_phase_error > 0.1);
  // the correct relabelling (4..7) passes; so does re-rotating to 0..3
  auto fixed = tail;
  for (int t = 0; t < 4; ++t) fixed.positions()[static_cast<std::size_t>(t)] = t + 4;
  CHECK(inspect_positions(fixed, {.prerope_reference = &tail_pre}).ok);
  apply_position_mode(fixed, position_mode::rebase_contiguous, 0);
  CHECK(inspect_positions(fixed, {.prerope_reference = &tail_pre}).ok);
}
