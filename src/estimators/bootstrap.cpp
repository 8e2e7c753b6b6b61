// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/bootstrap.hpp, compiled once (docs/building.md).
#include <latentaudit/estimators/impl/bootstrap-inl.hpp>
