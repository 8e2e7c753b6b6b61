// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/detail/arm_roles.hpp, compiled once
// (docs/building.md).
#include <latentaudit/report/detail/impl/arm_roles-inl.hpp>
