// SPDX-License-Identifier: MIT
// Deprecated: the engine module was named backend/; this header forwards to
// <latentaudit/engine/kv_map_file.hpp> so that code written against the former path keeps compiling.
#ifndef LATENTAUDIT_DEPRECATED_BACKEND_KV_MAP_FILE_HPP
#define LATENTAUDIT_DEPRECATED_BACKEND_KV_MAP_FILE_HPP

#include "../engine/kv_map_file.hpp"  // IWYU pragma: export

#endif  // LATENTAUDIT_DEPRECATED_BACKEND_KV_MAP_FILE_HPP
