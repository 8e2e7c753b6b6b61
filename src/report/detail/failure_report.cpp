// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/detail/failure_report.hpp, compiled once
// (docs/building.md).
#include <latentaudit/report/detail/impl/failure_report-inl.hpp>
