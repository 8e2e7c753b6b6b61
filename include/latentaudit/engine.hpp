// SPDX-License-Identifier: MIT
// latentaudit: module header for inference engines: the engine concept, the CPU reference
// engine, the safetensors reader and the GGUF reader/writer.
#ifndef LATENTAUDIT_ENGINE_HPP
#define LATENTAUDIT_ENGINE_HPP

#include "core.hpp"
#include "engine/capabilities.hpp"
#include "engine/concepts.hpp"
#include "engine/conformance.hpp"
#include "engine/gguf.hpp"
#include "engine/gguf_export.hpp"
#include "engine/gguf_import.hpp"
#include "engine/kv_map_file.hpp"
#include "engine/llama_config.hpp"
#include "engine/reference_cpu.hpp"
#include "engine/safetensors.hpp"
#include "engine/spm_tokenizer.hpp"
#include "engine/tokenizer_json.hpp"
#include "kv.hpp"

#endif  // LATENTAUDIT_ENGINE_HPP
