// SPDX-License-Identifier: MIT
// latentaudit: the authenticated relay channel — a relay_channel over a tcp_transport that first
// runs a mutual challenge–response under a shared key (HMAC-SHA256 over fresh random nonces of
// both sides and the design hash), then carries every message as seq ‖ payload ‖ tag, the tag an
// HMAC under a per-direction session key over (seq, length, payload). A replayed, reordered,
// truncated or foreign message fails its tag or its sequence number (corrupt_data naming the
// peer). Without a key (an all-zero key, flag "unkeyed") the same framing runs, which checks order
// and integrity against accidents but authenticates nothing. Frames are not encrypted.
// Spec: docs/distributed.md, "Threat model".
#ifndef LATENTAUDIT_DIST_RELAY_AUTH_HPP
#define LATENTAUDIT_DIST_RELAY_AUTH_HPP

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/error.hpp"
#include "../core/hash.hpp"
#include "transport.hpp"

namespace latentaudit::dist {

/// @brief The shortest relay key accepted (bytes).
inline constexpr std::size_t relay_key_min_bytes = 32;
/// @brief The longest relay key file read (bytes).
inline constexpr std::size_t relay_key_max_bytes = 4096;

/// @brief `n` bytes from the kernel's random source (getrandom).
/// @throws error if the kernel gives none.
[[nodiscard]] inline std::vector<std::byte> random_bytes(std::size_t n) {
  std::vector<std::byte> out(n);
  std::size_t off = 0;
  while (off < n) {
    const ssize_t r = ::getrandom(out.data() + off, n - off, 0);
    if (r > 0)
      off += static_cast<std::size_t>(r);
    else if (r < 0 && errno != EINTR)
      LATENTAUDIT_THROW(error(std::string("random_bytes: getrandom failed: ") + std::strerror(errno)));
  }
  return out;
}

/// @brief Reads a relay key from descriptor `fd` to its end (at most relay_key_max_bytes + 1
/// bytes are read); with `text_file`, one trailing "\n" or "\r\n" is dropped (a key file written
/// by an editor), otherwise every byte counts (a random key through a pipe).
/// @throws invalid_argument naming `what` if it cannot be read, is longer than
///         relay_key_max_bytes or shorter than relay_key_min_bytes.
[[nodiscard]] inline std::vector<std::byte> read_relay_key_fd(int fd, std::string_view what,
                                                              bool text_file = false) {
  std::vector<std::byte> key;
  std::byte buf[512];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      LATENTAUDIT_THROW(invalid_argument(std::string(what) + ": cannot be read: " + std::strerror(errno)));
    }
    key.insert(key.end(), buf, buf + r);
    if (key.size() > relay_key_max_bytes)
      LATENTAUDIT_THROW(invalid_argument(std::string(what) + ": holds more than " +
                                         std::to_string(relay_key_max_bytes) +
                                         " bytes (a key, not a file of data)"));
  }
  if (text_file && !key.empty() && key.back() == std::byte{'\n'}) {
    key.pop_back();
    if (!key.empty() && key.back() == std::byte{'\r'}) key.pop_back();
  }
  if (key.size() < relay_key_min_bytes)
    LATENTAUDIT_THROW(invalid_argument(std::string(what) + ": holds a key of " + std::to_string(key.size()) +
                                       " bytes, need at least " + std::to_string(relay_key_min_bytes) +
                                       " (e.g. `head -c 32 /dev/urandom > key`)"));
  return key;
}

/// @brief Why a key file of status `st` must not be used, as ssh refuses a private key (empty:
/// it may): owned by another user than this process's, or readable or writable by its group or
/// others (any of the bits 077). The text names the mode in octal and the fix.
[[nodiscard]] inline std::string key_file_mode_problem(const struct stat& st) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if (st.st_uid != ::geteuid())
    return "is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(::geteuid()) + "): a relay key must be the user's own file (mode 0600)";
  if ((st.st_mode & 077) != 0)
    return std::string("has mode ") + mode +
           ": a relay key must not be readable or writable by group or others (anyone who reads it can "
           "pose as either end); run chmod 600 on it";
  return {};
}

