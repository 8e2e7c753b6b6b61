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

#include "../core/error.hpp"
#include "../core/file_check.hpp"
#include "../core/json.hpp"
#include "../core/types.hpp"
#include "task.hpp"

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
  const organism_format f = organism_format::load(dir);  // the one reader of task.json
  if (!f.recite) return std::nullopt;
  message_options o;
  o.instruction = {*f.recite};
  o.stop = {*f.message_stop};
  return o;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_MESSAGE_HPP
