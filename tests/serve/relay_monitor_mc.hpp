// SPDX-License-Identifier: MIT
// Monte Carlo of the public relay monitor (serve/relay_monitor.hpp) on production-like streams of
// sampled pairs (relay vs text, correctness and a likelihood in [0, 1]), drawn from the library's
// Philox streams (seed, replicate, scenario): bit-identical on every platform. Shared by
// relay_monitor_test.cpp (the acceptance of issue 54) and its [slow] variants.
#ifndef LATENTAUDIT_TESTS_SERVE_RELAY_MONITOR_MC_HPP
#define LATENTAUDIT_TESTS_SERVE_RELAY_MONITOR_MC_HPP

#include <cmath>
#include <cstdint>
#include <optional>

#include "latentaudit/core/rng.hpp"
#include "latentaudit/serve/relay_monitor.hpp"

namespace latentaudit::test {

/// One scenario: `pairs` sampled pairs; from pair `change` on (0: never) each request is stale with
/// probability `stale_share` (relay then answers correctly with probability `stale_accuracy`).
/// Before the change relay and text are equally good (each correct with the request's difficulty
/// d ~ U(0.55, 0.95), likelihood d·U(0.8, 1)): the boundary of H₀, the hardest null.
struct monitor_scenario {
  std::uint64_t pairs = 2000;
  std::uint64_t change = 0;
  double stale_share = 0.5;
  double stale_accuracy = 0.15;
  relay_monitor_options options{
      .bets = {}, .vs_text = true, .vs_no_comm = false, .on_correct = true, .on_likelihood = true};
};

struct monitor_counts {
  std::uint64_t reps = 0, off = 0, off_before = 0, off_after = 0;
  double delay_sum = 0.0;  ///< Σ (off pair − change) over streams turned off after the change
  [[nodiscard]] double rate(std::uint64_t k) const {
    return static_cast<double>(k) / static_cast<double>(reps);
  }
  [[nodiscard]] double mean_delay() const {
    return off_after == 0 ? 0.0 : delay_sum / static_cast<double>(off_after);
  }
};

/// Runs `reps` streams of scenario `c`; stream r draws from Philox (seed, r, tag, 0).
inline monitor_counts run_monitor_mc(const monitor_scenario& c, std::uint64_t reps, std::uint64_t seed,
                                     std::uint32_t tag) {
  monitor_counts out;
  for (std::uint64_t r = 0; r < reps; ++r) {
    auto g = make_stream({seed, r, tag, 0});
    relay_monitor m(c.options);
    for (std::uint64_t i = 1; i <= c.pairs; ++i) {
      const double d = 0.55 + 0.4 * uniform01(g);
      const bool stale = c.change != 0 && i > c.change && uniform01(g) < c.stale_share;
      const double pr = stale ? c.stale_accuracy : d;
      relay_pair p;
      p.request_id = i;
      p.relay_correct = uniform01(g) < pr;
      p.fallback_correct = uniform01(g) < d;
      p.relay_likelihood = pr * (0.8 + 0.2 * uniform01(g));
      p.fallback_likelihood = d * (0.8 + 0.2 * uniform01(g));
      m.observe(p);
      if (!m.on()) break;
    }
    ++out.reps;
    if (const auto& ev = m.off()) {
      ++out.off;
      if (c.change != 0 && ev->pairs <= c.change) {
        ++out.off_before;
      } else if (c.change != 0) {
        ++out.off_after;
        out.delay_sum += static_cast<double>(ev->pairs - c.change);
      }
    }
  }
  return out;
}

/// The Monte Carlo standard error of a proportion p over n replicates.
inline double mc_se(double p, std::uint64_t n) { return std::sqrt(p * (1.0 - p) / static_cast<double>(n)); }

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SERVE_RELAY_MONITOR_MC_HPP
