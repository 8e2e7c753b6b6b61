// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/analyses/conflict.hpp, compiled once
// (docs/building.md).
#include <latentaudit/report/analyses/impl/conflict-inl.hpp>
