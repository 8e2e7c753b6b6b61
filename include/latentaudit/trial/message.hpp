// SPDX-License-Identifier: MIT
// latentaudit: how agent A writes the message of the message arms (text_message_<k>, kv_message,
// kv_message_only; trial/arm.hpp): the instruction A reads after its document, the tokens that end
// a message, the detokenizer of the records' message text — and an organism's, from its task.json
// (`recite`, `message_stop`; tools/organism/train.py).
#ifndef LATENTAUDIT_TRIAL_MESSAGE_HPP
#define LATENTAUDIT_TRIAL_MESSAGE_HPP

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "../core/detail/file_check.hpp"
#include "../core/error.hpp"
#include "../core/json.hpp"
#include "../core/types.hpp"

namespace latentaudit {

/// @brief How A writes its message for the message arms: the instruction it reads after the
/// document when the task names none (trial_task::instruction), the tokens that end a message (not
/// part of it), and how message tokens become text for the records (empty: no tokenizer, the
/// record's `message` is null). An organism's come from its task.json (organism_message_options).
struct message_options {
  std::vector<token_id> instruction;  ///< the default instruction (organism: {recite})
  std::vector<token_id> stop;         ///< tokens that end a message (organism: {message_stop})
  /// message tokens → text (the engine's tokenizer); empty = none
  std::function<std::string(std::span<const token_id>)> detokenize;
};

/// @brief The message options of the organism in `dir` from its task.json: instruction {recite},
/// stop {message_stop}; nothing when task.json has no `recite` field (an organism trained without
/// the recite task writes no messages).
/// @throws corrupt_data naming the file and the field if task.json cannot be read, or `recite` or
///         `message_stop` is not a token id inside `vocab_size`.
[[nodiscard]] inline std::optional<message_options> organism_message_options(
    const std::filesystem::path& dir) {
  const auto path = dir / "task.json";
  auto fail = [&](const std::string& what) {
    LATENTAUDIT_THROW(corrupt_data("organism_message_options: " + path.string() + ": " + what));
  };
  try {
    if (detail::require_regular_file(path, "organism_message_options: task file") > (1u << 16))
      fail("is larger than 64 KiB");
  } catch (const invalid_argument& e) {
    LATENTAUDIT_THROW(corrupt_data(e.what()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot be opened");
  std::ostringstream ss;
  ss << in.rdbuf();
  json_value j;
  try {
    j = parse_json(ss.str(), {.max_depth = 8, .max_bytes = 1 << 16});
  } catch (const error& e) {
    fail(e.what());
  }
  if (!j.is_object()) fail("must be a JSON object");
  if (j.find("recite") == nullptr) return std::nullopt;
  const json_value* vs = j.find("vocab_size");
  if (vs == nullptr || !vs->is_number()) fail("field 'vocab_size' must be an integer");
  auto token = [&](const char* key) -> token_id {
    const json_value* v = j.find(key);
    if (v == nullptr || !v->is_number() || !(v->as_number() >= 0) || v->as_number() >= vs->as_number() ||
        v->as_number() != std::floor(v->as_number()))
      fail(std::string("field '") + key + "' must be a token id in [0, vocab_size)");
    return static_cast<token_id>(v->as_number());
  };
  message_options o;
  o.instruction = {token("recite")};
  o.stop = {token("message_stop")};
  return o;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_MESSAGE_HPP
