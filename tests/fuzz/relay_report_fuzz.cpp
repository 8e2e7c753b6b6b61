// SPDX-License-Identifier: MIT
// libFuzzer target for what the relay peer reports of one relay (dist/relay_protocol.hpp,
// dist::detail::check_peer_report; docs/distributed.md, "Threat model"): any byte string, read as B reads a
// control message (JSON, depth <= 64, at most 1 MiB), must either be refused with a
// latentaudit::error or yield a report within the bounds a record may hold — stage seconds finite in
// [0, 86400], a short fingerprint, a policy object of depth <= 8 (or null), at most `budget` message
// tokens on a message arm, each a token id of the vocabulary — never crash, hang or allocate beyond
// the message.
#include <latentaudit/dist/relay_protocol.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace latentaudit;
  if (size > (std::size_t{1} << 20)) return 0;
  json_value m;
  try {
    m = parse_json(std::string_view(reinterpret_cast<const char*>(data), size),
                   {.max_depth = 64, .max_bytes = std::size_t{1} << 20});
  } catch (const latentaudit::error&) {
    return 0;
  }
  static const trial_arm arms[] = {parse_arm("kv_full"), parse_arm("text_message_4"),
                                   parse_arm("kv_message")};
  constexpr std::int64_t vocab = 64;
  for (const auto& arm : arms) {
    try {
      const auto r = dist::detail::check_peer_report(m, arm, 3, vocab);
      for (double s : {r.a_prefill_s, r.export_s, r.policy_s, r.encode_s})
        if (!std::isfinite(s) || s < 0 || s > 86400) std::abort();
      if (r.sender_fingerprint.size() > 1024) std::abort();
      if (!r.policy.is_null() && !r.policy.is_object()) std::abort();
      if (!arm.uses_message() && !r.message.empty()) std::abort();
      if (r.message.size() > static_cast<std::size_t>(arm.budget > 0 ? arm.budget : 0)) std::abort();
      for (auto t : r.message)
        if (t < 0 || t >= vocab) std::abort();
      // the policy as a record line holds it: it reads back
      if (!r.policy.is_null()) (void)parse_json(write_json(r.policy, {.indent = -1}), {.max_depth = 16});
    } catch (const latentaudit::error&) {
    }
  }
  return 0;
}
