// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of report/analyses/answer_probability.hpp, compiled once
// (docs/building.md).
#include <latentaudit/report/analyses/impl/answer_probability-inl.hpp>
