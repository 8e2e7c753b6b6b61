// SPDX-License-Identifier: MIT
// Deprecated: the engine module was named backend/; this header forwards to
// <latentaudit/engine/reference_cpu.hpp> so that code written against the former path keeps compiling.
#ifndef LATENTAUDIT_DEPRECATED_BACKEND_REFERENCE_CPU_HPP
#define LATENTAUDIT_DEPRECATED_BACKEND_REFERENCE_CPU_HPP

#include "../engine/reference_cpu.hpp"  // IWYU pragma: export

#endif  // LATENTAUDIT_DEPRECATED_BACKEND_REFERENCE_CPU_HPP
