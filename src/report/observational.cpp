// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/observational.hpp, compiled once (docs/building.md).
#include <latentaudit/report/impl/observational-inl.hpp>
