// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/regression.hpp, compiled once (docs/building.md).
#include <latentaudit/estimators/impl/regression-inl.hpp>
