// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/weighting.hpp, compiled once (docs/building.md).
#include <latentaudit/estimators/impl/weighting-inl.hpp>
