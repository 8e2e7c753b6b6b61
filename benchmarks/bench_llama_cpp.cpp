// SPDX-License-Identifier: MIT
// The reference engine against llama.cpp (engine/llama_cpp.hpp, flash attention off, f32 cache),
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
// Filter "smoke" runs the organism only (the ctest smoke run). Results: docs/engines.md.
#include <benchmark/benchmark.h>

#include <latentaudit/engine/gguf_export.hpp>
#include <latentaudit/engine/llama_cpp.hpp>
#include <latentaudit/engine/llama_cpp_batch.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/kv/llama_state.hpp>
#include <latentaudit/trial.hpp>

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
std::unique_ptr<la::reference_cpu_engine> ref_slot;
std::unique_ptr<la::llama_cpp_engine> llama_slot;
std::string ref_key, llama_key;

la::reference_cpu_engine& reference(const std::string& name, la::dtype w, unsigned threads) {
  const std::string key = name + std::to_string(static_cast<int>(w)) + ":" + std::to_string(threads);
  if (ref_key != key) {
    llama_slot.reset(), llama_key.clear();
    ref_slot.reset();
    ref_slot = std::make_unique<la::reference_cpu_engine>(
        la::reference_cpu_engine::load(model(name, w).hf, threads));
    ref_key = key;
  }
  return *ref_slot;
}

