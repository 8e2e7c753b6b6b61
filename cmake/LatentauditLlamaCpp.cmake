# SPDX-License-Identifier: MIT
# The llama.cpp engine (include/latentaudit/engine/llama_cpp.hpp) for the project's own programs.
#
# LATENTAUDIT_LLAMA_CPP = AUTO (default: enable whenever llama.cpp is found) | ON (fail if not
# found) | OFF. Looked for, in order:
#  1. a llama.cpp install: find_package(llama CONFIG) (any prefix, through CMAKE_PREFIX_PATH or
#     llama_DIR; llama.cpp's `cmake --install` writes it);
#  2. the pinned prebuilt release that scripts/install-deps.sh unpacks into
#     LATENTAUDIT_LLAMA_CPP_PREBUILT (default <source>/.deps/llama.cpp): llama.cpp v0.5.0's headers
#     and libllama.v0.5.0.so, libggml.v0.5.0.so, libggml-base.so, libggml-cpu-<variant>.so.
# Result: LATENTAUDIT_HAS_LLAMA_CPP (TRUE/FALSE) and, when TRUE, the INTERFACE target
# latentaudit::llama_cpp: llama.h's include directory, the libraries (with an rpath to their
# directory), LATENTAUDIT_HAS_LLAMA_CPP=1 and LATENTAUDIT_GGML_BACKEND_DIR="<dir>", the directory
# holding ggml's dynamically loaded CPU backends (libggml-cpu-*.so) that
# latentaudit::llama_cpp_runtime::init() (engine/llama_cpp_runtime.hpp) loads before
# llama_backend_init(). LATENTAUDIT_GGML_BACKEND_DIR (cache) overrides that directory. The target
# is the project's own (tests, CLI, benchmarks); it is not installed or exported: a user links
# their own llama.cpp and includes the header-only adapter.
set(LATENTAUDIT_LLAMA_CPP AUTO CACHE STRING "llama.cpp engine: AUTO (when found), ON (required) or OFF")
set_property(CACHE LATENTAUDIT_LLAMA_CPP PROPERTY STRINGS AUTO ON OFF)
set(LATENTAUDIT_LLAMA_CPP_PREBUILT "${PROJECT_SOURCE_DIR}/.deps/llama.cpp" CACHE PATH
    "The prebuilt llama.cpp release unpacked by scripts/install-deps.sh")
set(LATENTAUDIT_GGML_BACKEND_DIR "" CACHE PATH
    "Directory of ggml's dynamically loaded backends (libggml-cpu-*.so); empty: where llama.cpp was found")
string(TOUPPER "${LATENTAUDIT_LLAMA_CPP}" _la_llama_mode)
if(NOT _la_llama_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "LATENTAUDIT_LLAMA_CPP must be AUTO, ON or OFF (got '${LATENTAUDIT_LLAMA_CPP}')")
endif()

