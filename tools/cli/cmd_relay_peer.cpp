// SPDX-License-Identifier: MIT
// `latentaudit relay-peer`: agent A of an audit whose relays cross a real link — it builds the
// audit's design from the same options, then serves the sender's half of every relay (read,
// export, policy or placebo, encode, send the wire frame) to the audit (agent B) at the other end
// of a tcp connection. `audit --relay-transport tcp` spawns one on loopback when no --relay-peer
// is given. docs/distributed.md, "Relay over a real link".
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "relay_session.hpp"

extern char** environ;

namespace latentaudit::cli {

namespace {
// Seconds each wait of the CLI's links may last (a peer loading a large model before its greeting).
constexpr double cli_link_timeout_s = 600.0;
}  // namespace

std::unique_ptr<relay_session> relay_session::for_audit(const arguments& args,
                                                        std::span<const std::string> words) {
  const auto transport = args.get("--relay-transport");
  const auto peer = args.get("--relay-peer");
  if (!transport) {
    if (peer) throw usage_error("audit: option --relay-peer needs --relay-transport tcp");
    return nullptr;
  }
  if (*transport != "tcp")
    throw usage_error("audit: option --relay-transport must be tcp or mpi, got '" + *transport + "'");
  std::unique_ptr<relay_session> s(new relay_session());
  if (peer) {
    try {
      (void)dist::parse_host_port(*peer, "--relay-peer");
    } catch (const error&) {
      throw usage_error("audit: option --relay-peer must read HOST:PORT, got '" + *peer + "'");
    }
    s->connect_to_ = *peer;
    return s;
  }
  // A loopback peer: listen on a free port, spawn `latentaudit relay-peer --connect` with the
  // audit's options (less the relay ones), its stdout to /dev/null (its errors stay on stderr).
  s->listener_.emplace("127.0.0.1:0", dist::transport_options{.timeout_s = cli_link_timeout_s});
  std::vector<std::string> argv = {"latentaudit", "relay-peer", "--connect",
                                   "127.0.0.1:" + std::to_string(s->listener_->port())};
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--relay-transport" || w == "--relay-peer") {
      ++i;
      continue;
    }
    if (w.rfind("--relay-transport=", 0) == 0 || w.rfind("--relay-peer=", 0) == 0) continue;
    argv.push_back(w);
  }
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    throw usage_error(std::string("audit: cannot start the loopback relay peer: ") + std::strerror(rc));
  s->child_ = pid;
  return s;
}

std::unique_ptr<relay_session> relay_session::for_peer(const std::string& listen,
                                                       const std::string& connect) {
  std::unique_ptr<relay_session> s(new relay_session());
  const dist::transport_options o{.timeout_s = cli_link_timeout_s};
  try {
    if (!listen.empty())
      s->listener_.emplace(listen, o);
    else
      s->connect_to_ = connect;
    if (!connect.empty()) (void)dist::parse_host_port(connect, "--connect");
  } catch (const invalid_argument&) {
    throw usage_error("relay-peer: option " + std::string(listen.empty() ? "--connect" : "--listen") +
                      " must read HOST:PORT, got '" + (listen.empty() ? connect : listen) + "'");
  }
  return s;
}

relay_channel& relay_session::channel() {
  if (!link_) {
    const dist::transport_options o{.timeout_s = cli_link_timeout_s};
    if (!connect_to_.empty())
      link_.emplace(dist::tcp_transport::connect(connect_to_, o));
    else if (child_ > 0)
      // the loopback peer this process started: if it exits before connecting (a model it cannot
      // load, a bad option), say so at once instead of waiting out the link's timeout
      link_.emplace(listener_->accept([this] {
        int status = 0;
        if (::waitpid(child_, &status, WNOHANG) != child_) return;
        child_ = -1;
        throw usage_error("audit: the loopback relay peer ended before it connected, with " +
                          (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                             : "signal " + std::to_string(WTERMSIG(status))) +
                          " (its own message, if any, is above)");
      }));
    else
      link_.emplace(listener_->accept());
  }
  return *link_;
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
  link_.reset();  // the peer sees the link close
  if (child_ > 0) {
    ::kill(child_, SIGTERM);
    int status = 0;
    while (::waitpid(child_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

namespace {

int run_relay_peer(std::span<const std::string> words) {
  std::string listen, connect;
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    auto take = [&](const char* name, std::string& into) {
      const std::string n(name);
      if (w == n) {
        if (i + 1 >= words.size()) throw usage_error("relay-peer: option " + n + " needs HOST:PORT");
        into = words[++i];
        return true;
      }
      if (w.rfind(n + "=", 0) == 0) {
        into = w.substr(n.size() + 1);
        return true;
      }
      return false;
    };
    if (take("--listen", listen) || take("--connect", connect)) continue;
    rest.push_back(w);
  }
  const bool help = std::find(rest.begin(), rest.end(), "--help") != rest.end();
  if (help || (listen.empty() == connect.empty())) {
    if (!help)
      throw usage_error("relay-peer: give exactly one of --listen HOST:PORT and --connect HOST:PORT");
    std::fputs(
        "latentaudit relay-peer --listen HOST:PORT [audit options]\n\n"
        "Agent A of an audit whose relays cross a real link: builds the audit's design from the same\n"
        "options (--model, --partner, --items, --seeds, --arms, --seed, ...; `latentaudit audit --help`)\n"
        "and serves the sender's half of every relay (read, export, policy or placebo, encode, send the\n"
        "wire frame) to `latentaudit audit --relay-transport tcp --relay-peer HOST:PORT` with the same\n"
        "options. Ends when the audit is done. --connect HOST:PORT connects to the audit instead of\n"
        "listening (what the audit's own loopback peer does). docs/distributed.md.\n",
        stdout);
    return exit_ok;
  }
  auto session = relay_session::for_peer(listen, connect);
  return run_audit_as_peer(rest, *session);
}

[[maybe_unused]] const bool registered_relay_peer = register_subcommand(
    {"relay-peer", "agent A of an audit over a real link: serves the sender's half of every relay (tcp)",
     run_relay_peer});

}  // namespace
}  // namespace latentaudit::cli
