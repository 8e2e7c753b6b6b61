// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/analyses/regime_contrast.hpp, compiled once
// (docs/building.md).
#include <latentaudit/report/analyses/impl/regime_contrast-inl.hpp>
