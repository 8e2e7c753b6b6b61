// SPDX-License-Identifier: MIT
// libFuzzer target for the JSON the audit reads besides records: an organism's task.json
// (organism_format::from_json), a model's config.json (llama_config::from_json) and a journal's
// design.json (compared by design_difference on resume). Any byte string must either parse and
// validate or throw a latentaudit::error — never crash, hang or read out of bounds.
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial/design.hpp>
#include <latentaudit/trial/task.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace latentaudit;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  json_value j;
  try {
    j = parse_json(text, {.max_depth = 16, .max_bytes = std::size_t{1} << 20});
  } catch (const latentaudit::error&) {
    return 0;
  }
  try {
    const auto f = organism_format::from_json(j, "task.json");
    if (f.max_pairs < 1 || f.max_pairs > f.key_count) std::abort();  // from_json's own invariant
  } catch (const latentaudit::error&) {
  }
  try {
    const auto c = llama_config::from_json(j, "config.json");
    if (c.n_heads % c.n_kv_heads != 0 || c.head_dim % 2 != 0) std::abort();
  } catch (const latentaudit::error&) {
  }
  // A design.json against the default design's identity: a difference is a text, never a crash;
  // a document is never different from itself.
  const json_value current = trial_design{}.to_json();
  (void)design_difference(j, current);
  (void)design_difference(current, j);
  if (!design_difference(j, j).empty()) std::abort();
  return 0;
}
