# Sourced by test.sh and run-example.sh: how to configure unimem for each toolchain, as the
# presets in CMakePresets.json do (run-example.sh builds in a folder of its own).
#   hip-amd     CXX=hipcc for AMD (gfx90a wave64 + gfx1030 wave32 by default)
#   hip-nvidia  HIP_PLATFORM=nvidia hipcc over CUDA 11.8 (Debian non-free) with g++-11
#   cuda        native CUDA with the newest nvcc found (/usr/local/cuda first)
# unimem_toolchain <name> <build dir> sets two arrays: tc_env (environment for cmake, the
# build and ctest) and tc_cfg (cmake configure arguments).

unimem_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Every toolchain the test command runs, in order: the longest first and the shortest last (where
# several run at a time, test.sh's UNIMEM_TEST_LANES, none is left alone at the end); the chroots
# are made in the order first needed (experimental, trixie, sid), in the background while this
# machine's toolchains build.
unimem_all_toolchains=(hip-amd hip-nvidia cuda hip-amd-7.2 cuda-12.5 sanitize hip-amd-5.7 cuda-12.4
                       hip-amd-6.4)

# The Debian suite whose chroot holds a toolchain (empty: this machine); fails for unknown ones.
unimem_toolchain_suite() {
  case $1 in
    hip-amd|hip-nvidia|cuda|sanitize) echo "" ;;
    hip-amd-5.7|cuda-12.4) echo trixie ;;
    hip-amd-6.4) echo sid ;;
    hip-amd-7.2|cuda-12.5) echo experimental ;;
    *) return 1 ;;
  esac
}


unimem_native_nvcc() {
  local c
  for c in "${CUDACXX:-}" /usr/local/cuda/bin/nvcc $(ls -d /usr/local/cuda-*/bin/nvcc 2>/dev/null | sort -rV); do
    if [ -n "$c" ] && [ -x "$c" ]; then echo "$c"; return 0; fi
  done
  command -v nvcc
}

unimem_toolchain() {
  local tc=$1 dir=$2
  tc_cfg=(-S "$unimem_root" -B "$dir")
  command -v ninja >/dev/null && tc_cfg+=(-G Ninja)
  tc_env=()
  case $tc in
    hip-amd)
      tc_env=(CXX=hipcc HIP_PLATFORM=amd) ;;
    hip-nvidia)
      # /usr/bin first: CUDA 11.8's ptxas and fatbinary, not those of a newer CUDA on PATH.
      # CUDA_PATH: see cmake/debian-cuda-11.8/README.md.
      tc_env=(CXX=hipcc HIP_PLATFORM=nvidia CUDA_PATH="$unimem_root/cmake/debian-cuda-11.8"
              PATH="/usr/bin:$PATH")
      # CMake cannot read the library architecture through hipcc -> nvcc; say it.
      tc_cfg+=(-DCMAKE_CXX_FLAGS="-ccbin g++-11"
               -DCMAKE_LIBRARY_ARCHITECTURE="$(gcc -print-multiarch)") ;;
    cuda)
      local nvcc
      nvcc=$(unimem_native_nvcc) || true
      if [ -z "$nvcc" ]; then echo "no nvcc found for the cuda toolchain" >&2; return 1; fi
      tc_cfg+=(-DUNIMEM_BACKEND=CUDA -DCMAKE_CUDA_COMPILER="$nvcc") ;;
    *)
      echo "unknown toolchain '$tc' (hip-amd, hip-nvidia, cuda)" >&2; return 1 ;;
  esac
}