la::llama_cpp_engine& llama(const std::string& name, la::dtype w, int threads) {
  const std::string key = name + std::to_string(static_cast<int>(w));
  if (llama_key != key) {
    ref_slot.reset(), ref_key.clear();
    llama_slot.reset();
    llama_slot = std::make_unique<la::llama_cpp_engine>(la::llama_cpp_engine::load(
        model(name, w).gguf, {.n_ctx = 4096, .n_seq_max = 10, .threads = threads}));
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

// B sequences, each prefilled with p, then 16 greedy-free decode steps of all B in one
// forward_batch per step (B = 1: one sequence's decode through the same path).
void run_decode_batch(benchmark::State& state, la::llama_cpp_engine& e, const std::vector<la::token_id>& p,
                      std::size_t n_seqs) {
  constexpr int steps = 16;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<la::scoped_seq<la::llama_cpp_engine>> seqs;
    for (std::size_t i = 0; i < n_seqs; ++i) {
      seqs.emplace_back(e);
      (void)e.prefill(seqs.back().id(), p, 0, {});
    }
    state.ResumeTiming();
    std::vector<la::token_id> tok(n_seqs);
    for (int k = 0; k < steps; ++k) {
      std::vector<la::llama_cpp_forward> rs;
      for (std::size_t i = 0; i < n_seqs; ++i) {
        tok[i] = p[(static_cast<std::size_t>(k) + i) % p.size()];
        rs.push_back({.seq = seqs[i].id(),
                      .tokens = std::span<const la::token_id>(&tok[i], 1),
                      .first = static_cast<la::position_t>(p.size()) + k});
      }
      auto out = e.forward_batch(rs);
      benchmark::DoNotOptimize(out.data());
    }
    state.PauseTiming();
    seqs.clear();
    state.ResumeTiming();
  }
  tokens_rate(state, steps * n_seqs);
}

// Trials through run_on_workers on `jobs` drivers: unbatched, each driver with its own context (as
// `audit --engine llama.cpp --jobs N`), or batched, the drivers sharing one context through a
// llama_cpp_batch (`--batched`). Workload: organism-a's tasks (documents of 17-33 tokens, 1-2 answer
// tokens; the ids fit any vocabulary) on the arms no_comm, text_full, kv_full, kv_int8, zeroed and
// text_message_16 (A writes up to 16 tokens), 8 items x 1 seed.
void run_trials(benchmark::State& state, const std::string& name, int threads, std::size_t jobs,
                bool batched) {
  using la::llama_cpp_engine;
  const auto& ck = model(name, la::dtype::f32);
  llama_slot.reset(), llama_key.clear();
  ref_slot.reset(), ref_key.clear();
  const auto fmt = la::organism_format::load(model("organism_a", la::dtype::f32).hf);
  la::trial_design d{.seed = 1, .items = 8, .seeds = 1};
  d.arms.clear();
  for (const char* a : {"no_comm", "text_full", "kv_full", "kv_int8", "zeroed", "text_message_16"})
    d.arms.push_back(la::parse_arm(a));
  const auto tasks = [&](std::uint64_t i, std::uint64_t s) {
    return la::make_organism_task(fmt, {.seed = d.seed, .no_need_fraction = 0.0}, i, s);
  };
  const la::message_options msg = *la::organism_message_options(model("organism_a", la::dtype::f32).hf);
  std::uint64_t trials = 0;
  auto count = [&](const la::driver_stats& st) { trials += st.trials; };
  if (!batched) {
    using driver_type = la::trial_driver<llama_cpp_engine>;
    std::vector<std::unique_ptr<llama_cpp_engine>> engines;
    std::vector<std::unique_ptr<driver_type>> drivers;
    std::vector<driver_type*> ptrs;
    for (std::size_t w = 0; w < jobs; ++w) {
      engines.push_back(
          std::make_unique<llama_cpp_engine>(llama_cpp_engine::load(ck.gguf, {.threads = threads})));
      drivers.push_back(std::make_unique<driver_type>(*engines.back()));
      drivers.back()->set_message_options(msg);
      ptrs.push_back(drivers.back().get());
    }
    for (auto _ : state)
      count(la::run_on_workers<driver_type>(ptrs, d, tasks, [](const la::trial_record&) {}));
  } else {
    using driver_type = la::trial_driver<la::llama_cpp_seat_engine>;
    const auto j = static_cast<std::uint32_t>(jobs);
    auto e = llama_cpp_engine::load(
        ck.gguf, {.n_ctx = 4096 * j, .max_context = 4096, .n_seq_max = 4 * j + 1, .threads = threads});
    la::llama_cpp_batch batch({&e});
    std::vector<la::llama_cpp_seat_engine> seats;
    for (std::size_t w = 0; w < jobs; ++w) seats.push_back(batch.seat_engine(batch.add_seat(), 0));
    std::vector<std::unique_ptr<driver_type>> drivers;
    std::vector<driver_type*> ptrs;
    for (auto& seat : seats) {
      drivers.push_back(std::make_unique<driver_type>(seat));
      drivers.back()->set_message_options(msg);
      ptrs.push_back(drivers.back().get());
    }
    for (auto _ : state)
      count(la::run_on_workers<driver_type>(ptrs, d, tasks, [](const la::trial_record&) {}));
    const auto c = batch.stats();
    state.counters["batched_share"] =
        c.forwards == 0 ? 0.0 : static_cast<double>(c.batched) / static_cast<double>(c.forwards);
  }
  state.counters["trials/s"] = benchmark::Counter(static_cast<double>(trials), benchmark::Counter::kIsRate);
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
      // batched decoding and trials (issue: engines that batch): the 0.5B shape, organism-a smoke
      for (int threads : {1, 2}) {
        const std::string th = "/threads:" + std::to_string(threads);
        for (std::size_t nb : {std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{8}}) {
          if (tag.empty() || (nb == 2 && threads == 1))
            benchmark::RegisterBenchmark(
                (tag + sh.name + "/f32/llama.cpp/decode_batch_" + std::to_string(nb) + th).c_str(),
                [=](benchmark::State& st) {
                  auto& e = llama(sh.name, w, threads);
                  run_decode_batch(st, e, prompt(sh.name, sh.prompts.front(), e.info().vocab_size), nb);
                })
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
        }
        for (const auto& [jobs_, batched_] :
             std::vector<std::pair<std::size_t, bool>>{{1, false}, {2, false}, {2, true}, {4, true}}) {
          const std::size_t jobs = jobs_;
          const bool batched = batched_;
          if (!tag.empty() && (jobs != 2 || !batched || threads != 1)) continue;
          benchmark::RegisterBenchmark(
              (tag + sh.name + "/f32/llama.cpp/trials/jobs:" + std::to_string(jobs) +
               (batched ? "/batched" : "/unbatched") + th)
                  .c_str(),
              [=](benchmark::State& st) { run_trials(st, sh.name, threads, jobs, batched); })
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime()
              ->Iterations(1);
        }
      }
      for (auto n : sh.prompts) {
        // relay on llama.cpp: import of the exported cache vs re-prefilling the document
        benchmark::RegisterBenchmark((tag + sh.name + "/llama.cpp/relay_import_" + std::to_string(n)).c_str(),
                                     [=](benchmark::State& st) {
                                       auto& e = llama(sh.name, w, 1);
                                       const auto p = prompt(sh.name, n, e.info().vocab_size);
                                       la::kv_block blk;
                                       {
                                         la::scoped_seq<la::llama_cpp_engine> a(e);
                                         (void)e.prefill(a.id(), p, 0, {});
                                         blk = e.export_kv(a.id(), {0, static_cast<std::int64_t>(p.size())},
                                                           {0, e.info().fingerprint.n_layers});
                                       }
                                       for (auto _ : st) {
                                         la::scoped_seq<la::llama_cpp_engine> b(e);
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
          la::scoped_seq<la::llama_cpp_engine> a(e);
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
