// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/analyses/message.hpp, compiled once
// (docs/building.md).
#include <latentaudit/report/analyses/impl/message-inl.hpp>
