/// @file
/// @brief unimem, portable fast GPU unified memory for HIP (AMD, NVIDIA) and CUDA: the umbrella
/// header, every layer users meet first (docs/architecture.md, "Layers"):
/// - the core (<unimem/core.hpp>): errors, devices, streams and events, buffers, views, copies,
///   the launch, warp code;
/// - placement (<unimem/placement/...>): locations, prefetch and advice, intent, access tags;
/// - diagnostics (<unimem/diagnostics/...>): report() and what each memory regime means.
/// It leaves out the headers that need heavier standard headers or libraries: the pool
/// (<unimem/pool/managed_pool.hpp>), std::pmr and managed_vector (<unimem/core/allocator.hpp>,
/// <unimem/core/memory_resource.hpp>), DLPack (<unimem/interop/dlpack.hpp>), MPI
/// (<unimem/mpi.hpp>); include those where you use them.
#pragma once

#include "core.hpp"
#include "diagnostics/regime.hpp"
#include "diagnostics/report.hpp"
#include "placement/access.hpp"
#include "placement/intent.hpp"
#include "placement/location.hpp"
#include "placement/placement.hpp"
#include "placement/policy.hpp"
