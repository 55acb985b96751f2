#!/usr/bin/env bash
# The GPU half of a round in one call on a one-GPU NVIDIA machine (the device tool's H200/H100:
# nvcc 13, cmake, GoogleTest, compute-sanitizer, torch/CuPy/NumPy in /opt/torch/.venv), within a
# time budget: native CUDA built there, then each step below with a cap of its own, in order of
# what matters most, so that a step cut short still leaves the others' logs. Two files land in
# $OUT (default ./gpu-round): steps.log (one line per step: its exit status and time, the lines
# that carry its result) and gpu-round.tar.gz (every log and CSV, written to a folder beside).
#
#   bash scripts/gpu_round.sh [BUDGET_S] [STEP...]
#
# Steps (default: all, in this order):
#   info       unimem-info: the GPU, the UVM module's version, the layout and signal of the hook
#   suite      unimem_tests, every test in one process (the GPU tests run; hook, pool, windows)
#   fault      unimem_fault_tests: the fault sweep (windows and the pool included)
#   oversub    unimem-bench --only oversubscribe at 1.5x and 2x of 16 GiB left free
#   python     tests/python/test_allocator_gpu.py (torch both routes, CuPy) with the venv's Python
#   memcheck   compute-sanitizer memcheck (leak check) over the pool's and the windows' GPU tests
#   racecheck  compute-sanitizer racecheck over the same
#   bench      unimem-bench --only pool,steady-state,stream,dlpack (the ratio block's rows)
#   oversub05  unimem-bench --only oversubscribe at 0.5x and 1x
#   torch      python/bench/bench_torch.py --only in_memory (0.8x of what is left free)
#   model      the model test (ModelGpu.*) at 60 seeds x 8,000 operations
#   pygpu      tests/python/test_buffers_gpu.py (ObviousCalls: torch, CuPy, NumPy on our memory)
#   memcheck-all  compute-sanitizer memcheck (leak check) over every GPU test (*Gpu*)
#   benchall   unimem-bench, every section (the ratio block)
#   stress     the pool's stress test alone (it crashed on an H100 and hung on an H200, 2026-12-05;
#              its stderr names the allocator and round reached)
#   stress-pf  the same with the UVM hook's tracker off (UNIMEM_HOST_ACCESS=page-faults)
set -u
budget=${1:-560}
shift || true
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(info suite fault oversub python memcheck racecheck bench oversub05 torch)
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-round}
logs=$(mktemp -d)/logs
mkdir -p "$out" "$logs"
b=${UNIMEM_GPU_BUILD:-$root/build/gpu-round}
py=${UNIMEM_GPU_PYTHON:-/opt/torch/.venv/bin/python}
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
t0=$SECONDS
left() { echo $((budget - (SECONDS - t0))); }
note() { echo "[$((SECONDS - t0)) s] $*" | tee -a "$out/steps.log"; }
# run NAME CAP CMD...: at most CAP seconds, and never past the budget (less 15 s to pack up).
run() {
  local name=$1 cap=$2 l
  shift 2
  l=$(( $(left) - 15 ))
  [ "$l" -lt "$cap" ] && cap=$l
  if [ "$cap" -lt 10 ]; then note "$name: not run (budget spent)"; return 0; fi
  local start=$SECONDS
  timeout -k 5 "$cap" "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  note "$name: rc=$rc in $((SECONDS - start)) s (cap $cap s); $(grep -aE 'PASSED|FAILED|tests? ran|ERROR SUMMARY|ratio|MET|MISSED|^OK|Ran [0-9]+|skipped|layout|signal|module' "$logs/$name.log" | tail -6 | tr '\n' '|' | cut -c1-700)"
}

{ nvidia-smi; cat /proc/driver/nvidia/version; echo "nvidia_uvm $(cat /sys/module/nvidia_uvm/version)"; } \
  > "$logs/machine.log" 2>&1
