// SPDX-License-Identifier: MIT
// Tests for core/hash.hpp: CRC32C (RFC 3720 check value and iSCSI vectors), SHA-256 (FIPS 180-2
// examples), HMAC-SHA256 (RFC 4231 test cases 1, 2 and 6), streaming = one-shot, every CRC32C
// kernel (folding, SSE4.2 lanes, fused copy) = software, bit for bit.
#include <latentaudit/core/hash.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "support/catch.hpp"

using namespace latentaudit;

namespace {
std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}
// The library's hex text (core/hash.hpp): the digests below are the standards' test vectors.
std::string hex(std::span<const std::byte> d) { return to_hex(d); }
}  // namespace

TEST_CASE("to_hex: two lower-case digits a byte, in order", "[core][hash]") {
  CHECK(to_hex({}).empty());
  const std::byte b[] = {std::byte{0x00}, std::byte{0x0f}, std::byte{0xa5}, std::byte{0xff}};
  CHECK(to_hex(b) == "000fa5ff");
}

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

namespace {
/// Random bytes from a fixed xorshift stream.
std::vector<unsigned char> random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<unsigned char> v(n);
  std::uint64_t x = seed;
  for (auto& c : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<unsigned char>(x >> 29);
  }
  return v;
}
/// Restores the CRC32C kernel cap on scope exit.
struct kernel_cap {
  explicit kernel_cap(int cap) { detail::crc32c_kernel_cap = cap; }
  ~kernel_cap() { detail::crc32c_kernel_cap = 3; }
  kernel_cap(const kernel_cap&) = delete;
  kernel_cap& operator=(const kernel_cap&) = delete;
};
}  // namespace

TEST_CASE("crc32c: the fold constants are the powers of x they are derived as", "[core][hash]") {
  for (std::uint64_t n : {0, 1, 4, 16, 512, 4096}) CHECK(detail::crc32c_xpow(8 * n) == detail::crc32c_x8n(n));
  for (std::uint64_t m : {0, 1, 7, 31, 32, 63, 64, 2111}) {
    // x^(m+1) = x · x^m, with x = bit 30 of a reflected register
    CHECK(detail::crc32c_xpow(m + 1) == detail::crc32c_multmodp(1u << 30, detail::crc32c_xpow(m)));
  }
  CHECK(detail::crc32c_xpow(31) == 1u);           // x^31: bit 0
  CHECK(detail::crc32c_xpow(32) == 0x82F63B78u);  // x^32 ≡ the rest of the polynomial
  // folding 16 bytes of zeros with a leading 1 (x^127 in the lane) forward 16 bytes gives x^255
  const auto k = detail::crc32c_fold_constants(16);
  CHECK(k.lo == std::uint64_t{detail::crc32c_xpow(191)} << 32);
  CHECK(k.hi == std::uint64_t{detail::crc32c_xpow(127)} << 32);
}

TEST_CASE("crc32c: every kernel equals the tables at every length 0..1100 and start alignment 0..63",
          "[core][hash]") {
  const auto data = random_bytes(1100 + 64, 20261130);
  std::uint64_t x = 99;
  std::size_t bad_fold = 0, bad_fold128 = 0, bad_hw = 0, bad_dispatch = 0, tried = 0;
  for (std::size_t len = 0; len <= 1100; ++len) {
    for (std::size_t off = 0; off < 64; ++off) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const auto init = static_cast<std::uint32_t>(x);  // nonzero initial registers
      const unsigned char* p = data.data() + off;
      const std::uint32_t sw = detail::crc32c_sw(init, p, len);
      ++tried;
#ifdef LATENTAUDIT_CRC32C_FOLD
      if (detail::have_crc32c_fold() && detail::crc32c_fold(init, p, len) != sw) ++bad_fold;
      if (detail::have_crc32c_fold128() && detail::crc32c_fold128(init, p, len) != sw) ++bad_fold128;
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
      if (detail::have_sse42() && detail::crc32c_hw(init, p, len) != sw) ++bad_hw;
#endif
      if (detail::crc32c_update(init, p, len) != sw) ++bad_dispatch;
    }
  }
  CHECK(tried == 1101 * 64);
  CHECK(bad_fold == 0);
  CHECK(bad_fold128 == 0);
  CHECK(bad_hw == 0);
  CHECK(bad_dispatch == 0);
#ifdef LATENTAUDIT_CRC32C_FOLD
  INFO("folding kernels on this machine: 512-bit " << detail::have_crc32c_fold() << ", 128-bit "
                                                   << detail::have_crc32c_fold128());
#endif
}

