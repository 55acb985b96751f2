// unimem: MPI over unimem's buffers. Not included by unimem.hpp: include <unimem/mpi.hpp> and
// link the CMake target unimem::mpi (it exists where find_package(MPI) succeeds).
//
// MPI is the engine; this header makes managed, device and pinned buffers (and views of them)
// correct and fast on it:
//   - stream order: work queued on the buffer's stream is done before MPI touches the data;
//   - with an MPI that takes GPU pointers (GPU-aware, detected at run time), every kind of memory
//     goes straight to MPI; without one, device memory, and managed memory that lives on a GPU,
//     is staged through a pinned buffer (one copy, one message), never handed to MPI as a
//     device pointer;
//   - MPI errors become unimem::mpi::error with MPI's own message.
//
// On the wire every unimem::mpi message is an ordinary MPI message of the element type's
// datatype and the range's element count, on the caller's communicator and tag: a rank or
// library that does not use unimem receives it with MPI_Recv, and unimem receives theirs. Counts
// above INT_MAX travel as one element of a derived datatype of the same type signature.
/// @file
/// @brief unimem::mpi: point-to-point (blocking and non-blocking), sendrecv and allreduce over
/// managed, device and pinned buffers and views, GPU-aware detection, staging, RAII requests.
///
/// The one include of unimem::mpi; its parts, one concept each, live in <unimem/mpi/...>.
#pragma once

#include "mpi/collectives.hpp"     // allreduce
#include "mpi/datatype.hpp"        // datatype<T>(), has_builtin_datatype_v
#include "mpi/deferred.hpp"        // flush()
#include "mpi/environment.hpp"     // environment, local_rank(), use_local_device()
#include "mpi/error.hpp"           // mpi::error
#include "mpi/path.hpp"            // memory, path, choose_path(), ordering, host_ready
#include "mpi/point_to_point.hpp"  // send, recv, isend, irecv, sendrecv
#include "mpi/request.hpp"         // request, status, wait_all()
#include "mpi/settings.hpp"        // settings, configure(), gpu_awareness
