// A translation unit of unimem-bench (bench/CMakeLists.txt): these sources, compiled together.
#include "../main.cpp"
#include "../harness.cpp"
#include "../pipeline.cpp"
#include "../results_back.cpp"
#include "../steady_state.cpp"
#include "../stream.cpp"
#include "../living_host.cpp"
