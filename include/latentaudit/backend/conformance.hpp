// SPDX-License-Identifier: MIT
// Deprecated: the engine module was named backend/; this header forwards to
// <latentaudit/engine/conformance.hpp> so that code written against the former path keeps compiling.
#ifndef LATENTAUDIT_DEPRECATED_BACKEND_CONFORMANCE_HPP
#define LATENTAUDIT_DEPRECATED_BACKEND_CONFORMANCE_HPP

#include "../engine/conformance.hpp"  // IWYU pragma: export

#endif  // LATENTAUDIT_DEPRECATED_BACKEND_CONFORMANCE_HPP
