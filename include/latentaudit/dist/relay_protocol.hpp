// SPDX-License-Identifier: MIT
// latentaudit: the relay protocol (docs/wire-format.md, "Relay over a real link") between agent B's
// trial driver and agent A in another process, over a relay_channel (dist/transport.hpp: tcp; MPI:
// dist/transport_mpi.hpp; authenticated: dist/relay_auth.hpp). B's end is channel_sender, a
// remote_sender (trial/remote_sender.hpp) that trial_driver::set_remote_sender takes; A's end is
// serve_sender(driver, design, tasks, channel). The driver knows neither channel nor messages.
// Every message is refused before allocation beyond its limit, and everything A reports is checked
// as any other input before a record holds it (docs/distributed.md, "Threat model").
#ifndef LATENTAUDIT_DIST_RELAY_PROTOCOL_HPP
#define LATENTAUDIT_DIST_RELAY_PROTOCOL_HPP

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/json.hpp"
#include "../trial/arm.hpp"
#include "../trial/design.hpp"
#include "../trial/driver.hpp"
#include "../trial/record.hpp"
#include "../trial/remote_sender.hpp"
#include "../trial/task.hpp"
#include "transport.hpp"

namespace latentaudit::dist {

namespace detail {

using latentaudit::detail::throw_invalid;

// The relay protocol's control messages (docs/wire-format.md, "Relay over a real link"): one JSON
// object per message, at most 1 MiB.
inline void send_control(relay_channel& c, const json_value& j) {
  const std::string text = write_json(j, {.indent = -1});
  c.send(std::as_bytes(std::span(text.data(), text.size())));
}

inline json_value receive_control(relay_channel& c, std::vector<std::byte>& buf) {
  c.receive_at_most(buf, std::size_t{1} << 20);  // refused before allocation when longer
  if (buf.size() > (std::size_t{1} << 20))
    LATENTAUDIT_THROW(corrupt_data("relay protocol: a control message of " + std::to_string(buf.size()) +
                                   " bytes (at most 1 MiB)"));
  json_value j;
  try {
    j = parse_json(std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()),
                   {.max_depth = 64, .max_bytes = std::size_t{1} << 20});
  } catch (const error& e) {
    LATENTAUDIT_THROW(
        corrupt_data(std::string("relay protocol: a control message is not JSON: ") + e.what()));
  }
  if (!j.is_object())
    LATENTAUDIT_THROW(corrupt_data("relay protocol: a control message is not a JSON object"));
  return j;
}

// What the relay peer reports of one relay, once checked (check_peer_report).
struct peer_report {
  double a_prefill_s = 0, export_s = 0, policy_s = 0, encode_s = 0;
  std::string sender_fingerprint;
  json_value policy;
  std::vector<token_id> message;
};

// The relay peer's report `m` on `arm` (item `item`), checked as any other input: stage seconds
// finite, >= 0 and at most a day; the fingerprint a string of at most 1 KiB; the policy an object
// of depth <= 8 and at most 64 KiB (or absent / null); message tokens only on message arms, at
// most the arm's budget, each an integer token id below `vocab_size`.
// Throws corrupt_data naming the field otherwise.
inline peer_report check_peer_report(const json_value& m, const trial_arm& arm, std::uint64_t item,
                                     std::int64_t vocab_size) {
  peer_report out;
  auto fail = [&](const std::string& what) -> void {
    LATENTAUDIT_THROW(corrupt_data("relay protocol: the peer's report on item " + std::to_string(item) +
                                   ", arm '" + arm.label + "' is invalid: " + what));
  };
  if (!m.is_object()) fail("it is not an object");
  auto seconds = [&](std::string_view key) {
    const json_value* v = m.find(key);
    if (v == nullptr || !v->is_number() || !std::isfinite(v->as_number()) || v->as_number() < 0 ||
        v->as_number() > 86400.0)
      fail("'" + std::string(key) + "' must be a number of seconds in [0, 86400]");
    return v->as_number();
  };
  out.a_prefill_s = seconds("a_prefill_s");
  out.export_s = seconds("export_s");
  out.policy_s = seconds("policy_s");
  out.encode_s = seconds("encode_s");
  const json_value* f = m.find("sender_fingerprint");
  if (f == nullptr || !f->is_string() || f->as_string().size() > 1024)
    fail("'sender_fingerprint' must be a string of at most 1024 bytes");
  out.sender_fingerprint = f->as_string();
  if (const json_value* p = m.find("policy"); p != nullptr && !p->is_null()) {
    if (!p->is_object()) fail("'policy' must be an object");
    std::function<int(const json_value&, int)> depth = [&](const json_value& v, int at) {
      if (at > 8) return at;  // deep enough to refuse: stop descending
      int d = at;
      if (v.is_object())
        for (const auto& [k, x] : v.as_object()) d = std::max(d, depth(x, at + 1));
      else if (v.is_array())
        for (const auto& x : v.as_array()) d = std::max(d, depth(x, at + 1));
      return d;
    };
    if (depth(*p, 1) > 8) fail("'policy' is nested deeper than 8 levels");
    if (write_json(*p, {.indent = -1}).size() > (std::size_t{64} << 10)) fail("'policy' exceeds 64 KiB");
    out.policy = *p;
  }
  const json_value* mt = m.find("message_tokens");
  if (mt != nullptr && !arm.uses_message()) fail("'message_tokens' on an arm without a message");
  if (mt != nullptr) {
    if (!mt->is_array()) fail("'message_tokens' must be an array of token ids");
    if (mt->as_array().size() > static_cast<std::size_t>(std::max(arm.budget, 0)))
      fail("'message_tokens' holds " + std::to_string(mt->as_array().size()) +
           " tokens, above the arm's budget of " + std::to_string(arm.budget));
    const double vocab = static_cast<double>(vocab_size);
    for (const auto& x : mt->as_array()) {
      if (!x.is_number() || !(x.as_number() >= 0) || !(x.as_number() < vocab) ||
          x.as_number() != std::floor(x.as_number()))
        fail("'message_tokens' must hold token ids (integers in [0, " + std::to_string(vocab_size) + "))");
      out.message.push_back(static_cast<token_id>(x.as_number()));
    }
  }
  return out;
}

}  // namespace detail

