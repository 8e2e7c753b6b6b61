// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/analyses/stale.hpp, compiled once (docs/building.md).
#include <latentaudit/report/analyses/impl/stale-inl.hpp>
