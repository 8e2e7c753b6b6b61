// SPDX-License-Identifier: MIT
// The reference backend against llama.cpp (backend/llama_cpp.hpp, flash attention off, f32 cache),
// same threads, in one run:
//   <model>/<weights>/<engine>/prefill_<P>/threads:<T>   tokens/s of a P-token prefill into a fresh sequence
//   <model>/<weights>/<engine>/decode/threads:<T>        tokens/s of 16 greedy-free decode steps after a
//                                                        128-token prefill (33 on the organism)
//   <model>/llama.cpp/relay_import_<P>, relay_reprefill_<P>   a relayed cache imported vs the document
//                                                        re-prefilled, on llama.cpp (1 thread)
//   <model>/state/{to,from}_llama_seq_state_<P>, memcpy_<P>   the state-blob conversion vs memcpy of the
//                                                        same bytes (bytes/s)
// Models: organism-a (prompts of 33 tokens: the organism's context is 128), and a random-weight
// Llama of a 0.5B-class shape (hidden 896, 24 layers, 14 heads / 2 KV heads, head dim 64,
// intermediate 4864, vocab 32000; generated here with seed 2026 by tests/support/tiny_llama.hpp,
// stored only in the temp directory) with f32 and bf16 weights, prompts of 128 and 1024 tokens.
// Filter "smoke" runs the organism only (the ctest smoke run). Results: docs/backends.md.
#include <benchmark/benchmark.h>

#include <latentaudit/backend/gguf_export.hpp>
#include <latentaudit/backend/llama_cpp.hpp>
#include <latentaudit/backend/reference_cpu.hpp>
#include <latentaudit/kv/llama_state.hpp>
#include <latentaudit/trial/task.hpp>

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/tiny_llama.hpp"

namespace la = latentaudit;

namespace {

struct checkpoint {
  std::filesystem::path hf, gguf;
};

// organism-a, or the 0.5B-class shape with f32 or bf16 weights (written once per run).
const checkpoint& model(const std::string& name, la::dtype weights) {
  static std::map<std::string, checkpoint> cache;
  const std::string key = name + (weights == la::dtype::f32 ? "/f32" : "/bf16");
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  checkpoint c;
  if (name == "organism_a") {
    c.hf = std::filesystem::path(LATENTAUDIT_SOURCE_DIR) / "models" / "organism-a";
  } else {
    c.hf = la::test::write_tiny_llama("bench_0p5b_" + std::string(weights == la::dtype::f32 ? "f32" : "bf16"),
                                      {.vocab = 32000,
                                       .hidden = 896,
                                       .intermediate = 4864,
                                       .layers = 24,
                                       .heads = 14,
                                       .kv_heads = 2,
                                       .max_context = 2048,
                                       .tied = false,
                                       .storage = weights,
                                       .seed = 2026});
  }
  c.gguf = std::filesystem::temp_directory_path() /
           ("latentaudit_bench_" + name + "_" + (weights == la::dtype::f32 ? "f32" : "bf16") + ".gguf");
  (void)la::export_llama_gguf(c.hf, c.gguf, {.type = weights});
  return cache.emplace(key, c).first->second;
}

// One engine alive at a time (a 0.5B model is 1.7 GB in f32 per engine).
std::unique_ptr<la::reference_cpu_backend> ref_slot;
std::unique_ptr<la::llama_cpp_backend> llama_slot;
std::string ref_key, llama_key;

la::reference_cpu_backend& reference(const std::string& name, la::dtype w, unsigned threads) {
  const std::string key = name + std::to_string(static_cast<int>(w)) + ":" + std::to_string(threads);
  if (ref_key != key) {
    llama_slot.reset(), llama_key.clear();
    ref_slot.reset();
    ref_slot = std::make_unique<la::reference_cpu_backend>(
        la::reference_cpu_backend::load(model(name, w).hf, threads));
    ref_key = key;
  }
  return *ref_slot;
}

la::llama_cpp_backend& llama(const std::string& name, la::dtype w, int threads) {
  const std::string key = name + std::to_string(static_cast<int>(w));
  if (llama_key != key) {
    ref_slot.reset(), ref_key.clear();
    llama_slot.reset();
    llama_slot = std::make_unique<la::llama_cpp_backend>(la::llama_cpp_backend::load(
        model(name, w).gguf, {.n_ctx = 4096, .n_seq_max = 4, .threads = threads}));
    llama_key = key;
  }
  llama_set_n_threads(llama_slot->context(), threads, threads);
  return *llama_slot;
}

// A prompt of n tokens: the organism's document (n = 33), else uniform ids from a fixed stream.
std::vector<la::token_id> prompt(const std::string& name, std::int64_t n, std::int32_t vocab) {
  if (name == "organism_a") {
    const auto f = la::organism_format::load(model(name, la::dtype::f32).hf);
    return la::make_organism_task(f, {.seed = 1, .min_pairs = 16, .max_pairs = 16, .no_need_fraction = 0.0},
                                  0, 0)
        .document;
  }
  auto g = la::make_stream({.seed = 2026, .item = static_cast<std::uint64_t>(n)});
  std::vector<la::token_id> t(static_cast<std::size_t>(n));
  for (auto& x : t) x = static_cast<la::token_id>(la::uniform_index(g, static_cast<std::uint32_t>(vocab)));
  return t;
}

void tokens_rate(benchmark::State& state, std::size_t per_iteration) {
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(state.iterations() * per_iteration),
                                                  benchmark::Counter::kIsRate);
}

