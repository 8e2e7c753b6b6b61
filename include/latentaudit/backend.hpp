// SPDX-License-Identifier: MIT
// latentaudit: module header for inference backends: the backend concept, the CPU reference
// backend, the safetensors reader and the GGUF reader/writer.
#ifndef LATENTAUDIT_BACKEND_HPP
#define LATENTAUDIT_BACKEND_HPP

#include "backend/capabilities.hpp"
#include "backend/concepts.hpp"
#include "backend/conformance.hpp"
#include "backend/gguf.hpp"
#include "backend/gguf_export.hpp"
#include "backend/kv_map_file.hpp"
#include "backend/reference_cpu.hpp"
#include "backend/safetensors.hpp"
#include "core.hpp"
#include "kv.hpp"

#endif  // LATENTAUDIT_BACKEND_HPP
