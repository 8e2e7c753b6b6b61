// SPDX-License-Identifier: MIT
// The audit's trials on 1 and N workers (trial/workers.hpp, `latentaudit audit --jobs N`): the
// default arms with the partner on organism-a, 30 items x 2 seeds (1 260 trials; "smoke": 4 items x
// 1 seed), wall time and trials per wall second. The same run gives the ratio of --jobs 2 to
// --jobs 1 (benchmarks/README.md "Trials on several workers"). Never a timing gate.
#include <benchmark/benchmark.h>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial.hpp>

#include <memory>
#include <string>
#include <vector>

namespace la = latentaudit;

namespace {

const std::string models = std::string(LATENTAUDIT_SOURCE_DIR) + "/models/";

void BM_trials(benchmark::State& state, std::uint64_t items, std::uint64_t seeds) {
  using driver_type = la::trial_driver<la::reference_cpu_engine>;
  const auto jobs = static_cast<std::size_t>(state.range(0));
  const auto a = la::reference_cpu_engine::load(models + "organism-a");
  const auto b = la::reference_cpu_engine::load(models + "organism-b");
  const auto fmt = la::organism_format::load(models + "organism-a");
  la::trial_design d{.seed = 1, .items = items, .seeds = seeds, .arms = la::default_arms(true)};
  const la::organism_task_options to{.seed = d.seed};
  const driver_type::task_source tasks = [&](std::uint64_t i, std::uint64_t s) {
    return la::make_organism_task(fmt, to, i, s);
  };
  std::vector<std::unique_ptr<la::reference_cpu_engine>> engines;
  std::vector<std::unique_ptr<driver_type>> drivers;
  std::vector<driver_type*> ptrs;
  for (std::size_t w = 0; w < jobs; ++w) {  // copies, as `audit --jobs` makes them
    engines.push_back(std::make_unique<la::reference_cpu_engine>(a));
    engines.push_back(std::make_unique<la::reference_cpu_engine>(b));
    drivers.push_back(std::make_unique<driver_type>(*engines[2 * w], engines[2 * w + 1].get()));
    ptrs.push_back(drivers.back().get());
  }
  std::uint64_t trials = 0;
  for (auto _ : state) {
    const auto stats = la::run_on_workers<driver_type>(ptrs, d, tasks, [](const la::trial_record&) {});
    trials += stats.trials;
  }
  state.counters["trials/s"] = benchmark::Counter(static_cast<double>(trials), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK_CAPTURE(BM_trials, smoke, 4, 1)->Name("smoke/trials/4x1")->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_trials, design, 30, 2)
    ->Name("trials/organism_a/30x2")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
