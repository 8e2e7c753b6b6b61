// SPDX-License-Identifier: MIT
// latentaudit: the library version.
#ifndef LATENTAUDIT_VERSION_HPP
#define LATENTAUDIT_VERSION_HPP

/// @brief Major version: incompatible API changes.
#define LATENTAUDIT_VERSION_MAJOR 0
/// @brief Minor version: compatible additions.
#define LATENTAUDIT_VERSION_MINOR 1
/// @brief Patch version: fixes.
#define LATENTAUDIT_VERSION_PATCH 0
/// @brief The version as one integer 0xMMmmpp, for preprocessor comparisons.
#define LATENTAUDIT_VERSION \
  ((LATENTAUDIT_VERSION_MAJOR << 16) | (LATENTAUDIT_VERSION_MINOR << 8) | LATENTAUDIT_VERSION_PATCH)

namespace latentaudit {
/// @brief The version as a string "major.minor.patch".
inline constexpr const char* version_string = "0.1.0";
}  // namespace latentaudit

#endif  // LATENTAUDIT_VERSION_HPP
