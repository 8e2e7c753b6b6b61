// SPDX-License-Identifier: MIT
// KV transfer hot paths on a Llama-3-8B-shaped block (32 layers, 8 kv heads, head dim 128, 4096
// tokens, bf16 = 512 MiB), each beside memcpy of the same bytes in the same run. Benchmarks whose
// names contain "smoke" use a tiny block (CI runs them once as a smoke test).
#include <benchmark/benchmark.h>

#include <cstring>
#include <latentaudit/kv.hpp>
#include <memory>
#include <vector>

using namespace latentaudit;

namespace {

model_fingerprint llama3_8b() {
  return {.architecture = "LlamaForCausalLM",
          .n_layers = 32,
          .n_heads = 32,
          .n_kv_heads = 8,
          .head_dim_k = 128,
          .head_dim_v = 128,
          .rope = {.pairing = rope_pairing::neox, .theta = 500000.0f},
          .weights_hash = 1};
}
model_fingerprint tiny() {
  return {.architecture = "LlamaForCausalLM",
          .n_layers = 2,
          .n_heads = 4,
          .n_kv_heads = 2,
          .head_dim_k = 16,
          .head_dim_v = 16,
          .rope = {},
          .weights_hash = 1};
}

const kv_block& block_of(bool big) {
  static std::unique_ptr<kv_block> blocks[2];
  auto& b = blocks[big ? 1 : 0];
  if (!b) {
    b = std::make_unique<kv_block>(
        kv_block::all_layers(big ? llama3_8b() : tiny(), big ? 4096 : 64, dtype::bf16));
    auto bytes = b->payload_mut();
    // deterministic, finite bf16 values in [-2, 2)
    auto g = make_stream({.seed = 1});
    auto* p = reinterpret_cast<std::uint16_t*>(bytes.data());
    for (std::size_t j = 0; j < bytes.size() / 2; ++j) {
      const float v = static_cast<float>(uniform01(g) * 4.0 - 2.0);
      p[j] = Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(v));
    }
  }
  return *b;
}

void memcpy_bytes(benchmark::State& state, std::size_t n) {
  std::vector<std::byte> src(n, std::byte{1}), dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

void BM_memcpy_block(benchmark::State& state) {
  memcpy_bytes(state, block_of(state.range(0) != 0).payload_bytes());
}
void BM_memcpy_half_block(benchmark::State& state) {
  memcpy_bytes(state, block_of(state.range(0) != 0).payload_bytes() / 2);
}

// Slicing, encoding and decoding write into a caller's block / vector / relay that is reused
// across iterations (as memcpy's destination is); the *_fresh variants return a new object each
// time and so also pay for allocating and page-faulting the output.
void BM_slice_half_layers(benchmark::State& state) {
  const auto& b = block_of(state.range(0) != 0);
  const auto sel = uniform_selection(layers_range(b.fingerprint().n_layers, 0, b.fingerprint().n_layers / 2),
                                     tokens_range(b.n_tokens(), 0, b.n_tokens()));
  kv_block out;
  apply_selection(b, sel, out);  // untimed: the first call allocates and faults in the output
  for (auto _ : state) {
    apply_selection(b, sel, out);
    benchmark::DoNotOptimize(out.payload().data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * b.payload_bytes() / 2));
}

void BM_slice_half_layers_fresh(benchmark::State& state) {
  const auto& b = block_of(state.range(0) != 0);
  const auto sel = uniform_selection(layers_range(b.fingerprint().n_layers, 0, b.fingerprint().n_layers / 2),
                                     tokens_range(b.n_tokens(), 0, b.n_tokens()));
  for (auto _ : state) {
    auto out = apply_selection(b, sel);
    benchmark::DoNotOptimize(out.payload().data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * b.payload_bytes() / 2));
}

void BM_noise(benchmark::State& state) {
  auto b = block_of(state.range(0) != 0);
  const unsigned threads = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    auto rec = add_noise(b, {.sigma = 0.01, .scale = noise_scale::absolute, .seed = 3, .threads = threads});
    benchmark::DoNotOptimize(rec);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * b.payload_bytes()));
}

void BM_int8_roundtrip(benchmark::State& state) {
  auto b = block_of(state.range(0) != 0);
  const unsigned threads = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    auto rec = quantize_roundtrip(b, {.scheme = quant_scheme::int8, .group_size = 32}, threads);
    benchmark::DoNotOptimize(rec);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * b.payload_bytes()));
}

void BM_encode(benchmark::State& state) {
  const auto& b = block_of(state.range(0) != 0);
  std::vector<std::byte> bytes;
  encode_relay(b, bytes);  // untimed: the first call allocates and faults in the output
  for (auto _ : state) {
    encode_relay(b, bytes);
    benchmark::DoNotOptimize(bytes.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * b.payload_bytes()));
}

void BM_encode_fresh(benchmark::State& state) {
  const auto& b = block_of(state.range(0) != 0);
  for (auto _ : state) {
    auto bytes = encode_relay(b);
    benchmark::DoNotOptimize(bytes.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * b.payload_bytes()));
}

void BM_decode(benchmark::State& state) {
  const auto& b = block_of(state.range(0) != 0);
  const auto bytes = encode_relay(b);
  decoded_relay d;
  decode_relay(bytes, d);  // untimed: the first call allocates and faults in the output
  for (auto _ : state) {
    decode_relay(bytes, d);
    benchmark::DoNotOptimize(d.kv.payload().data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * b.payload_bytes()));
}

void BM_decode_fresh(benchmark::State& state) {
  const auto& b = block_of(state.range(0) != 0);
  const auto bytes = encode_relay(b);
  for (auto _ : state) {
    auto d = decode_relay(bytes);
    benchmark::DoNotOptimize(d.kv.payload().data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * b.payload_bytes()));
}

}  // namespace

BENCHMARK(BM_memcpy_block)->Name("smoke/memcpy_block")->Arg(0);
BENCHMARK(BM_slice_half_layers)->Name("smoke/slice_half_layers")->Arg(0);
BENCHMARK(BM_noise)->Name("smoke/noise")->Args({0, 1});
BENCHMARK(BM_int8_roundtrip)->Name("smoke/int8_roundtrip")->Args({0, 1});
BENCHMARK(BM_encode)->Name("smoke/encode")->Arg(0);
BENCHMARK(BM_decode)->Name("smoke/decode")->Arg(0);

BENCHMARK(BM_memcpy_block)
    ->Name("llama3_8b/memcpy_512MiB")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_memcpy_half_block)
    ->Name("llama3_8b/memcpy_256MiB")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_slice_half_layers)
    ->Name("llama3_8b/slice_half_layers")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_slice_half_layers_fresh)
    ->Name("llama3_8b/slice_half_layers_fresh")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_noise)
    ->Name("llama3_8b/noise")
    ->Args({1, 1})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_int8_roundtrip)
    ->Name("llama3_8b/int8_roundtrip")
    ->Args({1, 1})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_encode)->Name("llama3_8b/encode")->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_encode_fresh)
    ->Name("llama3_8b/encode_fresh")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_decode)->Name("llama3_8b/decode")->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_decode_fresh)
    ->Name("llama3_8b/decode_fresh")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
