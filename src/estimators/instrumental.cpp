// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/instrumental.hpp, compiled once
// (docs/building.md).
#include <latentaudit/estimators/impl/instrumental-inl.hpp>
