#!/usr/bin/env bash
# unimem's test command: installs what is missing (as root, on Debian 12), then configures,
# builds and runs ctest for each toolchain. GPU tests run where there is a GPU and skip, with
# the reason, where there is none.
#
#   bash scripts/test.sh                 all toolchains: hip-amd hip-nvidia cuda
#   bash scripts/test.sh cuda hip-amd    only these
#
# Toolchains:
#   hip-amd     CXX=hipcc for AMD (gfx90a wave64 + gfx1030 wave32); GPU tests skip off AMD GPUs
#   hip-nvidia  HIP_PLATFORM=nvidia hipcc over CUDA 11.8 (Debian non-free) with g++-11
#   cuda        native CUDA with the newest nvcc found (/usr/local/cuda, CUDA >= 12)
# Environment: BUILD_ROOT (default build/), JOBS, UNIMEM_SKIP_INSTALL=1 to skip apt-get.
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
build_root=${BUILD_ROOT:-$here/build}
jobs=${JOBS:-$(nproc)}
toolchains=("$@")
[ ${#toolchains[@]} -eq 0 ] && toolchains=(hip-amd hip-nvidia cuda)

if [ "${UNIMEM_SKIP_INSTALL:-0}" != 1 ]; then
  bash "$here/scripts/install-deps.sh" || exit 1
fi

# HIP on NVIDIA: hipcc adds -isystem $CUDA_PATH/include, and CUDA_PATH=/usr would put /usr/include
# ahead of libstdc++'s own headers. A folder of links with an empty include/ avoids that.
cuda_shim() {
  local shim=$build_root/cuda-11-shim
  mkdir -p "$shim/include"
  ln -sfn /usr/lib/nvidia-cuda-toolkit/bin "$shim/bin"
  ln -sfn /usr/lib/x86_64-linux-gnu "$shim/lib64"
  echo "$shim"
}

native_nvcc() {
  for c in "${CUDACXX:-}" /usr/local/cuda/bin/nvcc $(ls -d /usr/local/cuda-*/bin/nvcc 2>/dev/null | sort -rV); do
    [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return; }
  done
  command -v nvcc
}

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

run_toolchain() {
  local tc=$1 dir=$build_root/$1
  local -a cfg=(-S "$here" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNIMEM_WERROR=ON)
  local -a env_vars=()
  case $tc in
    hip-amd)
      env_vars=(CXX=hipcc HIP_PLATFORM=amd) ;;
    hip-nvidia)
      # /usr/bin first: CUDA 11.8's ptxas and fatbinary, not those of a newer CUDA on PATH.
      env_vars=(CXX=hipcc HIP_PLATFORM=nvidia CUDA_PATH="$(cuda_shim)" PATH="/usr/bin:$PATH")
      # CMake cannot read the library architecture through hipcc -> nvcc; say it.
      cfg+=(-DCMAKE_CXX_FLAGS="-ccbin g++-11" -DCMAKE_LIBRARY_ARCHITECTURE="$(gcc -print-multiarch)") ;;
    cuda)
      local nvcc; nvcc=$(native_nvcc)
      [ -n "$nvcc" ] || { echo "test.sh: no nvcc found for the cuda toolchain" >&2; return 1; }
      cfg+=(-DUNIMEM_BACKEND=CUDA -DCMAKE_CUDA_COMPILER="$nvcc") ;;
    *) echo "test.sh: unknown toolchain '$tc' (hip-amd, hip-nvidia, cuda)" >&2; return 1 ;;
  esac
  echo "=== $tc: configure, build, test in $dir"
  env "${env_vars[@]}" cmake "${cfg[@]}" || return 1
  env "${env_vars[@]}" cmake --build "$dir" -j "$jobs" || return 1
  (cd "$dir" && env "${env_vars[@]}" ctest --output-on-failure -j "$jobs") || return 1
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
