#!/usr/bin/env bash
# The GPU runs the open issues still need, on a machine with GPUs (two for the MPI and two-GPU
# figures), for one build folder configured and built beforehand (native CUDA can be built on
# the GPU machine itself; HIP on NVIDIA is built elsewhere and carried, with libcudart.so.11.0
# on LD_LIBRARY_PATH). Output goes to OUT (default: ./gpu-runs), one log per step.
#
#   bash scripts/gpu_runs.sh BUILD_DIR [suite] [two-gpus] [mpi] [scaling] [stream] [init] [bench] [all]
#
#   suite      ctest -LE toolchain (the GPU suite, two-GPU tests included where there are two)
#   two-gpus   unimem-bench --only two-gpus (the mapped GPU1 phase, moving an array GPU0 -> GPU1)
#   stream     unimem-bench --only stream,steady-state,launch (issue 24: tagged / untagged >= 0.98)
#   init       unimem-bench --only init $UNIMEM_INIT_ARGS (e.g. --init-kib 64,256,1024), with
#              its CSV (issue 25: where managed_buffer(n)'s value initialisation should run)
#   bench      unimem-bench, every section, with its CSV (the full ratio block)
#   mpi        the MPI tests and example on 2 ranks, unimem-mpi-bench (issue 14)
#   scaling    scripts/mpi_scaling.sh (issue 14: weak scaling 1 -> 2 GPUs)
#
# UNIMEM_MPS=1 runs every step under NVIDIA's Multi-Process Service (started here, stopped at
# the end): for MPI ranks that share one GPU, which without MPS time-share it context by context
# (docs/distributed.md, "Two ranks on one GPU: use MPS").
set -uo pipefail
build=${1:?usage: gpu_runs.sh BUILD_DIR [suite] [two-gpus] [mpi] [scaling] [stream] [init] [bench] [all]}
shift
steps=("$@")
[ ${#steps[@]} -eq 0 ] || [ "${steps[0]}" = all ] && steps=(suite two-gpus mpi scaling)
out=${OUT:-$PWD/gpu-runs}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
name=$(basename "$build")
nvidia-smi -L 2>/dev/null | tee "$out/$name-gpus.log"
if [ "${UNIMEM_MPS:-0}" = 1 ]; then
  export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/unimem-mps}
  export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/unimem-mps-log}
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || { echo "gpu_runs.sh: MPS could not be started" >&2; exit 1; }
  trap 'echo quit | nvidia-cuda-mps-control' EXIT
  echo "MPS started (pipes in $CUDA_MPS_PIPE_DIRECTORY)"
fi
for step in "${steps[@]}"; do
  log=$out/$name-$step.log
  start=$SECONDS
  case $step in
    suite) ctest --test-dir "$build" -LE toolchain -j 8 --output-on-failure >"$log" 2>&1 ;;
    two-gpus) "$build/bench/unimem-bench" --only two-gpus >"$log" 2>&1 ;;
    stream) "$build/bench/unimem-bench" --only stream,steady-state,launch >"$log" 2>&1 ;;
    init) "$build/bench/unimem-bench" --only init ${UNIMEM_INIT_ARGS:-} --csv "$out/$name-init.csv" >"$log" 2>&1 ;;
    bench) "$build/bench/unimem-bench" ${UNIMEM_BENCH_ARGS:-} --csv "$out/$name-bench.csv" >"$log" 2>&1 ;;
    mpi)
      { ctest --test-dir "$build" -R '^(mpi\.|example\.mpi_jacobi)' --output-on-failure
        mpiexec -n 2 "$build/bench/unimem-mpi-bench" --csv "$out/$name-mpi-bench.csv"; } >"$log" 2>&1 ;;
    scaling) bash "$root/scripts/mpi_scaling.sh" "$build" --cols 8192 --rows-per-rank 8192 >"$log" 2>&1 ;;
    *) echo "gpu_runs.sh: unknown step $step" >&2; exit 1 ;;
  esac
  rc=$?
  echo "$name $step: rc=$rc in $((SECONDS - start)) s; $(grep -E 'tests passed|ratios, | MET| MISSED|efficiency' "$log" | tail -4 | tr '\n' ' ')"
done
