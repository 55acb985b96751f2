#!/usr/bin/env bash
# unimem's test command: installs what is missing (as root, on Debian 12), then configures,
# builds and runs ctest for each toolchain. GPU tests run where there is a GPU and skip, with
# the reason, where there is none.
#
#   bash scripts/test.sh                 all toolchains: hip-amd hip-nvidia cuda
#   bash scripts/test.sh cuda hip-amd    only these
#
# Environment: BUILD_ROOT (default build/), JOBS, UNIMEM_SKIP_INSTALL=1 to skip the install step.
set -uo pipefail
source "$(dirname "$0")/toolchains.sh"

build_root=${BUILD_ROOT:-$unimem_root/build}
jobs=${JOBS:-$(nproc)}
toolchains=("$@")
[ ${#toolchains[@]} -eq 0 ] && toolchains=(hip-amd hip-nvidia cuda)

if [ "${UNIMEM_SKIP_INSTALL:-0}" != 1 ]; then
  bash "$unimem_root/scripts/install-deps.sh" || exit 1
fi

run_toolchain() {
  local tc=$1 dir=$build_root/$1
  unimem_toolchain "$tc" "$dir" || return 1
  echo "=== $tc: configure, build and test in $dir"
  env "${tc_env[@]}" cmake "${tc_cfg[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNIMEM_WERROR=ON &&
    env "${tc_env[@]}" cmake --build "$dir" -j "$jobs" &&
    (cd "$dir" && env "${tc_env[@]}" ctest --output-on-failure -j "$jobs")
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
