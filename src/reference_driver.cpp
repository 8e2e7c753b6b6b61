// SPDX-License-Identifier: MIT
// latentaudit compiled mode: trial_driver<reference_cpu_engine>, instantiated once (docs/building.md).
#include <latentaudit/trial/reference_driver.hpp>

template class latentaudit::trial_driver<latentaudit::reference_cpu_engine>;