template <class E>
void run_prefill(benchmark::State& state, E& e, const std::vector<la::token_id>& p) {
  for (auto _ : state) {
    la::scoped_seq<E> s(e);
    auto out = e.prefill(s.id(), p, 0, {});
    benchmark::DoNotOptimize(out.logits.data());
  }
  tokens_rate(state, p.size());
}

template <class E>
void run_decode(benchmark::State& state, E& e, const std::vector<la::token_id>& p) {
  constexpr int steps = 16;
  for (auto _ : state) {
    state.PauseTiming();
    la::scoped_seq<E> s(e);
    (void)e.prefill(s.id(), p, 0, {});
    state.ResumeTiming();
    auto pos = static_cast<la::position_t>(p.size());
    for (int k = 0; k < steps; ++k) {
      auto out = e.decode(s.id(), p[static_cast<std::size_t>(k) % p.size()], pos++, {});
      benchmark::DoNotOptimize(out.logits.data());
    }
    state.PauseTiming();
    s.close();
    state.ResumeTiming();
  }
  tokens_rate(state, steps);
}

void register_all() {
  struct shape {
    std::string name;
    std::vector<la::dtype> weights;
    std::vector<std::int64_t> prompts;
  };
  const std::vector<shape> shapes = {{"organism_a", {la::dtype::f32}, {33}},
                                     {"llama_0p5b", {la::dtype::f32, la::dtype::bf16}, {128, 1024}}};
  for (const auto& sh : shapes)
    for (auto w : sh.weights) {
      const std::string wn = w == la::dtype::f32 ? "f32" : "bf16";
      const std::string tag = sh.name == "organism_a" ? "smoke_" : "";
      for (int threads : {1, 2}) {
        for (auto n : sh.prompts) {
          benchmark::RegisterBenchmark((tag + sh.name + "/" + wn + "/reference/prefill_" + std::to_string(n) +
                                        "/threads:" + std::to_string(threads))
                                           .c_str(),
                                       [=](benchmark::State& st) {
                                         auto& e = reference(sh.name, w, static_cast<unsigned>(threads));
                                         run_prefill(st, e, prompt(sh.name, n, e.info().vocab_size));
                                       })
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
          benchmark::RegisterBenchmark((tag + sh.name + "/" + wn + "/llama.cpp/prefill_" + std::to_string(n) +
                                        "/threads:" + std::to_string(threads))
                                           .c_str(),
                                       [=](benchmark::State& st) {
                                         auto& e = llama(sh.name, w, threads);
                                         run_prefill(st, e, prompt(sh.name, n, e.info().vocab_size));
                                       })
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
        const std::int64_t ctx = sh.prompts.front();
        benchmark::RegisterBenchmark(
            (tag + sh.name + "/" + wn + "/reference/decode/threads:" + std::to_string(threads)).c_str(),
            [=](benchmark::State& st) {
              auto& e = reference(sh.name, w, static_cast<unsigned>(threads));
              run_decode(st, e, prompt(sh.name, ctx, e.info().vocab_size));
            })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(
            (tag + sh.name + "/" + wn + "/llama.cpp/decode/threads:" + std::to_string(threads)).c_str(),
            [=](benchmark::State& st) {
              auto& e = llama(sh.name, w, threads);
              run_decode(st, e, prompt(sh.name, ctx, e.info().vocab_size));
            })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
      if (w != la::dtype::f32) continue;
      for (auto n : sh.prompts) {
        // relay on llama.cpp: import of the exported cache vs re-prefilling the document
        benchmark::RegisterBenchmark((tag + sh.name + "/llama.cpp/relay_import_" + std::to_string(n)).c_str(),
                                     [=](benchmark::State& st) {
                                       auto& e = llama(sh.name, w, 1);
                                       const auto p = prompt(sh.name, n, e.info().vocab_size);
                                       la::kv_block blk;
                                       {
                                         la::scoped_seq<la::llama_cpp_backend> a(e);
                                         (void)e.prefill(a.id(), p, 0, {});
                                         blk = e.export_kv(a.id(), {0, static_cast<std::int64_t>(p.size())},
                                                           {0, e.info().fingerprint.n_layers});
                                       }
                                       for (auto _ : st) {
                                         la::scoped_seq<la::llama_cpp_backend> b(e);
                                         e.import_kv(b.id(), blk, {});
                                         benchmark::DoNotOptimize(e.n_tokens(b.id()));
                                       }
                                       tokens_rate(st, p.size());
                                     })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(
            (tag + sh.name + "/llama.cpp/relay_reprefill_" + std::to_string(n)).c_str(),
            [=](benchmark::State& st) {
              auto& e = llama(sh.name, w, 1);
              run_prefill(st, e, prompt(sh.name, n, e.info().vocab_size));
            })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        // the state-blob conversion against memcpy of the same bytes
        auto blob_of = [=]() {
          auto& e = llama(sh.name, w, 1);
          const auto p = prompt(sh.name, n, e.info().vocab_size);
          la::scoped_seq<la::llama_cpp_backend> a(e);
          (void)e.prefill(a.id(), p, 0, {});
          std::vector<std::byte> blob(llama_state_seq_get_size(e.context(), a.id()));
          blob.resize(llama_state_seq_get_data(e.context(), reinterpret_cast<std::uint8_t*>(blob.data()),
                                               blob.size(), a.id()));
          auto fp = e.info().fingerprint;
          fp.rope.pairing = la::rope_pairing::norm;
          return std::make_pair(std::move(blob), fp);
        };
        benchmark::RegisterBenchmark(
            (tag + sh.name + "/state/from_llama_seq_state_" + std::to_string(n)).c_str(),
            [=](benchmark::State& st) {
              const auto [blob, fp] = blob_of();
              for (auto _ : st) {
                auto b = la::from_llama_seq_state(blob, fp);
                benchmark::DoNotOptimize(b.payload().data());
              }
              st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * blob.size()));
            })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(
            (tag + sh.name + "/state/to_llama_seq_state_" + std::to_string(n)).c_str(),
            [=](benchmark::State& st) {
              const auto [blob, fp] = blob_of();
              const auto b = la::from_llama_seq_state(blob, fp);
              for (auto _ : st) {
                auto out = la::to_llama_seq_state(b, {.v_trans = true});
                benchmark::DoNotOptimize(out.data());
              }
              st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * blob.size()));
            })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(
            (tag + sh.name + "/state/memcpy_" + std::to_string(n)).c_str(),
            [=](benchmark::State& st) {
              const auto [blob, fp] = blob_of();
              std::vector<std::byte> dst(blob.size());
              for (auto _ : st) {
                std::memcpy(dst.data(), blob.data(), blob.size());
                benchmark::DoNotOptimize(dst.data());
                benchmark::ClobberMemory();
              }
              st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * blob.size()));
            })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
    }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  ref_slot.reset();
  llama_slot.reset();
  return 0;
}
