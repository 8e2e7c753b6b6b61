// SPDX-License-Identifier: MIT
// latentaudit: conversions between the canonical block and llama.cpp's per-sequence state blob
// (`llama_state_seq_get_data` / `llama_state_seq_set_data`), whose layout is described in
// docs/backends.md. llama.cpp K and V rows are token-major `[n_head_kv][head_dim]`, the same as
// the canonical block, so a conversion is a re-framing; V may be stored transposed (`v_trans`,
// flash attention off), which the parser accepts and the writer can produce.
//
// Element types: ggml's GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_BF16 = 30. Quantized
// ggml cache types (q8_0, q4_0, ...) are refused with a clear error. The blob is an internal,
// unversioned llama.cpp format: the parser validates every count against the fingerprint and the
// buffer size before allocating.
#ifndef LATENTAUDIT_KV_LLAMA_STATE_HPP
#define LATENTAUDIT_KV_LLAMA_STATE_HPP

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "kv_block.hpp"

namespace latentaudit {

/// @brief ggml type id of a cache dtype (F32 0, F16 1, BF16 30).
[[nodiscard]] constexpr std::int32_t ggml_type_of(dtype t) noexcept {
  return t == dtype::f32 ? 0 : t == dtype::f16 ? 1 : 30;
}

/// @brief Options of to_llama_seq_state.
struct llama_state_options {
  std::int32_t seq_id = 0;  ///< the seq id written in each cell's metadata (ignored by set_data)
  bool v_trans = false;     ///< write V transposed (llama.cpp with flash attention off)
};

/// @brief Serialises a block holding every layer of its model as a llama.cpp sequence-state blob
/// (one stream). Token-masked blocks cannot be expressed (llama.cpp cells hold every layer).
/// @throws invalid_argument if the block lacks layers or has a token mask.
[[nodiscard]] inline std::vector<std::byte> to_llama_seq_state(const kv_block& b,
                                                               const llama_state_options& o = {}) {
  constexpr std::string_view fn = "to_llama_seq_state";
  if (static_cast<std::int32_t>(b.n_layers()) != b.fingerprint().n_layers)
    detail::throw_invalid(fn, "block", "must hold every layer of its model (llama.cpp blobs are full-layer)");
  if (b.has_token_mask())
    detail::throw_invalid(fn, "block", "must not carry a token mask (llama.cpp cells hold every layer)");
  std::vector<std::byte> out;
  auto put = [&](auto v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof(v));
  };
  const auto T = static_cast<std::uint32_t>(b.n_tokens());
  put(std::uint32_t{1});
  put(T);
  if (T == 0) return out;
  for (std::uint32_t t = 0; t < T; ++t) {
    put(static_cast<std::int32_t>(b.positions()[t]));
    put(std::uint32_t{1});
    put(o.seq_id);
  }
  put(static_cast<std::uint32_t>(o.v_trans ? 1 : 0));
  put(static_cast<std::uint32_t>(b.n_layers()));
  const std::size_t es = dtype_size(b.type());
  const std::size_t H = static_cast<std::size_t>(b.n_kv_heads());
  const auto payload = b.payload();
  const std::size_t krow = H * static_cast<std::size_t>(b.head_dim_k()) * es,
                    vrow = H * static_cast<std::size_t>(b.head_dim_v()) * es;
  for (std::size_t i = 0; i < b.n_layers(); ++i) {
    put(ggml_type_of(b.type()));
    put(static_cast<std::uint64_t>(krow));
    const std::size_t base = i * T * (krow + vrow);
    out.insert(out.end(), payload.begin() + static_cast<std::ptrdiff_t>(base),
               payload.begin() + static_cast<std::ptrdiff_t>(base + T * krow));
  }
  for (std::size_t i = 0; i < b.n_layers(); ++i) {
    const std::size_t vbase = i * T * (krow + vrow) + T * krow;
    put(ggml_type_of(b.type()));
    if (!o.v_trans) {
      put(static_cast<std::uint64_t>(vrow));
      out.insert(out.end(), payload.begin() + static_cast<std::ptrdiff_t>(vbase),
                 payload.begin() + static_cast<std::ptrdiff_t>(vbase + T * vrow));
    } else {
      const std::size_t channels = vrow / es;
      put(static_cast<std::uint32_t>(es));
      put(static_cast<std::uint32_t>(channels));
      for (std::size_t j = 0; j < channels; ++j)
        for (std::size_t t = 0; t < T; ++t) {
          const auto* src = payload.data() + vbase + t * vrow + j * es;
          out.insert(out.end(), src, src + es);
        }
    }
  }
  return out;
}

