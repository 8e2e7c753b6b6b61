// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/matching.hpp, compiled once (docs/building.md).
#include <latentaudit/estimators/impl/matching-inl.hpp>
