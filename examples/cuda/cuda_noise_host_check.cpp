// SPDX-License-Identifier: MIT
// The CUDA noise kernel's arithmetic, run on the host: cuda_noise_stream.hpp (the functions the
// device code of cuda_kernels.cu calls) compiled by the host compiler, checked bit for bit against
// the library. (1) batch seeds and all 1024 deviates of bulk batches against
// latentaudit::bulk_normal_batch on each of its kernels (AVX-512, AVX2+FMA, portable, as far as
// this CPU has them); (2) an emulation of the noise kernel's grid (one apply_quad a thread, the
// seed of each block's batch) against latentaudit::add_noise on f32 and bf16 blocks, with and
// without a token mask, rows of 256 channels (the CPU's fused AVX-512 bf16 path) and of 40 (not a
// multiple of 32). Needs no GPU and no CUDA toolkit. It does not check the device's own rounding:
// that the device computes what these host functions compute rests on the intrinsics being
// correctly rounded (IEEE 754 binary32) — device_check.sh's cuda_conformance checks that on a GPU.
// Prints one line a check; exits 1 if any fails.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <latentaudit/core/rng.hpp>
#include <latentaudit/kv/noise.hpp>

#include "cuda_noise_stream.hpp"

namespace la = latentaudit;
namespace cn = latentaudit::cuda_noise;

namespace {

int failures = 0;

void report(const std::string& name, bool ok, const std::string& detail = "") {
  std::printf("%-52s %s%s%s\n", name.c_str(), ok ? "PASS" : "FAIL", detail.empty() ? "" : "  ",
              detail.c_str());
  if (!ok) ++failures;
}

struct cpu_mode {
  const char* name;
  bool portable, avx2;
};
constexpr cpu_mode modes[] = {{"dispatch", false, false}, {"avx2", false, true}, {"portable", true, false}};

void set_mode(const cpu_mode& m) {
  la::detail::force_portable_normals = m.portable;
  la::detail::force_avx2_normals = m.avx2;
}

// (1) the stream: seeds and deviates of whole batches
void check_stream(const cpu_mode& m) {
  set_mode(m);
  std::uint64_t mismatches = 0, seed_mismatches = 0, compared = 0;
  for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{20260101}, ~std::uint64_t{0}})
    for (std::uint64_t item : {std::uint64_t{0}, std::uint64_t{3}})
      for (std::uint32_t part : {0u, 1u})
        for (std::uint32_t layer : {0u, 5u, 31u}) {
          const auto g = la::make_stream({.seed = seed, .item = item, .arm = part, .replicate = layer});
          const auto key = g.key();
          for (std::uint64_t batch :
               {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{37}, (std::uint64_t{1} << 32) + 3}) {
            alignas(64) std::array<float, la::bulk_normal_batch_size> want;
            la::bulk_normal_batch(g, batch, want);
            const std::uint64_t s = cn::batch_seed(key[0], key[1], part, layer, batch);
            seed_mismatches += s != la::detail::bulk_batch_seed(g, batch);
            for (unsigned q = 0; q < 256; ++q) {
              float z[4];
              cn::quad(s, q, z);
              for (unsigned j = 0; j < 4; ++j, ++compared)
                mismatches += std::memcmp(&z[j], &want[4 * q + j], 4) != 0;
            }
          }
        }
  report(std::string("stream: batch seeds == bulk_batch_seed (") + m.name + ")", seed_mismatches == 0,
         std::to_string(seed_mismatches) + " mismatches");
  report(std::string("stream: deviates == bulk_normal_batch (") + m.name + ")", mismatches == 0,
         std::to_string(mismatches) + " of " + std::to_string(compared) + " differ");
}

la::kv_block block_of(la::dtype type, bool masked, int kv_heads, int head_dim) {
  const la::model_fingerprint fp{
      .architecture = "Synthetic",
      .n_layers = 5,
      .n_heads = 2 * kv_heads,
      .n_kv_heads = kv_heads,
      .head_dim_k = head_dim,
      .head_dim_v = head_dim,
      .rope = {.pairing = la::rope_pairing::neox, .theta = 10000.0f, .rotary_dims = 0},
      .weights_hash = 7};
  la::kv_block f(fp, {0, 2, 3, 4}, 301, la::dtype::f32);
  auto g = la::make_stream({.seed = 20260101});
  for (std::size_t i = 0; i < f.n_layers(); ++i) {
    auto k = f.k<float>(i), v = f.v<float>(i);
    for (std::size_t e = 0; e < k.size(); ++e) {
      k[e] = static_cast<float>((1.0 + static_cast<double>(e % 64) * 0.25) * la::standard_normal(g));
      v[e] = static_cast<float>(la::standard_normal(g));
    }
  }
  if (masked) {
    std::vector<std::uint8_t> mask(f.n_layers() * 301, 1);
    for (std::size_t t = 0; t < 301; t += 7) mask[1 * 301 + t] = 0;
    for (std::size_t t = 100; t < 180; ++t) mask[3 * 301 + t] = 0;
    f.set_token_mask(mask);
  }
  return type == la::dtype::f32 ? f : f.converted(type);
}

