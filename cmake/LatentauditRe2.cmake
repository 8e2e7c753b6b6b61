# SPDX-License-Identifier: MIT
# RE2 for the `regex` scoring of task files (trial/detail/answer_regex.hpp, docs/tasks.md): a
# linear-time matcher with bounded memory and no recursion, where std::regex overflows the stack
# on a nested pattern (docs/design.md "Dependencies").
#
# LATENTAUDIT_RE2 = AUTO (default: enable whenever pkg-config finds `re2`, e.g. Debian's
# libre2-dev, which scripts/install-deps.sh installs) | ON (fail if not found) | OFF. Result:
# LATENTAUDIT_HAS_RE2 (TRUE/FALSE) and, when TRUE, the INTERFACE target latentaudit::re2
# (LATENTAUDIT_HAVE_RE2=1 and libre2) for header-only programs. The compiled library links RE2
# itself. Without RE2, regex scoring is refused at load with a message naming the field; every
# other scoring works unchanged.
set(LATENTAUDIT_RE2 AUTO CACHE STRING "RE2 (regex scoring of task files): AUTO (when found), ON (required) or OFF")
set_property(CACHE LATENTAUDIT_RE2 PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${LATENTAUDIT_RE2}" _la_re2_mode)
if(NOT _la_re2_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "LATENTAUDIT_RE2 must be AUTO, ON or OFF (got '${LATENTAUDIT_RE2}')")
endif()

set(LATENTAUDIT_HAS_RE2 FALSE)
if(NOT _la_re2_mode STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(LA_RE2 QUIET IMPORTED_TARGET re2)
  endif()
  if(LA_RE2_FOUND AND TARGET PkgConfig::LA_RE2)
    add_library(latentaudit_re2 INTERFACE)
    target_link_libraries(latentaudit_re2 INTERFACE PkgConfig::LA_RE2)
    target_compile_definitions(latentaudit_re2 INTERFACE LATENTAUDIT_HAVE_RE2=1)
    add_library(latentaudit::re2 ALIAS latentaudit_re2)
    set(LATENTAUDIT_HAS_RE2 TRUE)
  endif()
endif()

if(LATENTAUDIT_HAS_RE2)
  message(STATUS "latentaudit: RE2 ON (LATENTAUDIT_RE2=${_la_re2_mode}): re2 ${LA_RE2_VERSION}")
elseif(_la_re2_mode STREQUAL "ON")
  message(FATAL_ERROR "latentaudit: LATENTAUDIT_RE2=ON but pkg-config found no re2 "
                      "(scripts/install-deps.sh installs libre2-dev)")
else()
  message(STATUS "latentaudit: RE2 OFF (LATENTAUDIT_RE2=${_la_re2_mode}): regex scoring of task files is refused")
endif()
