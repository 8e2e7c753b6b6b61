// SPDX-License-Identifier: MIT
// libFuzzer target for the relay policy's reader and evaluator (serve/relay_policy.hpp: the path of
// `latentaudit policy`, `latentaudit diff` and Python's RelayPolicy): any byte string, as a
// report.json, must either load or throw a latentaudit::error — never crash or hang; a policy that
// loads answers a few fixed requests with an action and, when a rule fired, that rule's index inside
// its rules; a malformed request is an error, never a crash.
#include <latentaudit/core/json.hpp>
#include <latentaudit/serve/relay_policy.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace latentaudit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  json_value doc;
  try {
    doc = parse_json(text, {.max_depth = 32, .max_bytes = std::size_t{1} << 20});
  } catch (const latentaudit::error&) {
    return 0;
  }
  try {
    const relay_policy p = relay_policy::from_json(doc);
    const char* requests[] = {
        R"({"sender_fingerprint": "a", "receiver_fingerprint": "a", "cache_age_versions": 0, "prompt_overlap": 0})",
        R"({"sender_fingerprint": "b", "receiver_fingerprint": "a", "cache_age_versions": 1, "prompt_overlap": 0.5})",
        R"({})", R"({"sender_fingerprint": 3})"};
    for (const char* r : requests) {
      try {
        const relay_choice c = p.decide(parse_json(r));
        if (c.rule && *c.rule >= p.rules().size()) std::abort();
      } catch (const latentaudit::error&) {
      }
    }
  } catch (const latentaudit::error&) {
  }
  return 0;
}