TEST_CASE("crc32c: every kernel equals the tables on random lengths up to 4 MiB, whole and in pieces",
          "[core][hash]") {
  const std::size_t max_len = std::size_t{4} << 20;
  const auto data = random_bytes(max_len + 64, 7);
  std::uint64_t x = 12345;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  for (int trial = 0; trial < 24; ++trial) {
    const std::size_t len = trial < 4 ? max_len - static_cast<std::size_t>(trial) : next() % (max_len + 1);
    const std::size_t off = next() % 64;
    const auto init = static_cast<std::uint32_t>(next());
    const unsigned char* p = data.data() + off;
    const std::uint32_t sw = detail::crc32c_sw(init, p, len);
    for (int cap : {3, 2, 1, 0}) {
      const kernel_cap c(cap);
      CHECK(detail::crc32c_update(init, p, len) == sw);
      // streaming: split at random points (some tiny pieces, some long)
      std::uint32_t r = init;
      std::size_t at = 0;
      while (at < len) {
        const std::uint64_t v = next();
        const std::size_t piece =
            std::min(len - at, static_cast<std::size_t>((v & 3) == 0 ? v % 97 : v % (len / 3 + 1)));
        r = detail::crc32c_update(r, p + at, piece);
        at += piece;
      }
      CHECK(r == sw);
    }
#ifdef LATENTAUDIT_CRC32C_FOLD
    if (detail::have_crc32c_fold()) CHECK(detail::crc32c_fold(init, p, len) == sw);
    if (detail::have_crc32c_fold128()) CHECK(detail::crc32c_fold128(init, p, len) == sw);
#endif
  }
  // the public class in pieces through each kernel equals one shot through the tables
  const auto whole = ~detail::crc32c_sw(0xFFFFFFFFu, data.data(), data.size());
  for (int cap : {3, 2, 1, 0}) {
    const kernel_cap c(cap);
    crc32c s;
    const auto bytes = std::as_bytes(std::span(data));
    for (std::size_t at = 0; at < bytes.size();) {
      const std::size_t piece = std::min<std::size_t>(bytes.size() - at, next() % 300000);
      s.update(bytes.subspan(at, piece));
      at += piece;
    }
    CHECK(s.value() == whole);
    CHECK(crc32c::of(bytes_of("123456789")) == 0xE3069283u);
  }
}

TEST_CASE("crc32c: the fused copy copies exactly and checksums like the tables", "[core][hash]") {
  const std::size_t max_len = std::size_t{3} << 20;
  const auto src = random_bytes(max_len + 64, 31);
  std::vector<unsigned char> dst(64 + 64 + max_len + 128);  // guard, offset, data, guard
  std::uint64_t x = 4242;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  std::size_t bad_bytes = 0, bad_crc = 0, bad_guard = 0, tried = 0;
  auto check_one = [&](std::size_t len, std::size_t s_off, std::size_t d_off, std::uint32_t init) {
    // Only the span the call may touch, plus its guards, is filled and checked (64 guard bytes
    // before, at least 128 after): filling the whole 3 MiB buffer for each of the 2 730 calls
    // cost 60 s under AddressSanitizer.
    const auto end = static_cast<std::ptrdiff_t>(64 + d_off + len + 128);
    std::fill(dst.begin(), dst.begin() + end, static_cast<unsigned char>(0xA5));
    unsigned char* d = dst.data() + 64 + d_off;  // 64 guard bytes before
    const unsigned char* s = src.data() + s_off;
    const std::uint32_t r = detail::crc32c_copy_stream(init, reinterpret_cast<std::byte*>(d),
                                                       reinterpret_cast<const std::byte*>(s), len);
    ++tried;
    if (len != 0 && std::memcmp(d, s, len) != 0) ++bad_bytes;
    if (r != detail::crc32c_sw(init, s, len)) ++bad_crc;
    const bool before = std::all_of(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(64 + d_off),
                                    [](unsigned char c) { return c == 0xA5; });
    const bool after = std::all_of(dst.begin() + static_cast<std::ptrdiff_t>(64 + d_off + len),
                                   dst.begin() + end, [](unsigned char c) { return c == 0xA5; });
    if (!before || !after) ++bad_guard;
  };
  if (!detail::crc32c_copy_fused()) {
    WARN("no folding kernel on this machine: the fused copy is not exercised");
    return;
  }
  for (std::size_t len = 0; len <= 1100; ++len) {
    check_one(len, len % 64, (len * 7) % 64, static_cast<std::uint32_t>(next()));
    check_one(len, 0, 0, static_cast<std::uint32_t>(next()));
  }
  for (std::size_t d_off = 0; d_off < 64; ++d_off)
    for (std::size_t s_off = 0; s_off < 64; s_off += 9) check_one(4096 + 300, s_off, d_off, 0xFFFFFFFFu);
  for (int trial = 0; trial < 16; ++trial)
    check_one(trial < 2 ? max_len - static_cast<std::size_t>(trial) : next() % (max_len + 1), next() % 64,
              next() % 64, static_cast<std::uint32_t>(next()));
  CHECK(tried == 2 * 1101 + 64 * 8 + 16);
  CHECK(bad_bytes == 0);
  CHECK(bad_crc == 0);
  CHECK(bad_guard == 0);
  // the cap turns the fused kernel off (it is 512-bit only)
  const kernel_cap c(2);
  CHECK_FALSE(detail::crc32c_copy_fused());
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
