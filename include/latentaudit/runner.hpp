// SPDX-License-Identifier: MIT
// latentaudit: module header for the audit runner: audit_session, which owns an audit from the
// design to the written report (workers, journal, topology over dist/ relay links and MPI ranks,
// the stopping rule), and read_report_input, the one path from an audit's directory to a report.
// Kept apart from report/ so that <latentaudit/report.hpp> builds reports from records without the
// driver or sockets (docs/design.md, "Layering").
#ifndef LATENTAUDIT_RUNNER_HPP
#define LATENTAUDIT_RUNNER_HPP

#include "core.hpp"
#include "dist.hpp"
#include "report.hpp"
#include "runner/audit_maps.hpp"
#include "runner/audit_session.hpp"
#include "runner/audit_spec.hpp"
#include "runner/drift_manifest.hpp"
#include "runner/report_input.hpp"
#include "trial.hpp"

#endif  // LATENTAUDIT_RUNNER_HPP
