// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/decision.hpp, compiled once (docs/building.md).
#include <latentaudit/report/impl/decision-inl.hpp>
