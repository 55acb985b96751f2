// unimem: the backend layer, chosen by config.hpp. The files in this folder are the only place
// that names hip*/cuda* runtime calls; the rest of the library calls the wrappers in
// unimem::detail::backend.
//
//   handles.hpp      runtime-free: the stream and event handle types, forward-declared
//   common.hpp       backend-neutral vocabulary shared by the backends (results, attributes)
//   cuda.hpp         the CUDA runtime (nvcc, no HIP needed)
//   hip.hpp          HIP (AMD ROCm, or HIP on NVIDIA over the CUDA runtime)
//   cuda_driver.hpp  the few driver functions NVIDIA builds reach through entry points
#pragma once

#include "../../config.hpp"

#if defined(UNIMEM_BACKEND_HIP)
#include "hip.hpp"
#else
#include "cuda.hpp"
#endif
