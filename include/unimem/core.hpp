/// @file
/// @brief unimem's core: configuration and errors, devices, streams and events, the launch and
/// its configuration, managed, device and pinned buffers, views, copies, occupancy and warp
/// code. No placement, no driver interface: the layers above (<unimem/unimem.hpp>) add those.
#pragma once

#include "core/argument_error.hpp"
#include "core/config.hpp"
#include "core/copy.hpp"
#include "core/device.hpp"
#include "core/device_buffer.hpp"
#include "core/devices.hpp"
#include "core/error.hpp"
#include "core/fill.hpp"
#include "core/event.hpp"
#include "core/kernel_argument.hpp"
#include "core/launch.hpp"
#include "core/launch_config.hpp"
#include "core/managed_buffer.hpp"
#include "core/memory_kind.hpp"
#include "core/occupancy.hpp"
#include "core/pinned_buffer.hpp"
#include "core/reduce.hpp"
#include "core/stream.hpp"
#include "core/stream_ref.hpp"
#include "core/version.hpp"
#include "core/view.hpp"
#include "core/warp.hpp"
