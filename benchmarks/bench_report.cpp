// SPDX-License-Identifier: MIT
// The report's time against its records (issue 32: "a report linear in its records"): the whole
// report (build_audit_report, 2000 bootstrap replicates, demonstrations and gate included) on
// clustered records of four regimes with drift arms (tests/report/relay_failure_sim.hpp), at two
// sizes 2.5x apart; the ratio of their times is the growth to watch (goal ≤ 2.6, read in one
// run: benchmarks/README.md "Report"). "smoke" runs once in CTest. Never a timing gate.
#include <benchmark/benchmark.h>
#include <latentaudit/report/report.hpp>
#include <latentaudit/trial/journal.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

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

// A records.jsonl of about `records` records shaped like `latentaudit audit`'s (issue 51): the
// simulator's records (four regimes, drift arms) with 40-character model fingerprints, a task id,
// six covariates and, on relay arms, a policy object; written with the records' own writer.
std::filesystem::path write_records_file(const std::filesystem::path& dir, std::size_t items_per_regime) {
  la::test::relay_failure_design d;
  d.items_per_regime = items_per_regime;
  d.seeds = 3;
  auto records = la::test::simulate_relay_failure(d, 1);
  const auto path = dir / ("records_" + std::to_string(items_per_regime) + ".jsonl");
  std::ofstream out(path, std::ios::binary);
  const std::string fp = "LlamaForCausalLM:2x2x16:1c440c140eb22d9d";
  for (auto& r : records) {
    r.receiver_fingerprint = fp;
    if (!r.sender_fingerprint.empty())
      r.sender_fingerprint = r.sender_fingerprint == "aa" ? fp : fp + "-" + r.sender_fingerprint;
    r.task_id = "organism-" + std::to_string(r.item);
    r.link = "pcie4";
    for (const char* c : {"own_tokens", "cache_age_versions", "prompt_overlap"})
      if (!r.covariate_value(c)) r.covariates.push_back({c, 0.0});
    if (r.arm_kind != "no_comm" && r.arm_kind.rfind("text", 0) != 0)
      r.policy = la::parse_json(R"({"policy":"kv_full","layers":[0,1],"tokens_in":31,"tokens_kept":31,)"
                                R"("bytes_before":15996,"bytes_after":15996,"position_mode":"preserve"})");
    out << la::record_to_line(r) << '\n';
  }
  return path;
}

// `latentaudit report --records FILE` in a child process (fork before any thread): the reader
// (the policy objects dropped, as the CLI reads) and the whole report with its files. Returns the
// child's wall seconds; `peak_mb` receives its peak resident memory (wait4), so neither the
// records file's generation nor the other size's run counts in it.
double report_seconds(const std::filesystem::path& file, const std::filesystem::path& out_dir,
                      double& peak_mb) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const auto records = la::read_records(file, nullptr, {.policy = false});
    la::audit_options o;
    o.threads = 0;  // the bootstraps on every core, as `latentaudit report`
    const auto rep = la::run_audit_report(records, o, out_dir);
    // issue 51 item 3 (too slow for the suite at 10 000 items x 3 seeds): exit 0, the report's
    // counts equal to the records', every estimate inside its interval
    bool ok = rep.core.n_records == records.size() && rep.core.n_seeds == 3;
    for (const auto* fs : {&rep.findings, &rep.demonstrations})
      for (const auto& f : *fs)
        if (std::isfinite(f.estimate) && std::isfinite(f.ci_low) && std::isfinite(f.ci_high) &&
            !(f.ci_low <= f.estimate && f.estimate <= f.ci_high)) {
          std::fprintf(stderr, "bench_report: %s: estimate %g outside [%g, %g]\n", f.id.c_str(), f.estimate,
                       f.ci_low, f.ci_high);
          ok = false;
        }
    const std::uint64_t n = ok ? records.size() : 0;
    (void)!::write(fds[1], &n, sizeof n);
    ::_exit(ok ? 0 : 3);
  }
  ::close(fds[1]);
  std::uint64_t n = 0;
  const bool got = pid > 0 && ::read(fds[0], &n, sizeof n) == static_cast<ssize_t>(sizeof n);
  ::close(fds[0]);
  int status = 0;
  rusage u{};
  if (pid > 0) ::wait4(pid, &status, 0, &u);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  peak_mb = static_cast<double>(u.ru_maxrss) / 1024.0;
  return got && n > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? s : -1;
}

// Issue 51: `report` on 10^6 records in <= 60 s and <= 2 GB, and its time at most 12x its time on
// 10^5 records, both measured here in one run (same machine, same load): the ratio is printed and
// kept as a counter, never asserted.
void BM_report_file_scale(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path() / ("la_bench_report_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto small = write_records_file(dir, 1190);   // 99 960 records
  const auto large = write_records_file(dir, 11900);  // 999 600 records
  double t_small = 0, t_large = 0, mb_small = 0, mb_large = 0;
  for (auto _ : state) {
    t_small = report_seconds(small, dir / "small", mb_small);
    t_large = report_seconds(large, dir / "large", mb_large);
  }
  if (t_small <= 0 || t_large <= 0)
    state.SkipWithError("the report failed in its child process, or its counts or an interval were wrong");
  const double ratio = t_large / t_small;
  state.counters["small_s"] = t_small;
  state.counters["large_s"] = t_large;
  state.counters["ratio"] = ratio;
  state.counters["small_peak_MB"] = mb_small;
  state.counters["large_peak_MB"] = mb_large;
  std::printf(
      "report --records: 99 960 records %.2f s (peak %.0f MB), 999 600 records %.2f s (peak %.0f MB); "
      "ratio %.2f (goal <= 12; the million: goals <= 60 s, <= 2048 MB)\n",
      t_small, mb_small, t_large, mb_large, ratio);
  std::filesystem::remove_all(dir);
}

}  // namespace

BENCHMARK(BM_report)->Name("smoke/report/relay_failure")->Arg(10)->UseRealTime();
// issue 51: the records file at 10^5 and 10^6 records, the ratio of their times in one run
BENCHMARK(BM_report_file_scale)
    ->Name("report/records_file_1e5_1e6")
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
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
