// unimem: portable, fast GPU unified memory for HIP (AMD, NVIDIA) and CUDA.
// The umbrella header: include this one. Each header below is one concept and compiles alone.
/// @file
/// @brief The umbrella header: includes every public header.
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

// Memory: kinds, buffers, allocators, copies, placement.
#include "allocator.hpp"
#include "copy.hpp"
#include "device_buffer.hpp"
#include "managed_buffer.hpp"
#include "memory_kind.hpp"
#include "memory_resource.hpp"
#include "pinned_buffer.hpp"
#include "placement.hpp"
#include "placement_policy.hpp"

// Kernels.
#include "launch.hpp"
#include "reduce.hpp"
#include "warp.hpp"