/// @brief Parses a llama.cpp sequence-state blob into a block of the model `fingerprint`
/// (every layer; cells of all streams, in order). Positions are taken from the cells.
/// @throws corrupt_data on any count that disagrees with the fingerprint or the buffer, or a
///         quantized ggml type; incompatible_model if row sizes do not match the fingerprint.
[[nodiscard]] inline kv_block from_llama_seq_state(std::span<const std::byte> blob,
                                                   const model_fingerprint& fingerprint) {
  constexpr std::string_view fn = "from_llama_seq_state";
  check_fingerprint_valid(fn, fingerprint);
  std::size_t pos = 0;
  auto fail = [&](const std::string& what) {
    LATENTAUDIT_THROW(corrupt_data(std::string(fn) + ": " + what + " (at byte " + std::to_string(pos) + ")"));
  };
  auto get = [&](auto& v, const char* what) {
    if (blob.size() - pos < sizeof(v)) fail(std::string("truncated while reading ") + what);
    std::memcpy(&v, blob.data() + pos, sizeof(v));
    pos += sizeof(v);
  };
  std::uint32_t n_stream = 0;
  get(n_stream, "n_stream");
  if (n_stream == 0 || n_stream > 4096) fail("n_stream " + std::to_string(n_stream) + " is not in [1, 4096]");
  struct stream_view {
    std::uint32_t cells;
    std::vector<position_t> pos;
    std::size_t data;
    bool v_trans;
  };
  std::vector<stream_view> streams;
  std::uint64_t total = 0;
  const std::size_t H = static_cast<std::size_t>(fingerprint.n_kv_heads);
  dtype type = dtype::f32;
  bool type_known = false;
  for (std::uint32_t s = 0; s < n_stream; ++s) {
    stream_view sv{};
    get(sv.cells, "cell_count");
    if (sv.cells == 0) continue;
    // each cell needs at least 12 bytes of metadata: bound the count by the buffer before allocating
    if (sv.cells > (blob.size() - pos) / 12)
      fail("cell_count " + std::to_string(sv.cells) + " exceeds the blob");
    sv.pos.resize(sv.cells);
    for (auto& p : sv.pos) {
      std::int32_t ps;
      std::uint32_t n_seq;
      get(ps, "pos");
      get(n_seq, "n_seq_id");
      if (n_seq != 1) fail("a cell belongs to " + std::to_string(n_seq) + " sequences, expected 1");
      std::int32_t sid;
      get(sid, "seq_id");
      p = ps;
    }
    std::uint32_t vt, n_layer;
    get(vt, "v_trans");
    get(n_layer, "n_layer");
    if (vt > 1) fail("v_trans " + std::to_string(vt) + " is not 0 or 1");
    if (static_cast<std::int32_t>(n_layer) != fingerprint.n_layers)
      LATENTAUDIT_THROW(incompatible_model(std::string(fn) + ": blob has " + std::to_string(n_layer) +
                                           " layers, the model " + std::to_string(fingerprint.n_layers)));
    sv.v_trans = vt == 1;
    sv.data = pos;
    // walk the layer sections to validate sizes and find the end of the stream
    for (int part = 0; part < 2; ++part)
      for (std::uint32_t l = 0; l < n_layer; ++l) {
        std::int32_t gt;
        get(gt, "ggml type");
        if (gt != 0 && gt != 1 && gt != 30)
          fail("ggml type " + std::to_string(gt) +
               " is not F32, F16 or BF16 (quantized caches are not supported)");
        const dtype t = gt == 0 ? dtype::f32 : gt == 1 ? dtype::f16 : dtype::bf16;
        if (!type_known) {
          type = t;
          type_known = true;
        }
        if (t != type) fail("layers use different element types");
        const std::size_t es = dtype_size(t);
        const std::size_t hd =
            static_cast<std::size_t>(part == 0 ? fingerprint.head_dim_k : fingerprint.head_dim_v);
        if (part == 1 && sv.v_trans) {
          std::uint32_t eb, nembd;
          get(eb, "v_elem_bytes");
          get(nembd, "n_embd_v_gqa");
          if (eb != es || nembd != H * hd)
            LATENTAUDIT_THROW(
                incompatible_model(std::string(fn) + ": transposed V shape does not match the model"));
        } else {
          std::uint64_t rb;
          get(rb, "row bytes");
          if (rb != H * hd * es)
            LATENTAUDIT_THROW(incompatible_model(std::string(fn) + ": row of " + std::to_string(rb) +
                                                 " bytes, the model's is " + std::to_string(H * hd * es)));
        }
        const std::uint64_t bytes = static_cast<std::uint64_t>(sv.cells) * H * hd * es;
        if (blob.size() - pos < bytes) fail("truncated layer data");
        pos += bytes;
      }
    total += sv.cells;
    streams.push_back(std::move(sv));
  }
  if (pos != blob.size()) fail(std::to_string(blob.size() - pos) + " trailing bytes");
  kv_block out = kv_block::all_layers(fingerprint, static_cast<std::int64_t>(total), type);
  const std::size_t es = dtype_size(type);
  const std::size_t krow = H * static_cast<std::size_t>(fingerprint.head_dim_k) * es,
                    vrow = H * static_cast<std::size_t>(fingerprint.head_dim_v) * es;
  auto dst = out.payload_mut();
  const std::size_t T = static_cast<std::size_t>(total);
  std::size_t first = 0;
  for (const auto& sv : streams) {
    for (std::size_t c = 0; c < sv.cells; ++c) out.positions()[first + c] = sv.pos[c];
    std::size_t p = sv.data;
    for (int part = 0; part < 2; ++part)
      for (std::size_t l = 0; l < out.n_layers(); ++l) {
        const std::size_t row = part == 0 ? krow : vrow;
        const std::size_t base = l * T * (krow + vrow) + (part == 0 ? 0 : T * krow);
        p += 4;  // type
        if (part == 1 && sv.v_trans) {
          p += 8;
          const std::size_t channels = row / es;
          for (std::size_t j = 0; j < channels; ++j)
            for (std::size_t c = 0; c < sv.cells; ++c, p += es)
              std::memcpy(dst.data() + base + (first + c) * row + j * es, blob.data() + p, es);
        } else {
          p += 8;
          std::memcpy(dst.data() + base + first * row, blob.data() + p, sv.cells * row);
          p += sv.cells * row;
        }
      }
    first += sv.cells;
  }
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_LLAMA_STATE_HPP
