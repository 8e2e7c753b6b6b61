// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/detail/record_units.hpp, compiled once
// (docs/building.md).
#include <latentaudit/report/detail/impl/record_units-inl.hpp>
