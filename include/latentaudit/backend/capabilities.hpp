// SPDX-License-Identifier: MIT
// latentaudit: what a backend is and can do — its info, capability flags, and the option and
// result aggregates of the backend concept (backend/concepts.hpp).
#ifndef LATENTAUDIT_BACKEND_CAPABILITIES_HPP
#define LATENTAUDIT_BACKEND_CAPABILITIES_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/types.hpp"
#include "../kv/kv_block.hpp"
#include "../kv/rope.hpp"

namespace latentaudit {

/// @brief Optional abilities of a backend. Callers check them before using optional operations.
struct backend_capabilities {
  bool attention_capture = false;     ///< prefill_capture returns attention weights
  bool hidden_state = false;          ///< forward outputs can include the final hidden state
  bool native_shift = false;          ///< shift re-rotates keys inside the engine (not emulated)
  bool partial_layer_import = false;  ///< import_kv accepts blocks with a subset of layers / a layer mask
  bool token_mask_import = false;     ///< import_kv accepts ragged (token-masked) blocks
  std::vector<dtype> kv_dtypes;       ///< element types export_kv/import_kv support
};

/// @brief Identity and limits of a backend.
struct backend_info {
  std::string name;               ///< e.g. "reference_cpu"
  model_fingerprint fingerprint;  ///< the model: caches must match it to be imported
  std::int32_t vocab_size = 0;    ///< logits per position
  std::int32_t hidden_size = 0;   ///< width of the final hidden state
  std::int64_t max_context = 0;   ///< largest position + 1
  backend_capabilities caps;      ///< optional abilities
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

/// @brief How import_kv places a relayed block.
struct import_options {
  position_mode mode =
      position_mode::preserve;    ///< preserve positions, rebase, or append after the receiver's tokens
  position_t first_position = 0;  ///< base for rebase_contiguous
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

#endif  // LATENTAUDIT_BACKEND_CAPABILITIES_HPP
