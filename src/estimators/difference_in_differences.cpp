// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/difference_in_differences.hpp, compiled once
// (docs/building.md).
#include <latentaudit/estimators/impl/difference_in_differences-inl.hpp>
