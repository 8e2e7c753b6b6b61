// SPDX-License-Identifier: MIT
// latentaudit: the guard of the internal headers (every file under a detail/ or impl/ folder
// includes this first, as Eigen's src/Core/util/InternalHeaderCheck.h does). Those headers are no
// API: they may change in any release, and they are includable only after a public header, which
// brings config.hpp (compiled mode's generated translation units include config.hpp first). No
// include guard: each internal header runs the check again.

#ifndef LATENTAUDIT_CONFIG_HPP
#error \
    "latentaudit: this header (named on the 'In file included from' line above) is internal (detail/ or impl/); include <latentaudit/<module>.hpp> or the public header that uses it"
#endif
