// SPDX-License-Identifier: MIT
// Deprecated: the engine module was named backend/; this header forwards to
// <latentaudit/engine/gguf_export.hpp> so that code written against the former path keeps compiling.
#ifndef LATENTAUDIT_DEPRECATED_BACKEND_GGUF_EXPORT_HPP
#define LATENTAUDIT_DEPRECATED_BACKEND_GGUF_EXPORT_HPP

#include "../engine/gguf_export.hpp"  // IWYU pragma: export

#endif  // LATENTAUDIT_DEPRECATED_BACKEND_GGUF_EXPORT_HPP
