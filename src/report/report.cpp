// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/report.hpp, compiled once (docs/building.md).
#include <latentaudit/report/impl/report-inl.hpp>
