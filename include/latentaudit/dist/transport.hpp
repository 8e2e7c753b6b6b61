// SPDX-License-Identifier: MIT
// latentaudit: relay transports — real links between the process of agent A and the process of
// agent B, under the relay_channel interface (below). tcp: POSIX stream sockets (loopback
// or any host), each message framed by an 8-byte little-endian length, every wait bounded by a
// deadline, and a length above the receiver's limit refused before anything is allocated. The mpi
// transport is in dist/transport_mpi.hpp (built where MPI is). A fault-injecting wrapper tampers
// with received messages, for tests of the receiver's rejection path. Spec: docs/wire-format.md,
// "Relay over a real link".
#ifndef LATENTAUDIT_DIST_TRANSPORT_HPP
#define LATENTAUDIT_DIST_TRANSPORT_HPP

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../trial/link.hpp"

namespace latentaudit::dist {

/// @brief A message channel between the process of agent B (the trial driver) and the process of
/// agent A (its peer, dist::serve_sender): whole messages, in order, each delivered intact or not at
/// all. Implementations: tcp_transport (below), mpi_transport (dist/transport_mpi.hpp),
/// authenticated_channel (dist/relay_auth.hpp). The relay protocol on top of it:
/// dist/relay_protocol.hpp (docs/wire-format.md, "Relay over a real link").
class relay_channel {
 public:
  relay_channel() = default;
  relay_channel(const relay_channel&) = delete;
  relay_channel& operator=(const relay_channel&) = delete;
  virtual ~relay_channel() = default;
  /// @brief Sends one message (blocks until it is handed to the link).
  /// @throws link_error if the link fails or the deadline passes.
  virtual void send(std::span<const std::byte> message) = 0;
  /// @brief Receives the next message into `message` (replacing its contents).
  /// @throws link_error if the link fails, the deadline passes or the message exceeds the limit.
  virtual void receive(std::vector<std::byte>& message) = 0;
  /// @brief Receives the next message, refusing one longer than `max_bytes` — before allocating
  /// it where the transport announces lengths (tcp, mpi); the default receives, then checks.
  /// @throws link_error naming the peer if the message is longer; as receive otherwise.
  virtual void receive_at_most(std::vector<std::byte>& message, std::uint64_t max_bytes) {
    receive(message);
    if (message.size() > max_bytes)
      LATENTAUDIT_THROW(link_error("relay channel: " + peer_name() + " sent a message of " +
                                   std::to_string(message.size()) + " bytes, above the " +
                                   std::to_string(max_bytes) + " expected here"));
  }
  /// @brief Who is at the other end, for error messages ("the relay peer at 127.0.0.1:7700").
  [[nodiscard]] virtual std::string peer_name() const { return "the relay peer"; }
  /// @brief The transport's name as records and reports show it ("tcp", "mpi").
  [[nodiscard]] virtual std::string name() const = 0;
};

/// @brief Limits of a transport: how long one wait may last and how large one message may be.
struct transport_options {
  double timeout_s = 120.0;  ///< deadline of each send, receive, connect or accept (> 0)
  /// Largest message the receiver accepts (bytes); a longer length prefix is refused before
  /// allocation (default 4 GiB: a KV frame of an 8B model at 16k tokens is 2 GiB in bf16).
  std::uint64_t max_message_bytes = std::uint64_t{1} << 32;
  /// Connection attempts of tcp_transport::connect before it gives up (0: until timeout_s); each
  /// attempt waits at most connect_attempt_s, with 0.1, 0.2, 0.4, ... (at most 1) s between them.
  int connect_attempts = 0;
  double connect_attempt_s = 5.0;  ///< deadline of one connection attempt (> 0)
  /// Longest pause (seconds) between the bytes of one message once its first byte has moved: a
  /// peer that trickles a message is cut off after it, not only at timeout_s (0: no such limit).
  double idle_s = 0.0;
};

/// @brief "HOST:PORT" split into host and port.
struct host_port {
  std::string host;    ///< name or address ("127.0.0.1", "node12", "::1" written "[::1]")
  std::uint16_t port;  ///< 0..65535 (0 when listening: any free port)
};

/// @brief Parses "HOST:PORT" ("[v6 address]:PORT" for IPv6).
/// @throws invalid_argument naming `what` if the text is not of that form.
[[nodiscard]] inline host_port parse_host_port(std::string_view text, std::string_view what = "address") {
  const auto colon = text.rfind(':');
  auto bad = [&]() -> host_port {
    latentaudit::detail::throw_invalid("parse_host_port", what,
                                       "must read HOST:PORT, got '" + std::string(text) + "'");
  };
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return bad();
  std::string host(text.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned long port = 0;
  for (char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9') return bad();
    port = port * 10 + static_cast<unsigned long>(c - '0');
    if (port > 65535) return bad();
  }
  if (host.empty()) return bad();
  return {host, static_cast<std::uint16_t>(port)};
}

namespace detail {

using transport_clock = std::chrono::steady_clock;

[[noreturn]] inline void throw_link(const std::string& what) { LATENTAUDIT_THROW(link_error(what)); }

inline transport_clock::time_point deadline_after(double s) {
  return transport_clock::now() +
         std::chrono::duration_cast<transport_clock::duration>(std::chrono::duration<double>(s));
}

// Waits until fd is ready for `events` or the deadline passes (link_error naming `what`).
inline void wait_fd(int fd, short events, transport_clock::time_point deadline, const char* what) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - transport_clock::now());
    if (left.count() <= 0) throw_link(std::string("tcp transport: timed out while ") + what);
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30)));
    if (r > 0) return;
    if (r < 0 && errno != EINTR)
      throw_link(std::string("tcp transport: poll failed while ") + what + ": " + std::strerror(errno));
  }
}

