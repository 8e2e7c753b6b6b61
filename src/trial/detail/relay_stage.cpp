// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the engine-independent relay stages (docs/building.md).
#include <latentaudit/trial/detail/impl/relay_stage-inl.hpp>
