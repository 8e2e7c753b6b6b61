// SPDX-License-Identifier: MIT
// The CPU reference engine on model organism A (models/organism-a: d 256, 16 heads / 2 kv heads,
// 2 layers): prefill of a 33-token document (16 pairs) and 16 greedy decode steps after it, at 1
// and 2 attention threads, in tokens/s; and the relay: importing the document's exported cache
// into a fresh sequence against the receiver re-prefilling the document. benchmarks/README.md
// says how to compare with PyTorch (benchmarks/pytorch_engine.py) and what was measured.
// Benchmarks whose names contain "smoke" run once in CI (the workloads are small already).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial/task.hpp>
#include <memory>
#include <string>
#include <vector>

using namespace latentaudit;

namespace {

/// models/organism-a (appended: GCC 12's false -Warray-bounds on operator+ chains).
std::string organism_dir() {
  std::string p(LATENTAUDIT_SOURCE_DIR);
  p.append("/models/organism-a");
  return p;
}

/// A loaded organism-an engine per thread count (loading reads and hashes the weights).
reference_cpu_engine& engine(unsigned threads) {
  static std::unique_ptr<reference_cpu_engine> b[3];
  auto& p = b[std::min(threads, 2u)];
  if (!p) p = std::make_unique<reference_cpu_engine>(reference_cpu_engine::load(organism_dir(), threads));
  return *p;
}

/// The benchmark document: item 0 of make_organism_task at N = 16 (33 tokens: BOS + 16 pairs).
const std::vector<token_id>& document() {
  static const std::vector<token_id> doc = [] {
    const auto f = organism_format::load(organism_dir());
    return make_organism_task(f, {.seed = 1, .min_pairs = 16, .max_pairs = 16, .no_need_fraction = 0.0}, 0, 0)
        .document;
  }();
  return doc;
}

token_id last_argmax(const forward_output& o, std::int32_t vocab) {
  const float* l = o.logits.data() + static_cast<std::size_t>(o.rows - 1) * static_cast<std::size_t>(vocab);
  return static_cast<token_id>(std::max_element(l, l + vocab) - l);
}

void set_tokens_rate(benchmark::State& state, std::size_t tokens_per_iteration) {
  state.counters["tokens/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * tokens_per_iteration), benchmark::Counter::kIsRate);
}

/// Prefill of the 33-token document into a fresh sequence (range(0) = threads).
void BM_prefill(benchmark::State& state) {
  auto& b = engine(static_cast<unsigned>(state.range(0)));
  const auto& doc = document();
  for (auto _ : state) {
    const auto s = b.open_seq();
    auto out = b.prefill(s, doc, 0);
    benchmark::DoNotOptimize(out.logits.data());
    b.close_seq(s);
  }
  set_tokens_rate(state, doc.size());
}

/// 16 greedy decode steps after the document (the prefill is not timed; range(0) = threads).
void BM_decode(benchmark::State& state) {
  constexpr int steps = 16;
  auto& b = engine(static_cast<unsigned>(state.range(0)));
  const auto& doc = document();
  const auto V = b.config().vocab_size;
  for (auto _ : state) {
    state.PauseTiming();
    const auto s = b.open_seq();
    auto out = b.prefill(s, doc, 0);
    state.ResumeTiming();
    auto p = static_cast<position_t>(doc.size());
    for (int i = 0; i < steps; ++i) out = b.decode(s, last_argmax(out, V), p++);
    benchmark::DoNotOptimize(out.logits.data());
    state.PauseTiming();
    b.close_seq(s);
    state.ResumeTiming();
  }
  set_tokens_rate(state, steps);
}

/// The relay: the document's cache (exported once, outside the loop) imported into a fresh sequence.
void BM_relay_import(benchmark::State& state) {
  auto& b = engine(1);
  const auto& doc = document();
  const auto a = b.open_seq();
  (void)b.prefill(a, doc, 0);
  const auto block = b.export_kv(a, {0, b.n_tokens(a)}, {0, b.config().n_layers});
  b.close_seq(a);
  for (auto _ : state) {
    const auto s = b.open_seq();
    b.import_kv(s, block);
    benchmark::DoNotOptimize(b.n_tokens(s));
    b.close_seq(s);
  }
  set_tokens_rate(state, doc.size());
}

/// What the relay replaces: the receiver re-reading the document (a fresh sequence, prefill).
void BM_relay_reprefill(benchmark::State& state) {
  auto& b = engine(1);
  const auto& doc = document();
  for (auto _ : state) {
    const auto s = b.open_seq();
    auto out = b.prefill(s, doc, 0);
    benchmark::DoNotOptimize(out.logits.data());
    b.close_seq(s);
  }
  set_tokens_rate(state, doc.size());
}

}  // namespace

BENCHMARK(BM_prefill)->Name("smoke/organism_a/prefill_33")->Arg(1);
BENCHMARK(BM_decode)->Name("smoke/organism_a/decode_16")->Arg(1);
BENCHMARK(BM_relay_import)->Name("smoke/organism_a/relay_import_33");

BENCHMARK(BM_prefill)
    ->Name("organism_a/prefill_33/threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_decode)
    ->Name("organism_a/decode_16/threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_relay_import)->Name("organism_a/relay_import_33")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_relay_reprefill)
    ->Name("organism_a/relay_reprefill_33")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

BENCHMARK_MAIN();
