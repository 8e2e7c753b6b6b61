// SPDX-License-Identifier: MIT
// latentaudit: the exception hierarchy.
#ifndef LATENTAUDIT_CORE_ERROR_HPP
#define LATENTAUDIT_CORE_ERROR_HPP

#include <stdexcept>
#include <string>

namespace latentaudit {

/// @brief Base of every exception the library throws. Messages name the function, the
/// argument and what was expected, e.g. "welch_t_test: treated has 1 observation, expected >= 2".
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @brief An argument is outside its domain (a level outside (0,1), too few observations, NaN).
class invalid_argument : public error {
 public:
  using error::error;
};

/// @brief Two arguments disagree in size or shape (paired vectors of different lengths).
class shape_mismatch : public invalid_argument {
 public:
  using invalid_argument::invalid_argument;
};

/// @brief A cache or model does not belong to the model it is offered to (fingerprint mismatch).
class incompatible_model : public error {
 public:
  using error::error;
};

/// @brief A file, relay or record is malformed; raised before anything its header claims is allocated.
class corrupt_data : public error {
 public:
  using error::error;
};

/// @brief A relay failed authentication (HMAC mismatch or missing tag when a key is required).
class authentication_failed : public corrupt_data {
 public:
  using corrupt_data::corrupt_data;
};

/// @brief The statistics are undefined for these data (zero variance, no discordant pairs,
/// a degenerate bootstrap distribution) or a numerical method failed to converge.
class numerical_error : public error {
 public:
  using error::error;
};

/// @brief An inference engine failed an operation or lacks a capability it was asked for.
class engine_error : public error {
 public:
  using error::error;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_CORE_ERROR_HPP
