// SPDX-License-Identifier: MIT
// latentaudit: the trial driver for the reference engine, trial_driver<reference_cpu_engine>; in
// compiled mode instantiated once in src/reference_driver.cpp, so the programs that
// run trials on the reference engine do not each compile it (docs/building.md).
#ifndef LATENTAUDIT_TRIAL_REFERENCE_DRIVER_HPP
#define LATENTAUDIT_TRIAL_REFERENCE_DRIVER_HPP

#include "../engine/reference_cpu.hpp"
#include "driver.hpp"

#ifdef LATENTAUDIT_COMPILED_LIB
namespace latentaudit {
extern template class trial_driver<reference_cpu_engine>;
}  // namespace latentaudit
#endif

#endif  // LATENTAUDIT_TRIAL_REFERENCE_DRIVER_HPP
