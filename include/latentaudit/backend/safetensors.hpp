// SPDX-License-Identifier: MIT
// Deprecated: the engine module was named backend/; this header forwards to
// <latentaudit/engine/safetensors.hpp> so that code written against the former path keeps compiling.
#ifndef LATENTAUDIT_DEPRECATED_BACKEND_SAFETENSORS_HPP
#define LATENTAUDIT_DEPRECATED_BACKEND_SAFETENSORS_HPP

#include "../engine/safetensors.hpp"  // IWYU pragma: export

#endif  // LATENTAUDIT_DEPRECATED_BACKEND_SAFETENSORS_HPP