/// @brief Agent A's refusal of the conversation on `channel`: the control message {"error": why},
/// which agent B's next receive raises as the peer's error naming `why` (docs/wire-format.md,
/// "Relay over a real link"). A relay peer that cannot run the design it received says why before
/// it ends (dist::serve_sender does the same for a design that differs from its own).
/// @throws link_error if the channel fails.
inline void send_refusal(relay_channel& channel, const std::string& why) {
  detail::send_control(channel, json_value::object({{"error", why}}));
}

/// @brief Agent B's end of the relay protocol: a remote_sender whose agent A is at the far end of
/// `channel` (running serve_sender). Per relay: B's request → A's report → "go" → the frame. The
/// measured crossing time is B's clock from sending "go" to holding the whole frame (one small
/// message one way, then the frame one way; A's work is done before "go"): no clock is shared. One
/// channel is one conversation: one channel_sender per channel, one driver per channel_sender.
class channel_sender final : public remote_sender {
 public:
  /// @brief Talks to agent A over `channel`, which must outlive this object.
  explicit channel_sender(relay_channel& channel) noexcept : channel_(channel) {}

  /// @brief The greeting: the design (design.json's object, which a relay peer without one runs:
  /// design_of_hello) and its hash; A must run a design with the same design_hash.
  /// @throws invalid_argument naming A's refusal; link_error if the link fails.
  void begin(const trial_design& design) override {
    detail::send_control(channel_, json_value::object({{"op", "hello"},
                                                       {"design_hash", design.design_hash()},
                                                       {"design", design.to_json()}}));
    const json_value r = detail::receive_control(channel_, buf_);
    if (const json_value* e = r.find("error"); e != nullptr)
      detail::throw_invalid(
          "trial_driver::run", "design",
          "is refused by the relay peer: " + (e->is_string() ? e->as_string() : write_json(*e)));
  }

