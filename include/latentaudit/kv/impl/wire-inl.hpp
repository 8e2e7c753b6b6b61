// SPDX-License-Identifier: MIT
// latentaudit: definitions of kv/wire.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_KV_IMPL_WIRE_INL_HPP
#define LATENTAUDIT_KV_IMPL_WIRE_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../wire.hpp"

namespace latentaudit {

namespace detail {
// The pieces of a KV block's frame under `o`: its header, the token-mask bitmap, the packed rows
// (quantized, or the present rows gathered) and the three payload parts (positions, bitmap, the
// rows or the block's own payload). The parts point into the pieces and the block: not copyable.
struct kv_frame_pieces {
  std::vector<std::byte> header, bitmap, rows;
  std::span<const std::byte> parts[3];
  kv_frame_pieces(const kv_block& b, const wire_encode_options& o) : header(kv_header(b, o.quantize)) {
    if (b.has_token_mask()) bitmap = mask_bitmap(b);
    if (o.quantize)
      rows = quantize_payload(b, *o.quantize);
    else if (b.has_token_mask())
      rows = gather_rows(b);
    parts[0] = std::as_bytes(b.positions());
    parts[1] = bitmap;
    parts[2] = (o.quantize || b.has_token_mask()) ? std::span<const std::byte>(rows) : b.payload();
  }
  kv_frame_pieces(const kv_frame_pieces&) = delete;
  kv_frame_pieces& operator=(const kv_frame_pieces&) = delete;
};
}  // namespace detail

LATENTAUDIT_INLINE std::uint64_t encode_relay(const kv_block& b, std::ostream& out,
                                              const wire_encode_options& o) {
  const detail::kv_frame_pieces f(b, o);
  const auto& header = f.header;
  const auto& parts = f.parts;
  const auto n = detail::write_frame(relay_kind::kv, header, parts, o, [&](std::span<const std::byte> s) {
    out.write(reinterpret_cast<const char*>(s.data()), static_cast<std::streamsize>(s.size()));
  });
  if (!out) LATENTAUDIT_THROW(error("encode_relay: writing to the output stream failed"));
  return n;
}

LATENTAUDIT_INLINE std::uint64_t encode_relay(const kv_block& b, std::vector<std::byte>& out,
                                              const wire_encode_options& o) {
  const detail::kv_frame_pieces f(b, o);
  const auto& header = f.header;
  const auto& parts = f.parts;
  const std::size_t total = detail::wire_prefix_bytes + header.size() + parts[0].size() + parts[1].size() +
                            parts[2].size() + 4 + (o.hmac_key.empty() ? 0 : 32);
  if (out.capacity() < total) {
    // a new buffer: appending writes (and faults in) each page once
    out.clear();
    out.reserve(total);
    detail::write_frame(relay_kind::kv, header, parts, o,
                        [&](std::span<const std::byte> s) { out.insert(out.end(), s.begin(), s.end()); });
    return out.size();
  }
  // a reused buffer: overwrite in place, bulk pieces with streaming stores, copied and
  // checksummed in one pass
  out.resize(total);
  std::byte* w = out.data();
  const bool bulk = total >= detail::stream_copy_min_bytes;
  detail::write_frame(relay_kind::kv, header, parts, o, [&](std::span<const std::byte> s, crc32c* crc) {
    if (bulk && crc != nullptr) {
      detail::stream_copy_crc32c(*crc, w, s.data(), s.size());
    } else {
      if (!s.empty()) std::memcpy(w, s.data(), s.size());
      if (crc != nullptr) crc->update(s);
    }
    w += s.size();
  });
  return out.size();
}

[[nodiscard]] LATENTAUDIT_INLINE std::vector<std::byte> encode_relay(const kv_block& b,
                                                                     const wire_encode_options& o) {
  std::vector<std::byte> out;
  encode_relay(b, out, o);
  return out;
}
LATENTAUDIT_INLINE std::vector<std::byte> encode_relay(const text_relay& t, const wire_encode_options& o) {
  const auto payload = detail::text_payload(t);
  const auto header = detail::text_header(t);
  std::vector<std::byte> out;
  out.reserve(relay_wire_bytes(t, !o.hmac_key.empty()));
  const std::span<const std::byte> parts[1] = {payload};
  detail::write_frame(t.as_tokens ? relay_kind::text_tokens : relay_kind::text_utf8, header, parts, o,
                      [&](std::span<const std::byte> s) { out.insert(out.end(), s.begin(), s.end()); });
  return out;
}

LATENTAUDIT_INLINE std::uint64_t encode_relay(const text_relay& t, std::ostream& out,
                                              const wire_encode_options& o) {
  const auto payload = detail::text_payload(t);
  const auto header = detail::text_header(t);
  const std::span<const std::byte> parts[1] = {payload};
  const auto n = detail::write_frame(t.as_tokens ? relay_kind::text_tokens : relay_kind::text_utf8, header,
                                     parts, o, [&](std::span<const std::byte> s) {
                                       out.write(reinterpret_cast<const char*>(s.data()),
                                                 static_cast<std::streamsize>(s.size()));
                                     });
  if (!out) LATENTAUDIT_THROW(error("encode_relay: writing to the output stream failed"));
  return n;
}

LATENTAUDIT_INLINE void decode_relay(std::span<const std::byte> bytes, decoded_relay& out,
                                     const wire_decode_options& o) {
  try {
    detail::span_source src{bytes};
    detail::decode_frame(src, o, out);
    if (src.pos != bytes.size())
      detail::wire_corrupt(std::to_string(bytes.size() - src.pos) + " trailing bytes after the frame");
  } catch (...) {
    out = decoded_relay{};
    throw;
  }
}

LATENTAUDIT_INLINE void decode_relay(std::istream& in, decoded_relay& out, const wire_decode_options& o) {
  try {
    detail::stream_source src{in};
    detail::decode_frame(src, o, out);
  } catch (...) {
    out = decoded_relay{};
    throw;
  }
}

LATENTAUDIT_INLINE decoded_relay decode_relay(std::span<const std::byte> bytes,
                                              const wire_decode_options& o) {
  decoded_relay out;
  decode_relay(bytes, out, o);
  return out;
}

LATENTAUDIT_INLINE decoded_relay decode_relay(std::istream& in, const wire_decode_options& o) {
  decoded_relay out;
  decode_relay(in, out, o);
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_KV_IMPL_WIRE_INL_HPP
