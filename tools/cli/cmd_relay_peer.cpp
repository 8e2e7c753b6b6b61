// SPDX-License-Identifier: MIT
// `latentaudit relay-peer`: agent A of an audit whose relays cross a real link — it receives the
// audit's design over the link (its own options give the models and tasks it runs it on), then
// serves the sender's half of every relay (read, export, policy or placebo, encode, send the wire
// frame) to the audit (agent B) at the other end of a tcp connection. `audit --relay-transport tcp` spawns
// one on loopback when no --relay-peer is given. docs/distributed.md, "Relay over a real link".
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "relay_session.hpp"

extern char** environ;

namespace latentaudit::cli {

namespace {
// Seconds each wait of the CLI's links may last (a peer loading a large model before its greeting).
constexpr double cli_link_timeout_s = 600.0;
// Connection attempts (0.1, 0.2, 0.4, 0.8, 1, 1, 1 s apart: about 5 s against a closed port).
constexpr int cli_connect_attempts = 8;
constexpr double cli_connect_attempt_s = 5.0;
// Seconds the bytes of one message may pause once it has begun (a peer trickling a message).
constexpr double cli_idle_s = 60.0;
// Seconds an accepted client has for each handshake message before it is dropped.
constexpr double cli_hello_timeout_s = 5.0;

dist::transport_options cli_transport() {
  return {.timeout_s = cli_link_timeout_s,
          .connect_attempts = cli_connect_attempts,
          .connect_attempt_s = cli_connect_attempt_s,
          .idle_s = cli_idle_s};
}

// Whether every address `host` resolves to is a loopback one (127.0.0.0/8, ::1).
bool loopback_only(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* head = nullptr;
  if (::getaddrinfo(host.c_str(), "1", &hints, &head) != 0 || head == nullptr) return false;
  bool all = true;
  for (addrinfo* p = head; p != nullptr; p = p->ai_next) {
    if (p->ai_family == AF_INET) {
      const auto a = ntohl(reinterpret_cast<const sockaddr_in*>(p->ai_addr)->sin_addr.s_addr);
      all = all && (a >> 24) == 127;
    } else if (p->ai_family == AF_INET6) {
      all = all && IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(p->ai_addr)->sin6_addr);
    } else {
      all = false;
    }
  }
  ::freeaddrinfo(head);
  return all;
}

// Without a key: loopback only (exit 2 otherwise); channel() says on stderr that it is unauthenticated.
void check_unkeyed(const std::string& who, const std::string& option, const std::string& address) {
  const std::string host = dist::parse_host_port(address, option).host;
  if (!loopback_only(host))
    throw usage_error(who + ": option " + option + " '" + address +
                      "' is not a loopback address: a relay across machines needs a shared key "
                      "(--relay-key-file FILE or LATENTAUDIT_RELAY_KEY_FILE, at least 32 bytes; "
                      "docs/distributed.md, \"Threat model\")");
}

// The key of --relay-key-file FILE, else of $LATENTAUDIT_RELAY_KEY_FILE, else none (empty).
std::vector<std::byte> key_from(const std::optional<std::string>& file, const std::string& who) {
  std::string option = "option --relay-key-file";
  std::optional<std::string> path = file;
  if (!path)
    if (const char* e = std::getenv("LATENTAUDIT_RELAY_KEY_FILE"); e != nullptr && *e != 0) {
      path = e;
      option = "LATENTAUDIT_RELAY_KEY_FILE";
    }
  if (!path) return {};
  try {
    return dist::read_relay_key_file(*path, option);
  } catch (const invalid_argument& e) {
    throw usage_error(who + ": " + e.what());
  }
}
}  // namespace

