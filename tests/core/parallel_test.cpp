// SPDX-License-Identifier: MIT
// Tests for core/parallel.hpp: chunking is independent of the thread count, exceptions propagate.
#include <latentaudit/core/parallel.hpp>
#include <latentaudit/core/rng.hpp>

#include <stdexcept>
#include <vector>

#include "support/catch.hpp"

TEST_CASE("parallel_chunks covers every index once, identically at any thread count", "[core][parallel]") {
  auto run = [](unsigned threads) {
    std::vector<std::uint64_t> out(1003);
    latentaudit::parallel_chunks(out.size(), 64, threads, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) {
        auto g = latentaudit::make_stream({.seed = 5, .item = i});
        out[i] = g.next_u64();
      }
    });
    return out;
  };
  const auto one = run(1);
  CHECK(run(2) == one);
  CHECK(run(8) == one);
}

TEST_CASE("parallel_chunks rethrows the first exception and rejects chunk 0", "[core][parallel]") {
  CHECK_THROWS_AS(latentaudit::parallel_chunks(100, 10, 4,
                                               [](std::size_t b, std::size_t) {
                                                 if (b == 50) throw std::runtime_error("boom");
                                               }),
                  std::runtime_error);
  CHECK_THROWS_AS(latentaudit::parallel_chunks(10, 0, 1, [](std::size_t, std::size_t) {}),
                  latentaudit::invalid_argument);
}
