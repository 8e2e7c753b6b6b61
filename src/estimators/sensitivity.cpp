// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/sensitivity.hpp, compiled once (docs/building.md).
#include <latentaudit/estimators/impl/sensitivity-inl.hpp>