std::unique_ptr<relay_session> relay_session::for_audit(const arguments& args,
                                                        std::span<const std::string> words) {
  const auto transport = args.get("--relay-transport");
  const auto peer = args.get("--relay-peer");
  if (!transport) {
    if (peer) throw usage_error("audit: option --relay-peer needs --relay-transport tcp");
    if (args.get("--relay-key-file"))
      throw usage_error("audit: option --relay-key-file needs --relay-transport tcp");
    return nullptr;
  }
  if (*transport != "tcp") {
    if (args.get("--relay-key-file"))
      throw usage_error("audit: option --relay-key-file applies to --relay-transport tcp");
    throw usage_error("audit: option --relay-transport must be tcp or mpi, got '" + *transport + "'");
  }
  std::unique_ptr<relay_session> s(new relay_session());
  s->key_ = key_from(args.get("--relay-key-file"), "audit");
  if (peer) {
    try {
      (void)dist::parse_host_port(*peer, "--relay-peer");
    } catch (const error&) {
      throw usage_error("audit: option --relay-peer must read HOST:PORT, got '" + *peer + "'");
    }
    if (s->key_.empty()) check_unkeyed("audit", "--relay-peer", *peer);
    s->connect_to_ = *peer;
    return s;
  }
  // A loopback peer: listen on a free port, spawn `latentaudit relay-peer --connect` with the
  // audit's values of the peer's options (`words`: peer_words), its stdout to /dev/null (its errors stay on
  // stderr). It gets a fresh random key through an inherited pipe (descriptor 3): a local process that
  // connects to the port first fails the challenge and is dropped.
  s->key_ = dist::random_bytes(32);
  s->listener_.emplace("127.0.0.1:0", cli_transport());
  std::vector<std::string> argv = {"latentaudit",    "relay-peer",
                                   "--relay-key-fd", "3",
                                   "--connect",      "127.0.0.1:" + std::to_string(s->listener_->port())};
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--relay-transport" || w == "--relay-peer" || w == "--relay-key-file") {
      ++i;
      continue;
    }
    if (w.rfind("--relay-transport=", 0) == 0 || w.rfind("--relay-peer=", 0) == 0 ||
        w.rfind("--relay-key-file=", 0) == 0)
      continue;
    argv.push_back(w);
  }
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  int kp[2];
  if (::pipe2(kp, O_CLOEXEC) != 0)
    throw usage_error(std::string("audit: cannot start the loopback relay peer: pipe: ") +
                      std::strerror(errno));
  const bool wrote = ::write(kp[1], s->key_.data(), s->key_.size()) == static_cast<ssize_t>(s->key_.size());
  ::close(kp[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, kp[0], 3);  // dup2 clears close-on-exec on descriptor 3
  pid_t pid = -1;
  const int rc = wrote ? ::posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, cargv.data(), environ) : EIO;
  posix_spawn_file_actions_destroy(&fa);
  ::close(kp[0]);
  if (rc != 0)
    throw usage_error(std::string("audit: cannot start the loopback relay peer: ") + std::strerror(rc));
  s->child_ = pid;
  return s;
}

std::unique_ptr<relay_session> relay_session::for_peer(const std::string& listen, const std::string& connect,
                                                       std::vector<std::byte> key) {
  std::unique_ptr<relay_session> s(new relay_session());
  s->who_ = "relay-peer";
  s->key_ = std::move(key);
  try {
    if (!connect.empty()) (void)dist::parse_host_port(connect, "--connect");
    if (!listen.empty()) (void)dist::parse_host_port(listen, "--listen");
  } catch (const invalid_argument&) {
    throw usage_error("relay-peer: option " + std::string(listen.empty() ? "--connect" : "--listen") +
                      " must read HOST:PORT, got '" + (listen.empty() ? connect : listen) + "'");
  }
  if (s->key_.empty())
    check_unkeyed("relay-peer", listen.empty() ? "--connect" : "--listen", listen.empty() ? connect : listen);
  if (!listen.empty())
    s->listener_.emplace(listen, cli_transport());
  else
    s->connect_to_ = connect;
  return s;
}

dist::relay_channel& relay_session::channel(std::size_t i, std::size_t n, const std::string& design_hash) {
  if (links_.empty()) {
    open_link(design_hash);
    agree_links(n);
    while (links_.size() < n) open_link(design_hash);
  }
  if (i >= links_.size() || n != links_.size())
    throw usage_error(who_ + ": relay conversation " + std::to_string(i) + " of " + std::to_string(n) +
                      " asked of a session with " + std::to_string(links_.size()));
  return links_[i];
}

