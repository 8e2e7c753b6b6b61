// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/html.hpp, compiled once (docs/building.md).
#include <latentaudit/report/impl/html-inl.hpp>
