// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/heterogeneity.hpp, compiled once
// (docs/building.md).
#include <latentaudit/estimators/impl/heterogeneity-inl.hpp>