void relay_session::agree_links(std::size_t n) {
  // each end sends its count on the first (authenticated) link, then reads the other's: small
  // messages, so both sending first cannot block. The connecting end adds a fresh session token,
  // which it sends first on each further link, so that an accepting end binds every link to this
  // conversation set (another client holding the key cannot slip in as link 2)
  std::array<std::byte, 8 + 16> mine{};
  for (std::size_t b = 0; b < 8; ++b)
    mine[b] = static_cast<std::byte>((static_cast<std::uint64_t>(n) >> (8 * b)) & 0xFF);
  if (!connect_to_.empty()) {
    const auto token = dist::random_bytes(16);
    std::copy(token.begin(), token.end(), mine.begin() + 8);
  }
  links_.front().send(mine);
  std::vector<std::byte> theirs;
  links_.front().receive_at_most(theirs, mine.size());
  std::uint64_t m = 0;
  for (std::size_t b = 0; b < std::min<std::size_t>(8, theirs.size()); ++b)
    m |= static_cast<std::uint64_t>(theirs[b]) << (8 * b);
  if (theirs.size() == mine.size()) {
    if (connect_to_.empty())
      session_.assign(theirs.begin() + 8, theirs.end());
    else
      session_.assign(mine.begin() + 8, mine.end());
  }
  if (theirs.size() != mine.size() || m != n)
    throw usage_error(who_ + ": the other end opens " +
                      (theirs.size() == mine.size() ? std::to_string(m) : std::string("?")) +
                      " relay conversation(s) (its --jobs), this one " + std::to_string(n) +
                      ": run the audit and the relay peer with the same --jobs");
}

void relay_session::open_link(const std::string& design_hash) {
  const dist::relay_auth_options ao{.hello_timeout_s = cli_hello_timeout_s,
                                    .client_wait_s = cli_link_timeout_s};
  if (!connect_to_.empty()) {
    std::optional<dist::tcp_transport> t;
    try {
      t.emplace(dist::tcp_transport::connect(connect_to_, cli_transport()));
    } catch (const link_error& e) {
      throw usage_error(who_ + ": cannot reach the relay peer at '" + connect_to_ + "': " + e.what());
    }
    links_.push_back(dist::authenticated_channel::client(std::move(*t), key_, design_hash, ao));
    if (links_.size() == 1)
      warn_unkeyed();  // once per session
    else
      links_.back().send(session_);  // a further link of this conversation set
    return;
  }
  // the loopback peer this process started: if it exits before connecting (a model it cannot
  // load, a bad option), say so at once instead of waiting out the link's timeout
  std::function<void()> still_waiting;
  if (child_ > 0)
    still_waiting = [this] {
      int status = 0;
      if (::waitpid(child_, &status, WNOHANG) != child_) return;
      child_ = -1;
      throw usage_error("audit: the loopback relay peer ended before it connected, with " +
                        (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                           : "signal " + std::to_string(WTERMSIG(status))) +
                        " (its own message, if any, is above)");
    };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(cli_link_timeout_s);
  for (;;) {
    dist::tcp_transport t = listener_->accept(still_waiting);
    const std::string who = t.peer_name();
    try {
      auto link = dist::authenticated_channel::server(std::move(t), key_, design_hash, ao);
      if (!links_.empty()) {  // a further link must carry the first link's session token
        std::vector<std::byte> token;
        link.receive_at_most(token, session_.size());
        if (token != session_) throw link_error("a further link without this session's token");
      }
      links_.push_back(std::move(link));
      if (links_.size() == 1) warn_unkeyed();  // once per session
      return;
    } catch (const invalid_argument&) {
      throw;                    // an authenticated client with another design: both ends stop, as before
    } catch (const error& e) {  // idle, trickling, unauthenticated or another protocol: the next one
      std::fprintf(stderr, "latentaudit: %s: dropped a client (%s): %s\n", who_.c_str(), who.c_str(),
                   e.what());
      if (std::chrono::steady_clock::now() >= deadline) throw;
    }
  }
}

void relay_session::warn_unkeyed() const {
  if (key_.empty())
    std::fprintf(
        stderr,
        "latentaudit: warning: %s: the relay channel with %s is unauthenticated (no --relay-key-file "
        "or LATENTAUDIT_RELAY_KEY_FILE): any local process could connect to it or pose as the peer\n",
        who_.c_str(), links_.back().peer_name().c_str());
}

