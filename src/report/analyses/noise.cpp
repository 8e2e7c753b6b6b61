// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/analyses/noise.hpp, compiled once (docs/building.md).
#include <latentaudit/report/analyses/impl/noise-inl.hpp>