  /// @brief A's half of `arm` on `task`. Everything A reports is checked (check_peer_report, the
  /// map id of a kv_mapped arm, its map_cosine in [-1, 1]) and its frame read with the limit; an
  /// invalid report or a frame the channel's authentication refuses becomes relay_error (the frame
  /// is still read, to keep the channel in step, but never decoded).
  /// @throws engine_error if A failed on the relay; link_error if the link fails.
  sender_half relay(const trial_task& task, const trial_arm& arm, position_t receiver_next,
                    const remote_relay_limits& limits) override {
    json_value q = json_value::object();
    q.set("op", "relay");
    q.set("item", static_cast<double>(task.item));
    q.set("seed", static_cast<double>(task.seed));
    q.set("arm", arm.label);
    q.set("receiver_next", static_cast<double>(receiver_next));
    detail::send_control(channel_, q);
    const json_value m = detail::receive_control(channel_, buf_);
    sender_half out;
    if (const json_value* e = m.find("error"); e != nullptr)
      LATENTAUDIT_THROW(
          engine_error("trial_driver::run: the relay peer (agent A) failed on item " +
                       std::to_string(task.item) + ", arm '" + arm.label + "' (" + channel_.peer_name() +
                       "): " + (e->is_string() ? e->as_string().substr(0, 4096) : std::string("?"))));
    std::string bad;
    try {
      take_report(m, task, arm, limits, out);
    } catch (const corrupt_data& e) {
      bad = e.what();
    }
    static constexpr std::byte go[] = {std::byte{'g'}, std::byte{'o'}};
    const auto t0 = std::chrono::steady_clock::now();
    channel_.send(go);
    try {
      channel_.receive_at_most(out.frame, limits.max_frame_bytes);
    } catch (const corrupt_data& e) {  // the channel's own authentication: forged, replayed, reordered
      if (bad.empty()) bad = e.what();
    }
    out.measured_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!bad.empty()) {
      sender_half failed;
      failed.relay_error = channel_.peer_name() + ": " + bad;
      failed.measured_s = out.measured_s;
      return failed;
    }
    return out;
  }

  /// @brief Tells A the run is over ("done").
  void end() override { detail::send_control(channel_, json_value::object({{"op", "done"}})); }

  /// @brief The channel's peer name.
  [[nodiscard]] std::string peer_name() const override { return channel_.peer_name(); }

  /// @brief The channel this sender talks over.
  [[nodiscard]] relay_channel& channel() const noexcept { return channel_; }

 private:
  // A's report `m` of one relay, checked (detail::check_peer_report and the map's id) into `out`.
  static void take_report(const json_value& m, const trial_task& task, const trial_arm& arm,
                          const remote_relay_limits& limits, sender_half& out) {
    auto r = detail::check_peer_report(m, arm, task.item, limits.vocab_size);
    out.a_prefill_s = r.a_prefill_s;
    out.export_s = r.export_s;
    out.policy_s = r.policy_s;
    out.encode_s = r.encode_s;
    out.sender_fingerprint = std::move(r.sender_fingerprint);
    out.policy = std::move(r.policy);
    out.message = std::move(r.message);
    if (arm.plan().transform != arm_transform::mapped) return;
    // the peer mapped with this audit's map
    const json_value* id = out.policy.is_object() ? out.policy.find("map") : nullptr;
    if (id == nullptr || !id->is_string() || id->as_string() != limits.map_id)
      LATENTAUDIT_THROW(corrupt_data("relay protocol: the peer's report on item " +
                                     std::to_string(task.item) + ", arm '" + arm.label +
                                     "' names another cache map than this audit's " + limits.map_id));
    if (const json_value* c = out.policy.find("map_cosine"); c != nullptr) {
      if (!c->is_number() || !(c->as_number() >= -1.0 && c->as_number() <= 1.0))
        LATENTAUDIT_THROW(corrupt_data("relay protocol: the peer's report on item " +
                                       std::to_string(task.item) + ", arm '" + arm.label +
                                       "' has a map_cosine outside [-1, 1]"));
      out.map_cosine = c->as_number();
    }
  }

  relay_channel& channel_;
  std::vector<std::byte> buf_;  // control messages
};

