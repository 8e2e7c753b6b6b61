// SPDX-License-Identifier: MIT
// Tests for kv/placebo.hpp: derangements have no fixed point and are uniform (seeded chi-square),
// zeroed and moment-matched caches keep shapes and moments, length matching re-rotates keys.
#include <latentaudit/kv/placebo.hpp>

#include <map>

#include "support/catch.hpp"
#include "support/kv_fixtures.hpp"

using namespace latentaudit;

TEST_CASE("derangements have no fixed point and are reproducible", "[kv][placebo]") {
  for (std::size_t n : {2u, 3u, 10u, 101u}) {
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      const auto p = random_derangement(n, seed);
      std::vector<bool> seen(n, false);
      for (std::size_t i = 0; i < n; ++i) {
        CHECK(p[i] != i);
        CHECK_FALSE(seen[p[i]]);
        seen[p[i]] = true;
      }
      CHECK(random_derangement(n, seed) == p);
    }
  }
  CHECK_THROWS_AS(random_derangement(1, 0), invalid_argument);
}

TEST_CASE("derangements of 4 are uniform over the 9 derangements (seeds 0..8999, chi2 p > 0.001)",
          "[kv][placebo]") {
  std::map<std::vector<std::size_t>, int> counts;
  for (std::uint64_t seed = 0; seed < 9000; ++seed) ++counts[random_derangement(4, seed)];
  CHECK(counts.size() == 9);
  double chi2 = 0;
  for (auto& [p, c] : counts) chi2 += (c - 1000.0) * (c - 1000.0) / 1000.0;
  INFO("chi2 = " << chi2);
  CHECK(chi2 < 26.12);  // chi-square 8 df, upper 0.001 quantile
}

TEST_CASE("zeroed and random placebos keep shapes, random matches moments", "[kv][placebo]") {
  auto real = test::random_block(200, dtype::f32, 12);
  // shift one head's keys so the means differ per head
  for (std::int64_t t = 0; t < 200; ++t)
    for (std::int32_t d = 0; d < 8; ++d)
      real.set(1, false, t, 1, d, real.get(1, false, t, 1, d) * 3.0f + 5.0f);
  const auto z = zeroed_placebo(real);
  CHECK(z.payload_bytes() == real.payload_bytes());
  for (float x : z.to_floats()) CHECK(x == 0.0f);
  const auto r = random_placebo(real, 7, 0);
  CHECK(r.positions()[199] == real.positions()[199]);
  double s = 0, ss = 0;
  for (std::int64_t t = 0; t < 200; ++t)
    for (std::int32_t d = 0; d < 8; ++d) {
      const double x = r.get(1, false, t, 1, d);
      s += x;
      ss += x * x;
    }
  const double mean = s / 1600, sd = std::sqrt(ss / 1600 - mean * mean);
  CHECK(std::fabs(mean - 5.0) < 0.3);  // sd/sqrt(1600) = 0.075: 4 sigma
  CHECK(std::fabs(sd - 3.0) < 0.25);
  CHECK(random_placebo(real, 7, 0) == r);
  CHECK_FALSE(random_placebo(real, 7, 1) == r);
}

TEST_CASE("length matching cuts or cycles and re-rotates to contiguous positions", "[kv][placebo]") {
  auto donor = test::random_block(3, dtype::f32, 13);
  auto pre = donor;
  unrotate_keys(pre);
  const auto longer = length_matched(donor, 7, 10);
  CHECK(longer.n_tokens() == 7);
  CHECK(longer.positions()[0] == 10);
  CHECK(longer.positions()[6] == 16);
  CHECK(longer.get(2, true, 4, 1, 2) == donor.get(2, true, 1, 1, 2));  // values cycle
  auto unrot = longer;
  unrotate_keys(unrot);
  CHECK(std::fabs(unrot.get(2, false, 4, 1, 2) - pre.get(2, false, 1, 1, 2)) < 1e-5);
  const auto shorter = length_matched(donor, 2);
  CHECK(shorter.n_tokens() == 2);
  CHECK_THROWS_AS(length_matched(kv_block(donor.fingerprint(), {0}, 0, dtype::f32), 2), invalid_argument);
}

TEST_CASE("cache_placebo makes the placebos of the cache itself, and refuses the other-item placebo",
          "[kv][placebo]") {
  const auto real = test::random_block(9, dtype::f32, 14);
  CHECK(cache_placebo(placebo_kind::zeroed, real, 3, 2) == zeroed_placebo(real));
  CHECK(cache_placebo(placebo_kind::random, real, 3, 2) == random_placebo(real, 3, 2));
  CHECK_THROWS_AS(cache_placebo(placebo_kind::deranged, real, 3, 2), invalid_argument);
}