// An owned socket descriptor.
class socket_fd {
 public:
  socket_fd() = default;
  explicit socket_fd(int fd) noexcept : fd_(fd) {}
  socket_fd(socket_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  socket_fd& operator=(socket_fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~socket_fd() { reset(); }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  [[nodiscard]] int get() const noexcept { return fd_; }

 private:
  int fd_ = -1;
};

struct addrinfo_list {
  addrinfo* head = nullptr;
  ~addrinfo_list() {
    if (head != nullptr) ::freeaddrinfo(head);
  }
};

inline void resolve(const host_port& hp, bool passive, addrinfo_list& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const std::string port = std::to_string(hp.port);
  const int rc = ::getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &out.head);
  if (rc != 0 || out.head == nullptr)
    throw_link("tcp transport: cannot resolve '" + hp.host + "': " + ::gai_strerror(rc));
}

}  // namespace detail

/// @brief A connected TCP stream carrying length-prefixed messages (relay_channel). Made by
/// tcp_transport::connect or tcp_listener::accept; moves, does not copy.
class tcp_transport final : public relay_channel {
 public:
  /// @brief Connects to "HOST:PORT", retrying refused connections until the deadline (the peer
  /// may still be starting).
  /// @throws invalid_argument on a malformed address; link_error when no connection is made in time.
  [[nodiscard]] static tcp_transport connect(std::string_view address, const transport_options& o = {}) {
    check_options(o);
    const host_port hp = parse_host_port(address, "address");
    const auto deadline = detail::deadline_after(o.timeout_s);
    std::string last = "no address";
    double pause = 0.1;
    for (int attempt = 1;; ++attempt) {
      detail::addrinfo_list ai;
      detail::resolve(hp, false, ai);
      for (addrinfo* p = ai.head; p != nullptr; p = p->ai_next) {
        detail::socket_fd s(
            ::socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, p->ai_protocol));
        if (s.get() < 0) continue;
        if (connect_one(s.get(), p, std::min(deadline, detail::deadline_after(o.connect_attempt_s)), last)) {
          const int flags = ::fcntl(s.get(), F_GETFL);
          if (flags >= 0) (void)::fcntl(s.get(), F_SETFL, flags & ~O_NONBLOCK);
          tcp_transport t(std::move(s), o);
          t.peer_ = "the relay peer at " + std::string(address);
          return t;
        }
      }
      if (detail::transport_clock::now() >= deadline ||
          (o.connect_attempts > 0 && attempt >= o.connect_attempts))
        detail::throw_link("tcp transport: cannot connect to '" + std::string(address) + "' (" +
                           std::to_string(attempt) + (attempt == 1 ? " attempt" : " attempts") +
                           "): " + last);
      ::usleep(static_cast<useconds_t>(pause * 1e6));
      pause = std::min(1.0, pause * 2);
    }
  }

  /// @brief Takes over `o`'s connection (o is left closed).
  tcp_transport(tcp_transport&& o) noexcept
      : relay_channel(), fd_(std::move(o.fd_)), opt_(o.opt_), peer_(std::move(o.peer_)) {}

  void send(std::span<const std::byte> message) override {
    const auto deadline = detail::deadline_after(opt_.timeout_s);
    const std::uint64_t n = message.size();
    std::byte prefix[8];
    std::memcpy(prefix, &n, 8);
    in_message_ = false;
    write_all(std::span<const std::byte>(prefix, 8), deadline);
    in_message_ = true;  // the prefix moved: the message's bytes may not pause past idle_s
    write_all(message, deadline);
    in_message_ = false;
  }

  void receive(std::vector<std::byte>& message) override { receive_at_most(message, opt_.max_message_bytes); }

  void receive_at_most(std::vector<std::byte>& message, std::uint64_t max_bytes) override {
    const auto deadline = detail::deadline_after(opt_.timeout_s);
    std::byte prefix[8];
    in_message_ = false;
    read_all(std::span<std::byte>(prefix, 8), deadline);
    in_message_ = true;
    std::uint64_t n = 0;
    std::memcpy(&n, prefix, 8);
    const std::uint64_t limit = std::min(max_bytes, opt_.max_message_bytes);
    if (n > limit)
      detail::throw_link("tcp transport: " + peer_ + " announces a message of " + std::to_string(n) +
                         " bytes, above the limit of " + std::to_string(limit) +
                         " for this message; refused before allocation");
    message.resize(static_cast<std::size_t>(n));
    read_all(message, deadline);
    in_message_ = false;
  }

  [[nodiscard]] std::string peer_name() const override { return peer_; }

  /// @brief Sets the deadline of each later send and receive (seconds, > 0).
  void set_timeout(double seconds) {
    transport_options o = opt_;
    o.timeout_s = seconds;
    check_options(o);
    opt_ = o;
  }

  [[nodiscard]] std::string name() const override { return "tcp"; }

  /// @brief The options in force.
  [[nodiscard]] const transport_options& options() const noexcept { return opt_; }

  /// @brief Closes the stream (the peer's next receive fails with link_error).
  void close() noexcept { fd_.reset(); }

  /// @brief The connected socket's descriptor (-1 once closed), still owned by this object: for
  /// poll(2) in an event loop, or for a test writing raw bytes as a misbehaving peer would.
  [[nodiscard]] int native_handle() const noexcept { return fd_.get(); }

 private:
  friend class tcp_listener;
  tcp_transport(detail::socket_fd fd, const transport_options& o) : fd_(std::move(fd)), opt_(o) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
    if (::getpeername(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0)
      (void)::getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                          NI_NUMERICHOST | NI_NUMERICSERV);
    peer_ = std::string("the relay peer at ") + (a.ss_family == AF_INET6 ? "[" : "") + host +
            (a.ss_family == AF_INET6 ? "]" : "") + ":" + serv;
    const int one = 1;  // relays are request/response: no Nagle delay on the small messages
    (void)::setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }

  static void check_options(const transport_options& o) {
    if (!(o.timeout_s > 0) || !(o.timeout_s < 1e9))
      latentaudit::detail::throw_invalid("tcp_transport", "options.timeout_s", "must be in (0, 1e9) seconds");
    if (!(o.idle_s >= 0) || !(o.idle_s < 1e9))
      latentaudit::detail::throw_invalid("tcp_transport", "options.idle_s", "must be in [0, 1e9) seconds");
    if (!(o.connect_attempt_s > 0) || !(o.connect_attempt_s < 1e9) || o.connect_attempts < 0)
      latentaudit::detail::throw_invalid("tcp_transport", "options.connect_attempt_s",
                                         "must be in (0, 1e9) seconds, with connect_attempts >= 0");
  }

  // One non-blocking connection attempt on `fd` (true: connected); `last` gets the reason of a failure.
  static bool connect_one(int fd, const addrinfo* p, detail::transport_clock::time_point deadline,
                          std::string& last) {
    if (::connect(fd, p->ai_addr, p->ai_addrlen) == 0) return true;
    if (errno != EINPROGRESS && errno != EINTR) {
      last = std::strerror(errno);
      return false;
    }
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - detail::transport_clock::now());
      if (left.count() <= 0) {
        last = "timed out";
        return false;
      }
      pollfd q{fd, POLLOUT, 0};
      const int r = ::poll(&q, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) continue;
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err == 0) return true;
      last = std::strerror(err);
      return false;
    }
  }

  // The deadline of the next wait: the message's, or sooner once `off` bytes of it have moved and
  // options.idle_s is set (a trickling peer). `off` counts this call's bytes; a length prefix
  // and its message are one message (moved_ is kept across the two calls).
  [[nodiscard]] detail::transport_clock::time_point idle_deadline(
      detail::transport_clock::time_point deadline, std::size_t off) const {
    if (!(opt_.idle_s > 0) || (off == 0 && !in_message_)) return deadline;
    return std::min(deadline, moved_ + std::chrono::duration_cast<detail::transport_clock::duration>(
                                           std::chrono::duration<double>(opt_.idle_s)));
  }

  void write_all(std::span<const std::byte> b, detail::transport_clock::time_point deadline) {
    if (fd_.get() < 0) detail::throw_link("tcp transport: send on a closed link");
    std::size_t off = 0;
    while (off < b.size()) {
      detail::wait_fd(fd_.get(), POLLOUT, idle_deadline(deadline, off), "sending");
      const ssize_t w = ::send(fd_.get(), b.data() + off, b.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        off += static_cast<std::size_t>(w);
        moved_ = detail::transport_clock::now();
      } else if (w < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
        detail::throw_link(std::string("tcp transport: send failed: ") + std::strerror(errno));
      }
    }
  }

  void read_all(std::span<std::byte> b, detail::transport_clock::time_point deadline) {
    if (fd_.get() < 0) detail::throw_link("tcp transport: receive on a closed link");
    std::size_t off = 0;
    while (off < b.size()) {
      detail::wait_fd(fd_.get(), POLLIN, idle_deadline(deadline, off), "receiving");
      const ssize_t r = ::recv(fd_.get(), b.data() + off, b.size() - off, MSG_DONTWAIT);
      if (r > 0) {
        off += static_cast<std::size_t>(r);
        moved_ = detail::transport_clock::now();
      } else if (r == 0) {
        detail::throw_link("tcp transport: the peer closed the link after " + std::to_string(off) + " of " +
                           std::to_string(b.size()) + " bytes");
      } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
        detail::throw_link(std::string("tcp transport: receive failed: ") + std::strerror(errno));
      }
    }
  }

  detail::socket_fd fd_;
  transport_options opt_;
  detail::transport_clock::time_point moved_{};  // when the last byte of the current message moved
  bool in_message_ = false;                      // a message's length prefix has moved
  std::string peer_ = "the relay peer";
};

