// SPDX-License-Identifier: MIT
// latentaudit: conversions between the canonical block and llama.cpp's per-sequence state, in its
// two framings (docs/engines.md "llama.cpp", checked against llama.cpp v0.5.0's own blobs):
//  - the in-memory blob of `llama_state_seq_get_data` / `llama_state_seq_set_data`: u32 magic
//    0xaf143cd8, i32 source seq id, then the cache layout (to_llama_seq_state /
//    from_llama_seq_state);
//  - the file of `llama_state_seq_save_file` / `llama_state_seq_load_file`: u32 magic 'ggsq'
//    (0x67677371), u32 version 3, u32 n_tokens, n_tokens × i32 token ids, then the same cache
//    layout with no magic or seq id (to_llama_seq_state_file / from_llama_seq_state_file).
// The cache layout is llama_kv_cache::state_write's: u32 n_stream, then per stream u32 cell_count
// and, when non-zero, the cells' metadata and every layer's K rows then V (token-major, or
// channel-major when V is transposed: `v_trans`, llama.cpp's layout with flash attention off).
// llama.cpp K and V rows are token-major `[n_head_kv][head_dim]`, the same as the canonical block,
// so a conversion is a re-framing. llama.cpp's keys of a Llama GGUF use the NORM pairing (see
// convert_pairing in rope.hpp).
//
// Element types: ggml's GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_BF16 = 30. Quantized
// ggml cache types (q8_0, q4_0, ...) are refused with a clear error. The layout is an internal,
// unversioned llama.cpp format (the file has a version, the blob none): the parsers validate the
// framing, every count against the fingerprint and the buffer size before allocating.
#ifndef LATENTAUDIT_KV_LLAMA_STATE_HPP
#define LATENTAUDIT_KV_LLAMA_STATE_HPP

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "kv_block.hpp"

namespace latentaudit {

/// @brief ggml type id of a cache dtype (F32 0, F16 1, BF16 30).
[[nodiscard]] constexpr std::int32_t ggml_type_of(dtype t) noexcept {
  return t == dtype::f32 ? 0 : t == dtype::f16 ? 1 : 30;
}

/// @brief First word of a `llama_state_seq_get_data` blob (llama_context's `io_magic`).
inline constexpr std::uint32_t llama_seq_state_magic = 0xaf143cd8u;
/// @brief First word of a `llama_state_seq_save_file` file (LLAMA_STATE_SEQ_MAGIC, 'ggsq').
inline constexpr std::uint32_t llama_seq_file_magic = 0x67677371u;
/// @brief The state-file version these functions read and write (LLAMA_STATE_SEQ_VERSION).
inline constexpr std::uint32_t llama_seq_file_version = 3;

/// @brief Options of to_llama_seq_state and to_llama_seq_state_file.
struct llama_state_options {
  /// The source seq id written in the blob header and in each cell's metadata (set_data restores
  /// into the sequence it is given and ignores both).
  std::int32_t seq_id = 0;
  bool v_trans = false;  ///< write V transposed (llama.cpp's layout with flash attention off)
  /// Streams of the receiving context's cache: its n_seq_max, or 1 with kv_unified (set_data
  /// refuses another count). The cells are written in the first stream, the others are empty.
  std::uint32_t n_stream = 1;
};

/// @brief A parsed `llama_state_seq_save_file` file.
struct llama_seq_state_file {
  kv_block block;                    ///< the cached rows, in cell order
  std::vector<std::int32_t> tokens;  ///< the token ids saved with them
};

namespace detail {

// The cache layout (llama_kv_cache::state_write) of a full-layer block, appended to `out`.
inline void write_llama_cache_layout(std::vector<std::byte>& out, const kv_block& b,
                                     const llama_state_options& o, std::string_view fn) {
  if (static_cast<std::int32_t>(b.n_layers()) != b.fingerprint().n_layers)
    detail::throw_invalid(fn, "block", "must hold every layer of its model (llama.cpp blobs are full-layer)");
  if (b.has_token_mask())
    detail::throw_invalid(fn, "block", "must not carry a token mask (llama.cpp cells hold every layer)");
  if (o.n_stream == 0 || o.n_stream > 4096) detail::throw_invalid(fn, "n_stream", "must be in [1, 4096]");
  auto put = [&](auto v) {
    const std::size_t at = out.size();
    out.resize(at + sizeof(v));
    std::memcpy(out.data() + at, &v, sizeof(v));
  };
  // llama reads the streams in order: the cells and their data go in stream 0, the others are empty
  const auto T = static_cast<std::uint32_t>(b.n_tokens());
  put(o.n_stream);
  put(T);
  if (T == 0) {
    for (std::uint32_t s = 1; s < o.n_stream; ++s) put(std::uint32_t{0});
    return;
  }
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
      const std::size_t at = out.size();
      out.resize(at + channels * T * es);
      std::byte* dst = out.data() + at;
      for (std::size_t j = 0; j < channels; ++j)
        for (std::size_t t = 0; t < T; ++t, dst += es)
          std::memcpy(dst, payload.data() + vbase + t * vrow + j * es, es);
    }
  }
  for (std::uint32_t s = 1; s < o.n_stream; ++s) put(std::uint32_t{0});
}

// Parses the cache layout starting at `pos` (which must end exactly at the end of `blob`).
inline kv_block parse_llama_cache_layout(std::span<const std::byte> blob, std::size_t pos,
                                         const model_fingerprint& fingerprint, std::string_view fn) {
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

}  // namespace detail

