// SPDX-License-Identifier: MIT
// latentaudit CUDA example: the kernels of the reference CUDA engine and of the transfer
// policy's hot paths (see cuda_kernels.hpp). Compiled with --fmad=false: the quantization round
// trip reproduces the CPU's binary64 arithmetic bit for bit, which a contracted multiply-add would
// break; the noise generator (cuda_noise_stream.hpp) spells every binary32 operation as an
// explicit correctly rounded intrinsic (__fmaf_rn where the CPU's bulk stream has an fma).
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "cuda_kernels.hpp"
#include "cuda_noise_stream.hpp"

namespace latentaudit::cuda_kernels {
namespace {

constexpr int threads = 256;

__host__ __device__ inline unsigned blocks_for(std::int64_t n, int t = threads) {
  return static_cast<unsigned>((n + t - 1) / t);
}

__device__ inline float load_elem(const void* base, std::int64_t i, bool bf16) {
  if (bf16)
    return __uint_as_float(static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(base)[i]) << 16);
  return static_cast<const float*>(base)[i];
}

__device__ inline std::uint16_t to_bf16_bits(float f) {
  const std::uint32_t b = __float_as_uint(f);
  return static_cast<std::uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

__device__ inline void store_elem(void* base, std::int64_t i, bool bf16, float f) {
  if (bf16)
    static_cast<std::uint16_t*>(base)[i] = to_bf16_bits(f);
  else
    static_cast<float*>(base)[i] = f;
}

template <class T>
__device__ T block_reduce(T v, T* shared, bool is_max) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    const T w = __shfl_down_sync(0xFFFFFFFFu, v, o);
    v = is_max ? (w > v ? w : v) : v + w;
  }
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    T r = shared[0];
    for (int i = 1; i < static_cast<int>((blockDim.x + 31) / 32); ++i)
      r = is_max ? (shared[i] > r ? shared[i] : r) : r + shared[i];
    shared[0] = r;
  }
  __syncthreads();
  const T r = shared[0];
  __syncthreads();
  return r;
}

__global__ void embed_kernel(const float* table, const std::int32_t* tokens, int n, int d, float* x) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<std::int64_t>(n) * d) return;
  const std::int64_t r = i / d, c = i % d;
  x[i] = table[static_cast<std::int64_t>(tokens[r]) * d + c];
}

__global__ void rms_norm_kernel(const float* x, const float* w, float* y, int d, float eps) {
  __shared__ float red[32];
  const float* xr = x + static_cast<std::int64_t>(blockIdx.x) * d;
  float s = 0;
  for (int c = threadIdx.x; c < d; c += blockDim.x) s += xr[c] * xr[c];
  s = block_reduce(s, red, false);
  const float inv = 1.0f / sqrtf(s / static_cast<float>(d) + eps);
  float* yr = y + static_cast<std::int64_t>(blockIdx.x) * d;
  for (int c = threadIdx.x; c < d; c += blockDim.x) yr[c] = xr[c] * inv * w[c];
}

__global__ void rope_kernel(float* x, const std::int32_t* rows, int n_rows, std::int64_t row_stride,
                            int heads, int hd, const double* cs, const double* sn, bool per_row) {
  const int half = hd / 2;
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<std::int64_t>(n_rows) * heads * half) return;
  const int f = static_cast<int>(i % half);
  const std::int64_t rh = i / half;
  const int h = static_cast<int>(rh % heads);
  const int r = static_cast<int>(rh / heads);
  const std::int64_t row = rows != nullptr ? rows[r] : r;
  float* v = x + row * row_stride + static_cast<std::int64_t>(h) * hd;
  const std::int64_t t = per_row ? static_cast<std::int64_t>(r) * half + f : f;
  const double c = cs[t], s = sn[t];
  const double x0 = v[f], x1 = v[f + half];
  v[f] = static_cast<float>(x0 * c - x1 * s);
  v[f + half] = static_cast<float>(x1 * c + x0 * s);
}

