// SPDX-License-Identifier: MIT
// The relay link of `latentaudit audit --relay-transport tcp` and of `latentaudit relay-peer`
// (docs/distributed.md, "Relay over a real link"): agent B (the audit) and agent A (the peer, which
// builds the same design from the same options and serves the sender's half of every relay).
#ifndef LATENTAUDIT_TOOLS_CLI_RELAY_SESSION_HPP
#define LATENTAUDIT_TOOLS_CLI_RELAY_SESSION_HPP

#include <latentaudit/dist/transport.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>

#include <sys/types.h>

#include "cli.hpp"

namespace latentaudit::cli {

/// @brief One end of the relay link of an audit.
class relay_session {
 public:
  /// @brief The receiver's (B's) end from the audit's options: nullptr without --relay-transport;
  /// for tcp, a connection to --relay-peer HOST:PORT, or else a loopback peer spawned now
  /// (`latentaudit relay-peer --connect` with the audit's own options) that connects back.
  /// @throws usage_error on a bad --relay-transport or --relay-peer.
  static std::unique_ptr<relay_session> for_audit(const arguments& args, std::span<const std::string> words);
  /// @brief The sender's (A's) end: listen on `listen` for the audit to connect, or connect to
  /// `connect` (exactly one is non-empty).
  static std::unique_ptr<relay_session> for_peer(const std::string& listen, const std::string& connect);

  /// @brief The link (connects or accepts on first use).
  /// @throws link_error when no connection is made in time.
  relay_channel& channel();
  /// @brief "tcp".
  [[nodiscard]] std::string transport() const { return "tcp"; }
  /// @brief B: waits for a spawned peer and checks that it ended well.
  /// @throws usage_error naming the peer's exit status otherwise.
  void finish();
  ~relay_session();

 private:
  relay_session() = default;
  std::optional<dist::tcp_listener> listener_;
  std::optional<dist::tcp_transport> link_;
  std::string connect_to_;
  pid_t child_ = -1;
};

/// @brief Runs `latentaudit audit` on `words` as agent A for the audit at the other end of `peer`
/// (defined in cmd_audit.cpp: the same option handling, models and design, no journal, no report).
int run_audit_as_peer(std::span<const std::string> words, relay_session& peer);

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_TOOLS_CLI_RELAY_SESSION_HPP
