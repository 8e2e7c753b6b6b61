// SPDX-License-Identifier: MIT
// latentaudit: umbrella header. Includes the module headers, nothing else.
#ifndef LATENTAUDIT_LATENTAUDIT_HPP
#define LATENTAUDIT_LATENTAUDIT_HPP

#include "core.hpp"
#include "estimators.hpp"
#include "kv.hpp"
#include "backend.hpp"
#include "trial.hpp"
#include "report.hpp"

#endif  // LATENTAUDIT_LATENTAUDIT_HPP
