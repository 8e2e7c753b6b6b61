// SPDX-License-Identifier: MIT
// latentaudit: module header for the causal estimators. Every header under estimators/ is
// listed here; a test checks that the list is complete.
#ifndef LATENTAUDIT_ESTIMATORS_HPP
#define LATENTAUDIT_ESTIMATORS_HPP

#include "core.hpp"
#include "estimators/betting.hpp"
#include "estimators/betting_power.hpp"
#include "estimators/betting_ratio.hpp"
#include "estimators/bootstrap.hpp"
#include "estimators/difference_in_differences.hpp"
#include "estimators/difference_in_means.hpp"
#include "estimators/effect_estimate.hpp"
#include "estimators/equivalence.hpp"
#include "estimators/heterogeneity.hpp"
#include "estimators/instrumental.hpp"
#include "estimators/matching.hpp"
#include "estimators/multiplicity.hpp"
#include "estimators/paired_binary.hpp"
#include "estimators/power.hpp"
#include "estimators/regression.hpp"
#include "estimators/sensitivity.hpp"
#include "estimators/sequential.hpp"
#include "estimators/weighting.hpp"

#endif  // LATENTAUDIT_ESTIMATORS_HPP
