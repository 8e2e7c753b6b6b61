// SPDX-License-Identifier: MIT
// latentaudit: umbrella header. Includes the module headers, nothing else.
#ifndef LATENTAUDIT_LATENTAUDIT_HPP
#define LATENTAUDIT_LATENTAUDIT_HPP

#include "core.hpp"
#include "dist.hpp"
#include "engine.hpp"
#include "estimators.hpp"
#include "kv.hpp"
#include "report.hpp"
#include "runner.hpp"
#include "serve.hpp"
#include "trial.hpp"

#endif  // LATENTAUDIT_LATENTAUDIT_HPP