/// @brief Serialises a block holding every layer of its model as the blob
/// `llama_state_seq_set_data` reads (the 8-byte header, then the cache layout).
/// @throws invalid_argument if the block lacks layers or has a token mask, or n_stream is not in [1, 4096].
[[nodiscard]] inline std::vector<std::byte> to_llama_seq_state(const kv_block& b,
                                                               const llama_state_options& o = {}) {
  std::vector<std::byte> out(8);
  std::memcpy(out.data(), &llama_seq_state_magic, 4);
  std::memcpy(out.data() + 4, &o.seq_id, 4);
  detail::write_llama_cache_layout(out, b, o, "to_llama_seq_state");
  return out;
}

/// @brief Serialises a block and its token ids as the file `llama_state_seq_load_file` reads.
///
/// @code
/// const std::vector<std::int32_t> tokens{0, 5, 9};
/// const auto file = to_llama_seq_state_file(b, tokens, {.v_trans = vt, .n_stream = streams});
/// const auto parsed = from_llama_seq_state_file(file, b.fingerprint());  // parsed.block == b
/// @endcode
/// @throws invalid_argument as to_llama_seq_state.
[[nodiscard]] inline std::vector<std::byte> to_llama_seq_state_file(const kv_block& b,
                                                                    std::span<const std::int32_t> tokens,
                                                                    const llama_state_options& o = {}) {
  std::vector<std::byte> out(12 + tokens.size() * 4);
  const auto n = static_cast<std::uint32_t>(tokens.size());
  std::memcpy(out.data(), &llama_seq_file_magic, 4);
  std::memcpy(out.data() + 4, &llama_seq_file_version, 4);
  std::memcpy(out.data() + 8, &n, 4);
  if (!tokens.empty()) std::memcpy(out.data() + 12, tokens.data(), tokens.size() * 4);
  detail::write_llama_cache_layout(out, b, o, "to_llama_seq_state_file");
  return out;
}

/// @brief Parses a `llama_state_seq_get_data` blob into a block of the model `fingerprint`
/// (every layer; cells of all streams, in order). Positions are taken from the cells.
/// @throws corrupt_data on a missing magic (naming a state file or a bare cache layout when it is
///         one), any count that disagrees with the fingerprint or the buffer, or a quantized ggml
///         type; incompatible_model if layer count or row sizes do not match the fingerprint.
[[nodiscard]] inline kv_block from_llama_seq_state(std::span<const std::byte> blob,
                                                   const model_fingerprint& fingerprint) {
  constexpr std::string_view fn = "from_llama_seq_state";
  check_fingerprint_valid(fn, fingerprint);
  if (blob.size() < 8)
    LATENTAUDIT_THROW(corrupt_data(std::string(fn) + ": blob of " + std::to_string(blob.size()) +
                                   " bytes is shorter than its 8-byte header"));
  std::uint32_t magic;
  std::memcpy(&magic, blob.data(), 4);
  if (magic != llama_seq_state_magic) {
    std::string what =
        std::string(fn) + ": no sequence-state magic 0xaf143cd8 (llama_state_seq_get_data's header)";
    if (magic == llama_seq_file_magic)
      what += ": this is a llama_state_seq_save_file file (from_llama_seq_state_file reads those)";
    else if (magic >= 1 && magic <= 4096)
      what += ": it looks like a cache layout without the header";
    LATENTAUDIT_THROW(corrupt_data(what));
  }
  return detail::parse_llama_cache_layout(blob, 8, fingerprint, fn);
}

/// @brief Parses a `llama_state_seq_save_file` file (its bytes) into the block and the token ids
/// (the example of to_llama_seq_state_file).
/// @throws corrupt_data on another magic or version, a token count beyond the file, and as
///         from_llama_seq_state on the cache layout; incompatible_model as from_llama_seq_state.
[[nodiscard]] inline llama_seq_state_file from_llama_seq_state_file(std::span<const std::byte> bytes,
                                                                    const model_fingerprint& fingerprint) {
  constexpr std::string_view fn = "from_llama_seq_state_file";
  check_fingerprint_valid(fn, fingerprint);
  if (bytes.size() < 12)
    LATENTAUDIT_THROW(corrupt_data(std::string(fn) + ": file of " + std::to_string(bytes.size()) +
                                   " bytes is shorter than its 12-byte header"));
  std::uint32_t magic, version, n;
  std::memcpy(&magic, bytes.data(), 4);
  std::memcpy(&version, bytes.data() + 4, 4);
  std::memcpy(&n, bytes.data() + 8, 4);
  if (magic != llama_seq_file_magic) {
    std::string what = std::string(fn) + ": no state-file magic 'ggsq'";
    if (magic == llama_seq_state_magic)
      what += ": this is a llama_state_seq_get_data blob (from_llama_seq_state reads those)";
    LATENTAUDIT_THROW(corrupt_data(what));
  }
  if (version != llama_seq_file_version)
    LATENTAUDIT_THROW(corrupt_data(std::string(fn) + ": state-file version " + std::to_string(version) +
                                   ", expected " + std::to_string(llama_seq_file_version)));
  if (n > (bytes.size() - 12) / 4)
    LATENTAUDIT_THROW(corrupt_data(std::string(fn) + ": " + std::to_string(n) + " tokens exceed the file"));
  llama_seq_state_file f{kv_block{}, std::vector<std::int32_t>(n)};
  if (n != 0) std::memcpy(f.tokens.data(), bytes.data() + 12, std::size_t{n} * 4);
  f.block = detail::parse_llama_cache_layout(bytes, 12 + std::size_t{n} * 4, fingerprint, fn);
  return f;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_LLAMA_STATE_HPP
