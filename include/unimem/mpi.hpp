/// @file
/// @brief unimem::mpi: point-to-point (blocking and non-blocking), sendrecv and allreduce over
/// managed, device and pinned buffers and views; the one include of unimem::mpi (its parts live
/// in <unimem/mpi/...>). Not included by unimem.hpp; link the CMake target unimem::mpi (it
/// exists where find_package(MPI) succeeds).
///
/// Work queued on the buffer's stream is done before MPI touches the data. An MPI that takes GPU
/// pointers (detected at run time) gets every kind of memory directly; otherwise device memory,
/// and managed memory that lives on a GPU, is staged through pinned memory (one copy, one
/// message). MPI errors become unimem::mpi::error with MPI's own message. Every message is an
/// ordinary MPI message of the element type's datatype and the range's count, so a rank that
/// does not use unimem matches it with MPI_Recv; counts above INT_MAX travel as one element of a
/// derived datatype of the same type signature.
#pragma once

#include "unimem.hpp"               // the rest of unimem, as it always came with this header
#include "mpi/collectives.hpp"     // allreduce
#include "mpi/datatype.hpp"        // datatype<T>(), has_builtin_datatype_v
#include "mpi/deferred.hpp"        // flush()
#include "mpi/environment.hpp"     // environment, local_rank(), use_local_device()
#include "mpi/error.hpp"           // mpi::error
#include "mpi/path.hpp"            // memory, path, choose_path(), ordering, host_ready
#include "mpi/point_to_point.hpp"  // send, recv, isend, irecv, sendrecv
#include "mpi/request.hpp"         // request, status, wait_all()
#include "mpi/settings.hpp"        // settings, configure(), gpu_awareness