/// @brief A listening TCP socket that accepts tcp_transport connections.
class tcp_listener {
 public:
  /// @brief Listens on "HOST:PORT" (port 0: any free port; port() says which).
  /// @throws invalid_argument on a malformed address; link_error if the address cannot be bound.
  explicit tcp_listener(std::string_view address, const transport_options& o = {}) : opt_(o) {
    tcp_transport::check_options(o);
    const host_port hp = parse_host_port(address, "listen address");
    detail::addrinfo_list ai;
    detail::resolve(hp, true, ai);
    std::string last = "no address";
    for (addrinfo* p = ai.head; p != nullptr; p = p->ai_next) {
      detail::socket_fd s(::socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol));
      if (s.get() < 0) continue;
      const int one = 1;
      (void)::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(s.get(), p->ai_addr, p->ai_addrlen) == 0 && ::listen(s.get(), 4) == 0) {
        sockaddr_storage a{};
        socklen_t len = sizeof a;
        if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0)
          port_ = a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port)
                                          : ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
        fd_ = std::move(s);
        return;
      }
      last = std::strerror(errno);
    }
    detail::throw_link("tcp transport: cannot listen on '" + std::string(address) + "': " + last);
  }

  /// @brief The port listened on.
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

  /// @brief Accepts one connection, waiting at most options.timeout_s.
  /// @param still_waiting called about every 200 ms while no peer has connected; it throws to give
  ///        up early (e.g. when the process that was to connect has exited), so a peer that died
  ///        before connecting ends the wait at once rather than after the whole timeout.
  /// @throws link_error when none comes in time; whatever `still_waiting` throws.
  [[nodiscard]] tcp_transport accept(const std::function<void()>& still_waiting = {}) {
    const auto deadline = detail::deadline_after(opt_.timeout_s);
    for (;;) {
      if (still_waiting) {
        const auto slice =
            std::min(deadline, detail::transport_clock::now() + std::chrono::milliseconds(200));
        pollfd p{fd_.get(), POLLIN, 0};
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(slice - detail::transport_clock::now());
        const int r = ::poll(&p, 1, static_cast<int>(std::max<long long>(left.count(), 0)));
        if (r < 0 && errno != EINTR)
          detail::throw_link(
              std::string("tcp transport: poll failed while waiting for the peer to connect: ") +
              std::strerror(errno));
        if (r <= 0) {
          if (detail::transport_clock::now() >= deadline)
            detail::throw_link("tcp transport: timed out while waiting for the peer to connect");
          still_waiting();
          continue;
        }
      } else {
        detail::wait_fd(fd_.get(), POLLIN, deadline, "waiting for the peer to connect");
      }
      const int c = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) return tcp_transport(detail::socket_fd(c), opt_);
      if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
        detail::throw_link(std::string("tcp transport: accept failed: ") + std::strerror(errno));
    }
  }

 private:
  detail::socket_fd fd_;
  transport_options opt_;
  std::uint16_t port_ = 0;
};

