// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/audit.hpp, compiled once (docs/building.md).
#include <latentaudit/report/impl/audit-inl.hpp>
