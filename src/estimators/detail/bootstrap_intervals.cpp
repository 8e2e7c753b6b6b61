// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of estimators/detail/bootstrap_intervals.hpp, compiled once
// (docs/building.md).
#include <latentaudit/estimators/detail/impl/bootstrap_intervals-inl.hpp>
