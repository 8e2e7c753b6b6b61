// SPDX-License-Identifier: MIT
// Tests for core/rng.hpp: Philox4x32-10 known-answer vectors (Random123's kat_vectors), random
// access, stream independence and the bounded-integer and normal helpers.
#include <latentaudit/core/rng.hpp>

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
