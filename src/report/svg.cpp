// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/svg.hpp, compiled once (docs/building.md).
#include <latentaudit/report/impl/svg-inl.hpp>
