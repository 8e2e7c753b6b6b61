// SPDX-License-Identifier: MIT
// Tests for core/rng.hpp: Philox4x32-10 known-answer vectors (Random123's kat_vectors), random
// access, stream independence and the bounded-integer and normal helpers.
#include <latentaudit/core/rng.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "support/catch.hpp"

using latentaudit::philox4x32;

TEST_CASE("philox4x32-10 reproduces the Random123 known-answer vectors", "[core][rng]") {
  using C = philox4x32::counter_type;
  using K = philox4x32::key_type;
  CHECK(philox4x32::block(C{0, 0, 0, 0}, K{0, 0}) == C{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  CHECK(philox4x32::block(C{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, K{0xffffffffu, 0xffffffffu}) ==
        C{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  CHECK(philox4x32::block(C{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, K{0xa4093822u, 0x299f31d0u}) ==
        C{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("philox4x32 is a uniform_random_bit_generator usable with <random>", "[core][rng]") {
  static_assert(std::uniform_random_bit_generator<philox4x32>);
  philox4x32 g;
  std::uniform_int_distribution<int> d(0, 9);
  (void)d(g);
}

TEST_CASE("discard and position give random access equal to sequential draws", "[core][rng]") {
  auto g = latentaudit::make_stream({.seed = 42, .item = 7, .arm = 2, .replicate = 3});
  std::vector<std::uint32_t> seq(41);
  for (auto& w : seq) w = g();
  CHECK(g.position() == 41);
  for (std::uint64_t skip : {0u, 1u, 3u, 4u, 5u, 17u, 40u}) {
    auto h = latentaudit::make_stream({.seed = 42, .item = 7, .arm = 2, .replicate = 3});
    h.discard(skip);
    CHECK(h.position() == skip);
    CHECK(h() == seq[skip]);
  }
  auto h = latentaudit::make_stream({.seed = 42, .item = 7, .arm = 2, .replicate = 3});
  (void)h();
  h.discard(6);
  CHECK(h() == seq[7]);
}

TEST_CASE("streams differ in every coordinate and are reproducible", "[core][rng]") {
  const latentaudit::stream_id base{.seed = 1, .item = 2, .arm = 3, .replicate = 4};
  auto first = [](latentaudit::stream_id s) { auto g = latentaudit::make_stream(s); return g.next_u64(); };
  const auto b = first(base);
  CHECK(first(base) == b);
  auto s = base; s.seed = 9; CHECK(first(s) != b);
  s = base; s.item = 9; CHECK(first(s) != b);
  s = base; s.arm = 9; CHECK(first(s) != b);
  s = base; s.replicate = 9; CHECK(first(s) != b);
  // (seed, item) are not interchangeable
  CHECK(first({.seed = 2, .item = 1, .arm = 3, .replicate = 4}) != first({.seed = 1, .item = 2, .arm = 3, .replicate = 4}));
}

TEST_CASE("uniform_index is unbiased (chi-square, fixed seed 2026)", "[core][rng]") {
  // n = 7 cells, 700000 draws: chi-square with 6 df; P(X > 22.46) = 0.001.
  auto g = latentaudit::make_stream({.seed = 2026});
  std::vector<double> counts(7, 0.0);
  const int draws = 700000;
  for (int i = 0; i < draws; ++i) counts[latentaudit::uniform_index(g, 7)] += 1.0;
  double chi2 = 0;
  for (double c : counts) chi2 += (c - draws / 7.0) * (c - draws / 7.0) / (draws / 7.0);
  INFO("chi2 = " << chi2);
  CHECK(chi2 < 22.46);
  // the largest n works and stays in range
  for (int i = 0; i < 1000; ++i) CHECK(latentaudit::uniform_index(g, 0xffffffffu) < 0xffffffffu);
  CHECK(latentaudit::uniform_index(g, 1) == 0u);
}

TEST_CASE("uniform01 and standard_normal have the right moments (seed 11, 4-sigma tolerance)", "[core][rng]") {
  auto g = latentaudit::make_stream({.seed = 11});
  const int n = 200000;
  double s = 0, s2 = 0, u = 0;
  for (int i = 0; i < n; ++i) {
    const double z = latentaudit::standard_normal(g);
    s += z;
    s2 += z * z;
    const double x = latentaudit::uniform01(g);
    REQUIRE(x >= 0.0);
    REQUIRE(x < 1.0);
    u += x;
  }
  CHECK(std::fabs(s / n) < 4.0 / std::sqrt(n));
  CHECK(std::fabs(s2 / n - 1.0) < 4.0 * std::sqrt(2.0 / n));
  CHECK(std::fabs(u / n - 0.5) < 4.0 * std::sqrt(1.0 / 12.0 / n));
  // exactly four words per normal deviate
  auto h = latentaudit::make_stream({.seed = 11});
  (void)latentaudit::standard_normal(h);
  CHECK(h.position() == 4);
}

TEST_CASE("bulk Philox blocks equal the generator's blocks", "[core][rng]") {
  const auto g = latentaudit::make_stream({.seed = 5, .item = 2, .arm = 1, .replicate = 7});
  std::vector<std::uint32_t> w(4 * 100);
  const std::uint64_t first = (std::uint64_t{1} << 32) - 50;  // crosses into the high counter word
  latentaudit::detail::philox_blocks_body(g.key()[0], g.key()[1], 1, 7, first, 100, w.data());
  bool same = true;
  for (std::size_t i = 0; i < 100; ++i) {
    const auto b = g.block_at(first + i);
    for (std::size_t k = 0; k < 4; ++k) same = same && b[k] == w[k * 100 + i];
  }
  CHECK(same);
}

TEST_CASE("bulk log and sqrt are accurate to 3e-7", "[core][rng]") {
  double worst_log = 0, worst_sqrt = 0;
  for (int i = 1; i <= 1 << 20; ++i) {
    const float x = std::ldexp(static_cast<float>(i), -20) * (i % 7 == 0 ? 0x1p-30f : 1.0f);  // (0, 1] and tiny values
    if (x != 1.0f)
      worst_log = std::max(worst_log, std::fabs(latentaudit::detail::bulk_logf(x) - std::log(static_cast<double>(x))) /
                                          std::fabs(std::log(static_cast<double>(x))));
    const float v = 70.0f * static_cast<float>(i) / (1 << 20);
    worst_sqrt = std::max(worst_sqrt, std::fabs(latentaudit::detail::bulk_sqrtf(v) - std::sqrt(static_cast<double>(v))) /
                                          std::sqrt(static_cast<double>(v)));
  }
  CHECK(worst_log < 2e-7);
  CHECK(worst_sqrt < 3e-7);
}

TEST_CASE("standard_normal_batch: normal moments and tails (seed 31, 2^22 deviates, 5-sigma tolerances)", "[core][rng]") {
  const auto g = latentaudit::make_stream({.seed = 31});
  std::array<float, latentaudit::normal_batch_size> z;
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0, worst = 0;
  std::size_t beyond2 = 0, beyond4 = 0, n = 0;
  for (std::uint64_t b = 0; b < 4096; ++b) {
    latentaudit::standard_normal_batch(g, b, z);
    for (float v : z) {
      const double x = v;
      s1 += x;
      s2 += x * x;
      s3 += x * x * x;
      s4 += x * x * x * x;
      worst = std::max(worst, std::fabs(x));
      beyond2 += std::fabs(x) > 2.0;
      beyond4 += std::fabs(x) > 4.0;
      ++n;
    }
  }
  const double N = static_cast<double>(n);
  CHECK(std::fabs(s1 / N) < 5.0 / std::sqrt(N));
  CHECK(std::fabs(s2 / N - 1.0) < 5.0 * std::sqrt(2.0 / N));
  CHECK(std::fabs(s3 / N) < 5.0 * std::sqrt(15.0 / N));
  CHECK(std::fabs(s4 / N - 3.0) < 5.0 * std::sqrt(96.0 / N));
  const double p2 = 0.04550026389635842, p4 = 6.334248366623996e-05;
  CHECK(std::fabs(static_cast<double>(beyond2) / N - p2) < 5.0 * std::sqrt(p2 * (1 - p2) / N));
  CHECK(std::fabs(static_cast<double>(beyond4) / N - p4) < 5.0 * std::sqrt(p4 * (1 - p4) / N));
  CHECK(worst <= 6.8);
  // a pure function of (stream, batch); the portable kernel gives the same bits as the vector one
  std::array<float, latentaudit::normal_batch_size> again, portable;
  latentaudit::standard_normal_batch(g, 17, z);
  latentaudit::standard_normal_batch(g, 17, again);
  CHECK(z == again);
  latentaudit::detail::force_portable_normals = true;
  latentaudit::standard_normal_batch(g, 17, portable);
  latentaudit::detail::force_portable_normals = false;
  CHECK(z == portable);
}
