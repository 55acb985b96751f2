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
# Environment: JOBS, UNIMEM_SKIP_INSTALL=1 to skip the install step, CUDACXX to pick the nvcc of
# the cuda toolchain (default: /usr/local/cuda/bin/nvcc, else the newest found),
# UNIMEM_CHROOT_CACHE, UNIMEM_DEBIAN_MIRROR (scripts/chroot.sh). The last line is the whole
# command's wall time (test.sh: total N min N s), the install step and chroots included.
set -uo pipefail
source "$(dirname "$0")/toolchains.sh"
source "$(dirname "$0")/chroot.sh"
cd "$unimem_root"

# Last, whatever the outcome: stop a chroot still being made (an interrupted run), then print
# the whole command's wall time (install, chroots, every toolchain): CI has a time budget.
chroot_job=""
chroot_logs=$(mktemp -d)
unimem_test_exit() {
  local s=$SECONDS
  [ -n "$chroot_job" ] && kill -- -"$chroot_job" 2>/dev/null  # its process group: mmdebstrap too
  rm -rf "$chroot_logs"
  echo "test.sh: total $((s / 60)) min $((s % 60)) s"
}
trap unimem_test_exit EXIT

jobs=${JOBS:-$(nproc)}
toolchains=("$@")
[ ${#toolchains[@]} -eq 0 ] && toolchains=("${unimem_all_toolchains[@]}" docs)

if [ "${UNIMEM_SKIP_INSTALL:-0}" != 1 ]; then
  bash "$unimem_root/scripts/install-deps.sh" || exit 1
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
  echo "=== $tc: configure, build and test (preset $tc, build/$tc${suite:+, in the $suite chroot})"
  local start=$SECONDS rc
  if [ -n "$suite" ]; then
    wait_chroot "$suite" &&
    unimem_chroot_run "$suite" bash -c 'cmake --preset "$1" "${@:3}" && cmake --build --preset "$1" -j "$2" &&
      ctest --preset "$1" -j "$2"' bash "$tc" "$jobs" "${extra[@]}"
  else
    cmake --preset "$tc" "${extra[@]}" &&
      cmake --build --preset "$tc" -j "$jobs" &&
      ctest --preset "$tc" -j "$jobs"
  fi
  rc=$?
  echo "=== $tc: $([ $rc -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
  return $rc
}

start_chroots
failed=()
summary=()
for tc in "${toolchains[@]}"; do
  log=$(mktemp)
  run_toolchain "$tc" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || failed+=("$tc")
  summary+=("$(printf '%-12s %s; %s' "$tc" "$(grep -E '^[0-9]+% tests passed|^docs\.sh: ' "$log" | tail -1 | sed -e 's/^docs\.sh: //' -e 's/; the API reference .*//')" "$(grep -E '^=== .*(passed|FAILED) in' "$log" | tail -1 | sed 's/^=== [^:]*: //')")")
  rm -f "$log"
done
echo
echo "test.sh: summary"
printf '  %s\n' "${summary[@]}"
echo
if [ ${#failed[@]} -ne 0 ]; then
  echo "test.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "test.sh: all passed: ${toolchains[*]}"
