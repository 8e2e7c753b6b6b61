// SPDX-License-Identifier: MIT
// latentaudit: what an engine is and can do — its info, capability flags, and the option and
// result aggregates of the engine concept (engine/concepts.hpp).
#ifndef LATENTAUDIT_ENGINE_CAPABILITIES_HPP
#define LATENTAUDIT_ENGINE_CAPABILITIES_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/types.hpp"
#include "../kv/kv_block.hpp"
#include "../kv/rope.hpp"

namespace latentaudit {

/// @brief Optional abilities of an engine. An ability not declared is not assumed: the trial
/// driver (trial/driver.hpp) and the conformance kit (engine/conformance.hpp) read these flags,
/// refuse or skip the arms and checks an engine cannot run (trial/engine_support.hpp names the
/// reason), and record a metric the engine cannot produce as absent together with the reason
/// (trial_record::unavailable), never as a zero.
struct engine_capabilities {
  bool attention_capture = false;     ///< prefill_capture returns attention weights (attention_mass metric;
                                      ///< H2O, SnapKV and PyramidKV selections)
  bool hidden_state = false;          ///< forward outputs can include the final hidden state (hidden_cosine)
  bool partial_layer_import = false;  ///< import_kv accepts blocks with a subset of layers / a layer mask
                                      ///< (a per-layer visibility mask: kv_layers_* arms, masked relays)
  bool token_mask_import = false;     ///< import_kv accepts ragged (token-masked) blocks
  /// prefill/decode accept a first position beyond next_position(s) (a position gap, as after a
  /// relay of the document's first half whose receiver continues at the document's length);
  /// llama.cpp refuses such a batch
  bool position_gaps = false;
  std::vector<dtype> kv_dtypes;  ///< element types import_kv accepts (empty: any); the driver converts
                                 ///< a relayed block to the first listed type when its own is not listed
  /// the model carries a text tokenizer (llama.cpp: a GGUF whose tokenizer.ggml.model is not "none";
  /// llama_cpp_engine::tokenizer()), so text task fields can be tokenized and answers detokenized
  bool tokenizer = false;
};

/// @brief Identity and limits of an engine.
struct engine_info {
  std::string name;               ///< e.g. "reference_cpu"
  model_fingerprint fingerprint;  ///< the model: caches must match it to be imported
  std::int32_t vocab_size = 0;    ///< logits per position
  std::int32_t hidden_size = 0;   ///< width of the final hidden state
  std::int64_t max_context = 0;   ///< largest position + 1
  engine_capabilities caps;       ///< optional abilities
};

/// @brief Options of prefill and decode.
struct forward_options {
  bool all_logits = false;   ///< logits of every new position (else only the last)
  bool want_hidden = false;  ///< also return the last position's final hidden state (after the final norm)
};

/// @brief Result of prefill and decode.
struct forward_output {
  std::int64_t rows = 0;      ///< positions whose logits are returned (1, or all new tokens)
  std::vector<float> logits;  ///< rows × vocab_size, row-major
  std::vector<float> hidden;  ///< hidden_size values when requested
};

/// @brief Options of import_kv. Placement has one owner: a block is imported at the positions it
/// carries. Renumbering (position_mode::rebase_contiguous, append_after) is the transfer policy's
/// step before the wire (kv_policy::mode, or apply_position_mode in kv/rope.hpp for a caller
/// without a policy, with the receiver's next_position(s) for append_after), so the relayed bytes
/// and the trial record state the positions the receiver uses.
struct import_options {
  std::vector<bool> layer_mask;  ///< per model layer: import this layer (empty = every layer the block holds)
  bool force = false;            ///< skip the fingerprint check (cross-model experiments)
  const kv_block* prerope_reference = nullptr;  ///< optional pre-RoPE keys for the phase check of the gate
};

/// @brief Attention weights captured during a prefill: for each captured layer and query head,
/// the softmax weights of each new token over every cached token (row-major
/// [layer][head][query][key]); keys = tokens in the cache after the prefill, in cache order.
struct attention_capture {
  std::vector<layer_index> layers;  ///< captured layers
  std::int32_t heads = 0;           ///< query heads
  std::int64_t queries = 0;         ///< new tokens
  std::int64_t keys = 0;            ///< cached tokens (including the new ones)
  std::vector<float> weights;       ///< layers × heads × queries × keys
  forward_output output;            ///< the prefill's own output
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_CAPABILITIES_HPP
