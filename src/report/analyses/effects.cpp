// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/analyses/effects.hpp, compiled once
// (docs/building.md).
#include <latentaudit/report/analyses/impl/effects-inl.hpp>