/// @brief The receiver's greeting, the first message of a conversation (channel_sender::begin):
/// a JSON object of at most 1 MiB whose "op" is "hello".
/// @throws corrupt_data if it is not; link_error if the link fails.
[[nodiscard]] inline json_value receive_hello(relay_channel& channel) {
  std::vector<std::byte> buf;
  json_value h = detail::receive_control(channel, buf);
  const json_value* op = h.find("op");
  if (op == nullptr || !op->is_string() || op->as_string() != "hello")
    LATENTAUDIT_THROW(corrupt_data("relay protocol: the receiver's first message is not its hello"));
  return h;
}

/// @brief The most trials (items x seeds x arms) a design received in a greeting may declare: a
/// relay peer sizes its unit schedule by the design, so a larger one is refused before anything
/// is allocated (an audit of that size would need terabytes for its own journal and report).
inline constexpr long double max_relay_design_trials = 1e8L;

/// @brief Refuses a greeting's design whose items x seeds x arms exceed max_relay_design_trials,
/// read from its JSON fields before design_from_json builds anything.
/// @throws corrupt_data naming the three sizes, their product and the limit.
inline void check_hello_design_size(const json_value& d) {
  if (!d.is_object()) return;  // design_from_json names it
  auto size_of = [&](const char* field) -> long double {
    const json_value* v = d.find(field);
    if (v == nullptr) return 1;
    if (v->is_array()) return static_cast<long double>(v->as_array().size());
    return v->is_number() && v->as_number() >= 1 ? static_cast<long double>(v->as_number()) : 1;
  };
  const long double items = size_of("items"), seeds = size_of("seeds"), arms = size_of("arms");
  const long double trials = items * seeds * arms;
  if (!(trials <= max_relay_design_trials)) {
    char msg[320];
    std::snprintf(
        msg, sizeof msg,
        "relay protocol: the receiver's design declares %.0Lf items x %.0Lf seeds x %.0Lf arms = "
        "%.4Lg trials, more than a relay peer serves (%.0Lg, docs/distributed.md \"Bounded input\")",
        items, seeds, arms, trials, max_relay_design_trials);
    LATENTAUDIT_THROW(corrupt_data(msg));
  }
}

/// @brief The design the receiver runs, from its greeting: its size checked first
/// (check_hello_design_size), then "design" read by design_from_json (design.json's one converter:
/// bounds, every field, the arms read back), whose hash must be the greeting's "design_hash". A
/// relay peer serves this design instead of building one of its own.
/// @throws corrupt_data naming the field that fails.
[[nodiscard]] inline trial_design design_of_hello(const json_value& hello) {
  const json_value* d = hello.find("design");
  if (d == nullptr)
    LATENTAUDIT_THROW(
        corrupt_data("relay protocol: the receiver's hello carries no design (an older "
                     "latentaudit: run both ends with the same version)"));
  check_hello_design_size(*d);
  trial_design design = design_from_json(*d, "the receiver's design");
  const json_value* hash = hello.find("design_hash");
  if (hash == nullptr || !hash->is_string() || hash->as_string() != design.design_hash())
    LATENTAUDIT_THROW(
        corrupt_data("relay protocol: the receiver's hello names a design_hash that is "
                     "not its design's"));
  return design;
}

