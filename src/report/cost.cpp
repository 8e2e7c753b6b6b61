// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/cost.hpp, compiled once (docs/building.md).
#include <latentaudit/report/impl/cost-inl.hpp>
