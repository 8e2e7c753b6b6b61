// SPDX-License-Identifier: MIT
// The report's time against its records (issue 32: "a report linear in its records"): the whole
// report (build_audit_report, 2000 bootstrap replicates, demonstrations and gate included) on
// clustered records of four regimes with drift arms (tests/report/relay_failure_sim.hpp), at two
// sizes 2.5x apart; the ratio of their times is the growth to watch (goal ≤ 2.6, read in one
// run: benchmarks/README.md "Report"). "smoke" runs once in CTest. Never a timing gate.
#include <benchmark/benchmark.h>
#include <latentaudit/report/report.hpp>

#include <sys/resource.h>

#include "report/relay_failure_sim.hpp"

namespace la = latentaudit;

namespace {

void BM_report(benchmark::State& state) {
  la::test::relay_failure_design d;
  d.items_per_regime = static_cast<std::size_t>(state.range(0));
  d.seeds = 3;
  const auto records = la::test::simulate_relay_failure(d, 1);
  la::audit_options o;
  o.threads = 0;  // the bootstraps on every core, as `latentaudit report`
  for (auto _ : state) benchmark::DoNotOptimize(la::build_audit_report(records, o));
  rusage u{};  // the process's peak resident memory so far (the million-record run: issue 32's <= 2 GB)
  getrusage(RUSAGE_SELF, &u);
  state.counters["peak_rss_MB"] = static_cast<double>(u.ru_maxrss) / 1024.0;
  state.counters["records"] = static_cast<double>(records.size());
  state.counters["records/s"] =
      benchmark::Counter(static_cast<double>(records.size()), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_report)->Name("smoke/report/relay_failure")->Arg(10)->UseRealTime();
// about 1 000 000 records (12 000 items per regime): time and peak_rss_MB against issue 32's
// goals (<= 60 s, <= 2 GB); not in the smoke run
BENCHMARK(BM_report)
    ->Name("report/relay_failure_million")
    ->Arg(12000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK(BM_report)
    ->Name("report/relay_failure")
    ->Arg(60)
    ->Arg(150)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
