// SPDX-License-Identifier: MIT
// latentaudit: trial arms — what B receives from A: nothing, text (all or a budget), A's cache
// (whole, or under a transfer policy), a placebo cache, another model's cache, or the cache of a
// drifted copy of the model (fine-tuned apart), either of those through a fitted cache map into B's
// model's shape, or a message A writes (as text, or as A's cache).
// The one owner of the arm: its kinds and their relay plans (plan_of: family, who sends, what is
// sent, how it is transformed and imported), the parse forms and labels, and the default arms.
// The driver, the relay peer, custom drivers, the CLI and the report read arms through this header.
#ifndef LATENTAUDIT_TRIAL_ARM_HPP
#define LATENTAUDIT_TRIAL_ARM_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/types.hpp"
#include "../kv/placebo.hpp"
#include "../kv/policy_spec.hpp"

namespace latentaudit {

/// @brief The kind of an arm.
enum class arm_kind : std::uint8_t {
  no_comm,       ///< B answers alone
  text_full,     ///< B reads A's document as text
  text_budget,   ///< B reads a lossy text message: the first `budget` pairs of the document
  kv_full,       ///< A's whole cache is relayed
  kv_policy,     ///< A's cache under a transfer policy (slice, noise, quantization, position mode)
  deranged,      ///< another item's cache (pairing placebo), length-matched
  zeroed,        ///< A's cache with K and V zeroed (presence placebo)
  random,        ///< moment-matched random cache (presence placebo)
  cross_model,   ///< A runs the partner model; its cache is force-imported into B's model
  drifted,       ///< A runs a fine-tuned (drifted) copy of B's model, a sender engine registered with the
                 ///< driver (trial_driver::add_sender); its whole cache is force-imported into B's model
  text_message,  ///< A writes a message of at most `budget` tokens after its instruction; B reads it as text
  kv_message,    ///< A's cache of document + instruction + message (at most `budget` tokens) is relayed
  kv_message_only,  ///< only the message's cache rows are relayed (placed by the policy's position mode)
  kv_mapped,        ///< another model's cache (the partner's or a named sender's) through a fitted cache map
                    ///< (kv/kv_map.hpp) into B's model's shape, imported with its fingerprint checked
};

/// @brief The arm kind's name as written in records ("no_comm", "text_full", ...).
[[nodiscard]] constexpr std::string_view arm_kind_name(arm_kind k) noexcept {
  switch (k) {
    case arm_kind::no_comm:
      return "no_comm";
    case arm_kind::text_full:
      return "text_full";
    case arm_kind::text_budget:
      return "text_budget";
    case arm_kind::kv_full:
      return "kv_full";
    case arm_kind::kv_policy:
      return "kv_policy";
    case arm_kind::deranged:
      return "deranged";
    case arm_kind::zeroed:
      return "zeroed";
    case arm_kind::random:
      return "random";
    case arm_kind::cross_model:
      return "cross_model";
    case arm_kind::drifted:
      return "drifted";
    case arm_kind::text_message:
      return "text_message";
    case arm_kind::kv_message:
      return "kv_message";
    case arm_kind::kv_message_only:
      return "kv_message_only";
    case arm_kind::kv_mapped:
      return "kv_mapped";
  }
  return "unknown";
}

/// @brief The family of an arm: how the report groups arms (by data — the records' arm_kind —,
/// never by label). Each arm_kind belongs to exactly one family (arm_plan::family).
enum class arm_family : std::uint8_t {
  control,  ///< no_comm: B answers alone
  text,     ///< text_full, text_budget, text_message: B reads text A sends
  kv,       ///< kv_full, kv_policy, kv_message, kv_message_only: A's own cache, whole or transformed
  placebo,  ///< deranged, zeroed, random: a cache that keeps a relay's presence but not its content
  foreign,  ///< cross_model, drifted, kv_mapped: the cache of another model (force-imported into B's,
            ///< or mapped into its shape first)
};

/// @brief Which engine plays agent A (reads the document) for an arm.
enum class arm_sender : std::uint8_t {
  none,      ///< nobody: B answers alone
  receiver,  ///< B's model (the driver's engine): A and B share the model
  partner,   ///< the partner engine (another model; trial_driver's second engine)
  named,     ///< the sender engine named by trial_arm::sender (trial_driver::add_sender; the name
             ///< partner_sender names the partner engine)
};

/// @brief The sender name (trial_arm::sender) that names the partner engine — the engine of
/// cross_model — for an arm whose sender is arm_sender::named (a kv_mapped arm from the partner).
inline constexpr std::string_view partner_sender = "partner";

/// @brief What A sends B for an arm (before any transform).
enum class arm_payload : std::uint8_t {
  nothing,         ///< no relay
  document_text,   ///< the task's relay text (trial_task::relay_text)
  document_pairs,  ///< the first trial_arm::budget pairs of the document, as text
  message_text,    ///< the message A wrote (at most trial_arm::budget tokens), as text
  document_cache,  ///< the cache rows of the document
  message_cache,   ///< the cache rows of document, instruction and message
  message_rows,    ///< the cache rows of the message only; an empty message relays nothing (text)
};

/// @brief What is done to A's exported cache before it is encoded.
enum class arm_transform : std::uint8_t {
  none,        ///< nothing (no relay, text payloads)
  policy,      ///< the arm's kv_policy (selection, noise, quantization, placement; kv_full's keeps all)
  other_item,  ///< replaced by another item's cache, length-matched (a random derangement of the items)
  placebo,     ///< replaced by the plan's placebo made from the cache itself (kv/placebo.hpp cache_placebo:
               ///< zeroed, moment-matched random, ...)
  mapped,      ///< the sender's cache map into B's model's shape (trial_driver::add_map for the sender)
};

/// @brief An arm's relay plan: everything the driver, a relay peer, a custom driver, the CLI and
/// the report need to know about an arm kind. plan_of() is the one table; adding an arm family is
/// its row there (and its arm_kind, parse form and constructor in this header), its test and its docs.
struct arm_plan {
  arm_family family = arm_family::control;        ///< how the report groups the arm
  arm_sender sender = arm_sender::none;           ///< who reads the document
  arm_payload payload = arm_payload::nothing;     ///< what A sends
  arm_transform transform = arm_transform::none;  ///< what is done to the cache before the wire
  /// the placebo substituted for the cache (the records' `policy.placebo`): deranged for other_item,
  /// the placebo cache_placebo() makes for the transform `placebo`; nothing for the other transforms
  std::optional<placebo_kind> placebo = std::nullopt;
  /// B imports a cache of another model (import_options::force; its fingerprint is not checked)
  bool forced_import = false;
  /// The arm's kv_policy selects layers or tokens: what the engine must support is checked
  /// (trial/engine_support.hpp) and H2O/SnapKV/PyramidKV read the sender's attention.
  bool selects = false;
  /// The arm takes a position mode suffix (`@preserve`, `@rebase`, `@append`; kv/rope.hpp).
  bool placeable = false;
  /// trial_arm::budget is the arm's dose (text_budget's pairs, a message's most tokens; the
  /// records' `budget`).
  bool budgeted = false;
  std::uint64_t min_items = 1;  ///< the fewest items of a design the arm can run on
  /// The report reads one arm of this kind as a role of the design, named by the kind (its
  /// contrasts: kv_full − no_comm, text_full − no_comm, each placebo and cross_model − no_comm).
  bool role = false;