note "machine: $(nvidia-smi -L 2>/dev/null | head -1); uvm $(cat /sys/module/nvidia_uvm/version 2>/dev/null)"
start=$SECONDS
cmake --preset cuda -B "$b" -DUNIMEM_WERROR=ON -DPython3_EXECUTABLE="$py" \
      -DUNIMEM_TEST_CONSUMERS=OFF -DUNIMEM_TEST_COMPILE_CHECKS=OFF \
      -DUNIMEM_PYBIND11_HINTS="$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)/include" \
      > "$logs/configure.log" 2>&1
note "configure: rc=$? in $((SECONDS - start)) s"
start=$SECONDS
timeout -k 5 $(( $(left) - 60 )) cmake --build "$b" -j "$(nproc)" --target unimem_tests unimem_fault_tests \
  unimem-bench unimem-info unimem_python_allocator > "$logs/build.log" 2>&1
note "build: rc=$? in $((SECONDS - start)) s"
cmake --build "$b" -j "$(nproc)" --target unimem_python_buffers > "$logs/build-python.log" 2>&1
export PYTHONPATH=$b/python
filter='ManagedPool*:Pool*:*Window*:HostAccess*:UvmDriver*:FaultCountGpu*:PlacementGpu*'

for step in "${steps[@]}"; do
  case $step in
    info) run info 20 "$b/examples/unimem-info" ;;
    suite) run suite 200 "$b/tests/unimem_tests" --gtest_brief=1 ;;
    fault) run fault 90 "$b/tests/unimem_fault_tests" --gtest_brief=1 ;;
    oversub) run oversub 200 "$b/bench/unimem-bench" --only oversubscribe --leave-free-gib 16 \
               --oversubscribe-factors 1.5,2 --csv "$logs/oversubscribe.csv" ;;
    python) run python 150 "$py" "$root/tests/python/test_allocator_gpu.py" -v ;;
    memcheck) run memcheck 90 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
                "$b/tests/unimem_tests" --gtest_filter="ManagedPoolGpu*:WindowGpu*" --gtest_brief=1 ;;
    racecheck) run racecheck 90 compute-sanitizer --tool racecheck --error-exitcode 9 \
                 "$b/tests/unimem_tests" --gtest_filter="ManagedPoolGpu*:WindowGpu*" --gtest_brief=1 ;;
    bench) run bench 150 "$b/bench/unimem-bench" --only pool,steady-state,stream,dlpack \
             --csv "$logs/bench.csv" ;;
    oversub05) run oversub05 150 "$b/bench/unimem-bench" --only oversubscribe --leave-free-gib 16 \
                 --oversubscribe-factors 0.5,1 --csv "$logs/oversubscribe05.csv" ;;
    torch) run torch 200 "$py" "$root/python/bench/bench_torch.py" --only in_memory \
             --json "$logs/bench-torch.json" ;;
    model) UNIMEM_MODEL_SEEDS=60 UNIMEM_MODEL_OPS=8000 run model 300 "$b/tests/unimem_tests" \
             --gtest_filter='Model*' --gtest_brief=1 ;;
    pygpu) run pygpu 150 "$py" "$root/tests/python/test_buffers_gpu.py" -v ;;
    memcheck-all) run memcheck-all 300 compute-sanitizer --tool memcheck --leak-check full \
                    --error-exitcode 9 "$b/tests/unimem_tests" --gtest_filter='*Gpu*' --gtest_brief=1 ;;
    benchall) run benchall 300 "$b/bench/unimem-bench" --csv "$logs/bench-all.csv" ;;
    hooked) run hooked 60 "$b/tests/unimem_tests" --gtest_filter="$filter" ;;
    stress) run stress 60 "$b/tests/unimem_tests" --gtest_filter='*StressThreads*' ;;
    stress-pf) run stress-pf 60 env UNIMEM_HOST_ACCESS=page-faults "$b/tests/unimem_tests" \
                 --gtest_filter='*StressThreads*' ;;
    *) note "unknown step $step" ;;
  esac
done
tar -czf "$out/gpu-round.tar.gz" -C "$(dirname "$logs")" logs
note "packed: $(du -h "$out/gpu-round.tar.gz" | cut -f1)"
