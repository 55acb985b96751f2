#!/usr/bin/env bash
# unimem's test command: installs what is missing (as root, on Debian 12), then, for each
# toolchain, configures, builds and runs ctest through the CMake presets (CMakePresets.json).
# GPU tests run where there is a GPU and skip, with the reason, where there is none.
#
#   bash scripts/test.sh                 all: hip-amd hip-nvidia cuda sanitize
#   bash scripts/test.sh cuda hip-amd    only these
#
# Environment: JOBS, UNIMEM_SKIP_INSTALL=1 to skip the install step, CUDACXX to pick the nvcc of
# the cuda toolchain (default: /usr/local/cuda/bin/nvcc, else the newest found).
set -uo pipefail
source "$(dirname "$0")/toolchains.sh"
cd "$unimem_root"

jobs=${JOBS:-$(nproc)}
toolchains=("$@")
[ ${#toolchains[@]} -eq 0 ] && toolchains=(hip-amd hip-nvidia cuda sanitize)

if [ "${UNIMEM_SKIP_INSTALL:-0}" != 1 ]; then
  bash "$unimem_root/scripts/install-deps.sh" || exit 1
fi

run_toolchain() {
  local tc=$1
  local -a extra=(-DUNIMEM_WERROR=ON)
  case $tc in
    hip-amd|hip-nvidia) ;;
    cuda|sanitize)  # sanitize: native CUDA, host code with ASan + UBSan
      local nvcc
      nvcc=$(unimem_native_nvcc) || true
      [ -n "$nvcc" ] || { echo "test.sh: no nvcc for the cuda toolchain" >&2; return 1; }
      extra+=(-DCMAKE_CUDA_COMPILER="$nvcc") ;;
    *) echo "test.sh: unknown toolchain '$tc' (hip-amd, hip-nvidia, cuda, sanitize)" >&2; return 1 ;;
  esac
  echo "=== $tc: configure, build and test (preset $tc, build/$tc)"
  cmake --preset "$tc" "${extra[@]}" &&
    cmake --build --preset "$tc" -j "$jobs" &&
    ctest --preset "$tc" -j "$jobs"
}

failed=()
for tc in "${toolchains[@]}"; do
  run_toolchain "$tc" || failed+=("$tc")
done
echo
if [ ${#failed[@]} -ne 0 ]; then
  echo "test.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "test.sh: all passed: ${toolchains[*]}"
