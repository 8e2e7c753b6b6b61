// SPDX-License-Identifier: MIT
// Timings of the CUDA reference engine's relay paths, each beside a device-to-device
// cudaMemcpy of the same bytes (ratio = memcpy time / operation time; 1 = memcpy speed):
//   organism   relay import (device block -> cache) vs the receiver recomputing the prefill,
//              and export to the device and to the host, on a model directory
//   synthetic  a Llama-3-8B-shaped bf16 cache (32 layers, 8 kv heads, head dim 128, 4096
//              tokens; 512 MiB of K and V): export, import (the cuda_engine copies), seeded
//              noise, int8 round trip and token gather
// Usage: example_cuda_bench [model_dir] [tokens]  (defaults: models/organism-a, 4096). Prints a
// table; "no CUDA device: skipped" and exit 0 without a device. Median of 5 runs after a warm-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "cuda_engine.hpp"

namespace la = latentaudit;
namespace cd = latentaudit::cuda_detail;

namespace {

double median_ms(const std::function<void()>& f, int reps = 5) {
  f();
  cd::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    cd::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct memcpy_ref {
  cd::device_buffer a, b;
  double ms(std::size_t bytes) {
    a.at_least(bytes);
    b.at_least(bytes);
    return median_ms([&] {
      cd::check_cuda(cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy D2D");
    });
  }
};

void header() {
  std::printf("%-40s %12s %10s %10s %9s %9s %7s\n", "operation", "bytes", "op ms", "memcpy ms", "op GB/s",
              "cpy GB/s", "ratio");
}
void row(const std::string& name, std::size_t bytes, double op, double cpy) {
  const double gb = static_cast<double>(bytes) / 1e9;
  std::printf("%-40s %12zu %10.3f %10.3f %9.1f %9.1f %7.2f\n", name.c_str(), bytes, op, cpy, gb / (op / 1e3),
              gb / (cpy / 1e3), cpy / op);
}

}  // namespace

int main(int argc, char** argv) {
  if (!la::cuda_device_available()) {
    std::printf("no CUDA device: skipped\n");
    return 0;
  }
  const std::string dir = argc > 1 ? argv[1] : "models/organism-a";
  const std::int64_t T = argc > 2 ? std::stoll(argv[2]) : 4096;
  try {
    cudaDeviceProp prop{};
    cd::check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    std::printf("device: %s (%.1f GiB)\n", prop.name,
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
    memcpy_ref ref;

    // ---- the organism: relay vs recompute ------------------------------------------------------
    {
      auto gpu = la::cuda_engine::load(dir);
      const auto& c = gpu.config();
      const auto n = static_cast<la::position_t>(std::min<std::int64_t>(c.max_context - 8, 120));
      std::vector<la::token_id> a(static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = static_cast<la::token_id>((i * 7 + 3) % static_cast<std::size_t>(c.vocab_size));
      const std::int64_t L = c.n_layers;
      const auto sa = gpu.open_seq();
      (void)gpu.prefill(sa, a, 0);
      const auto blk = gpu.export_kv_device(sa, {0, n}, {0, L});
      const std::size_t bytes = blk.payload_bytes();
      std::printf("\norganism %s: %d tokens, %lld layers, relayed block %zu bytes (f32)\n", dir.c_str(), n,
                  static_cast<long long>(L), bytes);
      header();
      const double cpy = ref.ms(bytes);
      row("export_kv_device (D2D)", bytes, median_ms([&] {
            (void)gpu.export_kv_device(sa, {0, n}, {0, L});
          }),
          cpy);
      row("export_kv (D2H, pageable)", bytes, median_ms([&] {
            (void)gpu.export_kv(sa, {0, n}, {0, L});
          }),
          cpy);
      const double imp = median_ms([&] {
        const auto s = gpu.open_seq();
        gpu.import_kv_device(s, blk, {});
        gpu.close_seq(s);
      });
      row("relay import_kv_device (D2D)", bytes, imp, cpy);
      const double pre = median_ms([&] {
        const auto s = gpu.open_seq();
        (void)gpu.prefill(s, a, 0);
        gpu.close_seq(s);
      });
      std::printf("%-40s %12s %10.3f   (relay import is %.1fx faster than recomputing)\n",
                  "recompute prefill (receiver)", "-", pre, pre / imp);
      gpu.close_seq(sa);
    }

    // ---- the synthetic Llama-3-8B-shaped bf16 cache ----------------------------------------------
    {
      const la::model_fingerprint fp{
          .architecture = "LlamaForCausalLM",
          .n_layers = 32,
          .n_heads = 32,
          .n_kv_heads = 8,
          .head_dim_k = 128,
          .head_dim_v = 128,
          .rope = {.pairing = la::rope_pairing::neox, .theta = 500000.0f, .rotary_dims = 0},
          .weights_hash = 1};
      const std::size_t L = 32, row_el = 8 * 128, es = 2, row_bytes = row_el * es,
                        cap = static_cast<std::size_t>(T) + 512;
      // the engine's cache: [layer][K|V][cap][kv_heads][head_dim] bf16, T tokens filled
      cd::device_buffer cache(2 * L * cap * row_bytes);
      la::cuda_kernels::fill_bf16(cache.get<std::uint16_t>(), static_cast<std::int64_t>(2 * L * cap * row_el),
                                  12345u);
      cd::check_launch("fill_bf16");
      la::device_kv_block blk;
      blk.fingerprint = fp;
      for (std::int32_t l = 0; l < 32; ++l) blk.layers.push_back(l);
      blk.n_tokens = T;
      blk.type = la::dtype::bf16;
      for (std::int64_t t = 0; t < T; ++t) blk.positions.push_back(static_cast<la::position_t>(t));
      blk.data.resize_discard(blk.payload_bytes());
      const std::size_t bytes = blk.payload_bytes(), tb = static_cast<std::size_t>(T) * row_bytes;
      std::printf(
          "\nsynthetic Llama-3-8B-shaped cache: %zu layers, 8 kv heads, head dim 128, %lld tokens, bf16: %zu "
          "bytes\n",
          L, static_cast<long long>(T), bytes);
      header();
      const double cpy = ref.ms(bytes);
      // export = cuda_engine::export_kv_device's copy (one 2-D copy over consecutive layers)
      row("export (cache -> block, D2D)", bytes, median_ms([&] {
            cd::check_cuda(cudaMemcpy2D(blk.data.get(), tb, cache.get(), cap * row_bytes, tb, 2 * L,
                                        cudaMemcpyDeviceToDevice),
                           "cudaMemcpy2D");
          }),
          cpy);
      // import = cuda_engine::import_kv_device's copies (one 2-D copy a layer, after the receiver's tokens)
      const std::size_t old_T = 256;
      row("import (block -> cache, D2D)", bytes, median_ms([&] {
            for (std::size_t l = 0; l < L; ++l)
              cd::check_cuda(
                  cudaMemcpy2D(cache.get<char>() + (2 * l * cap + old_T) * row_bytes, cap * row_bytes,
                               blk.data.get<char>() + l * 2 * tb, tb, tb, 2, cudaMemcpyDeviceToDevice),
                  "cudaMemcpy2D");
          }),
          cpy);
      {
        std::vector<std::byte> host(bytes);
        row("export to host (D2H, pageable)", bytes,
            median_ms([&] { cd::download(host.data(), blk.data.get(), bytes); }), cpy);
      }
      // noise and the int8 round trip work in place on a copy (repeated runs perturb it further)
      la::device_kv_block work = blk.converted(la::dtype::bf16);
      const la::noise_spec spec{.sigma = 0.1, .scale = la::noise_scale::rms_layer, .seed = 1, .item = 0};
      row("noise (rms_layer, bulk stream)", bytes, median_ms([&] { (void)la::device_add_noise(work, spec); }),
          cpy);
      row("int8 round trip (KIVI, g32)", bytes, median_ms([&] {
            la::device_quantize_roundtrip(
                work, {.scheme = la::quant_scheme::int8, .group_size = 32, .keys_per_channel = true});
          }),
          cpy);
      std::vector<std::int64_t> half_tokens;
      for (std::int64_t t = 0; t < T; t += 2) half_tokens.push_back(t);
      std::vector<la::layer_index> all_layers(blk.layers.begin(), blk.layers.end());
      row("gather (every other token, all layers)", bytes / 2,
          median_ms([&] { (void)la::device_gather(blk, all_layers, half_tokens); }), ref.ms(bytes / 2));
      row("bf16 -> f32 conversion (reads bytes)", bytes,
          median_ms([&] { (void)blk.converted(la::dtype::f32); }), cpy);
    }
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  return 0;
}
