// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/paired_binary.hpp, compiled once
// (docs/building.md).
#include <latentaudit/estimators/impl/paired_binary-inl.hpp>
