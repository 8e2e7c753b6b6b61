// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/analyses/mapped.hpp, compiled once
// (docs/building.md).
#include <latentaudit/report/analyses/impl/mapped-inl.hpp>
