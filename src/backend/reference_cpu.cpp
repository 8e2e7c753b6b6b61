// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of backend/reference_cpu.hpp, compiled once (docs/building.md).
#include <latentaudit/backend/impl/reference_cpu-inl.hpp>