void relay_session::finish() {
  if (child_ < 0) return;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(child_, &status, 0);
  } while (r < 0 && errno == EINTR);
  child_ = -1;
  if (r > 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    throw usage_error("audit: the loopback relay peer ended with " +
                      (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                         : "signal " + std::to_string(WTERMSIG(status))));
}

relay_session::~relay_session() {
  links_.clear();  // the peer sees the links close
  if (child_ > 0) {
    ::kill(child_, SIGTERM);
    int status = 0;
    while (::waitpid(child_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

namespace {

int run_relay_peer(std::span<const std::string> words) {
  std::string listen, connect, key_file, key_fd;
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    auto take = [&](const char* name, std::string& into) {
      const std::string n(name);
      if (w == n) {
        if (i + 1 >= words.size()) throw usage_error("relay-peer: option " + n + " needs a value");
        into = words[++i];
        return true;
      }
      if (w.rfind(n + "=", 0) == 0) {
        into = w.substr(n.size() + 1);
        return true;
      }
      return false;
    };
    if (take("--listen", listen) || take("--connect", connect) || take("--relay-key-file", key_file) ||
        take("--relay-key-fd", key_fd))
      continue;
    rest.push_back(w);
  }
  const bool help = std::find(rest.begin(), rest.end(), "--help") != rest.end();
  if (help || (listen.empty() == connect.empty())) {
    if (!help)
      throw usage_error("relay-peer: give exactly one of --listen HOST:PORT and --connect HOST:PORT");
    std::fputs(
        "latentaudit relay-peer --listen HOST:PORT [--model DIR] [--partner DIR] [--tasks F] [...]\n\n"
        "Agent A of an audit whose relays cross a real link: receives the audit's design over the link\n"
        "(arms, items, seeds, seed, task options, link: the audit's options decide them and are no\n"
        "options here) and serves the sender's half of every relay (read, export, policy or placebo, "
        "encode,\n"
        "send the wire frame) to `latentaudit audit --relay-transport tcp --relay-peer HOST:PORT`. Its\n"
        "options give only what it runs the design on: --model, --partner, --task, --tasks, --tokenizer,\n"
        "--drift, --map, --engine, --threads, the audit's --jobs, --quiet and --config (a JSON object of\n"
        "these); the design is refused, naming the first\n"
        "field, unless these give the models, tasks and maps the audit names. Ends when the audit is\n"
        "done. --connect HOST:PORT connects to the audit instead of\n"
        "listening (what the audit's own loopback peer does). --relay-key-file FILE (or\n"
        "LATENTAUDIT_RELAY_KEY_FILE): the shared secret, at least 32 bytes, that the audit holds too;\n"
        "without one only a loopback address is accepted. docs/distributed.md, \"Threat model\".\n",
        stdout);
    return exit_ok;
  }
  // The key: --relay-key-fd N (the audit's own loopback peer: a fresh key through an inherited
  // pipe), else --relay-key-file FILE, else $LATENTAUDIT_RELAY_KEY_FILE, else none.
  std::vector<std::byte> key;
  if (!key_fd.empty()) {
    if (key_fd.size() > 4 || key_fd.find_first_not_of("0123456789") != std::string::npos)
      throw usage_error("relay-peer: option --relay-key-fd must be a descriptor number, got '" + key_fd +
                        "'");
    const int fd = std::stoi(key_fd);
    try {
      key = dist::read_relay_key_fd(fd, "option --relay-key-fd");
    } catch (const invalid_argument& e) {
      throw usage_error(std::string("relay-peer: ") + e.what());
    }
    ::close(fd);
  } else {
    key = key_from(key_file.empty() ? std::nullopt : std::optional<std::string>(key_file), "relay-peer");
  }
  auto session = relay_session::for_peer(listen, connect, std::move(key));
  return run_audit_as_peer(rest, *session);
}

[[maybe_unused]] const bool registered_relay_peer = register_subcommand(
    {"relay-peer", "agent A of an audit over a real link: serves the sender's half of every relay (tcp)",
     run_relay_peer});

}  // namespace
}  // namespace latentaudit::cli
