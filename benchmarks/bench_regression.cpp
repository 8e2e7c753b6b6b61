// SPDX-License-Identifier: MIT
// Benchmarks of least squares with cluster-robust covariance (include/latentaudit/estimators/
// regression.hpp): n = 1e6 rows, 5 regressors (intercept + 4 covariates), 1000 clusters, CR1;
// plus HC3 (leverages row by row) and the cluster-id mapping. "smoke" variants use n = 1000.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <string>
#include <vector>

#include <latentaudit/core/rng.hpp>
#include <latentaudit/estimators/regression.hpp>

namespace {

struct bench_data {
  latentaudit::design_matrix x;
  std::vector<double> y;
  std::vector<long long> cluster;
};

bench_data make_data(std::size_t n, std::size_t clusters) {
  auto g = latentaudit::make_stream({.seed = 2026, .item = n, .arm = 1, .replicate = 0});
  std::vector<std::vector<double>> cols(4, std::vector<double>(n));
  bench_data d;
  d.y.resize(n);
  d.cluster.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    d.cluster[i] =
        static_cast<long long>(latentaudit::uniform_index(g, static_cast<std::uint32_t>(clusters)));
    for (auto& c : cols) c[i] = latentaudit::standard_normal(g);
    d.y[i] = 1.0 + cols[0][i] - 0.5 * cols[1][i] + 0.2 * cols[3][i] + latentaudit::standard_normal(g);
  }
  latentaudit::design_builder b(n);
  b.intercept();
  for (std::size_t j = 0; j < cols.size(); ++j) {
    std::string name = "x";
    name += std::to_string(j + 1);
    b.add(name, cols[j]);
  }
  d.x = b.build();
  return d;
}

void ols_cluster(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const bench_data d = make_data(n, static_cast<std::size_t>(state.range(1)));
  const auto groups = latentaudit::make_group_index(std::span<const long long>(d.cluster));
  for (auto _ : state) {
    auto r = latentaudit::ols(d.x, d.y, groups, {.covariance = latentaudit::covariance_type::cr1});
    benchmark::DoNotOptimize(r.covariance.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void ols_cluster_with_mapping(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const bench_data d = make_data(n, static_cast<std::size_t>(state.range(1)));
  for (auto _ : state) {
    const auto groups = latentaudit::make_group_index(std::span<const long long>(d.cluster));
    auto r = latentaudit::ols(d.x, d.y, groups);
    benchmark::DoNotOptimize(r.covariance.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void ols_hc3(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const bench_data d = make_data(n, 10);
  for (auto _ : state) {
    auto r = latentaudit::ols(d.x, d.y, {.covariance = latentaudit::covariance_type::hc3});
    benchmark::DoNotOptimize(r.covariance.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void ols_cluster_smoke(benchmark::State& state) { ols_cluster(state); }
void ols_hc3_smoke(benchmark::State& state) { ols_hc3(state); }

}  // namespace

BENCHMARK(ols_cluster)->Args({1000000, 1000})->Unit(benchmark::kMillisecond);
BENCHMARK(ols_cluster_with_mapping)->Args({1000000, 1000})->Unit(benchmark::kMillisecond);
BENCHMARK(ols_hc3)->Args({1000000})->Unit(benchmark::kMillisecond);
BENCHMARK(ols_cluster_smoke)->Args({1000, 20})->Unit(benchmark::kMicrosecond);
BENCHMARK(ols_hc3_smoke)->Args({1000})->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