  /// @brief Whether B receives a KV block (a payload of cache rows).
  [[nodiscard]] constexpr bool relays_kv() const noexcept {
    return payload == arm_payload::document_cache || payload == arm_payload::message_cache ||
           payload == arm_payload::message_rows;
  }
  /// @brief Whether A writes a message for the arm.
  [[nodiscard]] constexpr bool uses_message() const noexcept {
    return payload == arm_payload::message_text || payload == arm_payload::message_cache ||
           payload == arm_payload::message_rows;
  }
  /// @brief Whether B reads the relay as text, given the length of A's message (message arms):
  /// the text payloads, and a message_rows payload whose message is empty (it relays nothing).
  [[nodiscard]] constexpr bool text_relay(std::size_t message_length) const noexcept {
    return payload == arm_payload::document_text || payload == arm_payload::document_pairs ||
           payload == arm_payload::message_text ||
           (payload == arm_payload::message_rows && message_length == 0);
  }
};

/// @brief The relay plan of an arm kind (the one table of what each kind does).
[[nodiscard]] constexpr arm_plan plan_of(arm_kind k) noexcept {
  using F = arm_family;
  using S = arm_sender;
  using P = arm_payload;
  using T = arm_transform;
  switch (k) {
    case arm_kind::no_comm:
      return {.role = true};
    case arm_kind::text_full:
      return {.family = F::text, .sender = S::receiver, .payload = P::document_text, .role = true};
    case arm_kind::text_budget:
      return {.family = F::text, .sender = S::receiver, .payload = P::document_pairs, .budgeted = true};
    case arm_kind::kv_full:
      return {.family = F::kv,
              .sender = S::receiver,
              .payload = P::document_cache,
              .transform = T::policy,
              .selects = true,
              .placeable = true,
              .role = true};
    case arm_kind::kv_policy:
      return {.family = F::kv,
              .sender = S::receiver,
              .payload = P::document_cache,
              .transform = T::policy,
              .selects = true,
              .placeable = true};
    case arm_kind::deranged:
      return {.family = F::placebo,
              .sender = S::receiver,
              .payload = P::document_cache,
              .transform = T::other_item,
              .placebo = placebo_kind::deranged,
              .min_items = 2,
              .role = true};
    case arm_kind::zeroed:
      return {.family = F::placebo,
              .sender = S::receiver,
              .payload = P::document_cache,
              .transform = T::placebo,
              .placebo = placebo_kind::zeroed,
              .role = true};
    case arm_kind::random:
      return {.family = F::placebo,
              .sender = S::receiver,
              .payload = P::document_cache,
              .transform = T::placebo,
              .placebo = placebo_kind::random,
              .role = true};
    case arm_kind::cross_model:
      return {.family = F::foreign,
              .sender = S::partner,
              .payload = P::document_cache,
              .transform = T::policy,
              .forced_import = true,
              .role = true};
    case arm_kind::drifted:
      return {.family = F::foreign,
              .sender = S::named,
              .payload = P::document_cache,
              .transform = T::policy,
              .forced_import = true};
    case arm_kind::kv_mapped:
      return {.family = F::foreign, .sender = S::named, .payload = P::document_cache, .transform = T::mapped};
    case arm_kind::text_message:
      return {.family = F::text, .sender = S::receiver, .payload = P::message_text, .budgeted = true};
    case arm_kind::kv_message:
      return {.family = F::kv,
              .sender = S::receiver,
              .payload = P::message_cache,
              .transform = T::policy,
              .budgeted = true};
    case arm_kind::kv_message_only:
      return {.family = F::kv,
              .sender = S::receiver,
              .payload = P::message_rows,
              .transform = T::policy,
              .placeable = true,
              .budgeted = true};
  }
  return {};
}

/// @brief Every arm kind, in declaration order.
inline constexpr arm_kind all_arm_kinds[] = {
    arm_kind::no_comm,         arm_kind::text_full, arm_kind::text_budget,  arm_kind::kv_full,
    arm_kind::kv_policy,       arm_kind::deranged,  arm_kind::zeroed,       arm_kind::random,
    arm_kind::cross_model,     arm_kind::drifted,   arm_kind::text_message, arm_kind::kv_message,
    arm_kind::kv_message_only, arm_kind::kv_mapped};

/// @brief The arm kind named `name` (arm_kind_name's spelling), or nothing.
[[nodiscard]] constexpr std::optional<arm_kind> parse_arm_kind(std::string_view name) noexcept {
  for (const arm_kind k : all_arm_kinds)
    if (arm_kind_name(k) == name) return k;
  return std::nullopt;
}

/// @brief The pairing placebo's kind: the placebo whose plan sends another item's cache
/// (arm_transform::other_item). It isolates pairing (kv_full minus it: does B need this item's cache
/// or any cache?); the report finds it by this trait, never by its name.
[[nodiscard]] constexpr arm_kind pairing_placebo_kind() noexcept {
  for (const arm_kind k : all_arm_kinds)
    if (plan_of(k).transform == arm_transform::other_item) return k;
  return arm_kind::no_comm;  // not reached: the static_assert below
}
static_assert(plan_of(pairing_placebo_kind()).transform == arm_transform::other_item,
              "one arm kind is the pairing placebo");
static_assert(
    [] {
      for (const arm_kind k : all_arm_kinds) {
        const arm_plan p = plan_of(k);
        if ((p.family == arm_family::placebo) != p.placebo.has_value()) return false;
        if (p.placebo && p.transform != arm_transform::other_item && p.transform != arm_transform::placebo)
          return false;
        if (p.transform == arm_transform::other_item && p.placebo != placebo_kind::deranged) return false;
      }
      return true;
    }(),
    "every placebo arm names its placebo, made from another item's cache or from A's (cache_placebo)");

/// @brief One arm of a design.
struct trial_arm {
  std::string label;                  ///< unique in a design; the record's "arm"
  arm_kind kind = arm_kind::no_comm;  ///< what B receives
  std::int32_t budget = 0;            ///< text_budget: pairs relayed; message arms: most tokens A writes
  kv_policy policy{};                 ///< KV arms: the transfer policy applied after export
  std::optional<quantize_spec> wire_quantize;  ///< KV arms: carry K/V quantized on the wire (codes + scales)
  std::optional<double> noise_sigma;           ///< the policy's noise level, for dose-response analysis
  /// drifted, kv_mapped: the name of the sender engine (trial_driver::add_sender), e.g. "drift_160";
  /// partner_sender for the partner engine
  std::string sender;
  /// drifted (and kv_mapped from a drifted sender): the sender's fine-tuning steps (dose-response)
  std::optional<std::int32_t> drift_steps;

