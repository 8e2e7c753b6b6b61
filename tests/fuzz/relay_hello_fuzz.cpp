// SPDX-License-Identifier: MIT
// libFuzzer target for the relay channel's handshake (dist/relay_auth.hpp; docs/distributed.md,
// "Threat model"): any byte string sent by a stranger on 127.0.0.1 — to the accepting side (the
// relay peer's `--listen`, or the audit's listener) or as the answer to a connecting side — must
// end the handshake with a latentaudit::error (corrupt_data, link_error or invalid_argument),
// never with a crash, a hang past the handshake's deadline, an allocation beyond what the
// protocol's messages can hold, or an accepted channel: the input cannot hold a proof over the
// other side's fresh nonce (keyed or not), so an accepted channel is a failure (abort). The bytes go through
// real sockets, length prefixes included, so the framing is fuzzed with the hello.
#include <latentaudit/dist/relay_auth.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using namespace latentaudit;

// Closes `fd` with a reset instead of a FIN (SO_LINGER 0): no TIME_WAIT entry is left behind. Tens
// of thousands of connections a second would otherwise fill the ephemeral port range (a harness
// limit, not a finding: connect failed with EADDRNOTAVAIL under a loaded suite).
void no_time_wait(int fd) {
  const linger l{.l_onoff = 1, .l_linger = 0};
  (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

// A raw client socket connected to 127.0.0.1:port (the stranger); -1 when no connection can be made
// (the machine's ports, not the input: the input is then skipped).
int raw_connect(std::uint16_t port) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) std::abort();
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) return fd;
    const int e = errno;
    ::close(fd);
    if (e != EADDRNOTAVAIL && e != EAGAIN && e != EINTR) {
      std::perror("relay_hello_fuzz: connect");
      std::abort();  // the listener is there: anything else is a failure
    }
    ::usleep(20'000);
  }
  return -1;
}

void write_all(int fd, const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    const ssize_t w = ::send(fd, data, size, MSG_NOSIGNAL);
    if (w <= 0) return;  // the other side closed: what it read is what it got
    data += w;
    size -= static_cast<std::size_t>(w);
  }
}

const std::string design(64, 'd');
const std::string key_text(32, 'k');
const std::span<const std::byte> key = std::as_bytes(std::span(key_text));

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The hello and the proof are under 200 bytes: longer inputs only repeat the refusal.
  if (size > 4096) return 0;
  static dist::tcp_listener listener("127.0.0.1:0", {.timeout_s = 5});
  const dist::relay_auth_options fast{.hello_timeout_s = 2, .client_wait_s = 2};
  for (const bool keyed : {true, false}) {
    const auto k = keyed ? key : std::span<const std::byte>();
    // 1. the stranger connects to the accepting side and sends the input, then half-closes
    {
      const int c = raw_connect(listener.port());
      if (c < 0) return 0;
      write_all(c, data, size);
      ::shutdown(c, SHUT_WR);
      try {
        auto t = listener.accept();
        no_time_wait(t.native_handle());
        (void)dist::authenticated_channel::server(std::move(t), k, design, fast);
        std::abort();  // accepted: the input cannot answer this side's fresh nonce
      } catch (const latentaudit::error&) {
      }
      no_time_wait(c);
      ::close(c);
    }
    // 2. a connecting side's answer is the input
    {
      dist::tcp_transport t =
          dist::tcp_transport::connect("127.0.0.1:" + std::to_string(listener.port()), {.timeout_s = 5});
      auto s = listener.accept();
      no_time_wait(t.native_handle());
      no_time_wait(s.native_handle());
      (void)s;
      try {
        // the server's half is the input, written raw on the accepted socket
        const int fd = s.native_handle();
        write_all(fd, data, size);
        ::shutdown(fd, SHUT_WR);
        (void)dist::authenticated_channel::client(std::move(t), k, design, fast);
        std::abort();  // believed: the input cannot answer this side's fresh nonce
      } catch (const latentaudit::error&) {
      }
    }
  }
  return 0;
}
