// SPDX-License-Identifier: MIT
// latentaudit: the library's internal spelling of edit_distance, whose one definition is the
// public core/edit_distance.hpp.
#ifndef LATENTAUDIT_CORE_DETAIL_EDIT_DISTANCE_HPP
#define LATENTAUDIT_CORE_DETAIL_EDIT_DISTANCE_HPP

#include "../edit_distance.hpp"

namespace latentaudit::detail {
using latentaudit::edit_distance;
}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_CORE_DETAIL_EDIT_DISTANCE_HPP
