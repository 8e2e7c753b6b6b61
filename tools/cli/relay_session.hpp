// SPDX-License-Identifier: MIT
// The relay link of `latentaudit audit --relay-transport tcp` and of `latentaudit relay-peer`
// (docs/distributed.md, "Relay over a real link"): agent B (the audit) and agent A (the peer, which
// builds the same design from the same options and serves the sender's half of every relay).
#ifndef LATENTAUDIT_TOOLS_CLI_RELAY_SESSION_HPP
#define LATENTAUDIT_TOOLS_CLI_RELAY_SESSION_HPP

#include <latentaudit/dist/relay_auth.hpp>
#include <latentaudit/dist/transport.hpp>

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <sys/types.h>

#include "cli.hpp"

namespace latentaudit::cli {

/// @brief One end of the relay link of an audit.
class relay_session {
 public:
  /// @brief The receiver's (B's) end from the audit's options: nullptr without --relay-transport;
  /// for tcp, a connection to --relay-peer HOST:PORT, or else a loopback peer spawned now
  /// (`latentaudit relay-peer --connect` with `words`, the audit's values of the peer's options:
  /// peer_words) that connects back.
  /// @throws usage_error on a bad --relay-transport or --relay-peer.
  static std::unique_ptr<relay_session> for_audit(const arguments& args, std::span<const std::string> words);
  /// @brief The sender's (A's) end: listen on `listen` for the audit to connect, or connect to
  /// `connect` (exactly one is non-empty), under `key` (empty: unauthenticated, loopback only).
  /// @throws usage_error on a bad address, or a non-loopback one without a key.
  static std::unique_ptr<relay_session> for_peer(const std::string& listen, const std::string& connect,
                                                 std::vector<std::byte> key);

  /// @brief Conversation `i` of `n` (`--jobs n`: one per worker) for design `design_hash`. On first
  /// use every link opens: each connects or accepts, then runs the authenticated handshake; the two
  /// ends then check on the first link that both open `n` (the same --jobs), and open the others.
  /// Accepting, a client that fails the handshake or stays idle past the hello deadline is dropped
  /// (one stderr line) and the next one served.
  /// @throws usage_error when no connection is made (connect: after a few attempts, naming the
  ///         address) or the two ends open different numbers of links; invalid_argument if the
  ///         two ends run different designs. `design_hash` empty (a relay peer, before it has a
  ///         design): every link adopts the audit's (authenticated_channel), which the peer then
  ///         receives whole in the first conversation's greeting.
  dist::relay_channel& channel(std::size_t i, std::size_t n, const std::string& design_hash);
  /// @brief The key of the relays' wire HMAC tag of conversation `i` (after channel()).
  [[nodiscard]] std::span<const std::byte> wire_key(std::size_t i) const { return links_.at(i).wire_key(); }
  /// @brief "tcp".
  [[nodiscard]] std::string transport() const { return "tcp"; }
  /// @brief B: waits for a spawned peer and checks that it ended well.
  /// @throws usage_error naming the peer's exit status otherwise.
  void finish();
  ~relay_session();

 private:
  relay_session() = default;
  void warn_unkeyed() const;                       // one stderr line when the channel has no key
  void open_link(const std::string& design_hash);  // one more link: connect or accept, handshake
  void agree_links(std::size_t n);                 // both ends open n links (checked on the first)
  std::optional<dist::tcp_listener> listener_;
  std::deque<dist::authenticated_channel> links_;  // the conversations, in the order they opened
  std::vector<std::byte> session_;  // the connecting end's token on the first link, sent on the others
  std::vector<std::byte> key_;      // the shared secret (empty: unauthenticated)
  std::string connect_to_;
  std::string who_ = "audit";
  pid_t child_ = -1;
};

/// @brief Runs `latentaudit audit` on `words` as agent A for the audit at the other end of `peer`
/// (defined in cmd_audit.cpp: the same option handling, models and design, no journal, no report).
int run_audit_as_peer(std::span<const std::string> words, relay_session& peer);

}  // namespace latentaudit::cli

#endif  // LATENTAUDIT_TOOLS_CLI_RELAY_SESSION_HPP
