// SPDX-License-Identifier: MIT
// latentaudit compiled mode: the definitions of trial/task_file.hpp, compiled once (docs/building.md).
#include <latentaudit/trial/impl/task_file-inl.hpp>
