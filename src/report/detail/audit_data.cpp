// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/detail/audit_data.hpp, compiled once
// (docs/building.md).
#include <latentaudit/report/detail/impl/audit_data-inl.hpp>
