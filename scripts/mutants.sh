#!/usr/bin/env bash
# Can the placement-record tests fail? Builds tests/test_migration.cpp against copies of the
# headers with one deliberate bug each (a mutant), runs its GPU tests of placement and intents,
# and reports which tests caught each mutant. Every mutant must be caught; the unmutated build
# must pass. Needs a GPU, nvcc and GoogleTest (native CUDA); run from the repository root.
#
#   bash scripts/mutants.sh [OUT_DIR]      (default: build/mutants)
#
# Mutants:
#   no-skip        a record never holds: every tagged launch places again (the 5x of issue 24)
#   no-fault-check a record ignores the page-fault count: CPU writes are not seen
#   no-deliberate  unimem's own moves of views take no fault: records outlive them
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/mutants}
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p "$out"
rec=include/unimem/detail/placement_record.hpp
pla=include/unimem/placement.hpp

mutate() {  # name file sed-expression
  local dir=$out/$1
  rm -rf "$dir" && mkdir -p "$dir" && cp -r "$root/include" "$dir/"
  if [ -n "$2" ]; then
    sed -i "$3" "$dir/$2"
    if cmp -s "$dir/$2" "$root/$2"; then echo "mutants: $1 changed nothing in $2" >&2; return 1; fi
  fi
}
mutate original "" ""
mutate no-skip "$pla" 's/^  if (r.record == nullptr) return false;$/  return false;/'
mutate no-fault-check "$rec" 's/(faults \& fault_mask)/(std::uint64_t{0})/'
mutate no-deliberate "$rec" 's/^  if (page == nullptr) return;  .*$/  return;/'

build() {
  "$nvcc" -x cu -std=c++17 -O2 -arch=sm_90 -DUNIMEM_BACKEND_CUDA -I"$out/$1/include" \
    "$root/tests/test_migration.cpp" -o "$out/$1/test" -lgtest -lgtest_main -lpthread \
    >"$out/$1/build.log" 2>&1 || { echo "mutants: $1 does not build:"; tail -5 "$out/$1/build.log"; }
}
for m in original no-skip no-fault-check no-deliberate; do build "$m" & done
wait

status=0
for m in original no-skip no-fault-check no-deliberate; do
  [ -x "$out/$m/test" ] || { status=1; continue; }
  "$out/$m/test" --gtest_filter='PlacementGpu.*:IntentGpu.*:PlacementRecord.*:HostFaults.*' \
    >"$out/$m/run.log" 2>&1
  failed=$(grep -E '^\[  FAILED  \] [A-Za-z]+\.' "$out/$m/run.log" | sed 's/^\[  FAILED  \] //; s/ (.*//' | sort -u | tr '\n' ' ')
  if [ "$m" = original ]; then
    if [ -n "$failed" ]; then echo "mutants: the unmutated build fails: $failed"; status=1
    else echo "mutants: original passes ($(grep -c '^\[       OK \]' "$out/$m/run.log") tests)"; fi
  elif [ -z "$failed" ]; then
    echo "mutants: $m SURVIVED: no test failed"; status=1
  else
    echo "mutants: $m caught by $failed"
  fi
done
exit $status
