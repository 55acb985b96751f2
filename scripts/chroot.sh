# Sourced by test.sh: toolchains from Debian's newer suites (trixie, sid, experimental), each in
# a chroot made from Debian's archive with mmdebstrap. Their packages need a newer glibc than
# Debian 12 has, so they never touch the machine itself.
#
#   unimem_chroot_ensure SUITE        creates the chroot if it is missing or out of date
#   unimem_chroot_run SUITE CMD...    runs CMD inside, with the source tree at the same path
#
# Chroots are cached outside the clone, in $UNIMEM_CHROOT_CACHE (default
# /var/cache/unimem/chroots), and reused by later runs while their recipe is unchanged (a stamp
# file holds the recipe). Creating one needs root and network access to the Debian archive this
# machine's apt uses for bookworm (scripts/debian-archive.sh; $UNIMEM_DEBIAN_MIRROR overrides
# it); running one needs root (mount namespaces, chroot).

source "$(dirname "${BASH_SOURCE[0]}")/debian-archive.sh"
unimem_chroot_cache=${UNIMEM_CHROOT_CACHE:-/var/cache/unimem/chroots}
unimem_debian_mirror=""  # looked up on first use (unimem_chroot_mirror), by chroot toolchains only

# Sets unimem_debian_mirror, once; fails with the lookup's message when there is no archive.
unimem_chroot_mirror() {
  [ -n "$unimem_debian_mirror" ] && return 0
  unimem_debian_mirror=$(unimem_debian_archive bookworm) || return 1
}

# What each suite's toolchains need. CUDA's nvcc 12.4/12.5 accepts g++ up to 13, older than the
# suites' default g++: GoogleTest is built again with g++-13 (the suites' libgtest is built with
# their default g++, and mixing the two runtimes fails to link).
unimem_chroot_packages() {
  local common="cmake ninja-build libgtest-dev googletest g++ hipcc libamdhip64-dev make pkgconf"
  case $1 in
    trixie) echo "$common nvidia-cuda-toolkit g++-13" ;;  # HIP 5.7.1 (clang-17), CUDA 12.4
    sid) echo "$common" ;;                                 # HIP 6.4.3, hipcc 7.0.2 (clang-21)
    experimental) echo "$common nvidia-cuda-toolkit g++-13" ;;  # HIP 7.2.4 (clang-22), CUDA 12.5
    *) return 1 ;;
  esac
}

unimem_chroot_dir() { echo "$unimem_chroot_cache/$1"; }

# What dpkg leaves out of a chroot: the CUDA toolkit's math and media libraries (cuBLAS,
# cuFFT, cuSPARSE, cuSOLVER, cuRAND, NPP, nvJPEG: 4 of trixie's 5.8 GB, libcublasLt_static.a
# alone 961 MB), which unimem neither includes nor links, and the documentation. Unpacking them
# was most of making a chroot; nvcc's own libraries (cudart, cudadevrt, nvrtc, nvvm, cupti) stay.
unimem_chroot_excludes() {
  local lib=/usr/lib/x86_64-linux-gnu p
  for p in cublas cufft cusparse cusolver curand npp nvjpeg nvblas cuinj64; do
    echo "$lib/lib$p*"
  done
  printf '%s\n' '/usr/share/doc/*' '/usr/share/man/*' '/usr/share/locale/*'
}

# The recipe: a change to it makes the next run build the chroot again.
unimem_chroot_recipe() {
  echo "unimem chroot recipe 2: suite $1; mirror $unimem_debian_mirror; packages $(unimem_chroot_packages "$1"); left out $(unimem_chroot_excludes | paste -sd ' ')"
}

