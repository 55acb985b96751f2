/// @file
/// @brief unimem, portable fast GPU unified memory for HIP (AMD, NVIDIA) and CUDA: the umbrella
/// header. It leaves out the headers that need heavier standard headers (a quarter to half again
/// of every TU's compile time): `<unimem/allocator.hpp>` (managed_vector),
/// `<unimem/memory_resource.hpp>` (std::pmr), `<unimem/managed_pool.hpp>` and
/// `<unimem/managed_pool_resource.hpp>`; include those where you use them.
#pragma once

// Runtime-free vocabulary.
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
