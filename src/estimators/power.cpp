// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/power.hpp, compiled once (docs/building.md).
#include <latentaudit/estimators/impl/power-inl.hpp>
