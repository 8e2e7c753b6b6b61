// SPDX-License-Identifier: MIT
// Tests for core/rng.hpp: Philox4x32-10 known-answer vectors (Random123's kat_vectors), random
// access, stream independence and the bounded-integer and normal helpers.
#include <latentaudit/core/rng.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "support/catch.hpp"

using latentaudit::philox4x32;

TEST_CASE("philox4x32-10 reproduces the Random123 known-answer vectors", "[core][rng]") {
  using C = philox4x32::counter_type;
  using K = philox4x32::key_type;
  CHECK(philox4x32::block(C{0, 0, 0, 0}, K{0, 0}) == C{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  CHECK(
      philox4x32::block(C{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, K{0xffffffffu, 0xffffffffu}) ==
      C{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  CHECK(
      philox4x32::block(C{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, K{0xa4093822u, 0x299f31d0u}) ==
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
  auto first = [](latentaudit::stream_id s) {
    auto g = latentaudit::make_stream(s);
    return g.next_u64();
  };
  const auto b = first(base);
  CHECK(first(base) == b);
  auto s = base;
  s.seed = 9;
  CHECK(first(s) != b);
  s = base;
  s.item = 9;
  CHECK(first(s) != b);
  s = base;
  s.arm = 9;
  CHECK(first(s) != b);
  s = base;
  s.replicate = 9;
  CHECK(first(s) != b);
  // (seed, item) are not interchangeable
  CHECK(first({.seed = 2, .item = 1, .arm = 3, .replicate = 4}) !=
        first({.seed = 1, .item = 2, .arm = 3, .replicate = 4}));
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

TEST_CASE("uniform01 and standard_normal have the right moments (seed 11, 4-sigma tolerance)",
          "[core][rng]") {
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
    const float x =
        std::ldexp(static_cast<float>(i), -20) * (i % 7 == 0 ? 0x1p-30f : 1.0f);  // (0, 1] and tiny values
    if (x != 1.0f)
      worst_log = std::max(worst_log,
                           std::fabs(latentaudit::detail::bulk_logf(x) - std::log(static_cast<double>(x))) /
                               std::fabs(std::log(static_cast<double>(x))));
    const float v = 70.0f * static_cast<float>(i) / (1 << 20);
    worst_sqrt = std::max(worst_sqrt,
                          std::fabs(latentaudit::detail::bulk_sqrtf(v) - std::sqrt(static_cast<double>(v))) /
                              std::sqrt(static_cast<double>(v)));
  }
  CHECK(worst_log < 2e-7);
  CHECK(worst_sqrt < 3e-7);
}

namespace {
// Moments and tail counts of standard normal deviates; check() asserts each within 5 standard
// errors of N(0, 1) and the largest |z| at most 6.8.
struct normal_moments {
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0, worst = 0;
  std::size_t beyond2 = 0, beyond4 = 0, n = 0;
  void add(double x) {
    s1 += x;
    s2 += x * x;
    s3 += x * x * x;
    s4 += x * x * x * x;
    worst = std::max(worst, std::fabs(x));
    beyond2 += std::fabs(x) > 2.0;
    beyond4 += std::fabs(x) > 4.0;
    ++n;
  }
  void check() const {
    const double N = static_cast<double>(n);
    CHECK(std::fabs(s1 / N) < 5.0 / std::sqrt(N));
    CHECK(std::fabs(s2 / N - 1.0) < 5.0 * std::sqrt(2.0 / N));
    CHECK(std::fabs(s3 / N) < 5.0 * std::sqrt(15.0 / N));
    CHECK(std::fabs(s4 / N - 3.0) < 5.0 * std::sqrt(96.0 / N));
    const double p2 = 0.04550026389635842, p4 = 6.334248366623996e-05;
    CHECK(std::fabs(static_cast<double>(beyond2) / N - p2) < 5.0 * std::sqrt(p2 * (1 - p2) / N));
    CHECK(std::fabs(static_cast<double>(beyond4) / N - p4) < 5.0 * std::sqrt(p4 * (1 - p4) / N));
    CHECK(worst <= 6.8);
  }
};
}  // namespace

TEST_CASE("standard_normal_batch: normal moments and tails (seed 31, 2^22 deviates, 5-sigma tolerances)",
          "[core][rng]") {
  const auto g = latentaudit::make_stream({.seed = 31});
  std::array<float, latentaudit::normal_batch_size> z;
  normal_moments mom;
  for (std::uint64_t b = 0; b < 4096; ++b) {
    latentaudit::standard_normal_batch(g, b, z);
    for (float v : z) {
      mom.add(v);
    }
  }
  mom.check();
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

namespace {
// Runs f with the bulk kernels limited to: 0 portable, 1 AVX2 (+FMA), 2 the best available.
template <class F>
void with_kernel(int level, F&& f) {
  latentaudit::detail::force_portable_normals = level == 0;
  latentaudit::detail::force_avx2_normals = level == 1;
  f();
  latentaudit::detail::force_portable_normals = false;
  latentaudit::detail::force_avx2_normals = false;
}

using bulk_batch = std::array<float, latentaudit::bulk_normal_batch_size>;

// N(0, 1) distribution function
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
}  // namespace

TEST_CASE("bulk_normal_batch: AVX-512, AVX2 and portable kernels agree bit for bit", "[core][rng]") {
  // 3 streams x 40 batches (including batch indices across 2^32) = 122880 deviates per kernel
  bool same = true;
  std::size_t compared = 0;
  for (const auto& id :
       {latentaudit::stream_id{.seed = 1},
        latentaudit::stream_id{.seed = 77, .item = 5, .arm = 1, .replicate = 31},
        latentaudit::stream_id{.seed = ~std::uint64_t{0}, .item = 3, .arm = 0, .replicate = 2}}) {
    const auto g = latentaudit::make_stream(id);
    for (std::uint64_t b : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{1} << 32,
                            (std::uint64_t{1} << 32) - 1}) {
      for (std::uint64_t k = 0; k < 8; ++k) {
        bulk_batch z[3];
        for (int level = 0; level < 3; ++level)
          with_kernel(level, [&] { latentaudit::bulk_normal_batch(g, b + 3 * k, z[level]); });
        for (std::size_t i = 0; i < z[0].size(); ++i) {
          same = same && std::bit_cast<std::uint32_t>(z[0][i]) == std::bit_cast<std::uint32_t>(z[1][i]) &&
                 std::bit_cast<std::uint32_t>(z[0][i]) == std::bit_cast<std::uint32_t>(z[2][i]);
          ++compared;
        }
      }
    }
  }
  CHECK(compared == 3 * 5 * 8 * latentaudit::bulk_normal_batch_size);
  CHECK(same);
  // element 2i / 2i+1 of group k is the pair (cos, sin) of bulk_pair on the documented words
  const auto g = latentaudit::make_stream({.seed = 9});
  bulk_batch z;
  latentaudit::bulk_normal_batch(g, 5, z);
  const std::uint64_t seed = latentaudit::detail::bulk_batch_seed(g, 5);
  const std::uint64_t h3 =
      latentaudit::detail::mix64(seed + (16 * 7 + 3 + 1) * latentaudit::detail::bulk_gamma);
  const std::uint64_t h11 =
      latentaudit::detail::mix64(seed + (16 * 7 + 11 + 1) * latentaudit::detail::bulk_gamma);
  float c = 0, s = 0;
  latentaudit::detail::bulk_pair(static_cast<std::uint32_t>(h3 >> 32), static_cast<std::uint32_t>(h11 >> 32),
                                 c, s);  // pair 7 of group 7
  CHECK(z[32 * 7 + 14] == c);
  CHECK(z[32 * 7 + 15] == s);
}

TEST_CASE("bulk_pair is Box-Muller to binary32 accuracy (2^20 word pairs from seed 12)", "[core][rng]") {
  // reference in binary64 from the same u and the same binary32 angle offset t; tolerance 1e-6
  // absolute below |z| = 1, relative above (a few binary32 ulps, the polynomials' stated error)
  auto g = latentaudit::make_stream({.seed = 12});
  double worst = 0;
  for (int i = 0; i < 1 << 20; ++i) {
    const std::uint32_t uw = i < 64 ? static_cast<std::uint32_t>(i) : g(),
                        aw = i < 64 ? ~static_cast<std::uint32_t>(i) : g();
    float c = 0, s = 0;
    latentaudit::detail::bulk_pair(uw, aw, c, s);
    const float u = std::fma(static_cast<float>(static_cast<std::int32_t>(uw >> 1)), 0x1p-31f, 0x1p-33f);
    const float t = std::fma(static_cast<float>(static_cast<std::int32_t>(aw & 0x3FFFFFFFu)), 0x1.921FB6p-30f,
                             -0x1.921FB6p-1f);
    const double r = std::sqrt(-2.0 * std::log(static_cast<double>(u)));
    const double phi = static_cast<double>(aw >> 30) * (std::numbers::pi / 2) + static_cast<double>(t);
    const double rc = r * std::cos(phi), rs = r * std::sin(phi);
    worst = std::max({worst, std::fabs(c - rc) / std::max(1.0, std::fabs(rc)),
                      std::fabs(s - rs) / std::max(1.0, std::fabs(rs))});
  }
  INFO("worst error " << worst);
  CHECK(worst < 1e-6);
}

TEST_CASE("bulk_normal_batch: moments, tails and Kolmogorov-Smirnov vs N(0,1) (seed 31, 2^22 deviates)",
          "[core][rng]") {
  // moments and tail counts within 5 standard errors; KS statistic sqrt(n)·D below 1.95
  // (the 0.1% critical value of the Kolmogorov distribution) on the first 2^20 deviates.
  const auto g = latentaudit::make_stream({.seed = 31, .item = 4, .arm = 1, .replicate = 3});
  bulk_batch z;
  normal_moments mom;
  std::vector<float> ks;
  for (std::uint64_t b = 0; b < 4096; ++b) {
    latentaudit::bulk_normal_batch(g, b, z);
    for (float v : z) {
      mom.add(v);
      if (ks.size() < (std::size_t{1} << 20)) ks.push_back(v);
    }
  }
  mom.check();
  std::sort(ks.begin(), ks.end());
  double d = 0;
  const double m = static_cast<double>(ks.size());
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const double F = normal_cdf(ks[i]);
    d = std::max({d, F - static_cast<double>(i) / m, static_cast<double>(i + 1) / m - F});
  }
  INFO("sqrt(n) D = " << std::sqrt(m) * d);
  CHECK(std::sqrt(m) * d < 1.95);
}

TEST_CASE("bulk_normal_batch: no correlation between neighbours, batches or streams (seed 41, 5-sigma)",
          "[core][rng]") {
  // 2^21 deviates of one stream: lag-k correlations of z and of z² (lags 1, 2, 3, 16, 31, 32,
  // 1024) and the correlation of batch b with batch b + 1 and with another stream's batch b;
  // each |corr| < 5/sqrt(n) (z² correlations of independent normals have the same standard error).
  const auto g = latentaudit::make_stream({.seed = 41, .item = 1});
  const auto h = latentaudit::make_stream({.seed = 41, .item = 1, .arm = 1});
  std::vector<float> a, o;
  bulk_batch z;
  for (std::uint64_t b = 0; b < 2048; ++b) {
    latentaudit::bulk_normal_batch(g, b, z);
    a.insert(a.end(), z.begin(), z.end());
    latentaudit::bulk_normal_batch(h, b, z);
    o.insert(o.end(), z.begin(), z.end());
  }
  auto corr = [](const std::vector<float>& x, const std::vector<float>& y, std::size_t lag, bool squares) {
    const std::size_t n = x.size() - lag;
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double u = x[i], v = y[i + lag];
      if (squares) {
        u *= u;
        v *= v;
      }
      sx += u;
      sy += v;
      sxx += u * u;
      syy += v * v;
      sxy += u * v;
    }
    const double N = static_cast<double>(n);
    return std::pair{
        (sxy / N - sx / N * sy / N) / std::sqrt((sxx / N - sx / N * sx / N) * (syy / N - sy / N * sy / N)),
        5.0 / std::sqrt(N)};
  };
  for (bool sq : {false, true}) {
    for (std::size_t lag : {1, 2, 3, 16, 31, 32, 1024}) {
      const auto [r, tol] = corr(a, a, lag, sq);
      INFO("lag " << lag << (sq ? " squares" : "") << " corr " << r);
      CHECK(std::fabs(r) < tol);
    }
    const auto [r, tol] = corr(a, o, 0, sq);
    INFO("other stream" << (sq ? " squares" : "") << " corr " << r);
    CHECK(std::fabs(r) < tol);
  }
}
