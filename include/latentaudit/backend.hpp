// SPDX-License-Identifier: MIT
// latentaudit: module header for inference backends (the safetensors reader so far; the backend
// concept and the CPU reference backend follow).
#ifndef LATENTAUDIT_BACKEND_HPP
#define LATENTAUDIT_BACKEND_HPP

#include "core.hpp"
#include "kv.hpp"
#include "backend/safetensors.hpp"

#endif  // LATENTAUDIT_BACKEND_HPP
