// unimem: portable, fast GPU unified memory for HIP (AMD, NVIDIA) and CUDA.
// The umbrella header: include this one.
#pragma once

#include "access.hpp"
#include "allocator.hpp"
#include "copy.hpp"
#include "detail/backend.hpp"
#include "device.hpp"
#include "device_buffer.hpp"
#include "error.hpp"
#include "event.hpp"
#include "launch.hpp"
#include "launch_config.hpp"
#include "location.hpp"
#include "managed_buffer.hpp"
#include "memory_resource.hpp"
#include "migration.hpp"
#include "pinned_buffer.hpp"
#include "stream.hpp"
#include "stream_ref.hpp"
#include "version.hpp"
#include "view.hpp"