// one block per (query i, head h)
__global__ void attention_kernel(const float* q, const float* k, const float* v, const std::uint8_t* visible,
                                 int n, int old_T, int H, int Hkv, int hd, float scale, float* scores,
                                 float* out, float* capture) {
  __shared__ float redf[32];
  __shared__ double redd[32];
  extern __shared__ float qs[];
  const int i = static_cast<int>(blockIdx.x) / H, h = static_cast<int>(blockIdx.x) % H;
  const int T = old_T + n, upto = old_T + i + 1, g = h / (H / Hkv);
  const std::int64_t row = static_cast<std::int64_t>(Hkv) * hd;
  const float* qv = q + static_cast<std::int64_t>(i) * H * hd + static_cast<std::int64_t>(h) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) qs[d] = qv[d];
  __syncthreads();
  float* p = scores + (static_cast<std::int64_t>(i) * H + h) * T;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < upto; j += blockDim.x) {
    if (!visible[j]) {
      p[j] = -INFINITY;
      continue;
    }
    const float* kv = k + j * row + static_cast<std::int64_t>(g) * hd;
    float dot = 0;
    for (int d = 0; d < hd; ++d) dot += qs[d] * kv[d];
    p[j] = dot * scale;
    mx = p[j] > mx ? p[j] : mx;
  }
  mx = block_reduce(mx, redf, true);
  double sum = 0;
  for (int j = threadIdx.x; j < upto; j += blockDim.x) {
    p[j] = visible[j] ? expf(p[j] - mx) : 0.0f;
    sum += p[j];
  }
  sum = block_reduce(sum, redd, false);
  float* cap = capture != nullptr ? capture + (static_cast<std::int64_t>(h) * n + i) * T : nullptr;
  for (int j = threadIdx.x; j < upto; j += blockDim.x) {
    p[j] = static_cast<float>(static_cast<double>(p[j]) / sum);
    if (cap != nullptr) cap[j] = p[j];
  }
  __syncthreads();
  float* o = out + static_cast<std::int64_t>(i) * H * hd + static_cast<std::int64_t>(h) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0;
    for (int j = 0; j < upto; ++j) {
      const float pj = p[j];
      if (pj != 0.0f) acc += pj * v[j * row + static_cast<std::int64_t>(g) * hd + d];
    }
    o[d] = acc;
  }
}

// one warp an output element: grid (ceil(out / 8), n), 256 threads
__global__ void linear_bf16w_kernel(const float* x, const std::uint16_t* w, int out, int in, float* y,
                                    bool accumulate) {
  const int o = static_cast<int>(blockIdx.x) * 8 + static_cast<int>(threadIdx.x >> 5),
            lane = static_cast<int>(threadIdx.x & 31);
  const std::int64_t r = blockIdx.y;
  if (o >= out) return;
  const float* xr = x + r * in;
  const std::uint16_t* wr = w + static_cast<std::int64_t>(o) * in;
  float acc = 0;
  for (int k = lane; k < in; k += 32) acc += xr[k] * __uint_as_float(static_cast<std::uint32_t>(wr[k]) << 16);
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xFFFFFFFFu, acc, off);
  if (lane == 0) y[r * out + o] = accumulate ? y[r * out + o] + acc : acc;
}

__global__ void swiglu_kernel(float* gate, const float* up, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float x = gate[i];
  gate[i] = x / (1.0f + expf(-x)) * up[i];
}

// grid: (row chunks, units); each thread copies 4-byte words (16-byte when aligned)
__global__ void gather_kernel(char* dst, const char* src, const std::int32_t* src_rows, int n_rows,
                              std::int64_t row_bytes, const std::int32_t* unit_map,
                              std::int64_t src_unit_stride, std::int64_t dst_unit_stride, bool wide) {
  const int u = static_cast<int>(blockIdx.y);
  const char* s = src + static_cast<std::int64_t>(unit_map != nullptr ? unit_map[u] : u) * src_unit_stride;
  char* d = dst + static_cast<std::int64_t>(u) * dst_unit_stride;
  const std::int64_t word = wide ? 16 : 4;
  const std::int64_t words = row_bytes / word;
  const std::int64_t total = static_cast<std::int64_t>(n_rows) * words;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / words, w = i % words;
    const std::int64_t sr = src_rows != nullptr ? src_rows[r] : r;
    if (wide)
      reinterpret_cast<uint4*>(d + r * row_bytes)[w] = reinterpret_cast<const uint4*>(s + sr * row_bytes)[w];
    else
      reinterpret_cast<std::uint32_t*>(d + r * row_bytes)[w] =
          reinterpret_cast<const std::uint32_t*>(s + sr * row_bytes)[w];
  }
}