unimem_chroot_ensure() {
  local suite=$1 dir recipe
  unimem_chroot_mirror || { echo "chroot: cannot make or check the $suite chroot" >&2; return 1; }
  dir=$(unimem_chroot_dir "$suite")
  recipe=$(unimem_chroot_recipe "$suite") || { echo "chroot: unknown suite '$suite'" >&2; return 1; }
  if [ -f "$dir/.unimem-recipe" ] && [ "$(cat "$dir/.unimem-recipe")" = "$recipe" ]; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "chroot: making the $suite chroot needs root (mmdebstrap, mounts)" >&2
    return 1
  fi
  if ! command -v mmdebstrap >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null ||
      { echo "chroot: cannot install mmdebstrap" >&2; return 1; }
  fi
  echo "chroot: creating $dir ($(unimem_chroot_packages "$suite" | tr ' ' ','))"
  local start=$SECONDS tmp="$dir.tmp.$$"
  rm -rf "$dir" "$dir".tmp.*
  mkdir -p "$unimem_chroot_cache"
  local -a opts=(--variant=apt --components="main contrib non-free"
                 --aptopt='Acquire::Check-Valid-Until "false"'
                 --aptopt='Acquire::Retries "3"'
                 --include="$(unimem_chroot_packages "$suite" | tr ' ' ',')")
  local p
  while read -r p; do opts+=(--dpkgopt="path-exclude=$p"); done < <(unimem_chroot_excludes)
  local -a sources=()
  if [ "$suite" = experimental ]; then
    # experimental holds only what differs from sid: both, and experimental first.
    opts+=(--aptopt='APT::Default-Release "experimental"')
    sources=("deb $unimem_debian_mirror sid main contrib non-free"
             "deb $unimem_debian_mirror experimental main contrib non-free")
  else
    sources=("deb $unimem_debian_mirror $suite main contrib non-free")
  fi
  if ! mmdebstrap "${opts[@]}" "$suite" "$tmp" "${sources[@]}" > "$tmp.log" 2>&1; then
    tail -20 "$tmp.log" >&2
    echo "chroot: mmdebstrap failed for $suite (log: $tmp.log)" >&2
    rm -rf "$tmp"
    return 1
  fi
  if [[ " $(unimem_chroot_packages "$suite") " == *" g++-13 "* ]]; then
    # GoogleTest for nvcc's host compiler, from the sources the googletest package ships.
    if ! unimem_chroot_exec "$tmp" bash -ec '
        cmake -S /usr/src/googletest -B /tmp/gtest -G Ninja -DCMAKE_CXX_COMPILER=g++-13 \
          -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF -DCMAKE_INSTALL_PREFIX=/opt/gtest-g++-13
        cmake --build /tmp/gtest && cmake --install /tmp/gtest && rm -rf /tmp/gtest' \
        >> "$tmp.log" 2>&1; then
      tail -20 "$tmp.log" >&2
      echo "chroot: building GoogleTest with g++-13 failed for $suite" >&2
      rm -rf "$tmp"
      return 1
    fi
  fi
  echo "$recipe" > "$tmp/.unimem-recipe"
  mv "$tmp" "$dir" && mv "$tmp.log" "$dir.log"
  echo "chroot: $suite ready in $((SECONDS - start)) s ($(du -sh "$dir" | cut -f1))"
}

# Runs a command in the chroot at $1 in a private mount namespace: /proc, /dev and the source
# tree (at the same path as outside) are mounted for the command alone and vanish with it.
unimem_chroot_exec() {
  local dir=$1
  shift
  unshare --mount --propagation private -- bash -c '
    dir=$1 src=$2; shift 2
    mount -t proc proc "$dir/proc" &&
      mount --rbind /dev "$dir/dev" &&
      mkdir -p "$dir$src" && mount --bind "$src" "$dir$src" || exit 125
    cd "$dir$src" && exec chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
      PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin bash -c "cd \"$src\" && \"\$@\"" bash "$@"
  ' bash "$dir" "$unimem_root" "$@"
}

unimem_chroot_run() {
  local suite=$1
  shift
  unimem_chroot_ensure "$suite" || return 1
  unimem_chroot_exec "$(unimem_chroot_dir "$suite")" "$@"
}
