// SPDX-License-Identifier: MIT
// latentaudit: module header for the audit report (findings, plots). Every header under report/
// is listed here; a test checks that the list is complete.
#ifndef LATENTAUDIT_REPORT_HPP
#define LATENTAUDIT_REPORT_HPP

#include "core.hpp"
#include "report/analyses/noise.hpp"
#include "report/audit.hpp"
#include "report/cost.hpp"
#include "report/decision.hpp"
#include "report/finding.hpp"
#include "report/finding_catalog.hpp"
#include "report/html.hpp"
#include "report/observational.hpp"
#include "report/report.hpp"
#include "report/report_model.hpp"
#include "report/svg.hpp"
#include "report/until_decided.hpp"

#endif  // LATENTAUDIT_REPORT_HPP
