// unimem: portable, fast GPU unified memory for HIP (AMD, NVIDIA) and CUDA.
// The umbrella header: include this one. Each header below is one concept and compiles alone.
// allocator.hpp (managed_vector), memory_resource.hpp (std::pmr), managed_pool.hpp and
// managed_pool_resource.hpp (the stream-ordered pool of managed memory) are left out: the
// standard headers they need would add a quarter to half again to the compile time of every
// translation unit that includes unimem (scripts/compile_time.sh, docs/architecture.md);
// include them where you use them.
/// @file
/// @brief The umbrella header: includes every public header but those that need heavier
/// standard headers, `<unimem/allocator.hpp>` (managed_allocator, managed_vector: needs
/// `<vector>`), `<unimem/memory_resource.hpp>` (the std::pmr resources: needs
/// `<memory_resource>`, `<mutex>`, `<unordered_map>`), `<unimem/managed_pool.hpp>`
/// (managed_pool, pool_buffer: needs `<unordered_map>`, `<vector>`) and
/// `<unimem/managed_pool_resource.hpp>` (its std::pmr resource). Include those where you use
/// them.
#pragma once

// Runtime-free vocabulary (no GPU runtime header needed).
#include "access.hpp"
#include "argument_error.hpp"
#include "config.hpp"
#include "kernel_argument.hpp"
#include "launch_config.hpp"
#include "location.hpp"
#include "stream_ref.hpp"
#include "version.hpp"
#include "view.hpp"

// The runtime: devices, streams, events, errors.
#include "device.hpp"
#include "error.hpp"
#include "event.hpp"
#include "stream.hpp"

// Memory: kinds, buffers, copies, placement.
#include "copy.hpp"
#include "device_buffer.hpp"
#include "managed_buffer.hpp"
#include "memory_kind.hpp"
#include "pinned_buffer.hpp"
#include "placement.hpp"
#include "placement_policy.hpp"

// Kernels.
#include "launch.hpp"
#include "occupancy.hpp"
#include "reduce.hpp"
#include "warp.hpp"