__global__ void f32_to_bf16_kernel(const float* x, std::uint16_t* y, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = to_bf16_bits(x[i]);
}

__global__ void bf16_to_f32_kernel(const std::uint16_t* x, float* y, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = __uint_as_float(static_cast<std::uint32_t>(x[i]) << 16);
}

__global__ void fill_bf16_kernel(std::uint16_t* y, std::int64_t n, std::uint32_t seed) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  std::uint32_t h = static_cast<std::uint32_t>(i) * 0x9E3779B1u ^ static_cast<std::uint32_t>(i >> 32) ^ seed;
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  y[i] = to_bf16_bits((static_cast<float>(h >> 8) * 0x1p-24f - 0.5f) * 3.0f);
}

// the binary32 partial of 64 rows: grid (channel blocks, row chunks, units); thread = channel
__global__ void channel_partials_kernel(unit_rows ur, int chunks, float* partial) {
  const int u = static_cast<int>(blockIdx.z), k = static_cast<int>(blockIdx.y);
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= ur.channels) return;
  const std::int64_t base = static_cast<std::int64_t>(ur.unit_index[u]) * ur.unit_stride;
  const int first = ur.row_offset[u] + 64 * k,
            last = ur.row_offset[u + 1] < first + 64 ? ur.row_offset[u + 1] : first + 64;
  float acc = 0;
  for (int i = first; i < last; ++i) {
    const float v =
        load_elem(ur.base, base + static_cast<std::int64_t>(ur.rows[i]) * ur.channels + c, ur.bf16);
    acc += v * v;
  }
  partial[(static_cast<std::int64_t>(u) * chunks + k) * ur.channels + c] = acc;
}

// the binary64 sums of the partials in row order (as add_noise flushes them): thread = (unit, channel)
__global__ void channel_flush_kernel(unit_rows ur, int chunks, const float* partial, double* ss) {
  const int u = static_cast<int>(blockIdx.y);
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= ur.channels) return;
  const int nr = ur.row_offset[u + 1] - ur.row_offset[u], used = (nr + 63) / 64;
  double s = 0;
  for (int k = 0; k < used; ++k)
    s += static_cast<double>(partial[(static_cast<std::int64_t>(u) * chunks + k) * ur.channels + c]);
  ss[static_cast<std::int64_t>(u) * ur.channels + c] = s;
}

// ---- noise: latentaudit::bulk_normal_batch (the stream of add_noise) -------------------------

// One block a 1024-deviate batch of a unit, one thread four consecutive stream elements (two
// Box-Muller pairs sharing their two SplitMix64 outputs; cuda_noise::apply_quad). Thread 0 derives
// the batch's seed (its Philox4x32-10 block) for the block. grid: (batches, units), 256 threads.
__global__ void noise_kernel(unit_rows ur, const float* sigma, std::uint32_t k0, std::uint32_t k1,
                             const std::uint32_t* part, const std::uint32_t* layer, double* noise_power) {
  __shared__ float red[32];
  __shared__ std::uint64_t seed;
  const int u = static_cast<int>(blockIdx.y);
  const std::uint64_t batch = blockIdx.x;
  const std::int64_t total = static_cast<std::int64_t>(ur.row_offset[u + 1] - ur.row_offset[u]) * ur.channels;
  if (static_cast<std::int64_t>(batch * 1024) >= total) return;  // the whole block: past this unit's rows
  if (threadIdx.x == 0) seed = cuda_noise::batch_seed(k0, k1, part[u], layer[u], batch);
  __syncthreads();
  float added2 = cuda_noise::apply_quad(ur, u, sigma, seed, batch * 256 + threadIdx.x);
  added2 = block_reduce(added2, red, false);
  if (threadIdx.x == 0 && added2 != 0.0f) atomicAdd(noise_power + u, static_cast<double>(added2));
}

// ---- int8/int4 quantization round trip --------------------------------------------------------

__device__ inline double code_of(double v, float zero, float scale, double levels) {
  double k = scale > 0 ? rint((v - static_cast<double>(zero)) / static_cast<double>(scale)) : 0.0;
  if (!(k >= 0.0)) k = 0.0;
  if (k > levels) k = levels;
  return k;
}

