// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/analyses/relay_switch.hpp, compiled once
// (docs/building.md).
#include <latentaudit/report/analyses/impl/relay_switch-inl.hpp>
