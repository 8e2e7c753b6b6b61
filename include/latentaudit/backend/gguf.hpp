// SPDX-License-Identifier: MIT
// Deprecated: the engine module was named backend/; this header forwards to
// <latentaudit/engine/gguf.hpp> so that code written against the former path keeps compiling.
#ifndef LATENTAUDIT_DEPRECATED_BACKEND_GGUF_HPP
#define LATENTAUDIT_DEPRECATED_BACKEND_GGUF_HPP

#include "../engine/gguf.hpp"  // IWYU pragma: export

#endif  // LATENTAUDIT_DEPRECATED_BACKEND_GGUF_HPP