// one group a thread: element j of the group at base + first + j·stride
__device__ inline void quant_group(void* x, bool bf16, std::int64_t first, std::int64_t stride,
                                   const std::int32_t* rows, int m, std::int64_t row_elems, double levels) {
  auto at = [&](int j) {
    return rows != nullptr ? first + static_cast<std::int64_t>(rows[j]) * row_elems : first + j * stride;
  };
  double lo = load_elem(x, at(0), bf16), hi = lo;
  for (int j = 1; j < m; ++j) {
    const double v = load_elem(x, at(j), bf16);
    lo = v < lo ? v : lo;
    hi = hi < v ? v : hi;
  }
  const float zero = static_cast<float>(lo);
  const float scale = static_cast<float>((hi - static_cast<double>(zero)) / levels);
  for (int j = 0; j < m; ++j) {
    const double v = load_elem(x, at(j), bf16);
    const double k = code_of(v, zero, scale, levels);
    store_elem(x, at(j), bf16,
               static_cast<float>(static_cast<double>(zero) + k * static_cast<double>(scale)));
  }
}

// grid: (group chunks, units). Key units (per channel): groups = ceil(rows/G) × channels; the
// others: groups = rows × heads × ceil(hd/G)
__global__ void quant_kernel(unit_rows ur, const std::uint8_t* is_key, bool keys_per_channel, int G, int hd,
                             double levels) {
  const int u = static_cast<int>(blockIdx.y);
  const std::int64_t gi = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const int r0 = ur.row_offset[u], nr = ur.row_offset[u + 1] - r0;
  const std::int64_t base = static_cast<std::int64_t>(ur.unit_index[u]) * ur.unit_stride;
  const int C = ur.channels;
  if (is_key[u] != 0 && keys_per_channel) {
    const std::int64_t n_groups = static_cast<std::int64_t>((nr + G - 1) / G) * C;
    if (gi >= n_groups) return;
    const int c = static_cast<int>(gi % C), rb = static_cast<int>(gi / C) * G;
    const int m = nr - rb < G ? nr - rb : G;
    quant_group(ur.base, ur.bf16, base + c, 0, ur.rows + r0 + rb, m, C, levels);
  } else {
    const int per_head = (hd + G - 1) / G, heads = C / hd;
    const std::int64_t n_groups = static_cast<std::int64_t>(nr) * heads * per_head;
    if (gi >= n_groups) return;
    const int d0 = static_cast<int>(gi % per_head) * G;
    const int h = static_cast<int>(gi / per_head % heads);
    const int r = static_cast<int>(gi / per_head / heads);
    const int m = hd - d0 < G ? hd - d0 : G;
    quant_group(
        ur.base, ur.bf16,
        base + static_cast<std::int64_t>(ur.rows[r0 + r]) * C + static_cast<std::int64_t>(h) * hd + d0, 1,
        nullptr, m, C, levels);
  }
}

}  // namespace

void embed(const float* table, const std::int32_t* tokens, int n, int d, float* x) {
  embed_kernel<<<blocks_for(static_cast<std::int64_t>(n) * d), threads>>>(table, tokens, n, d, x);
}

void rms_norm(const float* x, const float* w, float* y, int rows, int d, float eps) {
  if (rows > 0) rms_norm_kernel<<<static_cast<unsigned>(rows), threads>>>(x, w, y, d, eps);
}

void rope(float* x, const std::int32_t* rows, int n_rows, std::int64_t row_stride, int heads, int hd,
          const double* cs, const double* sn, bool per_row_table) {
  const std::int64_t n = static_cast<std::int64_t>(n_rows) * heads * (hd / 2);
  if (n > 0)
    rope_kernel<<<blocks_for(n), threads>>>(x, rows, n_rows, row_stride, heads, hd, cs, sn, per_row_table);
}

void attention(const float* q, const float* k, const float* v, const std::uint8_t* visible, int n, int old_T,
               int H, int Hkv, int hd, float scale, float* scores, float* out, float* capture) {
  attention_kernel<<<static_cast<unsigned>(n * H), 128, static_cast<std::size_t>(hd) * sizeof(float)>>>(
      q, k, v, visible, n, old_T, H, Hkv, hd, scale, scores, out, capture);
}

