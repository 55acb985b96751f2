// A translation unit of unimem-bench (bench/CMakeLists.txt): these sources, compiled together.
#include "../launch_overhead.cpp"
#include "../ping_pong.cpp"
#include "../two_gpus.cpp"
#include "../movement.cpp"
#include "../init.cpp"
#include "../pool.cpp"
#include "../dlpack.cpp"
#include "../report.cpp"
