// SPDX-License-Identifier: MIT
// latentaudit: module header for what a serving stack includes at run time — the always-valid relay
// monitor, the production sampler, the Prometheus text metrics and the audit's policy as rules
// (relay_policy; docs/serving.md).
#ifndef LATENTAUDIT_SERVE_HPP
#define LATENTAUDIT_SERVE_HPP

#include "core.hpp"
#include "serve/relay_metrics.hpp"
#include "serve/relay_monitor.hpp"
#include "serve/relay_policy.hpp"
#include "serve/relay_sampler.hpp"
#include "trial.hpp"

#endif  // LATENTAUDIT_SERVE_HPP