set(LATENTAUDIT_HAS_LLAMA_CPP FALSE)
set(_la_llama_from "")
set(_la_llama_backend_dir "")
if(NOT _la_llama_mode STREQUAL "OFF")
  find_package(llama CONFIG QUIET)
  if(llama_FOUND AND TARGET llama)
    add_library(latentaudit_llama_cpp INTERFACE)
    target_link_libraries(latentaudit_llama_cpp INTERFACE llama)
    # An install outside the loader's paths has libraries without a RUNPATH: libggml.so's own
    # dependency (libggml-cpu.so.0) is then found only through an old-style DT_RPATH of the program,
    # which (unlike RUNPATH) also serves indirect dependencies.
    target_link_options(latentaudit_llama_cpp INTERFACE "LINKER:-rpath,${LLAMA_LIB_DIR}"
                        "LINKER:--disable-new-dtags")
    set(_la_llama_from "find_package(llama) ${llama_DIR} (llama.cpp ${LLAMA_VERSION})")
    # GGML_BACKEND_DL installs put the backends in the bin directory, static-backend installs have
    # none to load (the CPU backend is registered by libggml itself).
    foreach(_d IN ITEMS "${LLAMA_BIN_DIR}" "${LLAMA_LIB_DIR}")
      file(GLOB _cpu "${_d}/libggml-cpu*.so")
      if(_cpu AND NOT _la_llama_backend_dir)
        set(_la_llama_backend_dir "${_d}")
      endif()
    endforeach()
    if(NOT _la_llama_backend_dir)
      set(_la_llama_backend_dir "${LLAMA_LIB_DIR}")
    endif()
    set(LATENTAUDIT_HAS_LLAMA_CPP TRUE)
  else()
    set(_p "${LATENTAUDIT_LLAMA_CPP_PREBUILT}")
    set(_libs "${_p}/lib/libllama.v0.5.0.so" "${_p}/lib/libggml.v0.5.0.so" "${_p}/lib/libggml-base.so")
    file(GLOB _cpu "${_p}/lib/libggml-cpu-*.so")
    set(_complete TRUE)
    foreach(_f IN LISTS _libs ITEMS "${_p}/include/llama.h" "${_p}/include/ggml-backend.h")
      if(NOT EXISTS "${_f}")
        set(_complete FALSE)
      endif()
    endforeach()
    if(_complete AND _cpu)
      # Imported by file: the release ships only the versioned names (no libllama.so), which is
      # what `-l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so` names on a link line.
      set(_targets "")
      foreach(_f IN LISTS _libs)
        get_filename_component(_n "${_f}" NAME_WE)
        string(MAKE_C_IDENTIFIER "latentaudit_${_n}" _t)
        add_library(${_t} SHARED IMPORTED)
        get_filename_component(_soname "${_f}" NAME)
        set_target_properties(${_t} PROPERTIES IMPORTED_LOCATION "${_f}" IMPORTED_SONAME "${_soname}")
        list(APPEND _targets ${_t})
      endforeach()
      add_library(latentaudit_llama_cpp INTERFACE)
      target_include_directories(latentaudit_llama_cpp SYSTEM INTERFACE "${_p}/include")
      target_link_libraries(latentaudit_llama_cpp INTERFACE ${_targets})
      target_link_options(latentaudit_llama_cpp INTERFACE "LINKER:-rpath,${_p}/lib")
      set(_la_llama_from "prebuilt ${_p}")
      if(EXISTS "${_p}/STAMP")
        file(READ "${_p}/STAMP" _stamp)
        if(_stamp MATCHES "^(llama\\.cpp [^ ]+ [0-9a-f]+)")
          set(_la_llama_from "${_la_llama_from} (${CMAKE_MATCH_1})")
        endif()
      endif()
      set(_la_llama_backend_dir "${_p}/lib")
      set(LATENTAUDIT_HAS_LLAMA_CPP TRUE)
    endif()
  endif()
endif()

# llama.cpp's tokenizer vocabularies (ggml-vocab-*.gguf with .inp/.out vectors) from the release
# bundle, for tests: LATENTAUDIT_LLAMA_CPP_VOCAB_DIR, empty when install-deps has not unpacked them.
set(LATENTAUDIT_LLAMA_CPP_VOCAB_DIR "")
if(EXISTS "${LATENTAUDIT_LLAMA_CPP_PREBUILT}/models/ggml-vocab-llama-spm.gguf")
  set(LATENTAUDIT_LLAMA_CPP_VOCAB_DIR "${LATENTAUDIT_LLAMA_CPP_PREBUILT}/models")
endif()

if(LATENTAUDIT_HAS_LLAMA_CPP)
  if(LATENTAUDIT_GGML_BACKEND_DIR)
    set(_la_llama_backend_dir "${LATENTAUDIT_GGML_BACKEND_DIR}")
  endif()
  add_library(latentaudit::llama_cpp ALIAS latentaudit_llama_cpp)
  target_compile_definitions(latentaudit_llama_cpp INTERFACE LATENTAUDIT_HAS_LLAMA_CPP=1
                             LATENTAUDIT_GGML_BACKEND_DIR="${_la_llama_backend_dir}")
  message(STATUS "latentaudit: llama.cpp engine ON (LATENTAUDIT_LLAMA_CPP=${_la_llama_mode}): ${_la_llama_from}; "
                 "ggml backends from ${_la_llama_backend_dir}")
elseif(_la_llama_mode STREQUAL "ON")
  message(FATAL_ERROR "latentaudit: LATENTAUDIT_LLAMA_CPP=ON but llama.cpp was not found: no "
                      "find_package(llama) config (set CMAKE_PREFIX_PATH or llama_DIR) and no prebuilt "
                      "release in ${LATENTAUDIT_LLAMA_CPP_PREBUILT} (run scripts/install-deps.sh)")
elseif(_la_llama_mode STREQUAL "AUTO")
  message(STATUS "latentaudit: llama.cpp engine OFF (LATENTAUDIT_LLAMA_CPP=AUTO, not found: no "
                 "find_package(llama) config and no prebuilt release in ${LATENTAUDIT_LLAMA_CPP_PREBUILT}; "
                 "scripts/install-deps.sh installs it)")
else()
  message(STATUS "latentaudit: llama.cpp engine OFF (LATENTAUDIT_LLAMA_CPP=OFF)")
endif()
