// SPDX-License-Identifier: MIT
// Tests for core/hash.hpp: CRC32C (RFC 3720 check value and iSCSI vectors), SHA-256 (FIPS 180-2
// examples), HMAC-SHA256 (RFC 4231 test cases 1, 2 and 6), streaming = one-shot, hw = software.
#include <latentaudit/core/hash.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "support/catch.hpp"

using namespace latentaudit;

namespace {
std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}
std::string hex(std::span<const std::byte> d) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (auto b : d) {
    s += digits[static_cast<unsigned>(b) >> 4];
    s += digits[static_cast<unsigned>(b) & 15];
  }
  return s;
}
}  // namespace

TEST_CASE("crc32c check values", "[core][hash]") {
  CHECK(crc32c::of(bytes_of("123456789")) == 0xE3069283u);
  CHECK(crc32c::of(bytes_of("")) == 0u);
  std::vector<std::byte> zeros(32, std::byte{0}), ones(32, std::byte{0xff});
  CHECK(crc32c::of(zeros) == 0x8A9136AAu);  // RFC 3720 B.4
  CHECK(crc32c::of(ones) == 0x62A8AB43u);
  std::vector<std::byte> inc(32);
  for (int i = 0; i < 32; ++i) inc[static_cast<std::size_t>(i)] = static_cast<std::byte>(i);
  CHECK(crc32c::of(inc) == 0x46DD794Eu);
}

TEST_CASE("crc32c streaming equals one-shot, hardware equals software", "[core][hash]") {
  std::vector<std::byte> data(1037);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>((i * 131 + 7) & 0xff);
  const auto whole = crc32c::of(data);
  crc32c c;
  c.update(std::span(data).subspan(0, 3));
  c.update(std::span(data).subspan(3, 500));
  c.update(std::span(data).subspan(503));
  CHECK(c.value() == whole);
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  CHECK(~detail::crc32c_sw(0xFFFFFFFFu, p, data.size()) == whole);
}

TEST_CASE("crc32c: the interleaved hardware lanes equal the software tables on long inputs", "[core][hash]") {
  // lengths around multiples of 3 · crc32c_lane_bytes (the interleaved block), odd offsets
  std::vector<std::byte> data(5 * 3 * detail::crc32c_lane_bytes + 77);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const std::size_t block = 3 * detail::crc32c_lane_bytes;
  for (std::size_t off : {std::size_t{0}, std::size_t{1}, std::size_t{7}}) {
    for (std::size_t len : {block - 1, block, block + 1, 2 * block + 13, data.size() - 8}) {
      const auto sw = ~detail::crc32c_sw(0xFFFFFFFFu, p + off, len);
      CHECK(crc32c::of(std::span(data).subspan(off, len)) == sw);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
      if (detail::have_sse42()) CHECK(~detail::crc32c_hw(0xFFFFFFFFu, p + off, len) == sw);
#endif
    }
  }
  // streaming in pieces that straddle blocks equals one shot
  crc32c c;
  for (std::size_t off = 0; off < data.size(); off += 5000)
    c.update(std::span(data).subspan(off, std::min<std::size_t>(5000, data.size() - off)));
  CHECK(c.value() == crc32c::of(data));
  // the shift operator: advancing over lane_bytes zero bytes equals feeding them
  const std::vector<unsigned char> zeros(detail::crc32c_lane_bytes, 0);
  CHECK(detail::crc32c_shift.shift(0x12345678u) ==
        detail::crc32c_sw(0x12345678u, zeros.data(), zeros.size()));
}

TEST_CASE("sha256 FIPS examples", "[core][hash]") {
  CHECK(hex(sha256::of(bytes_of("abc"))) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex(sha256::of(bytes_of(""))) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex(sha256::of(bytes_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  sha256 s;
  for (std::size_t i = 0; i < million.size(); i += 999) s.update(bytes_of(million.substr(i, 999)));
  CHECK(hex(s.finish()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("hmac-sha256 RFC 4231 vectors", "[core][hash]") {
  {
    const std::string key(20, '\x0b');
    hmac_sha256 h(bytes_of(key));
    h.update(bytes_of("Hi There"));
    CHECK(hex(h.finish()) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  }
  {
    hmac_sha256 h(bytes_of("Jefe"));
    h.update(bytes_of("what do ya want for nothing?"));
    CHECK(hex(h.finish()) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  }
  {
    const std::string key(131, '\xaa');
    hmac_sha256 h(bytes_of(key));
    h.update(bytes_of("Test Using Larger Than Block-Size Key - Hash Key First"));
    CHECK(hex(h.finish()) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  }
  const auto a = sha256::of(bytes_of("x")), b = sha256::of(bytes_of("y"));
  CHECK(digest_equal(a, a));
  CHECK_FALSE(digest_equal(a, b));
}

TEST_CASE("empty updates are no-ops (found by the relay fuzzer: null pointers into memcpy)", "[core][hash]") {
  sha256 s;
  s.update(std::span<const std::byte>{});
  s.update(bytes_of("abc"));
  s.update(std::span<const std::byte>{});
  CHECK(hex(s.finish()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  crc32c c;
  c.update(std::span<const std::byte>{});
  CHECK(c.value() == 0u);
}

TEST_CASE("sha256: the SHA-extension kernel equals the portable one, and long inputs are right",
          "[core][hash]") {
  // One million 'a' (FIPS 180-2 appendix B.3), through whatever kernel this machine dispatches to.
  const std::string million(1000000, 'a');
  CHECK(hex(sha256::of(bytes_of(million))) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Both kernels on the same blocks from a fixed xorshift stream (seed 20261130), 1..40 blocks.
  std::vector<unsigned char> data(64 * 40);
  std::uint64_t x = 20261130;
  for (auto& c : data) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<unsigned char>(x >> 24);
  }
  for (std::size_t blocks = 1; blocks <= 40; ++blocks) {
    std::uint32_t a[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::uint32_t b[8];
    std::copy(a, a + 8, b);
    detail::sha256_compress_sw(a, data.data(), blocks);
    detail::sha256_compress(b, data.data(), blocks);  // the dispatched kernel
    CHECK(std::equal(a, a + 8, b));
#ifdef LATENTAUDIT_SHA_NI
    if (detail::have_sha_ni()) {
      std::uint32_t c[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                            0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
      detail::sha256_compress_ni(c, data.data(), blocks);
      CHECK(std::equal(a, a + 8, c));
    }
#endif
    detail::sha256_compress(b, data.data(), 0);  // zero blocks: no change
    CHECK(std::equal(a, a + 8, b));
  }
#ifdef LATENTAUDIT_SHA_NI
  INFO("SHA extensions on this machine: " << detail::have_sha_ni());
#endif
}
