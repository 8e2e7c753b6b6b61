// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/analyses/drift.hpp, compiled once (docs/building.md).
#include <latentaudit/report/analyses/impl/drift-inl.hpp>