/// @brief Test hook: a relay_channel that forwards to another and lets `tamper(index, message)`
/// change each received message (index counts received messages from 0) — flip a byte, truncate —
/// so tests can check that the receiver rejects a damaged frame and never imports it.
class fault_injecting_channel final : public relay_channel {
 public:
  /// @brief Tampers with messages received from `inner` (which must outlive this object).
  fault_injecting_channel(relay_channel& inner,
                          std::function<void(std::uint64_t index, std::vector<std::byte>& message)> tamper)
      : inner_(inner), tamper_(std::move(tamper)) {}
  void send(std::span<const std::byte> message) override { inner_.send(message); }
  void receive(std::vector<std::byte>& message) override {
    inner_.receive(message);
    if (tamper_) tamper_(received_, message);
    ++received_;
  }
  void receive_at_most(std::vector<std::byte>& message, std::uint64_t max_bytes) override {
    inner_.receive_at_most(message, max_bytes);
    if (tamper_) tamper_(received_, message);
    ++received_;
  }
  [[nodiscard]] std::string name() const override { return inner_.name(); }
  [[nodiscard]] std::string peer_name() const override { return inner_.peer_name(); }

 private:
  relay_channel& inner_;
  std::function<void(std::uint64_t, std::vector<std::byte>&)> tamper_;
  std::uint64_t received_ = 0;
};

}  // namespace latentaudit::dist

#endif  // LATENTAUDIT_DIST_TRANSPORT_HPP
