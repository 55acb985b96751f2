// unimem: the runtimes' stream and event handle types without a runtime header: pointers to the
// runtime's opaque structs, declared here (cudaStream_t is CUstream_st*, hipStream_t on AMD
// ihipStream_t*), so stream_ref and launch_config stay free of runtime headers.
#pragma once

#include "../../config.hpp"

#if defined(UNIMEM_DETAIL_HIP_AMD)
struct ihipStream_t;
struct ihipEvent_t;
#else
struct CUstream_st;
struct CUevent_st;
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
#if defined(UNIMEM_DETAIL_HIP_AMD)
using stream_handle = ::ihipStream_t*;
using event_handle = ::ihipEvent_t*;
#else
using stream_handle = ::CUstream_st*;
using event_handle = ::CUevent_st*;
#endif
}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