/// @brief Serves as agent A, on `driver`, for a driver at the other end of `channel` until it sends
/// "done": checks that the two designs agree (design_hash) and the design against the engine, then
/// for each relay request runs driver.serve_relay (A reads the unit's document once per unit,
/// exports, applies the arm's policy or placebo, encodes), reports its stage timings and, after
/// B's "go", sends the wire frame. An error in a relay is reported to the receiver (which stops with
/// it) and serving goes on.
/// `hello`: the receiver's greeting when the caller read it already (receive_hello, to run the
/// design it carries), else it is read here.
/// @tparam Driver a trial_driver (begin_serving, serve_relay, end_serving)
/// @returns the statistics (trials = relays served).
/// @throws invalid_argument if the design is invalid or differs from the receiver's (the receiver is
///         told first); link_error if the link fails.
template <class Driver>
driver_stats serve_sender(Driver& driver, const trial_design& design,
                          const typename Driver::task_source& tasks, relay_channel& channel,
                          const json_value* hello = nullptr) {
  constexpr std::string_view fn = "dist::serve_sender";
  if (!tasks) detail::throw_invalid(fn, "tasks", "must be a callable task source");
  std::vector<std::byte> buf;
  {
    const json_value h = hello != nullptr ? *hello : detail::receive_control(channel, buf);
    const json_value* op = h.find("op");
    const json_value* hash = h.find("design_hash");
    const std::string mine = design.design_hash();
    if (op == nullptr || !op->is_string() || op->as_string() != "hello" || hash == nullptr ||
        !hash->is_string() || hash->as_string() != mine) {
      const json_value* theirs = h.find("design");
      const std::string field =
          theirs != nullptr ? design_difference(*theirs, design.to_json(), "", "the receiver's design") : "";
      const std::string why =
          "the receiver's design (hash " + (hash != nullptr && hash->is_string() ? hash->as_string() : "?") +
          ") differs from the relay peer's (hash " + mine + ")" + (field.empty() ? "" : ": " + field) +
          ": the relay peer must run the receiver's design on the models, tasks, drift manifest and maps "
          "it names";
      detail::send_control(channel, json_value::object({{"error", why}}));
      detail::throw_invalid(fn, "design", why);
    }
    try {
      driver.begin_serving(design);
    } catch (const error& e) {
      detail::send_control(channel, json_value::object({{"error", std::string(e.what())}}));
      throw;
    }
    detail::send_control(channel, json_value::object({{"ok", true}}));
  }
  for (;;) {
    const json_value q = detail::receive_control(channel, buf);
    const json_value* op = q.find("op");
    if (op != nullptr && op->is_string() && op->as_string() == "done") break;
    sender_half out;
    std::string failure;
    try {
      out = driver.serve_relay(design, tasks, static_cast<std::uint64_t>(q.at("item").as_int64()),
                               static_cast<std::uint64_t>(q.at("seed").as_int64()), q.at("arm").as_string(),
                               static_cast<position_t>(q.at("receiver_next").as_int64()));
    } catch (const error& e) {
      failure = e.what();
    }
    if (!failure.empty()) {
      detail::send_control(channel, json_value::object({{"error", failure}}));
      continue;
    }
    json_value m = json_value::object();
    m.set("a_prefill_s", out.a_prefill_s);
    m.set("export_s", out.export_s);
    m.set("policy_s", out.policy_s);
    m.set("encode_s", out.encode_s);
    m.set("sender_fingerprint", out.sender_fingerprint);
    m.set("policy", out.policy);
    m.set("bytes", static_cast<double>(out.frame.size()));
    if (!out.message.empty()) {  // message arms: the receiver records A's message
      json_value mt = json_value::array_type{};
      for (auto x : out.message) mt.push_back(json_value(static_cast<double>(x)));
      m.set("message_tokens", std::move(mt));
    }
    detail::send_control(channel, m);
    channel.receive_at_most(buf, 16);  // "go": the receiver starts its clock
    channel.send(out.frame);
  }
  return driver.end_serving();
}

}  // namespace latentaudit::dist

#endif  // LATENTAUDIT_DIST_RELAY_PROTOCOL_HPP
