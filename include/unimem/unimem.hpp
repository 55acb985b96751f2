// unimem: portable, fast GPU unified memory for HIP (AMD, NVIDIA) and CUDA.
// The umbrella header: include this one.
#pragma once

#include "access.hpp"
#include "detail/backend.hpp"
#include "device.hpp"
#include "error.hpp"
#include "launch.hpp"
#include "launch_config.hpp"
#include "location.hpp"
#include "managed_buffer.hpp"
#include "migration.hpp"
#include "stream.hpp"
#include "stream_ref.hpp"
#include "version.hpp"
#include "view.hpp"
