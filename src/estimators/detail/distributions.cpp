// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/detail/distributions.hpp, compiled once
// (docs/building.md).
#include <latentaudit/estimators/detail/impl/distributions-inl.hpp>
