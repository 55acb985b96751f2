# ctest fuzz.dlpack_import: runs the DLPack import fuzzer for SECONDS from the committed corpus
# (CORPUS, read only; what it adds goes to WORK/corpus); any finding (a crash, a sanitizer
# report, a failed check, a leak, an input slower than 25 s) fails, and names the input kept in
# WORK/artifacts. -DMISSING=<why> fails at once: the sanitize build could not make the fuzzer.
if(MISSING)
  message(FATAL_ERROR "fuzz: ${MISSING}")
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
file(GLOB _seeds "${CORPUS}/*")
list(LENGTH _seeds _n_seeds)
execute_process(
  COMMAND "${FUZZER}" -max_total_time=${SECONDS} -timeout=25 -print_final_stats=1
          -artifact_prefix=${WORK}/artifacts/ "${WORK}/corpus" "${CORPUS}"
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
# libFuzzer prints a line per new input, new function and dictionary entry; keep the rest.
string(REGEX REPLACE "(^|\n)#[^\n]*" "" _kept "${_out}")
string(REGEX REPLACE "\n[^\n]*# Uses: [0-9]+" "" _kept "${_kept}")
string(REGEX REPLACE "\n\t?NEW_FUNC[^\n]*" "" _kept "${_kept}")
string(REGEX REPLACE "\n\n+" "\n" _kept "${_kept}")
message("${_kept}")
if(NOT _rc EQUAL 0)
  file(GLOB _found "${WORK}/artifacts/*")
  message(FATAL_ERROR "fuzz: FINDING (exit ${_rc}); the input: ${_found}\n"
                      "its fields: python3 ${CMAKE_CURRENT_LIST_DIR}/make_corpus.py --show FILE")
endif()
string(REGEX MATCH "Done ([0-9]+) runs in ([0-9]+) second" _done "${_out}")
message("fuzz: no finding: ${CMAKE_MATCH_1} inputs in ${CMAKE_MATCH_2} s from ${_n_seeds} seeds")
