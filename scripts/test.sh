#!/usr/bin/env bash
# unimem's test command: installs what is missing (as root, on Debian 12), then, for each
# toolchain, configures, builds and runs ctest through the CMake presets (CMakePresets.json).
# GPU tests run where there is a GPU and skip, with the reason, where there is none. Last, the
# entry `docs` builds the API reference with Doxygen (scripts/docs.sh), which fails on any
# warning (an undocumented public entity).
#
#   bash scripts/test.sh                 every toolchain (the list below), then docs
#   bash scripts/test.sh cuda hip-amd    only these
#   bash scripts/test.sh docs            only the API reference
#
# Toolchains on this machine (Debian 12): hip-amd (HIP 5.2), hip-nvidia (HIP 5.2 over CUDA
# 11.8), cuda (CUDA 13 at /usr/local/cuda), sanitize (cuda with ASan + UBSan). In chroots of
# Debian's newer suites (scripts/chroot.sh; made once, cached in /var/cache/unimem/chroots):
# hip-amd-5.7 and cuda-12.4 (trixie), hip-amd-6.4 (sid), hip-amd-7.2 and cuda-12.5
# (experimental).
#
# Environment: JOBS (each toolchain's build and ctest jobs), UNIMEM_TEST_LANES (toolchains at a
# time, 1 by default; see below), UNIMEM_SKIP_INSTALL=1 to skip the install
# step, CUDACXX to pick the nvcc of the cuda toolchain (default: /usr/local/cuda/bin/nvcc, else
# the newest found), UNIMEM_CHROOT_CACHE, UNIMEM_DEBIAN_MIRROR (scripts/chroot.sh),
# UNIMEM_TEST_SUMMARY (below).
#
# At its end it writes and prints a summary in Markdown: per toolchain whether it configured and
# built, ctest's passed/skipped/failed counts and the times; the install step, whether each
# chroot was cached or made, the whole command's time, the date, the commit and the machine. A
# run of every toolchain (no arguments, as README and .ci/run give it) writes
# docs/generated/test-summary.md, the one place README and docs/ take these figures from; any
# other run writes build/test-summary.md; UNIMEM_TEST_SUMMARY=FILE names another file. The last
# line is the whole command's wall time (test.sh: total N min N s), install and chroots included.
set -uo pipefail
source "$(dirname "$0")/toolchains.sh"
source "$(dirname "$0")/chroot.sh"
cd "$unimem_root"