void linear_bf16w(const float* x, int n, const std::uint16_t* w, int out, int in, float* y, bool accumulate) {
  if (n > 0 && out > 0)
    linear_bf16w_kernel<<<dim3(blocks_for(out, 8), static_cast<unsigned>(n)), 256>>>(x, w, out, in, y,
                                                                                     accumulate);
}

void swiglu(float* gate, const float* up, std::int64_t n) {
  if (n > 0) swiglu_kernel<<<blocks_for(n), threads>>>(gate, up, n);
}

void gather_rows(void* dst, const void* src, const std::int32_t* src_rows, int n_rows, std::int64_t row_bytes,
                 int units, const std::int32_t* unit_map, std::int64_t src_unit_stride,
                 std::int64_t dst_unit_stride) {
  if (n_rows <= 0 || units <= 0) return;
  const bool wide = row_bytes % 16 == 0 && src_unit_stride % 16 == 0 && dst_unit_stride % 16 == 0 &&
                    reinterpret_cast<std::uintptr_t>(dst) % 16 == 0 &&
                    reinterpret_cast<std::uintptr_t>(src) % 16 == 0;
  const std::int64_t words = static_cast<std::int64_t>(n_rows) * (row_bytes / (wide ? 16 : 4));
  const unsigned bx = blocks_for(words) < 65535u ? blocks_for(words) : 65535u;
  gather_kernel<<<dim3(bx, static_cast<unsigned>(units)), threads>>>(
      static_cast<char*>(dst), static_cast<const char*>(src), src_rows, n_rows, row_bytes, unit_map,
      src_unit_stride, dst_unit_stride, wide);
}

void f32_to_bf16(const float* x, std::uint16_t* y, std::int64_t n) {
  if (n > 0) f32_to_bf16_kernel<<<blocks_for(n), threads>>>(x, y, n);
}

void bf16_to_f32(const std::uint16_t* x, float* y, std::int64_t n) {
  if (n > 0) bf16_to_f32_kernel<<<blocks_for(n), threads>>>(x, y, n);
}

void fill_bf16(std::uint16_t* y, std::int64_t n, std::uint32_t seed) {
  if (n > 0) fill_bf16_kernel<<<blocks_for(n), threads>>>(y, n, seed);
}

int channel_sums_chunks(const unit_rows& ur) { return (ur.max_rows + 63) / 64; }

void channel_sums(const unit_rows& ur, double* ss, float* partial) {
  const int chunks = channel_sums_chunks(ur);
  if (ur.units <= 0) return;
  if (chunks > 0)
    channel_partials_kernel<<<dim3(blocks_for(ur.channels, 128), static_cast<unsigned>(chunks),
                                   static_cast<unsigned>(ur.units)),
                              128>>>(ur, chunks, partial);
  channel_flush_kernel<<<dim3(blocks_for(ur.channels, 128), static_cast<unsigned>(ur.units)), 128>>>(
      ur, chunks, partial, ss);
}

void add_noise(const unit_rows& ur, const float* sigma, std::uint32_t k0, std::uint32_t k1,
               const std::uint32_t* part, const std::uint32_t* layer, double* noise_power) {
  const std::int64_t n = static_cast<std::int64_t>(ur.max_rows) * ur.channels;
  if (ur.units <= 0 || n == 0) return;
  static_assert(threads == 256, "noise_kernel: one block of 256 threads a 1024-deviate batch");
  noise_kernel<<<dim3(static_cast<unsigned>((n + 1023) / 1024), static_cast<unsigned>(ur.units)), threads>>>(
      ur, sigma, k0, k1, part, layer, noise_power);
}

void quantize_roundtrip(const unit_rows& ur, const std::uint8_t* is_key, bool keys_per_channel, int group,
                        int head_dim, double levels) {
  if (ur.units <= 0 || ur.max_rows == 0) return;
  const std::int64_t per_key = static_cast<std::int64_t>((ur.max_rows + group - 1) / group) * ur.channels;
  const std::int64_t per_row =
      static_cast<std::int64_t>(ur.max_rows) * (ur.channels / head_dim) * ((head_dim + group - 1) / group);
  const std::int64_t n = per_key > per_row ? per_key : per_row;
  quant_kernel<<<dim3(blocks_for(n, 128), static_cast<unsigned>(ur.units)), 128>>>(
      ur, is_key, keys_per_channel, group, head_dim, levels);
}

}  // namespace latentaudit::cuda_kernels