// The noise kernel's grid on the host, for an absolute σ: per (layer, part) unit, the present rows
// of the token band; thread (batch, t) runs apply_quad on quad 256·batch + t with its batch's seed.
void emulate_add_noise(la::kv_block& b, const la::noise_spec& spec) {
  const auto key = la::make_stream({.seed = spec.seed, .item = spec.item}).key();
  const std::int64_t t0 = std::max<std::int64_t>(0, spec.tokens.first),
                     t1 = std::min(b.n_tokens(), spec.tokens.last);
  const int C = b.n_kv_heads() * b.head_dim_k();
  const std::vector<float> sigma(static_cast<std::size_t>(C), static_cast<float>(spec.sigma));
  for (std::size_t i = 0; i < b.n_layers(); ++i) {
    if (!spec.layers.contains(b.layers()[i])) continue;
    for (std::uint32_t part : {0u, 1u}) {
      if ((part == 0 && spec.part == la::kv_part::values) || (part == 1 && spec.part == la::kv_part::keys))
        continue;
      std::vector<std::int32_t> rows;
      for (std::int64_t t = t0; t < t1; ++t)
        if (b.token_present(i, t)) rows.push_back(static_cast<std::int32_t>(t));
      const std::int32_t offsets[2] = {0, static_cast<std::int32_t>(rows.size())}, unit_index = 0;
      la::cuda_kernels::unit_rows ur;
      ur.bf16 = b.type() == la::dtype::bf16;
      ur.base =
          ur.bf16 ? static_cast<void*>((part == 0 ? b.k<Eigen::bfloat16>(i) : b.v<Eigen::bfloat16>(i)).data())
                  : static_cast<void*>((part == 0 ? b.k<float>(i) : b.v<float>(i)).data());
      ur.units = 1;
      ur.unit_index = &unit_index;
      ur.channels = C;
      ur.row_offset = offsets;
      ur.rows = rows.data();
      ur.max_rows = offsets[1];
      const std::uint64_t n = static_cast<std::uint64_t>(rows.size()) * static_cast<std::uint64_t>(C);
      const auto layer = static_cast<std::uint32_t>(b.layers()[i]);
      for (std::uint64_t batch = 0; batch < (n + 1023) / 1024; ++batch) {
        const std::uint64_t s = cn::batch_seed(key[0], key[1], part, layer, batch);
        for (std::uint64_t t = 0; t < 256; ++t) (void)cn::apply_quad(ur, 0, sigma.data(), s, 256 * batch + t);
      }
    }
  }
}

void check_add_noise(const cpu_mode& m) {
  set_mode(m);
  for (auto type : {la::dtype::f32, la::dtype::bf16})
    for (bool masked : {false, true})
      for (int hd : {64, 10}) {
        const auto host = block_of(type, masked, 4, hd);
        for (const auto& spec : {la::noise_spec{.sigma = 0.3,
                                .scale = la::noise_scale::absolute,
                                .layers = {2, 5},
                                .tokens = {4, 290},
                                .seed = 20260101,
                                .item = 3},
                                 la::noise_spec{.sigma = 0.5,
                                 .scale = la::noise_scale::absolute,
                                 .part = la::kv_part::values,
                                 .seed = 9,
                                 .item = 1}}) {
          auto want = host, got = host;
          (void)la::add_noise(want, spec);
          emulate_add_noise(got, spec);
          const bool same =
              std::memcmp(want.payload().data(), got.payload().data(), want.payload_bytes()) == 0;
          const bool changed =
              std::memcmp(want.payload().data(), host.payload().data(), want.payload_bytes()) != 0;
          report(std::string("add_noise: kernel emulation == CPU (") + std::string(la::dtype_name(type)) +
                     (masked ? ", masked" : "") + ", C " + std::to_string(4 * hd) + ", " +
                     (spec.part == la::kv_part::values ? "V" : "K+V") + ", " + m.name + ")",
                 same && changed);
        }
      }
}

}  // namespace

int main() {
  for (const auto& m : modes) check_stream(m);
  for (const auto& m : modes) check_add_noise(m);
  set_mode({"dispatch", false, false});
  std::printf("%s\n", failures == 0 ? "all passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
