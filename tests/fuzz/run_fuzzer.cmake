# SPDX-License-Identifier: MIT
# Runs a libFuzzer binary for SECONDS seconds: new inputs go to WORK (fresh each run), the seed
# corpus SEEDS is read only. A crash, leak, sanitizer report or timeout fails the test.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus")
execute_process(COMMAND "${FUZZER}" "${WORK}/corpus" "${SEEDS}" -max_total_time=${SECONDS} -rss_limit_mb=2048
                        -timeout=10 -artifact_prefix=${WORK}/ -seed=2026 -print_final_stats=1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" runs "${err}")
message(STATUS "fuzzer (seed 2026, ${SECONDS} s): ${runs}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the fuzzer found a failure (exit ${rc}); artifacts in ${WORK}\n${err}")
endif()
