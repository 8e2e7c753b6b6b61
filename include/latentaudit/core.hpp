// SPDX-License-Identifier: MIT
// latentaudit: module header for core (errors, checks, random streams, dtypes, parallelism).
#ifndef LATENTAUDIT_CORE_HPP
#define LATENTAUDIT_CORE_HPP

#include "config.hpp"
#include "core/data_table.hpp"
#include "core/detail/check.hpp"
#include "core/dtype.hpp"
#include "core/edit_distance.hpp"
#include "core/error.hpp"
#include "core/file_check.hpp"
#include "core/hash.hpp"
#include "core/json.hpp"
#include "core/number_text.hpp"
#include "core/parallel.hpp"
#include "core/rng.hpp"
#include "core/types.hpp"
#include "version.hpp"

#endif  // LATENTAUDIT_CORE_HPP