# Last, whatever the outcome: stop a chroot still being made (an interrupted run), then print
# the whole command's wall time (install, chroots, every toolchain): CI has a time budget.
chroot_job=""
declare -A lane_tc=()  # the toolchains running beside this script (UNIMEM_TEST_LANES), by pid
chroot_logs=$(mktemp -d)
unimem_test_exit() {
  local s=$SECONDS
  [ -n "$chroot_job" ] && kill -- -"$chroot_job" 2>/dev/null  # its process group: mmdebstrap too
  [ ${#lane_tc[@]} -gt 0 ] && kill "${!lane_tc[@]}" 2>/dev/null  # toolchains still running
  rm -rf "$chroot_logs"
  echo "test.sh: total $((s / 60)) min $((s % 60)) s"
}
trap unimem_test_exit EXIT

jobs=${JOBS:-$(nproc)}
toolchains=("$@")
summary_file=${UNIMEM_TEST_SUMMARY:-$unimem_root/build/test-summary.md}
if [ ${#toolchains[@]} -eq 0 ]; then
  toolchains=("${unimem_all_toolchains[@]}" docs)
  summary_file=${UNIMEM_TEST_SUMMARY:-$unimem_root/docs/generated/test-summary.md}
fi

# UNIMEM_TEST_LANES=N runs N toolchains at a time (default 1), each one's output shown whole when
# it ends, the summary in the list's order. On a 2-core machine it gains nothing: each build
# keeps both cores busy, and two only share them (docs/building.md: 22 min 16 s one at a time,
# 22 min 19 s two at a time, the same commit). Where builds leave cores idle it may. Refused
# where a GPU is found: two toolchains' GPU tests would share its memory and time.
gpu_present() {
  nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && return 0
  command -v rocminfo >/dev/null && rocminfo 2>/dev/null | grep -qE '^ *Name: +gfx[0-9]' && return 0
  [ -e /dev/kfd ] && ls /sys/class/kfd/kfd/topology/nodes/*/gpu_id 2>/dev/null |
    xargs -r cat 2>/dev/null | grep -qv '^0$'
}
lanes=${UNIMEM_TEST_LANES:-1}
[[ "$lanes" =~ ^[1-9][0-9]*$ ]] || { echo "test.sh: UNIMEM_TEST_LANES must be a number from 1" >&2; exit 2; }
if [ "$lanes" -gt 1 ]; then
  if (( BASH_VERSINFO[0] < 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] < 1) )); then
    echo "test.sh: more than one toolchain at a time needs bash 5.1 or newer (wait -p; this is $BASH_VERSION)" >&2
    exit 2
  fi
  if gpu_present; then
    echo "test.sh: a GPU is present: one toolchain at a time (its GPU tests need it alone)" >&2
    exit 2
  fi
fi

# The chroots the toolchains need are made in the background, one at a time in the order they
# are needed, while this machine's toolchains build: making one is downloading and unpacking
# packages, with one core mostly idle if it ran alone. It takes its share of the CPU (in a
# session of its own, the kernel's autogroups would ignore a nice value), so it is ready long
# before the first chroot toolchain. That toolchain waits for its chroot if need be and shows
# how it was made.
start_chroots() {
  local tc suite
  local -a suites=()
  for tc in "${toolchains[@]}"; do
    suite=$(unimem_toolchain_suite "$tc" 2>/dev/null) || continue
    [ -n "$suite" ] && [[ " ${suites[*]} " != *" $suite "* ]] && suites+=("$suite")
  done
  [ ${#suites[@]} -gt 0 ] || return 0
  # A process group of its own (setsid), so that an interrupted run can stop all of it.
  setsid bash -c '
    source "$1/scripts/toolchains.sh" && source "$1/scripts/chroot.sh" || exit 1
    logs=$2
    shift 2
    for suite in "$@"; do
      unimem_chroot_ensure "$suite" > "$logs/$suite.log" 2>&1
      echo $? > "$logs/$suite.rc"
    done' bash "$unimem_root" "$chroot_logs" "${suites[@]}" < /dev/null &
  chroot_job=$!
}

# Waits for the background job to finish the suite's chroot and prints its output; fails if
# making it failed. Without a background job (or if it ended early) unimem_chroot_run makes it.
wait_chroot() {
  local suite=$1 start=$SECONDS
  [ -n "$chroot_job" ] || return 0
  local said=""
  while [ ! -f "$chroot_logs/$suite.rc" ] && kill -0 "$chroot_job" 2>/dev/null; do
    if [ -z "$said" ] && [ $((SECONDS - start)) -ge 5 ]; then
      echo "=== waiting for the $suite chroot (being made in the background)"
      said=1
    fi
    sleep 1
  done
  [ -n "$said" ] && echo "=== the $suite chroot: waited $((SECONDS - start)) s"
  if [ -f "$chroot_logs/$suite.log" ] && [ ! -f "$chroot_logs/$suite.shown" ]; then  # once
    sed 's/^/  (background) /' "$chroot_logs/$suite.log"
    touch "$chroot_logs/$suite.shown"
  fi
  [ "$(cat "$chroot_logs/$suite.rc" 2>/dev/null || echo 0)" = 0 ]
}

run_toolchain() {
  local tc=$1 suite
  local -a extra=(-DUNIMEM_WERROR=ON)
  if [ "$tc" = docs ]; then  # not a toolchain: the API reference, on this machine
    echo "=== docs: build the API reference (scripts/docs.sh, build/docs/html), any warning fails"
    local start=$SECONDS rc
    bash "$unimem_root/scripts/docs.sh"
    rc=$?
    echo "=== docs: $([ $rc -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
    return $rc
  fi
  suite=$(unimem_toolchain_suite "$tc") || { echo "test.sh: unknown toolchain '$tc' (${unimem_all_toolchains[*]} docs)" >&2; return 1; }
  case $tc in
    cuda|sanitize)  # sanitize: native CUDA, host code with ASan + UBSan
      local nvcc
      nvcc=$(unimem_native_nvcc) || true
      [ -n "$nvcc" ] || { echo "test.sh: no nvcc for the cuda toolchain" >&2; return 1; }
      extra+=(-DCMAKE_CUDA_COMPILER="$nvcc") ;;
  esac
  # The Python module example's tests need NumPy: Debian's Python has it (install-deps.sh), a
  # python3 found first on PATH (pyenv, a venv) may not.
  if [ -z "$suite" ] && [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    extra+=(-DPython3_EXECUTABLE=/usr/bin/python3)
  fi
  echo "=== $tc: configure, build and test (preset $tc, build/$tc${suite:+, in the $suite chroot})"
  # The same steps here and in a chroot, each ending with "=== step NAME: ok|FAILED in N s".
  local steps='step() {
      local name=$1 start=$SECONDS rc; shift
      "$@"; rc=$?
      echo "=== step $name: $([ $rc -eq 0 ] && echo ok || echo FAILED) in $((SECONDS - start)) s"
      return $rc
    }
    step configure cmake --preset "$1" "${@:3}" && step build cmake --build --preset "$1" -j "$2" &&
      step test ctest --preset "$1" -j "$2"'
  local start=$SECONDS rc
  if [ -n "$suite" ]; then
    wait_chroot "$suite" &&
    unimem_chroot_run "$suite" bash -c "$steps" bash "$tc" "$jobs" "${extra[@]}"
  else
    bash -c "$steps" bash "$tc" "$jobs" "${extra[@]}"
  fi
  rc=$?
  echo "=== $tc: $([ $rc -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
  return $rc
}

# The summary's row of one toolchain, from its log: each step's outcome and time, the counts of
# ctest's last summary (a consumer test's own ctest may print one before it; ctest counts a
# skipped test as passed: here it is apart), the toolchain's whole time.
summary_row() {
  awk -v tc="$1" -v where="$2" '
    /^=== step (configure|build): / { step[substr($3, 1, length($3) - 1)] = $4 ", " $6 " s" }
    /^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+/ { failed = $4; total = $9; ran = 1; skipped = 0 }
    /^[0-9]+% tests passed out of [0-9]+/ { failed = 0; total = $6; ran = 1; skipped = 0 }  # CTest 4.4
    /^No tests were found/ { total = 0; failed = 0; ran = 1 }
    /^The following tests did not run:/ { listing = 1; next }
    listing && /\(Skipped\)$/ { skipped++ }
    listing && /^$/ { listing = 0 }
    /^ *(compile_check|consumer) *= *[0-9.]+ sec\*proc/ { label[$1] = sprintf("%.0f s", $3) }
    /^docs\.sh: / { n = $2 == "FAILED:" ? $3 : $2; docs = n ~ /^[0-9]+$/ ? n " warnings" : "failed" }
    /^=== [^ ]*: (passed|FAILED) in [0-9]+ s$/ { secs = $5 " s" }
    END {
      if (secs == "") secs = "–"
      if (tc == "docs") { printf "| docs | %s | – | – | %s | – | – | – | – | %s |\n", where, docs == "" ? "–" : docs, secs; exit }
      cc = "compile_check" in label ? label["compile_check"] : "–"
      co = "consumer" in label ? label["consumer"] : "–"
      cfg = "configure" in step ? step["configure"] : "not reached"
      bld = "build" in step ? step["build"] : "not reached"
      if (ran) printf "| %s | %s | %s | %s | %d | %d | %d | %s | %s | %s |\n", tc, where, cfg, bld, total - failed - skipped, skipped, failed, cc, co, secs
      else printf "| %s | %s | %s | %s | – | – | – | – | – | %s |\n", tc, where, cfg, bld, secs
    }' "$3"
}

# The tests ctest failed in toolchain $1's last run (build/$1), one name a line; nothing where its
# test step did not fail in this run ($2: its log), so that an older run's list is never shown.
failed_tests_of() {
  local list="$unimem_root/build/$1/Testing/Temporary/LastTestsFailed.log"
  grep -q '^=== step test: FAILED' "$2" 2>/dev/null && [ -f "$list" ] || return 0
  sed -n 's/^[0-9]*://p' "$list"
}

# The end of the output of toolchain $1's failed tests ($2: failed_tests_of's list) from ctest's
# LastTest.log, at most 3 tests and 25 lines of each, printed just before the summary, so that a
# run whose log is seen only by its tail (CI) names what failed and why; the whole output is in
# build/TOOLCHAIN/Testing/Temporary/LastTest.log.
print_failed_tests() {
  local tc=$1 names=$2 log="$unimem_root/build/$1/Testing/Temporary/LastTest.log" n=0 name
  [ -n "$names" ] || return 0
  echo
  echo "=== $tc: the failed tests' output (the end of each; all of it: build/$tc/Testing/Temporary/LastTest.log)"
  while IFS= read -r name; do
    n=$((n + 1))
    if [ "$n" -gt 3 ]; then
      echo "--- and $(($(wc -l <<< "$names") - 3)) more: $(tail -n +4 <<< "$names" | paste -sd' ')"
      break
    fi
    echo "--- $tc: $name"
    awk -v name="$name" '
      $0 ~ /^[0-9]+\/[0-9]+ Testing: / { mine = substr($0, index($0, ": ") + 2) == name; output = 0; next }
      mine && /^Output:$/ { output = 1; getline; next }   # the dashes under it
      mine && output && /^<end of output>$/ { output = 0 }
      mine && output { kept[k++ % 25] = substr($0, 1, 240) }
      END { for (i = (k > 25 ? k - 25 : 0); i < k; i++) print kept[i % 25] }' "$log"
  done <<< "$names"
}

# Writes the summary (a Markdown page) to $summary_file and prints it.
write_summary() {
  local total=$SECONDS commit machine gpu suite chroots=""
  commit=$(git -c safe.directory="$unimem_root" -C "$unimem_root" rev-parse --short HEAD 2>/dev/null) || commit=unknown
  if [ "$commit" != unknown ] && [ -n "$(git -c safe.directory="$unimem_root" -C "$unimem_root" status --porcelain \
       --untracked-files=no -- . ':!docs/generated' 2>/dev/null)" ]; then
    commit="$commit with uncommitted changes"
  fi
  machine="$( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null || uname -sr), $(nproc) cores"
  gpu=$(nvidia-smi -L 2>/dev/null | sed -n '1s/ (UUID.*//p')
  [ -n "$gpu" ] || gpu="none found by nvidia-smi (GPU tests skip, each with its reason)"
  for suite in "${chroot_order[@]}"; do chroots+="${chroots:+, }$suite ${chroot_state[$suite]}"; done
  mkdir -p "$(dirname "$summary_file")"
  {
    echo "# The test command's summary"
    echo
    echo "Written by \`scripts/test.sh\` at the end of a run; do not edit it, run the command again"
    echo "(a run of every toolchain, \`bash scripts/test.sh\` or \`.ci/run\`, writes"
    echo "docs/generated/test-summary.md; a run of some writes build/test-summary.md)."
    echo
    echo "- **Date:** $(date -u '+%Y-%m-%d %H:%M UTC'); commit $commit"
    echo "- **Command:** \`scripts/test.sh${cmdline:+ $cmdline}\`, JOBS=$jobs"
    echo "- **Machine:** $machine; GPU: $gpu"
    echo "- **Install step:** $install_state"
    echo "- **Chroots:** ${chroots:-none needed}"
    echo "- **Toolchains at a time:** $lanes$([ "$lanes" -gt 1 ] &&
      echo " (each toolchain's time is its wall time beside the others', not a share of the whole)")"
    echo "- **Whole command:** $((total / 60)) min $((total % 60)) s ($total s): $([ ${#failed[@]} -eq 0 ] &&
      echo "all passed" || echo "FAILED: ${failed[*]}")"
    [ -z "$failed_tests" ] || echo "- **Failed tests:** $failed_tests"
    echo
    echo "| toolchain | where | configured | built | tests passed | skipped | failed | compile checks | consumers | time |"
    echo "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    printf '%s\n' "${rows[@]}"
    echo
    echo "A skipped test says why (most need a GPU); ctest counts skipped tests among its passed ones."
    echo "Compile checks and consumers: the seconds of ctest's tests with those labels, summed over"
    echo "its jobs (tests/compile_checks.cmake, tests/consumers.cmake); – where the toolchain has none."
  } > "$summary_file.tmp" && mv "$summary_file.tmp" "$summary_file" ||
    echo "test.sh: could not write $summary_file" >&2
  echo
  [ -f "$summary_file" ] && cat "$summary_file"
  echo
  echo "test.sh: summary written to $summary_file"
}

# Installing what is missing (as root): first mmdebstrap, so that the chroots are made in the
# background while the rest installs (on a fresh machine both take minutes, and neither needs
# the other), then the rest.
install_state="skipped (UNIMEM_SKIP_INSTALL=1)"
if [ "${UNIMEM_SKIP_INSTALL:-0}" != 1 ]; then
  bash "$unimem_root/scripts/install-deps.sh" mmdebstrap 2>&1 | tee "$chroot_logs/install.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
fi
cmdline="$*"
start_chroots
if [ "${UNIMEM_SKIP_INSTALL:-0}" != 1 ]; then
  bash "$unimem_root/scripts/install-deps.sh" 2>&1 | tee -a "$chroot_logs/install.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
  install_state="$(grep -q 'install-deps: installed' "$chroot_logs/install.log" &&
    echo "missing packages installed" || echo "every package present") in $SECONDS s"
fi
[ "$lanes" -gt 1 ] && [ ${#toolchains[@]} -gt 1 ] && echo "=== $lanes toolchains at a time (UNIMEM_TEST_LANES)"
failed=()
failed_tests=""  # "TOOLCHAIN: TEST; TOOLCHAIN: TEST"
rows=()
declare -A chroot_state=() tc_log=() tc_rc=()
chroot_order=()
next=0
while [ "$next" -lt ${#toolchains[@]} ] || [ ${#lane_tc[@]} -gt 0 ]; do
  while [ "$next" -lt ${#toolchains[@]} ] && [ ${#lane_tc[@]} -lt "$lanes" ]; do
    tc=${toolchains[$next]}
    next=$((next + 1))
    tc_log[$tc]=$(mktemp)
    if [ "$lanes" -eq 1 ]; then  # as it comes
      run_toolchain "$tc" 2>&1 | tee "${tc_log[$tc]}"
      tc_rc[$tc]=${PIPESTATUS[0]}
      continue
    fi
    echo "=== $tc: started ($(date -u +%H:%M:%S))"
    run_toolchain "$tc" > "${tc_log[$tc]}" 2>&1 < /dev/null &
    lane_tc[$!]=$tc
  done
  [ ${#lane_tc[@]} -gt 0 ] || continue
  done_pid=""
  wait -n -p done_pid "${!lane_tc[@]}"
  rc=$?
  [ -n "$done_pid" ] || continue
  tc=${lane_tc[$done_pid]}
  unset "lane_tc[$done_pid]"
  tc_rc[$tc]=$rc
  cat "${tc_log[$tc]}"
done
for tc in "${toolchains[@]}"; do
  log=${tc_log[$tc]}
  [ "${tc_rc[$tc]}" -eq 0 ] || failed+=("$tc")
  suite=$(unimem_toolchain_suite "$tc" 2>/dev/null) || suite=""
  where=${suite:+$suite chroot}
  if [ -n "$suite" ] && [ -z "${chroot_state[$suite]:-}" ]; then  # the first toolchain of a suite
    chroot_order+=("$suite")
    # chroot.sh's lines, shown as they come or as "  (background) chroot: ..." by wait_chroot.
    made=$(sed -En "s/^( +\(background\) )?chroot: $suite ready in ([0-9]+ s) \((.*)\)$/made in \2, \3/p" "$log")
    if [ -n "$made" ]; then chroot_state[$suite]=$made
    elif grep -qE '^( +\(background\) )?chroot: ' "$log"; then chroot_state[$suite]="FAILED to be made (its log is above)"
    else chroot_state[$suite]=cached
    fi
  fi
  rows+=("$(summary_row "$tc" "${where:-this machine}" "$log")")
  names=$(failed_tests_of "$tc" "$log")
  while IFS= read -r name; do
    [ -z "$name" ] || failed_tests+="${failed_tests:+; }$tc: $name"
  done <<< "$names"
  print_failed_tests "$tc" "$names"
  rm -f "$log"
done
write_summary
echo
if [ ${#failed[@]} -ne 0 ]; then
  echo "test.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "test.sh: all passed: ${toolchains[*]}"
