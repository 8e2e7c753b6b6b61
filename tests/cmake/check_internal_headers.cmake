# SPDX-License-Identifier: MIT
# The internal headers (every file under a detail/ or impl/ folder of include/latentaudit) are guarded
# against direct inclusion, as Eigen guards its src/ headers: each one's first include is
# core/detail/internal_header_check.hpp, which stops the compiler with
#   "latentaudit: this header (...) is internal (detail/ or impl/); include <latentaudit/<module>.hpp>
#    or the public header that uses it"
# unless a public header (config.hpp) came first. This script checks, for each internal header,
#   1. that its first #include is the check (so a new detail/ or impl/ file without it fails here);
#   2. that a translation unit including that header alone is refused by the compiler CXX with the
#      message above, the header named on the include stack (preprocessing is enough: the check is
#      an #error; -Wfatal-errors makes GCC stop there, 0.05 s a header instead of preprocessing the
#      header's whole include tree as clang does, ~0.5 s: tests/CMakeLists.txt passes g++ when found);
# and, so that the refusals cannot come from a broken command line, that one translation unit
# including <latentaudit/config.hpp> and then every internal header is accepted (every public header
# that uses one brings config.hpp).
# Arguments: ROOT (source tree), CXX (a C++20 compiler), EIGEN (Eigen's include directory), WORK (a
# scratch folder for the translation units).
set(inc "${ROOT}/include")
file(GLOB_RECURSE internal RELATIVE "${inc}" "${inc}/latentaudit/*.hpp")
list(FILTER internal INCLUDE REGEX "/(detail|impl)/")
list(REMOVE_ITEM internal "latentaudit/core/detail/internal_header_check.hpp")
list(LENGTH internal n)
if(n LESS 10)
  message(FATAL_ERROR "found only ${n} internal headers under ${inc}/latentaudit: wrong ROOT?")
endif()
set(failures "")
set(work "${WORK}")
file(REMOVE_RECURSE "${work}")
file(MAKE_DIRECTORY "${work}")
set(all "#include <latentaudit/config.hpp>\n")
foreach(h IN LISTS internal)
  file(STRINGS "${inc}/${h}" includes REGEX "^[ \t]*#[ \t]*include")
  list(GET includes 0 first)
  if(NOT first MATCHES "\"([./]*)core/detail/internal_header_check\\.hpp\"|\"internal_header_check\\.hpp\"")
    list(APPEND failures "${h}: the first #include is not core/detail/internal_header_check.hpp (${first})")
    continue()
  endif()
  string(MAKE_C_IDENTIFIER "${h}" id)
  file(WRITE "${work}/${id}.cpp" "#include <${h}>\n")
  execute_process(COMMAND "${CXX}" -std=c++20 -E -Wfatal-errors -I "${inc}" -isystem "${EIGEN}" "${work}/${id}.cpp" -o /dev/null
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  string(FIND "${err}" "latentaudit: this header" at_message)
  string(FIND "${err}" "${h}" at_name)
  if(rc EQUAL 0 OR at_message EQUAL -1 OR at_name EQUAL -1)
    list(APPEND failures "${h} included alone: expected the compiler to refuse it naming the header, got rc ${rc}: ${err}")
  endif()
  string(APPEND all "#include <${h}>\n")
endforeach()
file(WRITE "${work}/all_after_config.cpp" "${all}")
execute_process(COMMAND "${CXX}" -std=c++20 -E -I "${inc}" -isystem "${EIGEN}" "${work}/all_after_config.cpp" -o /dev/null
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  list(APPEND failures "the internal headers after config.hpp: expected them to preprocess, got rc ${rc}: ${err}")
endif()
if(failures)
  list(JOIN failures "\n" text)
  message(FATAL_ERROR "internal-header guard:\n${text}")
endif()
message(STATUS "internal-header guard: ${n} detail/ and impl/ headers carry the check and are refused alone")
