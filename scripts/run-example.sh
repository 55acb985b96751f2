#!/usr/bin/env bash
# Builds and runs one example with the GPU toolchain this machine has:
#   NVIDIA GPU: native CUDA if nvcc is installed, else HIP on NVIDIA (hipcc)
#   AMD GPU (/dev/kfd): HIP for AMD (hipcc)
#   no GPU: whichever toolchain is installed; the example then says that it needs a GPU.
#
#   bash scripts/run-example.sh [example]      (default: vector_add)
#   UNIMEM_TOOLCHAIN=hip-amd|hip-nvidia|cuda overrides the choice.
set -uo pipefail
source "$(dirname "$0")/toolchains.sh"

example=${1:-vector_add}
tc=${UNIMEM_TOOLCHAIN:-}
if [ -z "$tc" ]; then
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    if unimem_native_nvcc >/dev/null; then tc=cuda; else tc=hip-nvidia; fi
  elif [ -e /dev/kfd ] && command -v hipcc >/dev/null; then
    tc=hip-amd
  elif unimem_native_nvcc >/dev/null; then
    tc=cuda
  elif command -v hipcc >/dev/null; then
    tc=hip-amd
  else
    echo "run-example.sh: no GPU compiler found: install CUDA (nvcc) or ROCm (hipcc)" >&2
    exit 1
  fi
fi
dir=${BUILD_ROOT:-$unimem_root/build}/example-$tc
unimem_toolchain "$tc" "$dir" || exit 1
echo "run-example.sh: toolchain $tc, build folder $dir"
env "${tc_env[@]}" cmake "${tc_cfg[@]}" -DCMAKE_BUILD_TYPE=Release -DUNIMEM_BUILD_TESTS=OFF \
  -DUNIMEM_BUILD_EXAMPLES=ON >/dev/null || exit 1
env "${tc_env[@]}" cmake --build "$dir" --target "$example" || exit 1
exec "$dir/examples/$example"
