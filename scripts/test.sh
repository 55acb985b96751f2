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
# UNIMEM_CHROOT_CACHE, UNIMEM_DEBIAN_MIRROR (scripts/chroot.sh).
set -uo pipefail
source "$(dirname "$0")/toolchains.sh"
source "$(dirname "$0")/chroot.sh"
cd "$unimem_root"

jobs=${JOBS:-$(nproc)}
toolchains=("$@")
[ ${#toolchains[@]} -eq 0 ] && toolchains=("${unimem_all_toolchains[@]}" docs)

if [ "${UNIMEM_SKIP_INSTALL:-0}" != 1 ]; then
  bash "$unimem_root/scripts/install-deps.sh" || exit 1
fi

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