/// @brief Reads a relay key file: a regular file of the user's own, mode 0600 or stricter
/// (key_file_mode_problem; then read_relay_key_fd).
/// @throws invalid_argument naming `what` and the path (and the mode, for a key others may read).
[[nodiscard]] inline std::vector<std::byte> read_relay_key_file(const std::string& path,
                                                                std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    LATENTAUDIT_THROW(
        invalid_argument(std::string(what) + ": '" + path + "' cannot be opened: " + std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    LATENTAUDIT_THROW(invalid_argument(std::string(what) + ": '" + path + "' is not a regular file"));
  }
  if (const auto why = key_file_mode_problem(st); !why.empty()) {
    ::close(fd);
    LATENTAUDIT_THROW(invalid_argument(std::string(what) + ": '" + path + "' " + why));
  }
  try {
    auto k = read_relay_key_fd(fd, std::string(what) + ": '" + path + "'", true);
    ::close(fd);
    return k;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

/// @brief Limits of the authenticated channel's handshake.
struct relay_auth_options {
  /// Seconds the accepting side (server) gives a client for each handshake message: an idle or
  /// trickling client is dropped after this (the caller accepts the next one).
  double hello_timeout_s = 5.0;
  /// Seconds the connecting side (client) waits for the server's answer (it may still be loading).
  double client_wait_s = 600.0;
};

/// @brief A tcp_transport after a mutual challenge–response: every message authenticated,
/// numbered, and bound to the design hash and the two nonces of this connection.
class authenticated_channel final : public relay_channel {
 public:
  /// @brief Handshake as the connecting side. `key` empty: unkeyed (the server must be unkeyed too).
  /// `design_hash` empty: this side has no design yet and adopts the server's (a relay peer that
  /// receives the audit's design over the link; design_hash() names it after the handshake).
  /// @throws corrupt_data if the server fails the challenge; invalid_argument if it runs another
  ///         design or refuses this one; link_error if the link fails or a deadline passes.
  [[nodiscard]] static authenticated_channel client(tcp_transport t, std::span<const std::byte> key,
                                                    const std::string& design_hash,
                                                    const relay_auth_options& o = {}) {
    authenticated_channel c(std::move(t), key, design_hash);
    c.handshake(false, o);
    return c;
  }
  /// @brief Handshake as the accepting side; every wait is o.hello_timeout_s. `design_hash` empty:
  /// adopt the client's design (the client must hold one).
  /// @throws corrupt_data if the client fails the challenge or speaks another protocol (the caller
  ///         drops it), link_error on a deadline, invalid_argument (after telling an authenticated
  ///         client) if the client runs another design, or neither end holds one.
  [[nodiscard]] static authenticated_channel server(tcp_transport t, std::span<const std::byte> key,
                                                    const std::string& design_hash,
                                                    const relay_auth_options& o = {}) {
    authenticated_channel c(std::move(t), key, design_hash);
    c.handshake(true, o);
    return c;
  }

  /// @brief Takes over `o`'s connection and state.
  authenticated_channel(authenticated_channel&& o) noexcept
      : relay_channel(),
        t_(std::move(o.t_)),
        key_(std::move(o.key_)),
        design_(std::move(o.design_)),
        adopt_(o.adopt_),
        keyed_(o.keyed_),
        wire_key_(o.wire_key_),
        send_key_(o.send_key_),
        recv_key_(o.recv_key_),
        send_seq_(o.send_seq_),
        recv_seq_(o.recv_seq_) {}

  void send(std::span<const std::byte> message) override {
    std::vector<std::byte> out(8 + message.size() + 32);
    const std::uint64_t seq = send_seq_++;
    std::memcpy(out.data(), &seq, 8);
    if (!message.empty()) std::memcpy(out.data() + 8, message.data(), message.size());
    const auto tag = tag_of(send_key_, seq, message);
    std::memcpy(out.data() + 8 + message.size(), tag.data(), 32);
    t_.send(out);
  }

  void receive(std::vector<std::byte>& message) override {
    receive_at_most(message, t_.options().max_message_bytes - 40);
  }

  void receive_at_most(std::vector<std::byte>& message, std::uint64_t max_bytes) override {
    t_.receive_at_most(buf_, max_bytes + 40);
    const std::uint64_t seq = recv_seq_++;
    if (buf_.size() < 40)
      LATENTAUDIT_THROW(corrupt_data("relay channel: message " + std::to_string(seq) + " from " +
                                     peer_name() + " is " + std::to_string(buf_.size()) +
                                     " bytes, shorter than its sequence number and tag"));
    std::uint64_t got = 0;
    std::memcpy(&got, buf_.data(), 8);
    const std::span<const std::byte> payload(buf_.data() + 8, buf_.size() - 40);
    const auto tag = tag_of(recv_key_, got, payload);
    if (!digest_equal(tag, std::span<const std::byte>(buf_.data() + buf_.size() - 32, 32)))
      LATENTAUDIT_THROW(corrupt_data("relay channel: message " + std::to_string(seq) + " from " +
                                     peer_name() +
                                     " fails authentication (forged, damaged, or of another connection)"));
    if (got != seq)
      LATENTAUDIT_THROW(corrupt_data("relay channel: message " + std::to_string(seq) + " from " +
                                     peer_name() + " carries sequence number " + std::to_string(got) +
                                     " (replayed or reordered)"));
    message.assign(payload.begin(), payload.end());
  }

  [[nodiscard]] std::string name() const override { return "tcp"; }
  [[nodiscard]] std::string peer_name() const override { return t_.peer_name(); }

  /// @brief Whether the channel runs under a shared key (false: unkeyed, unauthenticated).
  [[nodiscard]] bool keyed() const noexcept { return keyed_; }
  /// @brief The design hash this connection is bound to: this side's, or the one it adopted.
  [[nodiscard]] const std::string& design_hash() const noexcept { return design_; }
  /// @brief The key for the wire frames' own HMAC tag (docs/wire-format.md): HMAC(key, label ‖
  /// design hash); never derived from the design seed.
  [[nodiscard]] const std::array<std::byte, 32>& wire_key() const noexcept { return wire_key_; }

 private:
  static constexpr char magic_[8] = {'L', 'A', 'R', 'E', 'L', 'A', 'Y', '1'};
  static constexpr std::size_t hash_chars_ = 64;

  authenticated_channel(tcp_transport t, std::span<const std::byte> key, const std::string& design_hash)
      : t_(std::move(t)), key_(key.begin(), key.end()), design_(design_hash), adopt_(design_hash.empty()) {
    keyed_ = !key_.empty();
    if (!keyed_) key_.assign(32, std::byte{0});
    design_.resize(hash_chars_, adopt_ ? '*' : '?');  // all '*': "I adopt yours" (never a hash)
    wire_key_ = mac({{"wire", std::as_bytes(std::span(design_))}});
  }

  // Binds the connection to `hash` (an adopted design: 64 lowercase hex digits), and the wire key.
  void adopt(const std::string& hash) {
    if (hash.size() != hash_chars_ || hash.find_first_not_of("0123456789abcdef") != std::string::npos)
      refuse("names no design hash to adopt");
    design_ = hash;
    wire_key_ = mac({{"wire", std::as_bytes(std::span(design_))}});
  }

  using digest = sha256::digest;
  [[nodiscard]] digest mac(
      std::initializer_list<std::pair<std::string_view, std::span<const std::byte>>> parts,
      std::span<const std::byte> key = {}) const {
    hmac_sha256 h(key.empty() ? std::span<const std::byte>(key_) : key);
    for (const auto& [label, bytes] : parts) {
      const std::uint64_t n = label.size();
      h.update(std::as_bytes(std::span(&n, 1)));
      h.update(std::as_bytes(std::span(label.data(), label.size())));
      const std::uint64_t m = bytes.size();
      h.update(std::as_bytes(std::span(&m, 1)));
      h.update(bytes);
    }
    return h.finish();
  }
  [[nodiscard]] digest tag_of(const digest& k, std::uint64_t seq, std::span<const std::byte> payload) const {
    hmac_sha256 h(k);
    const std::uint64_t n = payload.size();
    h.update(std::as_bytes(std::span(&seq, 1)));
    h.update(std::as_bytes(std::span(&n, 1)));
    h.update(payload);
    return h.finish();
  }

  [[noreturn]] void refuse(const std::string& why) const {
    LATENTAUDIT_THROW(corrupt_data("relay channel: " + peer_name() + " " + why));
  }

  void handshake(bool server, const relay_auth_options& o) {
    std::vector<std::byte> m;
    const auto my_nonce = random_bytes(32);
    std::vector<std::byte> nc, ns;
    const std::byte flag = keyed_ ? std::byte{1} : std::byte{0};
    auto hello_of = [&](std::span<const std::byte> nonce) {
      std::vector<std::byte> h(std::as_bytes(std::span(magic_)).begin(),
                               std::as_bytes(std::span(magic_)).end());
      h.push_back(flag);
      h.insert(h.end(), nonce.begin(), nonce.end());
      return h;
    };
    auto check_hello = [&](const std::vector<std::byte>& h, std::size_t extra) {
      if (h.size() != 8 + 1 + 32 + extra || std::memcmp(h.data(), magic_, 8) != 0)
        refuse("does not speak the latentaudit relay protocol (version 1)");
      if (h[8] != flag)
        refuse(
            keyed_
                ? "has no relay key, but this end has one (--relay-key-file): give both ends the same key"
                : "has a relay key, but this end has none (--relay-key-file): give both ends the same key");
    };
    const auto dh = std::as_bytes(std::span(design_));
    if (server) {
      t_.set_timeout(o.hello_timeout_s);
      // 1. the client's nonce and its design hash
      t_.receive_at_most(m, 8 + 1 + 32 + hash_chars_);
      if (m.size() == 8 + 1 + 32 + hash_chars_ && std::memcmp(m.data(), magic_, 8) == 0 && m[8] != flag) {
        // one end keyed, the other not: answer with this end's hello (its key flag, no proof) so the
        // client names that cause too, not "the peer closed the link"
        auto reply = hello_of(my_nonce);
        reply.resize(reply.size() + 32);
        try {
          t_.send(reply);
        } catch (const error&) {  // the refusal below names the cause on this end either way
        }
      }
      check_hello(m, hash_chars_);
      nc.assign(m.begin() + 9, m.begin() + 41);
      std::string client_design(reinterpret_cast<const char*>(m.data()) + 41, hash_chars_);
      ns = my_nonce;
      // 2. our nonce and the proof that we hold the key (over both nonces and the client's design)
      const auto cd = std::as_bytes(std::span(client_design));
      auto reply = hello_of(ns);
      const auto proof_s = mac({{"server", nc}, {"nonce", ns}, {"design", cd}});
      reply.insert(reply.end(), proof_s.begin(), proof_s.end());
      t_.send(reply);
      // 3. the client's proof
      t_.receive_at_most(m, 32);
      const auto proof_c = mac({{"client", nc}, {"nonce", ns}, {"design", cd}});
      if (m.size() != 32 || !digest_equal(proof_c, m))
        refuse("fails the challenge (it does not hold the relay key)");
      derive(nc, ns, cd, true);
      t_.set_timeout(o.client_wait_s);
      // 4. the verdict on the design, authenticated: a client that adopts ours gets its hash; a
      // server without one adopts the client's
      const bool client_adopts = client_design == std::string(hash_chars_, '*');
      if (client_adopts && adopt_) {
        const std::string why = "neither end holds a design (both relay peers): start the audit at one end";
        const std::string v = "E" + why;
        send(std::as_bytes(std::span(v.data(), v.size())));
        latentaudit::detail::throw_invalid("relay channel", "design", why);
      }
      if (client_adopts) {
        const std::string v = "K" + design_;
        send(std::as_bytes(std::span(v.data(), v.size())));
        return;
      }
      if (adopt_) adopt(client_design);
      if (client_design != design_) {
        const std::string why = "the receiver's design (hash " + client_design +
                                ") differs from the relay peer's (hash " + design_ +
                                "): run both with the same options";
        const std::string v = "E" + why;
        send(std::as_bytes(std::span(v.data(), v.size())));
        latentaudit::detail::throw_invalid("relay channel", "design", why);
      }
      static constexpr std::byte ok[] = {std::byte{'K'}};
      send(ok);
    } else {
      t_.set_timeout(o.client_wait_s);
      nc = my_nonce;
      auto hello = hello_of(nc);
      hello.insert(hello.end(), dh.begin(), dh.end());
      t_.send(hello);
      t_.receive_at_most(m, 8 + 1 + 32 + 32);
      check_hello(m, 32);
      ns.assign(m.begin() + 9, m.begin() + 41);
      const auto proof_s = mac({{"server", nc}, {"nonce", ns}, {"design", dh}});
      if (!digest_equal(proof_s, std::span<const std::byte>(m.data() + 41, 32)))
        refuse("fails the challenge (it does not hold the relay key)");
      const auto proof_c = mac({{"client", nc}, {"nonce", ns}, {"design", dh}});
      t_.send(proof_c);
      derive(nc, ns, dh, false);
      receive_at_most(m, 1 << 12);
      if (m.empty() || (m[0] != std::byte{'K'} && m[0] != std::byte{'E'}))
        refuse("sends an invalid verdict on the design");
      if (adopt_ && m[0] == std::byte{'K'})  // the server's design, which this side adopts
        adopt(std::string(reinterpret_cast<const char*>(m.data()) + 1, m.size() - 1));
      if (m[0] == std::byte{'E'})
        latentaudit::detail::throw_invalid(
            "relay channel", "design",
            "is refused by the relay peer: " +
                std::string(reinterpret_cast<const char*>(m.data()) + 1, m.size() - 1));
    }
  }

  void derive(std::span<const std::byte> nc, std::span<const std::byte> ns, std::span<const std::byte> dh,
              bool server) {
    const auto c2s = mac({{"c2s", nc}, {"nonce", ns}, {"design", dh}});
    const auto s2c = mac({{"s2c", nc}, {"nonce", ns}, {"design", dh}});
    send_key_ = server ? s2c : c2s;
    recv_key_ = server ? c2s : s2c;
  }

  tcp_transport t_;
  std::vector<std::byte> key_;
  std::string design_;
  bool adopt_ = false;  // constructed without a design: adopts the other end's in the handshake
  bool keyed_ = false;
  digest wire_key_{};
  digest send_key_{}, recv_key_{};
  std::uint64_t send_seq_ = 0, recv_seq_ = 0;
  std::vector<std::byte> buf_;
};

}  // namespace latentaudit::dist

#endif  // LATENTAUDIT_DIST_RELAY_AUTH_HPP