  /// @brief The arm's relay plan (plan_of(kind)).
  [[nodiscard]] constexpr arm_plan plan() const noexcept { return plan_of(kind); }
  /// @brief Whether B receives a KV block (arm_plan::relays_kv).
  [[nodiscard]] constexpr bool relays_kv() const noexcept { return plan().relays_kv(); }
  /// @brief Whether A writes a message for the arm (arm_plan::uses_message).
  [[nodiscard]] constexpr bool uses_message() const noexcept { return plan().uses_message(); }
  /// @brief Whether some engine reads A's document for the arm (every kind but no_comm).
  [[nodiscard]] constexpr bool needs_sender() const noexcept { return plan().sender != arm_sender::none; }
  /// @brief Whether the partner engine reads A's document: cross_model, and a named-sender arm
  /// whose sender is partner_sender.
  [[nodiscard]] bool needs_partner() const noexcept {
    const arm_sender s = plan().sender;
    return s == arm_sender::partner || (s == arm_sender::named && sender == partner_sender);
  }
};

/// @brief B alone.
[[nodiscard]] inline trial_arm no_comm_arm() { return {.label = "no_comm", .kind = arm_kind::no_comm}; }
/// @brief B reads the whole document as text.
[[nodiscard]] inline trial_arm text_full_arm() { return {.label = "text_full", .kind = arm_kind::text_full}; }
/// @brief B reads the first `k` pairs as text ("text_budget_<k>").
/// @throws invalid_argument if k < 0.
[[nodiscard]] inline trial_arm text_budget_arm(std::int32_t k) {
  if (k < 0) detail::throw_invalid("text_budget_arm", "k", "must be >= 0, got " + std::to_string(k));
  return {.label = "text_budget_" + std::to_string(k), .kind = arm_kind::text_budget, .budget = k};
}
/// @brief A's whole cache.
[[nodiscard]] inline trial_arm kv_full_arm() {
  return {.label = "kv_full", .kind = arm_kind::kv_full, .policy = kv_policy{.label = "kv_full"}};
}
/// @brief A's cache under `policy`; the label is the policy's.
[[nodiscard]] inline trial_arm kv_policy_arm(kv_policy policy,
                                             std::optional<quantize_spec> wire_quantize = std::nullopt) {
  trial_arm a{.label = policy.label,
              .kind = arm_kind::kv_policy,
              .policy = std::move(policy),
              .wire_quantize = wire_quantize};
  for (const auto& t : a.policy.transforms)
    if (const auto* n = std::get_if<noise_spec>(&t)) a.noise_sigma = n->sigma;
  return a;
}
/// @brief Gaussian noise with σ relative to each (layer, K/V) tensor's RMS ("kv_noise_<σ>").
/// @throws invalid_argument if sigma is negative or not finite.
[[nodiscard]] inline trial_arm kv_noise_arm(double sigma) {
  detail::check_finite("kv_noise_arm", "sigma", sigma);
  detail::check_nonnegative("kv_noise_arm", "sigma", sigma);
  return kv_policy_arm(
      kv_policy{.label = "kv_noise_" + number_text(sigma),
                .transforms = {noise_spec{.sigma = sigma, .scale = noise_scale::rms_layer}}});
}
/// @brief Placebo arms.
[[nodiscard]] inline trial_arm deranged_arm() { return {.label = "deranged", .kind = arm_kind::deranged}; }
/// @brief A's cache, zeroed.
[[nodiscard]] inline trial_arm zeroed_arm() { return {.label = "zeroed", .kind = arm_kind::zeroed}; }
/// @brief A moment-matched random cache.
[[nodiscard]] inline trial_arm random_arm() { return {.label = "random", .kind = arm_kind::random}; }
/// @brief The partner model's cache, force-imported.
[[nodiscard]] inline trial_arm cross_model_arm() {
  return {.label = "cross_model", .kind = arm_kind::cross_model};
}
/// @brief The whole cache of B's model fine-tuned `steps` steps apart ("kv_drift_<steps>"), read
/// by the sender engine named "drift_<steps>" (trial_driver::add_sender).
/// @throws invalid_argument if steps < 0.
[[nodiscard]] inline trial_arm kv_drift_arm(std::int32_t steps) {
  if (steps < 0) detail::throw_invalid("kv_drift_arm", "steps", "must be >= 0, got " + std::to_string(steps));
  return {.label = "kv_drift_" + std::to_string(steps),
          .kind = arm_kind::drifted,
          .policy = kv_policy{.label = "kv_drift_" + std::to_string(steps)},
          .sender = "drift_" + std::to_string(steps),
          .drift_steps = steps};
}

/// @brief The cache of the sender named `sender` through the cache map registered for it
/// (trial_driver::add_map): "kv_mapped" for the partner (partner_sender; its unmapped arm is
/// cross_model), else "kv_mapped_<sender>" ("kv_mapped_drift_300", whose unmapped arm is
/// kv_drift_300 and whose drift_steps are 300).
/// @throws invalid_argument if the sender is empty or not of [a-z0-9_].
[[nodiscard]] inline trial_arm kv_mapped_arm(std::string sender = std::string(partner_sender)) {
  if (sender.empty() ||
      sender.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
    detail::throw_invalid("kv_mapped_arm", "sender",
                          "must be a non-empty name of [a-z0-9_], got '" + sender + "'");
  trial_arm a{.label = sender == partner_sender ? std::string("kv_mapped") : "kv_mapped_" + sender,
              .kind = arm_kind::kv_mapped,
              .sender = sender};
  a.policy.label = a.label;
  if (sender.rfind("drift_", 0) == 0 && sender.size() > 6 && sender.size() <= 15 &&
      sender.find_first_not_of("0123456789", 6) == std::string::npos)
    a.drift_steps = static_cast<std::int32_t>(std::stol(sender.substr(6)));
  return a;
}

/// @brief The label of the arm that relays the same sender's cache unmapped (what
/// mapped.beats_unmapped compares a kv_mapped arm with): cross_model for the partner,
/// kv_drift_<k> for a drifted sender "drift_<k>", else nothing.
[[nodiscard]] inline std::optional<std::string> unmapped_arm_label(const trial_arm& mapped) {
  if (mapped.kind != arm_kind::kv_mapped) return std::nullopt;
  if (mapped.sender == partner_sender) return std::string("cross_model");
  if (mapped.drift_steps) return "kv_drift_" + std::to_string(*mapped.drift_steps);
  return std::nullopt;
}

/// @brief The longest message the message arms without a budget suffix let A write (kv_message,
/// kv_message_only): generation stops earlier at the message's stop token or the engine's context.
/// 32 tokens hold the organism's longest document (16 pairs) and equal the largest default text
/// budget (text_message_32), so A writes one message of at most 32 tokens per unit; longer user
/// documents take a suffix (kv_message_<k>). At 64 the default audit spent ~30 % longer in A's
/// generation, since the organism often does not stop on its own.
inline constexpr std::int32_t default_message_budget = 32;

/// @brief A writes at most `k` tokens after its instruction; B reads them as text ("text_message_<k>").
/// @throws invalid_argument if k < 1.
[[nodiscard]] inline trial_arm text_message_arm(std::int32_t k) {
  if (k < 1) detail::throw_invalid("text_message_arm", "k", "must be >= 1, got " + std::to_string(k));
  return {.label = "text_message_" + std::to_string(k), .kind = arm_kind::text_message, .budget = k};
}
/// @brief A's cache of its document, instruction and message of at most `k` tokens ("kv_message",
/// or "kv_message_<k>" when k is not default_message_budget). The message rows keep the sender's
/// positions (the policy's default position mode).
/// @throws invalid_argument if k < 1.
[[nodiscard]] inline trial_arm kv_message_arm(std::int32_t k = default_message_budget) {
  if (k < 1) detail::throw_invalid("kv_message_arm", "k", "must be >= 1, got " + std::to_string(k));
  std::string label = k == default_message_budget ? "kv_message" : "kv_message_" + std::to_string(k);
  return {.label = label, .kind = arm_kind::kv_message, .budget = k, .policy = kv_policy{.label = label}};
}
/// @brief The cache rows of A's message only, at most `k` tokens ("kv_message_only", or
/// "kv_message_only_<k>"); where they are placed at the receiver is the policy's position mode
/// (kv_policy::mode: preserve keeps the sender's positions, `@rebase` renumbers them from 0).
/// @throws invalid_argument if k < 1.
[[nodiscard]] inline trial_arm kv_message_only_arm(std::int32_t k = default_message_budget) {
  if (k < 1) detail::throw_invalid("kv_message_only_arm", "k", "must be >= 1, got " + std::to_string(k));
  std::string label =
      k == default_message_budget ? "kv_message_only" : "kv_message_only_" + std::to_string(k);
  return {
      .label = label, .kind = arm_kind::kv_message_only, .budget = k, .policy = kv_policy{.label = label}};
}

namespace detail {
[[nodiscard]] inline trial_arm parse_arm_base(std::string_view name) {
  constexpr std::string_view fn = "parse_arm";
  const std::string s(name);
  auto bad = [&]() -> void {
    detail::throw_invalid(fn, "name",
                          "must be no_comm, text_full, text_budget_<k>, kv_full, kv_noise_<sigma>, "
                          "kv_layers_<l>[_<l>...], kv_first_half, "
                          "kv_last_half, kv_sinks_<s>_<w>, kv_int8, kv_int4, kv_fp8, deranged, zeroed, "
                          "random, cross_model, kv_drift_<steps>, text_message_<k>, kv_message[_<k>], "
                          "kv_message_only[_<k>], kv_mapped or kv_mapped_<sender>, got '" +
                              s + "'");
  };
  auto integer = [&](std::string_view t) -> std::int64_t {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string_view::npos) bad();
    return std::stoll(std::string(t));
  };
  if (s == "no_comm") return no_comm_arm();
  if (s == "text_full") return text_full_arm();
  if (s == "kv_full") return kv_full_arm();
  if (s == "deranged") return deranged_arm();
  if (s == "zeroed") return zeroed_arm();
  if (s == "random") return random_arm();
  if (s == "cross_model") return cross_model_arm();
  if (s == "kv_message") return kv_message_arm();
  if (s == "kv_message_only") return kv_message_only_arm();
  if (s == "kv_mapped") return kv_mapped_arm();
  if (s.rfind("kv_mapped_", 0) == 0) {
    const std::string sender = s.substr(10);
    if (sender.empty() || sender == partner_sender ||
        sender.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
      bad();
    return kv_mapped_arm(sender);
  }
  if (s.rfind("text_message_", 0) == 0)
    return text_message_arm(static_cast<std::int32_t>(integer(std::string_view(s).substr(13))));
  if (s.rfind("kv_message_only_", 0) == 0)
    return kv_message_only_arm(static_cast<std::int32_t>(integer(std::string_view(s).substr(16))));
  if (s.rfind("kv_message_", 0) == 0)
    return kv_message_arm(static_cast<std::int32_t>(integer(std::string_view(s).substr(11))));
  if (s.rfind("kv_drift_", 0) == 0)
    return kv_drift_arm(static_cast<std::int32_t>(integer(std::string_view(s).substr(9))));
  if (s.rfind("text_budget_", 0) == 0)
    return text_budget_arm(static_cast<std::int32_t>(integer(std::string_view(s).substr(12))));
  if (s.rfind("kv_noise_", 0) == 0) {
    const std::string v = s.substr(9);
    std::size_t used = 0;
    double sigma = -1;
    try {
      sigma = std::stod(v, &used);
    } catch (const std::exception&) {
      bad();
    }
    if (used != v.size() || !(sigma >= 0) || !std::isfinite(sigma)) bad();
    auto a = kv_noise_arm(sigma);
    a.label = s;
    a.policy.label = s;
    return a;
  }
  if (s.rfind("kv_layers_", 0) == 0) {
    std::vector<layer_index> layers;
    std::string_view rest = std::string_view(s).substr(10);
    while (true) {
      const auto u = rest.find('_');
      layers.push_back(static_cast<layer_index>(integer(rest.substr(0, u))));
      if (u == std::string_view::npos) break;
      rest = rest.substr(u + 1);
    }
    return kv_policy_arm(kv_policy{.label = s, .layers = layers});
  }
  if (s == "kv_first_half")
    return kv_policy_arm(kv_policy{.label = s, .tokens = token_fraction_spec{.fraction = 0.5}});
  if (s == "kv_last_half")
    return kv_policy_arm(kv_policy{.label = s, .tokens = token_fraction_spec{.fraction = 0.5, .last = true}});
  if (s.rfind("kv_sinks_", 0) == 0) {
    const std::string_view rest = std::string_view(s).substr(9);
    const auto u = rest.find('_');
    if (u == std::string_view::npos) bad();
    return kv_policy_arm(kv_policy{.label = s,
                                   .tokens = sinks_window_spec{.sinks = integer(rest.substr(0, u)),
                                                               .window = integer(rest.substr(u + 1))}});
  }
  if (s == "kv_int8")
    return kv_policy_arm(kv_policy{.label = s},
                         quantize_spec{.scheme = quant_scheme::int8, .group_size = 32});
  if (s == "kv_int4")
    return kv_policy_arm(kv_policy{.label = s},
                         quantize_spec{.scheme = quant_scheme::int4, .group_size = 32});
  if (s == "kv_fp8")
    return kv_policy_arm(kv_policy{.label = s}, quantize_spec{.scheme = quant_scheme::fp8_e4m3});
  bad();
  return {};
}

}  // namespace detail

/// @brief Parses an arm name: no_comm, text_full, text_budget_<k>, kv_full, kv_noise_<σ>,
/// kv_layers_<l>[_<l>...], kv_first_half, kv_last_half, kv_sinks_<s>_<w>, kv_int8, kv_int4,
/// kv_fp8, deranged, zeroed, random, cross_model, kv_drift_<steps>, text_message_<k>, kv_message[_<k>],
/// kv_message_only[_<k>], kv_mapped (the partner's cache through its map), kv_mapped_<sender> (a
/// named sender's, e.g. kv_mapped_drift_300); a KV arm (and kv_message_only) may end in `@preserve`,
/// `@rebase` or
/// `@append` to choose how the relayed positions are placed at the receiver (kv/rope.hpp
/// position_mode: keep the sender's positions — the default —, renumber them 0, 1, ... with the
/// keys re-rotated, or place them after the receiver's own tokens), e.g. `kv_last_half@rebase`.
/// @throws invalid_argument naming the accepted forms.
[[nodiscard]] inline trial_arm parse_arm(std::string_view name) {
  const auto at = name.find('@');
  if (at == std::string_view::npos) return detail::parse_arm_base(name);
  const std::string_view mode = name.substr(at + 1);
  trial_arm a = detail::parse_arm_base(name.substr(0, at));
  if (!a.plan().placeable)
    detail::throw_invalid(
        "parse_arm", "name",
        "a position mode (@...) applies to kv_full and kv_* policy arms (and kv_message_only) only, got '" +
            std::string(name) + "'");
  if (mode == "preserve")
    a.policy.mode = position_mode::preserve;
  else if (mode == "rebase")
    a.policy.mode = position_mode::rebase_contiguous;
  else if (mode == "append")
    a.policy.mode = position_mode::append_after;
  else
    detail::throw_invalid(
        "parse_arm", "name",
        "the position mode after '@' must be preserve, rebase or append, got '" + std::string(name) + "'");
  if (a.kind == arm_kind::kv_full) a.kind = arm_kind::kv_policy;  // a placed whole cache is a policy
  a.label = std::string(name);
  a.policy.label = a.label;
  return a;
}

/// @brief The kind of a record's arm: the record's arm_kind field when it is set (nothing when it
/// names no kind), else the kind of the arm parse_arm() reads in its label (records from other
/// stacks may leave arm_kind empty: "kv_drift_300" is drifted, "text_budget_4" text_budget), else
/// nothing. The report classifies arms through this and plan_of(), never by label.
[[nodiscard]] inline std::optional<arm_kind> record_arm_kind(std::string_view kind_field,
                                                             std::string_view label) {
  if (!kind_field.empty()) return parse_arm_kind(kind_field);
  try {
    return parse_arm(label).kind;
  } catch (const invalid_argument&) {
    return std::nullopt;
  }
}

/// @brief The default audit arms: no_comm, text_full, text_budget_4, kv_full, kv_noise_{0.25,
/// 0.5, 0.75, 1, 1.5, 2}, kv_layers_0, kv_layers_1, kv_first_half, kv_last_half, kv_int8, kv_int4, kv_fp8,
/// deranged, zeroed, random — all run on one engine — and, with `with_partner`, cross_model (last),
/// which needs a partner engine (the CLI's audit adds it when a partner is configured). Drift arms
/// (kv_drift_<k>) need sender engines and are added by whoever registers them (the CLI adds one per shipped
/// drift level).
[[nodiscard]] inline std::vector<trial_arm> default_arms(bool with_partner = false) {
  std::vector<trial_arm> arms;
  for (const char* n : {"no_comm",      "text_full",     "text_budget_4", "kv_full",      "kv_noise_0.25",
                        "kv_noise_0.5", "kv_noise_0.75", "kv_noise_1",    "kv_noise_1.5", "kv_noise_2",
                        "kv_layers_0",  "kv_layers_1",   "kv_first_half", "kv_last_half", "kv_int8",
                        "kv_int4",      "kv_fp8",        "deranged",      "zeroed",       "random"})
    arms.push_back(parse_arm(n));
  if (with_partner) arms.push_back(cross_model_arm());
  return arms;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_ARM_HPP
