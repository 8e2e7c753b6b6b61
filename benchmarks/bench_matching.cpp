// SPDX-License-Identifier: MIT
// Benchmarks of nearest-neighbour matching (include/latentaudit/estimators/matching.hpp): ATT, M = 1,
// three continuous covariates, Abadie–Imbens SE (Match's defaults), at n = 1e4 and 1e5, on 1 and 2
// threads. R's Matching::Match takes 0.75 s (n = 1e4) and 158 s (n = 1e5) on this kind of machine.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <vector>

#include <latentaudit/core/rng.hpp>
#include <latentaudit/estimators/matching.hpp>

namespace {

struct bench_data {
  std::vector<double> y, tr, x;
};

bench_data make_data(std::size_t n) {
  auto g = latentaudit::make_stream({.seed = 2026, .item = n, .arm = 0, .replicate = 0});
  bench_data d;
  d.y.resize(n);
  d.tr.resize(n);
  d.x.resize(n * 3);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < 3; ++j) d.x[i * 3 + j] = latentaudit::standard_normal(g);
    d.tr[i] = latentaudit::uniform01(g) < 0.5 ? 1.0 : 0.0;
    d.y[i] = d.x[i * 3] + 0.5 * d.x[i * 3 + 1] + d.tr[i] + latentaudit::standard_normal(g);
  }
  d.tr[0] = 1.0;
  d.tr[1] = 0.0;
  return d;
}

void run(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto threads = static_cast<unsigned>(state.range(1));
  const bench_data d = make_data(n);
  latentaudit::matching_options o;
  o.threads = threads;
  for (auto _ : state) {
    auto r = latentaudit::nearest_neighbor_matching(d.y, d.tr, d.x, 3, o);
    benchmark::DoNotOptimize(r.effect.estimate);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
}

void matching_att_m1_3cov(benchmark::State& state) { run(state); }
void matching_att_m1_3cov_smoke(benchmark::State& state) { run(state); }

}  // namespace

BENCHMARK(matching_att_m1_3cov)
    ->Args({10000, 1})
    ->Args({10000, 2})
    ->Args({100000, 1})
    ->Args({100000, 2})
    ->ArgNames({"n", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(matching_att_m1_3cov_smoke)
    ->Args({200, 1})
    ->ArgNames({"n", "threads"})
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
