// SPDX-License-Identifier: MIT
// Benchmarks for the estimators module. Never a timing gate: CI runs the "smoke" variants once
// (--benchmark_filter=smoke --benchmark_min_time=0).
//
// Bootstrap: BCa interval of a two-arm mean difference (n = n1 + n0 observations, B replicates)
// beside the limit it is measured against — the raw loop that draws the same indices from the same
// streams (make_stream({seed, 0, arm, r}) + uniform_index) and sums the drawn values, nothing else.
// Arguments: n (total, split evenly between arms), B, threads.
#include <latentaudit/core/parallel.hpp>
#include <latentaudit/core/rng.hpp>
#include <latentaudit/estimators/bootstrap.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

namespace {

using namespace latentaudit;

struct two_arms {
  std::vector<double> treated, control;
};

two_arms make_data(std::size_t n) {
  two_arms d;
  auto g = make_stream({.seed = 1, .item = 0});
  for (std::size_t i = 0; i < n / 2; ++i) d.treated.push_back(1.0 + standard_normal(g));
  for (std::size_t i = 0; i < n - n / 2; ++i) d.control.push_back(std::exp(0.5 * standard_normal(g)));
  return d;
}

// The limit: B replicates of "draw n1 + n0 indices and sum", same streams, same thread split.
void raw_draw_and_sum(benchmark::State& state) {
  const auto d = make_data(static_cast<std::size_t>(state.range(0)));
  const auto b = static_cast<std::size_t>(state.range(1));
  const auto threads = static_cast<unsigned>(state.range(2));
  std::vector<double> t(b);
  for (auto _ : state) {
    parallel_chunks(b, 16, threads, [&](std::size_t lo, std::size_t hi) {
      for (std::size_t r = lo; r < hi; ++r) {
        const auto rr = static_cast<std::uint32_t>(r);
        auto g1 = make_stream({.seed = 7, .item = 0, .arm = 1, .replicate = rr});
        auto g0 = make_stream({.seed = 7, .item = 0, .arm = 0, .replicate = rr});
        const auto n1 = static_cast<std::uint32_t>(d.treated.size()),
                   n0 = static_cast<std::uint32_t>(d.control.size());
        double s1 = 0, s0 = 0;
        for (std::uint32_t j = 0; j < n1; ++j) s1 += d.treated[uniform_index(g1, n1)];
        for (std::uint32_t j = 0; j < n0; ++j) s0 += d.control[uniform_index(g0, n0)];
        t[r] = s1 / n1 - s0 / n0;
      }
    });
    benchmark::DoNotOptimize(t.data());
    benchmark::ClobberMemory();
  }
  state.counters["draws/s"] = benchmark::Counter(static_cast<double>(state.range(0)) * static_cast<double>(b),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// bootstrap_mean_difference, BCa (analytic influence values), boot convention.
void bca_mean_difference(benchmark::State& state) {
  const auto d = make_data(static_cast<std::size_t>(state.range(0)));
  const bootstrap_options o{.replicates = static_cast<std::size_t>(state.range(1)),
                            .method = bootstrap_ci_method::bca,
                            .seed = 7,
                            .threads = static_cast<unsigned>(state.range(2))};
  for (auto _ : state) {
    auto r = bootstrap_mean_difference(d.treated, d.control, o);
    benchmark::DoNotOptimize(r.effect.ci_low);
  }
  state.counters["draws/s"] =
      benchmark::Counter(static_cast<double>(state.range(0)) * static_cast<double>(o.replicates),
                         benchmark::Counter::kIsIterationInvariantRate);
}

// bootstrap_paired_mean, BCa.
void bca_paired_mean(benchmark::State& state) {
  const auto d = make_data(2 * static_cast<std::size_t>(state.range(0)));
  const bootstrap_options o{.replicates = static_cast<std::size_t>(state.range(1)),
                            .method = bootstrap_ci_method::bca,
                            .seed = 7,
                            .threads = static_cast<unsigned>(state.range(2))};
  for (auto _ : state) {
    auto r = bootstrap_paired_mean(d.treated, d.control, o);
    benchmark::DoNotOptimize(r.effect.ci_low);
  }
}

// The generic engine with a callable statistic (indices stored, O(n) jackknife evaluations).
void bca_generic_two_sample(benchmark::State& state) {
  const auto d = make_data(static_cast<std::size_t>(state.range(0)));
  const bootstrap_options o{.replicates = static_cast<std::size_t>(state.range(1)),
                            .method = bootstrap_ci_method::bca,
                            .seed = 7,
                            .threads = static_cast<unsigned>(state.range(2))};
  auto stat = [](const resample_view& t, const resample_view& c) { return t.mean() - c.mean(); };
  for (auto _ : state) {
    auto r = bootstrap_two_sample(d.treated, d.control, stat, o);
    benchmark::DoNotOptimize(r.effect.ci_low);
  }
}

// Interval step only, from B stored replicates.
void interval_from_replicates(benchmark::State& state) {
  const auto b = static_cast<std::size_t>(state.range(0));
  auto g = make_stream({.seed = 3});
  std::vector<double> t(b), l(1000);
  for (auto& v : t) v = standard_normal(g);
  for (auto& v : l) v = standard_normal(g);
  for (auto _ : state) {
    auto r = bootstrap_interval({.t0 = 0.01, .replicates = t, .influence = l},
                                {.method = bootstrap_ci_method::bca});
    benchmark::DoNotOptimize(r.effect.ci_low);
  }
}

}  // namespace

// Full size: n = 1e5 (50,000 per arm), B = 1e4, 1 and 2 threads.
BENCHMARK(raw_draw_and_sum)
    ->Name("bootstrap/raw_draw_and_sum")
    ->Args({100000, 10000, 1})
    ->Args({100000, 10000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(bca_mean_difference)
    ->Name("bootstrap/bca_mean_difference")
    ->Args({100000, 10000, 1})
    ->Args({100000, 10000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(bca_paired_mean)
    ->Name("bootstrap/bca_paired_mean")
    ->Args({100000, 10000, 1})
    ->Args({100000, 10000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(bca_generic_two_sample)
    ->Name("bootstrap/bca_generic_two_sample")
    ->Args({2000, 2000, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(interval_from_replicates)
    ->Name("bootstrap/interval_from_replicates")
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond);

// Smoke variants (tiny; CI runs these once).
BENCHMARK(raw_draw_and_sum)->Name("bootstrap/raw_draw_and_sum/smoke")->Args({100, 99, 1});
BENCHMARK(bca_mean_difference)->Name("bootstrap/bca_mean_difference/smoke")->Args({100, 99, 2});
BENCHMARK(bca_paired_mean)->Name("bootstrap/bca_paired_mean/smoke")->Args({100, 99, 1});
BENCHMARK(bca_generic_two_sample)->Name("bootstrap/bca_generic_two_sample/smoke")->Args({100, 99, 2});
BENCHMARK(interval_from_replicates)->Name("bootstrap/interval_from_replicates/smoke")->Arg(99);

BENCHMARK_MAIN();
