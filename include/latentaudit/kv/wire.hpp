// SPDX-License-Identifier: MIT
// latentaudit: the relay wire format — one framing for KV caches and text, so text and KV bytes
// are counted on the same wire. Spec: docs/wire-format.md.
//
//   offset  size  field
//   0       4     magic "LARL"
//   4       2     version (1)
//   6       1     kind: 1 = KV block, 2 = text as token ids, 3 = text as UTF-8
//   7       1     flags: bit 0 = an HMAC-SHA256 tag follows the CRC; other bits must be 0
//   8       4     header length H (kind-specific header)
//   12      8     payload length P
//   20      H     header
//   20+H    P     payload
//   20+H+P  4     CRC32C of bytes [0, 20+H+P)
//   24+H+P  32    HMAC-SHA256 of bytes [0, 24+H+P) under the caller's key (if flag bit 0)
//
// All integers little-endian. The decoder validates every header field against limits, and the
// payload length against the size the header implies, before allocating anything.
#ifndef LATENTAUDIT_KV_WIRE_HPP
#define LATENTAUDIT_KV_WIRE_HPP

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <istream>
#include <limits>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/hash.hpp"
#include "kv_block.hpp"
#include "quantize.hpp"

namespace latentaudit {

static_assert(std::endian::native == std::endian::little,
              "latentaudit's wire format code assumes a little-endian host");

/// @brief What a relay carries.
enum class relay_kind : std::uint8_t {
  kv = 1,           ///< a kv_block
  text_tokens = 2,  ///< text as token ids (int32)
  text_utf8 = 3,    ///< text as UTF-8 bytes
};

/// @brief A text relay: either token ids or UTF-8 text.
struct text_relay {
  bool as_tokens = true;         ///< token ids (true) or UTF-8 (false)
  std::vector<token_id> tokens;  ///< when as_tokens
  std::string utf8;              ///< when !as_tokens
  /// @brief Equality of kind and content.
  friend bool operator==(const text_relay&, const text_relay&) = default;
};

/// @brief Limits the decoder enforces before allocating anything a header claims.
struct wire_limits {
  std::uint32_t max_header_bytes = 1u << 20;     ///< kind-specific header
  std::uint64_t max_payload_bytes = 1ull << 36;  ///< 64 GiB
  std::int64_t max_tokens = 1ll << 24;           ///< tokens in a KV block or a token relay
  std::int32_t max_layers = 4096;                ///< model layers
  std::int32_t max_heads = 4096;                 ///< query or KV heads
  std::int32_t max_head_dim = 4096;              ///< head dimension
};

/// @brief Options of the encoder.
struct wire_encode_options {
  std::span<const std::byte> hmac_key{};    ///< when non-empty, append an HMAC-SHA256 tag
  std::optional<quantize_spec> quantize{};  ///< carry K and V quantized (codes, scales, zero points)
};

/// @brief Options of the decoder.
struct wire_decode_options {
  std::span<const std::byte> hmac_key{};                    ///< key to verify a tag with
  bool require_authentication = false;                      ///< refuse relays without a valid tag
  const model_fingerprint* expected_fingerprint = nullptr;  ///< refuse KV from another model
  wire_limits limits{};                                     ///< allocation limits
};

/// @brief A decoded relay.
struct decoded_relay {
  relay_kind kind = relay_kind::kv;  ///< what it carries
  kv_block kv;                       ///< the block (kind kv)
  text_relay text;                   ///< the text (kinds text_*)
  bool has_tag = false;              ///< whether an HMAC tag was present
  bool authenticated = false;        ///< whether the tag was verified under the caller's key
  std::optional<quantize_spec>
      quantization;              ///< the relay's quantization (the block holds the dequantized values)
  std::uint32_t crc = 0;         ///< the (verified) CRC32C
  std::uint64_t wire_bytes = 0;  ///< total bytes of the frame
};

namespace detail {

inline constexpr std::array<char, 4> wire_magic{'L', 'A', 'R', 'L'};
inline constexpr std::uint16_t wire_version = 1;
inline constexpr std::size_t wire_prefix_bytes = 20;
/// @brief Piece size in which payloads are copied and checksummed (fits in L2 between the two).
inline constexpr std::size_t wire_chunk_bytes = std::size_t{1} << 18;

/// @brief Appends little-endian scalars to a byte vector.
struct byte_writer {
  std::vector<std::byte>& out;
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void put_bytes(std::span<const std::byte> b) { out.insert(out.end(), b.begin(), b.end()); }
};

/// @brief Reads little-endian scalars from a header with bounds checks (corrupt_data on overrun).
struct byte_reader {
  std::span<const std::byte> in;
  std::size_t pos = 0;
  template <class T>
  T get(std::string_view field) {
    if (in.size() - pos < sizeof(T)) {
      LATENTAUDIT_THROW(
          corrupt_data("decode_relay: header truncated while reading '" + std::string(field) + "'"));
    }
    T v;
    std::memcpy(&v, in.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::span<const std::byte> get_bytes(std::size_t n, std::string_view field) {
    if (in.size() - pos < n) {
      LATENTAUDIT_THROW(
          corrupt_data("decode_relay: header truncated while reading '" + std::string(field) + "'"));
    }
    auto s = in.subspan(pos, n);
    pos += n;
    return s;
  }
};

[[noreturn]] inline void wire_corrupt(const std::string& what) {
  LATENTAUDIT_THROW(corrupt_data("decode_relay: " + what));
}

inline void check_field(bool ok, std::string_view field, const std::string& got, std::string_view expected) {
  if (!ok)
    wire_corrupt("header field '" + std::string(field) + "' is " + got + ", expected " +
                 std::string(expected));
}

/// @brief The kind-specific header of a KV block.
inline std::vector<std::byte> kv_header(const kv_block& b, const std::optional<quantize_spec>& q) {
  std::vector<std::byte> h;
  byte_writer w{h};
  const auto& f = b.fingerprint();
  w.put(static_cast<std::uint16_t>(f.architecture.size()));
  w.put_bytes(std::as_bytes(std::span(f.architecture.data(), f.architecture.size())));
  w.put(f.n_layers);
  w.put(f.n_heads);
  w.put(f.n_kv_heads);
  w.put(f.head_dim_k);
  w.put(f.head_dim_v);
  w.put(static_cast<std::uint8_t>(f.rope.pairing));
  w.put(std::uint8_t{0});
  w.put(f.rope.theta);
  w.put(f.rope.rotary_dims);
  w.put(f.weights_hash);
  w.put(static_cast<std::uint8_t>(b.type()));
  // encoding: 0 = raw elements of `dtype`, else the quant_scheme id
  w.put(static_cast<std::uint8_t>(q ? static_cast<std::uint8_t>(q->scheme) : 0));
  // kv flags: bit 0 = token mask, bit 1 = integer keys grouped per token (not per channel)
  const bool integer = q && is_integer_scheme(q->scheme);
  w.put(static_cast<std::uint16_t>((b.has_token_mask() ? 1 : 0) | (integer && !q->keys_per_channel ? 2 : 0)));
  w.put(static_cast<std::uint32_t>(integer ? q->group_size : 0));  // group size
  w.put(b.n_tokens());
  w.put(static_cast<std::uint32_t>(b.n_layers()));
  for (auto l : b.layers()) w.put(static_cast<std::int32_t>(l));
  return h;
}

/// @brief Copies a bulk piece with streaming stores and feeds it to crc: in one pass (each line
/// read once, folded into the CRC and stream-stored) when the processor has the folding kernel,
/// else stream_copy and then the checksum of the source piece.
inline void stream_copy_crc32c(crc32c& crc, std::byte* d, const std::byte* s, std::size_t n) noexcept {
  if (crc32c_copy_fused()) return crc.copy_stream(d, s, n);
  stream_copy(d, s, n);
  crc.update(std::span(s, n));
}

/// @brief Writes prefix + header, payload pieces, CRC and tag to `sink(span)`. A sink callable
/// as `sink(span, crc32c* crc)` copies and checksums in one pass: it must feed *crc the bytes it
/// writes (crc is null for the CRC and tag bytes).
template <class Sink>
std::uint64_t write_frame(relay_kind kind, std::span<const std::byte> header,
                          std::span<const std::span<const std::byte>> payload, const wire_encode_options& o,
                          Sink&& sink) {
  if (header.size() > 0xFFFFFFFFu) throw_invalid("encode_relay", "relay", "header exceeds 4 GiB");
  std::uint64_t plen = 0;
  for (auto p : payload) plen += p.size();
  std::vector<std::byte> prefix;
  prefix.reserve(wire_prefix_bytes + header.size());
  byte_writer w{prefix};
  w.put_bytes(std::as_bytes(std::span(wire_magic)));
  w.put(wire_version);
  w.put(static_cast<std::uint8_t>(kind));
  w.put(static_cast<std::uint8_t>(o.hmac_key.empty() ? 0 : 1));
  w.put(static_cast<std::uint32_t>(header.size()));
  w.put(plen);
  w.put_bytes(header);
  constexpr bool fused = std::is_invocable_v<Sink&, std::span<const std::byte>, crc32c*>;
  crc32c crc;
  std::optional<hmac_sha256> mac;
  if (!o.hmac_key.empty()) mac.emplace(o.hmac_key);
  // in pieces that stay in cache between the copy and the checksum (and the MAC); a sink that
  // copies and checksums in one pass (the folding kernel) takes whole spans when there is no MAC
  const std::size_t chunk =
      fused && !mac && crc32c_copy_fused() ? std::numeric_limits<std::size_t>::max() : wire_chunk_bytes;
  auto emit = [&](std::span<const std::byte> s) {
    for (std::size_t off = 0; off < s.size(); off += chunk) {
      const auto part = s.subspan(off, std::min(chunk, s.size() - off));
      if constexpr (fused) {
        sink(part, &crc);
      } else {
        sink(part);
        crc.update(part);
      }
      if (mac) mac->update(part);
    }
  };
  auto put = [&](std::span<const std::byte> s) {
    if constexpr (fused) {
      sink(s, static_cast<crc32c*>(nullptr));
    } else {
      sink(s);
    }
  };
  emit(prefix);
  for (auto p : payload) emit(p);
  const std::uint32_t c = crc.value();
  const auto cb = std::as_bytes(std::span(&c, 1));
  if (mac) mac->update(cb);
  put(cb);
  std::uint64_t total = prefix.size() + plen + 4;
  if (mac) {
    const auto tag = mac->finish();
    put(std::span<const std::byte>(tag));
    total += tag.size();
  }
  return total;
}

/// @brief Layout of a masked KV payload: for each present layer, K rows then V rows of the
/// present tokens, in token order.
inline std::vector<std::byte> mask_bitmap(const kv_block& b) {
  const auto m = b.token_mask();
  std::vector<std::byte> bits((m.size() + 7) / 8);
  for (std::size_t j = 0; j < m.size(); ++j)
    if (m[j]) bits[j / 8] |= static_cast<std::byte>(1u << (j % 8));
  return bits;
}

inline std::vector<std::byte> gather_rows(const kv_block& b) {
  std::vector<std::byte> out;
  const auto payload = b.payload();
  const std::size_t es = dtype_size(b.type());
  const std::size_t T = static_cast<std::size_t>(b.n_tokens());
  const std::size_t krow =
      static_cast<std::size_t>(b.n_kv_heads()) * static_cast<std::size_t>(b.head_dim_k()) * es;
  const std::size_t vrow =
      static_cast<std::size_t>(b.n_kv_heads()) * static_cast<std::size_t>(b.head_dim_v()) * es;
  for (std::size_t i = 0; i < b.n_layers(); ++i) {
    const std::size_t base = i * T * (krow + vrow);
    for (std::size_t t = 0; t < T; ++t)
      if (b.token_present(i, static_cast<std::int64_t>(t)))
        out.insert(out.end(), payload.begin() + static_cast<std::ptrdiff_t>(base + t * krow),
                   payload.begin() + static_cast<std::ptrdiff_t>(base + (t + 1) * krow));
    for (std::size_t t = 0; t < T; ++t)
      if (b.token_present(i, static_cast<std::int64_t>(t)))
        out.insert(out.end(), payload.begin() + static_cast<std::ptrdiff_t>(base + T * krow + t * vrow),
                   payload.begin() + static_cast<std::ptrdiff_t>(base + T * krow + (t + 1) * vrow));
  }
  return out;
}

}  // namespace detail

/// @brief Exact frame size of a KV relay encoded with `o` (header, positions, mask, payload —
/// quantized when o.quantize is set —, CRC, optional tag).
/// @throws invalid_argument on a bad quantization spec.
[[nodiscard]] inline std::uint64_t relay_wire_bytes(const kv_block& b, const wire_encode_options& o) {
  std::uint64_t body = b.content_bytes();
  if (o.quantize) {
    body = b.positions().size() * sizeof(position_t) +
           (b.has_token_mask() ? (b.token_mask().size() + 7) / 8 : 0) +
           quantized_payload_bytes(b, *o.quantize);
  }
  return detail::wire_prefix_bytes + detail::kv_header(b, o.quantize).size() + body + 4 +
         (o.hmac_key.empty() ? 0 : 32);
}

/// @brief Exact frame size of an unquantized KV relay, with or without a tag.
[[nodiscard]] inline std::uint64_t relay_wire_bytes(const kv_block& b, bool with_tag = false) {
  return detail::wire_prefix_bytes + detail::kv_header(b, std::nullopt).size() + b.content_bytes() + 4 +
         (with_tag ? 32 : 0);
}

/// @brief Exact frame size of a text relay.
[[nodiscard]] inline std::uint64_t relay_wire_bytes(const text_relay& t, bool with_tag = false) {
  const std::uint64_t header = t.as_tokens ? 8 : 0;
  const std::uint64_t payload = t.as_tokens ? t.tokens.size() * sizeof(token_id) : t.utf8.size();
  return detail::wire_prefix_bytes + header + payload + 4 + (with_tag ? 32 : 0);
}

/// @brief Encodes a KV block into a stream.
/// @returns bytes written.
/// @throws error if the stream fails.
LATENTAUDIT_INLINE std::uint64_t encode_relay(const kv_block& b, std::ostream& out,
                                              const wire_encode_options& o = {});

/// @brief Encodes a KV block into `out`, replacing its contents (exactly relay_wire_bytes(b)
/// bytes) but keeping its capacity, so that encoding repeatedly into the same vector allocates
/// and page-faults nothing.
/// @returns bytes written.
/// @throws invalid_argument on a bad quantization spec.
LATENTAUDIT_INLINE std::uint64_t encode_relay(const kv_block& b, std::vector<std::byte>& out,
                                              const wire_encode_options& o = {});

/// @brief Encodes a KV block into a byte vector (exactly relay_wire_bytes(b) long).
/// @throws invalid_argument on a bad quantization spec.
[[nodiscard]] LATENTAUDIT_INLINE std::vector<std::byte> encode_relay(const kv_block& b,
                                                                     const wire_encode_options& o = {});

/// @brief Encodes a text relay into a byte vector.
/// @throws invalid_argument if UTF-8 text is not valid UTF-8.
[[nodiscard]] LATENTAUDIT_INLINE std::vector<std::byte> encode_relay(const text_relay& t,
                                                                     const wire_encode_options& o = {});

/// @brief Encodes a text relay into a stream; returns bytes written.
LATENTAUDIT_INLINE std::uint64_t encode_relay(const text_relay& t, std::ostream& out,
                                              const wire_encode_options& o = {});

/// @brief Decodes one relay from bytes (the whole frame; trailing bytes are an error).
/// @throws corrupt_data on any malformed field or checksum mismatch; authentication_failed on a
///         bad or missing (when required) tag; incompatible_model on a fingerprint mismatch.
[[nodiscard]] LATENTAUDIT_INLINE decoded_relay decode_relay(std::span<const std::byte> bytes,
                                                            const wire_decode_options& o = {});

/// @brief Decodes one relay from a stream, reading exactly one frame.
/// @throws as the byte version; corrupt_data also on a short read.
[[nodiscard]] LATENTAUDIT_INLINE decoded_relay decode_relay(std::istream& in,
                                                            const wire_decode_options& o = {});

/// @brief Decodes one relay from bytes into `out`, reusing the payload storage of `out.kv` when
/// it is large enough and of the same dtype (so that decoding repeatedly into the same object
/// allocates and page-faults nothing). The result equals that of the returning overload.
/// @throws as the returning overload; `out` is then reset to an empty relay.
LATENTAUDIT_INLINE void decode_relay(std::span<const std::byte> bytes, decoded_relay& out,
                                     const wire_decode_options& o = {});

/// @brief Decodes one relay from a stream into `out` (see the byte version).
/// @throws as the returning stream overload; `out` is then reset to an empty relay.
LATENTAUDIT_INLINE void decode_relay(std::istream& in, decoded_relay& out, const wire_decode_options& o = {});

// ---- implementation ------------------------------------------------------------------------------

namespace detail {

/// @brief Whether s is valid UTF-8 (no overlongs, no surrogates, ≤ U+10FFFF).
[[nodiscard]] inline bool valid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  while (i < s.size()) {
    const unsigned c = p[i];
    std::size_t n;
    std::uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else
      return false;
    if (s.size() - i <= n) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

/// @brief Source of frame bytes: a span or a stream.
struct span_source {
  std::span<const std::byte> in;
  std::size_t pos = 0;
  void read(std::span<std::byte> dst, std::string_view what) {
    if (in.size() - pos < dst.size()) wire_corrupt("truncated frame while reading the " + std::string(what));
    if (dst.empty()) return;  // memcpy's pointers must not be null, even for 0 bytes
    std::memcpy(dst.data(), in.data() + pos, dst.size());
    pos += dst.size();
  }
  /// Reads a piece of a bulk payload (streaming stores when `bulk`, copied and checksummed in
  /// one pass) and feeds it to crc.
  void read_bulk(std::span<std::byte> dst, std::string_view what, bool bulk, crc32c& crc) {
    if (!bulk) {
      read(dst, what);
      return crc.update(dst);
    }
    if (in.size() - pos < dst.size()) wire_corrupt("truncated frame while reading the " + std::string(what));
    const auto src = in.subspan(pos, dst.size());
    stream_copy_crc32c(crc, dst.data(), src.data(), src.size());
    pos += dst.size();
  }
};
struct stream_source {
  std::istream& in;
  void read(std::span<std::byte> dst, std::string_view what) {
    if (dst.empty()) return;
    in.read(reinterpret_cast<char*>(dst.data()), static_cast<std::streamsize>(dst.size()));
    if (static_cast<std::size_t>(in.gcount()) != dst.size())
      wire_corrupt("truncated frame while reading the " + std::string(what));
  }
  void read_bulk(std::span<std::byte> dst, std::string_view what, bool, crc32c& crc) {
    read(dst, what);
    crc.update(dst);
  }
};

/// @brief Parses and validates a KV header and shapes `into` accordingly (reusing its storage;
/// the payload is left unwritten: the decoder writes every byte or zeroes absent rows).
/// Every field is checked against the limits before the block is allocated.
inline void parse_kv_header(std::span<const std::byte> header, std::uint64_t payload_len,
                            const wire_limits& L, bool& masked, std::optional<quantize_spec>& quant,
                            kv_block& into) {
  byte_reader r{header};
  const auto arch_len = r.get<std::uint16_t>("architecture length");
  check_field(arch_len <= 256, "architecture length", std::to_string(arch_len), "<= 256");
  const auto arch = r.get_bytes(arch_len, "architecture");
  model_fingerprint f;
  f.architecture.assign(reinterpret_cast<const char*>(arch.data()), arch.size());
  for (unsigned char ch : f.architecture)
    check_field(ch >= 0x20 && ch < 0x7f, "architecture", "non-printable", "printable ASCII");
  f.n_layers = r.get<std::int32_t>("n_layers");
  f.n_heads = r.get<std::int32_t>("n_heads");
  f.n_kv_heads = r.get<std::int32_t>("n_kv_heads");
  f.head_dim_k = r.get<std::int32_t>("head_dim_k");
  f.head_dim_v = r.get<std::int32_t>("head_dim_v");
  check_field(f.n_layers >= 1 && f.n_layers <= L.max_layers, "n_layers", std::to_string(f.n_layers),
              "in [1, max_layers]");
  check_field(f.n_heads >= 1 && f.n_heads <= L.max_heads, "n_heads", std::to_string(f.n_heads),
              "in [1, max_heads]");
  check_field(f.n_kv_heads >= 1 && f.n_kv_heads <= f.n_heads && f.n_heads % f.n_kv_heads == 0, "n_kv_heads",
              std::to_string(f.n_kv_heads), "a divisor of n_heads");
  check_field(f.head_dim_k >= 1 && f.head_dim_k <= L.max_head_dim, "head_dim_k", std::to_string(f.head_dim_k),
              "in [1, max_head_dim]");
  check_field(f.head_dim_v >= 1 && f.head_dim_v <= L.max_head_dim, "head_dim_v", std::to_string(f.head_dim_v),
              "in [1, max_head_dim]");
  const auto pairing = r.get<std::uint8_t>("rope pairing");
  check_field(pairing <= 2, "rope pairing", std::to_string(pairing), "0, 1 or 2");
  f.rope.pairing = static_cast<rope_pairing>(pairing);
  check_field(r.get<std::uint8_t>("reserved") == 0, "reserved byte", "non-zero", "0");
  f.rope.theta = r.get<float>("rope theta");
  f.rope.rotary_dims = r.get<std::int32_t>("rotary dims");
  if (f.rope.pairing != rope_pairing::none) {
    check_field(std::isfinite(f.rope.theta) && f.rope.theta > 0, "rope theta",
                number_text(static_cast<double>(f.rope.theta)), "positive and finite");
    const int rot = f.rope.rotary_dims == 0 ? f.head_dim_k : f.rope.rotary_dims;
    check_field(f.rope.rotary_dims >= 0 && rot <= f.head_dim_k && rot % 2 == 0, "rotary dims",
                std::to_string(f.rope.rotary_dims), "even and <= head_dim_k");
  }
  f.weights_hash = r.get<std::uint64_t>("weights hash");
  const auto dt = r.get<std::uint8_t>("dtype");
  check_field(dt <= 2, "dtype", std::to_string(dt), "0 (f32), 1 (f16) or 2 (bf16)");
  const auto encoding = r.get<std::uint8_t>("encoding");
  {  // 0 = raw, else the id of a scheme of kv/quantize.hpp's one table (all_quant_schemes)
    bool known = encoding == 0;
    for (const quant_scheme q : all_quant_schemes) known = known || static_cast<std::uint8_t>(q) == encoding;
    if (!known) {
      std::string accepted = "0 (raw)";
      for (std::size_t i = 0; i < all_quant_schemes.size(); ++i)
        accepted += (i + 1 == all_quant_schemes.size() ? " or " : ", ") +
                    std::to_string(static_cast<unsigned>(all_quant_schemes[i])) + " (" +
                    std::string(quant_scheme_name(all_quant_schemes[i])) + ")";
      check_field(false, "encoding", std::to_string(encoding), accepted);
    }
  }
  const auto kv_flags = r.get<std::uint16_t>("kv flags");
  const auto group_size = r.get<std::uint32_t>("group size");
  const bool integer = encoding != 0 && is_integer_scheme(static_cast<quant_scheme>(encoding));
  check_field((kv_flags & ~(integer ? 3u : 1u)) == 0, "kv flags", std::to_string(kv_flags),
              integer ? "in [0, 3]" : "0 or 1");
  masked = (kv_flags & 1u) != 0;
  if (integer) {
    check_field(group_size >= 1 && group_size <= (1u << 20), "group size", std::to_string(group_size),
                "in [1, 2^20]");
  } else {
    check_field(group_size == 0, "group size", std::to_string(group_size), "0 without integer quantization");
  }
  quant.reset();
  if (encoding != 0) {
    quant = quantize_spec{.scheme = static_cast<quant_scheme>(encoding),
                          .group_size = static_cast<std::int32_t>(group_size),
                          .keys_per_channel = (kv_flags & 2u) == 0};
  }
  const auto n_tokens = r.get<std::int64_t>("n_tokens");
  check_field(n_tokens >= 0 && n_tokens <= L.max_tokens, "n_tokens", std::to_string(n_tokens),
              "in [0, max_tokens]");
  const auto n_present = r.get<std::uint32_t>("layer count");
  check_field(n_present <= static_cast<std::uint32_t>(f.n_layers), "layer count", std::to_string(n_present),
              "<= n_layers");
  std::vector<layer_index> layers(n_present);
  for (auto& l : layers) {
    l = r.get<std::int32_t>("layer id");
    check_field(l >= 0 && l < f.n_layers, "layer id", std::to_string(l), "in [0, n_layers)");
  }
  for (std::size_t i = 1; i < layers.size(); ++i)
    check_field(layers[i] > layers[i - 1], "layer ids", "not increasing", "strictly increasing");
  check_field(r.pos == header.size(), "header length", std::to_string(header.size()),
              "the size of its fields (" + std::to_string(r.pos) + ")");
  // without a mask the payload is exactly positions + K + V of that shape; with a mask it is
  // positions + bitmap + the present rows, at most the full shape (checked again after the bitmap)
  const auto type = static_cast<dtype>(dt);
  const std::uint64_t per_token = static_cast<std::uint64_t>(f.n_kv_heads) *
                                  static_cast<std::uint64_t>(f.head_dim_k + f.head_dim_v) * dtype_size(type) *
                                  n_present;
  const std::uint64_t raw_full = static_cast<std::uint64_t>(n_tokens) * (per_token + sizeof(position_t));
  const std::uint64_t bitmap = masked ? (static_cast<std::uint64_t>(n_tokens) * n_present + 7) / 8 : 0;
  check_field(raw_full + bitmap <= L.max_payload_bytes, "declared shape",
              std::to_string(raw_full + bitmap) + " bytes", "<= max_payload_bytes");
  std::uint64_t full = raw_full;  // payload with every row present
  if (quant) {
    full = static_cast<std::uint64_t>(n_tokens) * sizeof(position_t);
    const auto H = static_cast<std::uint64_t>(f.n_kv_heads), T = static_cast<std::uint64_t>(n_tokens);
    full += n_present *
            (unit_bytes(quant->scheme, T, H, static_cast<std::uint64_t>(f.head_dim_k), false, *quant) +
             unit_bytes(quant->scheme, T, H, static_cast<std::uint64_t>(f.head_dim_v), true, *quant));
    check_field(full + bitmap <= L.max_payload_bytes, "declared quantized shape",
                std::to_string(full + bitmap) + " bytes", "<= max_payload_bytes");
  }
  if (masked) {
    const std::uint64_t floor = static_cast<std::uint64_t>(n_tokens) * sizeof(position_t) + bitmap;
    check_field(
        payload_len >= floor && payload_len <= full + bitmap, "payload length", std::to_string(payload_len),
        "in [" + std::to_string(floor) + ", " + std::to_string(full + bitmap) + "] for the declared shape");
  } else {
    check_field(payload_len == full, "payload length", std::to_string(payload_len),
                std::to_string(full) + " for the declared shape");
  }
  kv_block_access::reshape_unwritten(into, std::move(f), std::move(layers), n_tokens, type, "decode_relay");
}

inline void scatter_rows(kv_block& b, std::span<const std::byte> bitmap, std::span<const std::byte> rows) {
  std::vector<std::uint8_t> mask(b.n_layers() * static_cast<std::size_t>(b.n_tokens()));
  for (std::size_t j = 0; j < mask.size(); ++j)
    mask[j] = static_cast<std::uint8_t>((static_cast<unsigned>(bitmap[j / 8]) >> (j % 8)) & 1u);
  const auto payload = b.payload_mut();
  const std::size_t es = dtype_size(b.type());
  const std::size_t T = static_cast<std::size_t>(b.n_tokens());
  const std::size_t krow =
      static_cast<std::size_t>(b.n_kv_heads()) * static_cast<std::size_t>(b.head_dim_k()) * es;
  const std::size_t vrow =
      static_cast<std::size_t>(b.n_kv_heads()) * static_cast<std::size_t>(b.head_dim_v()) * es;
  std::size_t r = 0;
  for (std::size_t i = 0; i < b.n_layers(); ++i) {
    const std::size_t base = i * T * (krow + vrow);
    for (std::size_t t = 0; t < T; ++t)
      if (mask[i * T + t]) {
        std::memcpy(payload.data() + base + t * krow, rows.data() + r, krow);
        r += krow;
      }
    for (std::size_t t = 0; t < T; ++t)
      if (mask[i * T + t]) {
        std::memcpy(payload.data() + base + T * krow + t * vrow, rows.data() + r, vrow);
        r += vrow;
      }
  }
  b.set_token_mask(std::move(mask));
}

template <class Source>
void decode_frame(Source& src, const wire_decode_options& o, decoded_relay& out) {
  {
    kv_block storage = std::move(out.kv);
    out = decoded_relay{};
    out.kv = std::move(storage);
  }
  std::array<std::byte, wire_prefix_bytes> prefix;
  src.read(prefix, "prefix");
  crc32c crc;
  crc.update(prefix);
  byte_reader pr{prefix};
  const auto magic = pr.get_bytes(4, "magic");
  if (std::memcmp(magic.data(), wire_magic.data(), 4) != 0)
    wire_corrupt("bad magic (not a latentaudit relay)");
  const auto version = pr.get<std::uint16_t>("version");
  check_field(version == wire_version, "version", std::to_string(version), "1");
  const auto kind = pr.get<std::uint8_t>("kind");
  check_field(kind >= 1 && kind <= 3, "kind", std::to_string(kind), "1, 2 or 3");
  const auto flags = pr.get<std::uint8_t>("flags");
  check_field((flags & ~1u) == 0, "flags", std::to_string(flags), "0 or 1");
  const auto hlen = pr.get<std::uint32_t>("header length");
  const auto plen = pr.get<std::uint64_t>("payload length");
  check_field(hlen <= o.limits.max_header_bytes, "header length", std::to_string(hlen),
              "<= max_header_bytes");
  check_field(plen <= o.limits.max_payload_bytes, "payload length", std::to_string(plen),
              "<= max_payload_bytes");
  std::vector<std::byte> header(hlen);
  src.read(header, "header");
  crc.update(header);

  out.kind = static_cast<relay_kind>(kind);
  out.has_tag = (flags & 1u) != 0;
  std::span<std::byte> payload_dst;
  std::vector<std::byte> text_bytes;
  std::vector<std::byte> bitmap;
  std::vector<std::byte> rows;  // masked KV: the present rows, scattered after the CRC check
  if (out.kind == relay_kind::kv) {
    bool masked = false;
    parse_kv_header(header, plen, o.limits, masked, out.quantization, out.kv);
    if (o.expected_fingerprint != nullptr)
      check_fingerprint("decode_relay", *o.expected_fingerprint, out.kv.fingerprint());
    const auto pos_bytes = std::as_writable_bytes(out.kv.positions());
    src.read(pos_bytes, "positions");
    crc.update(pos_bytes);
    if (!masked && !out.quantization) {
      payload_dst = out.kv.payload_mut();
    } else if (!masked) {
      rows.resize(plen - out.kv.positions().size() * sizeof(position_t));
      payload_dst = rows;
    } else {
      const std::size_t cells = out.kv.n_layers() * static_cast<std::size_t>(out.kv.n_tokens());
      bitmap.resize((cells + 7) / 8);
      src.read(bitmap, "token mask");
      crc.update(bitmap);
      std::uint64_t present = 0;
      for (std::size_t j = 0; j < cells; ++j)
        present += (static_cast<unsigned>(bitmap[j / 8]) >> (j % 8)) & 1u;
      if (cells % 8 != 0)
        check_field((static_cast<unsigned>(bitmap.back()) >> (cells % 8)) == 0, "token mask padding",
                    "non-zero", "0");
      std::uint64_t body = present * out.kv.row_bytes();
      if (out.quantization) {
        // present rows per layer decide the groups: apply the mask, then size the payload
        std::vector<std::uint8_t> m(cells);
        for (std::size_t j = 0; j < cells; ++j)
          m[j] = static_cast<std::uint8_t>((static_cast<unsigned>(bitmap[j / 8]) >> (j % 8)) & 1u);
        out.kv.set_token_mask(std::move(m));
        body = quantized_payload_bytes(out.kv, *out.quantization);
      }
      const std::uint64_t expected = out.kv.positions().size() * sizeof(position_t) + bitmap.size() + body;
      check_field(plen == expected, "payload length", std::to_string(plen),
                  std::to_string(expected) + " for the token mask");
      rows.resize(body);
      payload_dst = rows;
    }
  } else if (out.kind == relay_kind::text_tokens) {
    out.kv = kv_block();
    byte_reader r{header};
    const auto count = r.get<std::uint64_t>("token count");
    check_field(r.pos == header.size(), "header length", std::to_string(header.size()), "8");
    check_field(count <= static_cast<std::uint64_t>(o.limits.max_tokens), "token count",
                std::to_string(count), "<= max_tokens");
    check_field(plen == count * sizeof(token_id), "payload length", std::to_string(plen),
                std::to_string(count * sizeof(token_id)));
    out.text.as_tokens = true;
    out.text.tokens.resize(count);
    payload_dst = std::as_writable_bytes(std::span(out.text.tokens));
  } else {
    out.kv = kv_block();
    check_field(hlen == 0, "header length", std::to_string(hlen), "0 for UTF-8 text");
    out.text.as_tokens = false;
    out.text.utf8.resize(plen);
    payload_dst = std::as_writable_bytes(std::span(out.text.utf8.data(), out.text.utf8.size()));
  }
  // stream the payload through the CRC in chunks (nothing in it is used before the CRC matches)
  const bool bulk = payload_dst.size() >= stream_copy_min_bytes;
  for (std::size_t off = 0; off < payload_dst.size(); off += wire_chunk_bytes) {
    auto part = payload_dst.subspan(off, std::min(wire_chunk_bytes, payload_dst.size() - off));
    src.read_bulk(part, "payload", bulk, crc);
  }
  std::uint32_t stored_crc;
  src.read(std::as_writable_bytes(std::span(&stored_crc, 1)), "checksum");
  if (stored_crc != crc.value())
    wire_corrupt("CRC32C mismatch (stored " + std::to_string(stored_crc) + ", computed " +
                 std::to_string(crc.value()) + ")");
  out.crc = stored_crc;
  out.wire_bytes = wire_prefix_bytes + hlen + plen + 4;
  if (out.has_tag) {
    sha256::digest tag;
    src.read(tag, "HMAC tag");
    out.wire_bytes += tag.size();
    if (!o.hmac_key.empty()) {
      // recompute over the exact frame bytes (prefix, header, payload, crc)
      hmac_sha256 mac(o.hmac_key);
      mac.update(prefix);
      mac.update(header);
      if (out.kind == relay_kind::kv) mac.update(std::as_bytes(out.kv.positions()));
      mac.update(bitmap);
      mac.update(payload_dst);
      mac.update(std::as_bytes(std::span(&stored_crc, 1)));
      if (!digest_equal(mac.finish(), tag)) {
        LATENTAUDIT_THROW(
            authentication_failed("decode_relay: HMAC-SHA256 tag does not verify under the given key"));
      }
      out.authenticated = true;
    }
  }
  if (o.require_authentication && !out.authenticated) {
    LATENTAUDIT_THROW(authentication_failed(
        out.has_tag ? "decode_relay: authentication required but no key was given"
                    : "decode_relay: authentication required but the relay has no HMAC tag"));
  }
  if (out.kind == relay_kind::text_utf8 && !valid_utf8(out.text.utf8))
    wire_corrupt("text payload is not valid UTF-8");
  if (out.quantization) {
    dequantize_payload(out.kv, *out.quantization, rows);
  } else if (!bitmap.empty()) {
    scatter_rows(out.kv, bitmap, rows);
  }
}

inline std::vector<std::byte> text_header(const text_relay& t) {
  std::vector<std::byte> h;
  if (t.as_tokens) byte_writer{h}.put(static_cast<std::uint64_t>(t.tokens.size()));
  return h;
}

inline std::span<const std::byte> text_payload(const text_relay& t) {
  if (!t.as_tokens && !valid_utf8(t.utf8)) throw_invalid("encode_relay", "text.utf8", "must be valid UTF-8");
  return t.as_tokens ? std::as_bytes(std::span(t.tokens))
                     : std::as_bytes(std::span(t.utf8.data(), t.utf8.size()));
}

}  // namespace detail

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/wire-inl.hpp"
#endif

#endif  // LATENTAUDIT_KV_WIRE_HPP
