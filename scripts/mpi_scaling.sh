#!/usr/bin/env bash
# Weak scaling of examples/mpi_jacobi from 1 rank to 2 ranks (one GPU each): the same rows per
# rank, so 2 ranks solve a grid twice as tall in, ideally, the same time per iteration.
# Prints both runs' machine-readable lines, the grid, and the efficiency
# t(1 rank) / t(2 ranks) per iteration against the target (MET or MISSED).
#
#   bash scripts/mpi_scaling.sh BUILD_DIR [--cols N] [--rows-per-rank N] [--iterations N]
#
# BUILD_DIR is a build folder with examples/mpi_jacobi (or the executable itself). Defaults:
# mpi_jacobi's own (4096 columns, 4096 rows per rank, 200 iterations); runs with --no-verify.
# Environment: MPIEXEC (default: mpiexec; may carry options, e.g. "mpiexec --bind-to none"),
# MPIEXEC_NUMPROC_FLAG (default -n), TARGET (default 0.90). Runs as root too (sets
# OMPI_ALLOW_RUN_AS_ROOT). Exit status: 0 target met, 1 missed or a run failed, 2 no GPU.
set -uo pipefail

usage() {
  echo "usage: $0 BUILD_DIR [--cols N] [--rows-per-rank N] [--iterations N]" >&2
  exit 1
}
[ $# -ge 1 ] || usage
build=$1
shift
if [ -f "$build" ] && [ -x "$build" ]; then
  exe=$build
else
  exe=$build/examples/mpi_jacobi
fi
[ -x "$exe" ] || { echo "mpi_scaling.sh: no executable $exe (build the target mpi_jacobi)" >&2; exit 1; }

cols=4096
rows=4096
iterations=200
while [ $# -gt 0 ]; do
  case $1 in
    --cols) cols=${2:-}; shift 2 || usage ;;
    --rows-per-rank) rows=${2:-}; shift 2 || usage ;;
    --iterations) iterations=${2:-}; shift 2 || usage ;;
    *) usage ;;
  esac
done
for v in "$cols" "$rows" "$iterations"; do
  [[ $v =~ ^[0-9]+$ ]] || { echo "mpi_scaling.sh: '$v' is not a number" >&2; exit 1; }
done

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1}
read -r -a mpiexec <<<"${MPIEXEC:-mpiexec}"
np_flag=${MPIEXEC_NUMPROC_FLAG:--n}
target=${TARGET:-0.90}

# run RANKS: runs mpi_jacobi, echoes its output, sets `ms` and `shared` (ranks on one GPU).
run() {
  local n=$1 out rc line
  echo "== $n rank(s): ${mpiexec[*]} $np_flag $n $exe --cols $cols --rows-per-rank $rows" \
       "--iterations $iterations --no-verify"
  out=$("${mpiexec[@]}" "$np_flag" "$n" "$exe" --cols "$cols" --rows-per-rank "$rows" \
        --iterations "$iterations" --no-verify 2>&1)
  rc=$?
  echo "$out"
  if [ $rc -eq 2 ] || grep -q "needs a GPU per rank" <<<"$out"; then
    echo "mpi_scaling.sh: SKIPPED: mpi_jacobi needs a GPU per rank" >&2
    exit 2
  fi
  line=$(grep '^mpi_jacobi: ranks=' <<<"$out" | tail -n 1)
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    echo "mpi_scaling.sh: the $n-rank run failed (exit status $rc)" >&2
    exit 1
  fi
  ms=$(sed -n 's/.* ms_per_iteration=\([0-9.eE+-]*\).*/\1/p' <<<"$line")
  halo=$(sed -n 's/.* halo_ms_per_iteration=\([0-9.eE+-]*\).*/\1/p' <<<"$line")
  # "  rank R: GPU G, NAME, on HOST": ranks that print the same GPU and host share it.
  shared=$(sed -n 's/^  rank [0-9]*: GPU \([0-9]*\), .*, on \(.*\)$/\2 \1/p' <<<"$out" | sort |
           uniq -d | head -n 1)
}

run 1
ms1=$ms halo1=$halo
run 2
ms2=$ms halo2=$halo

echo
echo "mpi_scaling.sh: grid: $cols columns, $rows rows per rank ($((rows + 2)) x $cols on 1 rank," \
     "$((2 * rows + 2)) x $cols on 2), $iterations iterations"
echo "  1 rank:  $ms1 ms per iteration (halo exchange $halo1 ms)"
echo "  2 ranks: $ms2 ms per iteration (halo exchange $halo2 ms)"
if [ -n "$shared" ]; then
  echo "  warning: the 2 ranks share a GPU (host and GPU: $shared): this is not weak scaling" \
       "over GPUs; run where each rank has a GPU of its own"
fi
awk -v t1="$ms1" -v t2="$ms2" -v target="$target" 'BEGIN {
  if (t2 <= 0) { print "mpi_scaling.sh: no time measured for 2 ranks"; exit 1 }
  e = t1 / t2
  printf "mpi_scaling.sh: weak-scaling efficiency t(1)/t(2) = %.3f, target >= %.2f: %s\n",
         e, target, (e >= target ? "MET" : "MISSED")
  exit (e >= target ? 0 : 1)
}'
