# SPDX-License-Identifier: MIT
# Builds and runs a consumer project. MODE=find_package installs latentaudit from the build tree
# BUILD into a temporary prefix first; MODE=add_subdirectory points the consumer at ROOT. CXX, when
# set, is the consumer's compiler (the project's for find_package; GCC for add_subdirectory when the
# project itself is built with clang, tests/CMakeLists.txt).
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(args "")
if(MODE STREQUAL "find_package")
  execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD}" --prefix "${WORK}/prefix"
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install into ${WORK}/prefix failed")
  endif()
  set(args "-DCMAKE_PREFIX_PATH=${WORK}/prefix")
else()
  set(args "-DLATENTAUDIT_ROOT=${ROOT}")
endif()
if(CXX)
  list(APPEND args "-DCMAKE_CXX_COMPILER=${CXX}")
endif()
# No build type (no -O, no -g): the consumer proves that the installed package is found and that its
# headers compile and link with the consumer's compiler; optimizing the umbrella's header-only program
# added ~50 s of GCC's CPU (139 s at -O2 against 88 s at -O0 on 2026-12-06) and no check: an imported
# target's headers are system headers to its consumer, so no optimizer warning of theirs is shown.
execute_process(COMMAND ${CMAKE_COMMAND} -S "${ROOT}/tests/cmake/${MODE}" -B "${WORK}/build"
                        -DCMAKE_BUILD_TYPE= ${args}
                        "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Wpedantic -Werror -Wno-missing-field-initializers"
                        RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the ${MODE} consumer failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK}/build" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the ${MODE} consumer failed")
endif()
foreach(program consumer consumer_compiled)
  if(program STREQUAL "consumer" OR EXISTS "${WORK}/build/${program}")
    execute_process(COMMAND "${WORK}/build/${program}" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
    message(STATUS "${program}: ${out}")
    if(NOT rc EQUAL 0 OR NOT out MATCHES "welch")
      message(FATAL_ERROR "the ${MODE} consumer ${program} failed (exit ${rc})")
    endif()
  endif()
endforeach()
