#!/usr/bin/env bash
# Installs the toolchains unimem's test command needs on Debian 12 (bookworm), if missing.
#   hipcc + libamdhip64-dev     HIP for AMD (HIP 5.2, clang-15)
#   libgtest-dev                GoogleTest
#   cmake, ninja-build          the build (CMakePresets.json uses Ninja)
#   nvidia-cuda-toolkit, g++-11 CUDA 11.8 from non-free, the host side of HIP-on-NVIDIA
#   mmdebstrap                  makes the chroots of the newer toolchains (scripts/chroot.sh)
#   doxygen                     the API reference, built and checked by scripts/docs.sh (1.9.4)
#   libopenmpi-dev, openmpi-bin unimem::mpi and its tests (Open MPI 4.1, mpiexec -n 2)
#   make, pkgconf               the Makefile consumer built through unimem's pkg-config files
#   python3-dev, pybind11-dev,  the Python package (python/: its buffer module) and its NumPy test
#   python3-numpy
#   python3-pip, python3-setuptools,  pip install ./python (ctest python.pip_install), with no
#   python3-wheel, python3-venv       package index (--no-build-isolation); venvs for users
#   clang-15                    the DLPack import fuzzer (tests/fuzz): libFuzzer's runtime comes
#                               with it (libclang-common-15-dev)
# Native CUDA (nvcc >= 12) is expected at /usr/local/cuda or on PATH; it is not installed here.
# Needs root for apt-get; without root it only reports what is missing.
set -euo pipefail

# Arguments: install only these of the packages below (test.sh installs mmdebstrap first, so
# that the chroots are made while the rest installs).
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
all=(cmake ninja-build hipcc libamdhip64-dev libgtest-dev g++-11 nvidia-cuda-toolkit mmdebstrap
     doxygen libopenmpi-dev openmpi-bin make pkgconf python3-dev pybind11-dev python3-numpy
     python3-pip python3-setuptools python3-wheel python3-venv clang-15 libclang-common-15-dev)
for p in "${@:-${all[@]}}"; do
  [[ " ${all[*]} " == *" $p "* ]] || { echo "install-deps: $p is not one of unimem's packages" >&2; exit 2; }
  have_pkg "$p" || need+=("$p")
done
[ ${#need[@]} -eq 0 ] && { echo "install-deps: all toolchain packages present"; exit 0; }

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${need[*]} (run as root to install them)" >&2
  exit 1
fi

# CUDA 11.8 (nvidia-cuda-toolkit) lives in Debian's non-free component: added from the same
# archive this machine's apt uses for bookworm main (scripts/debian-archive.sh).
src=/etc/apt/sources.list.d/unimem-non-free.sources
if [[ " ${need[*]} " == *" nvidia-cuda-toolkit "* ]] && [ ! -f "$src" ]; then
  source "$(dirname "$0")/debian-archive.sh"
  archive=$(unimem_debian_archive bookworm) || { echo "install-deps: cannot add non-free" >&2; exit 1; }
  cat > "$src" <<SRC
Types: deb
URIs: $archive
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}"
echo "install-deps: installed ${need[*]}"
