/// @file
/// @brief The 0.2 path of <unimem/core/device_buffer.hpp>: it forwards there (and to what this path gave in 0.2),
/// until 0.4 removes it (docs/architecture.md, "Layers"; CHANGELOG.md).
#pragma once

#include "core/device_buffer.hpp"
#include "core/devices.hpp"
#include "core/stream.hpp"
#include "diagnostics/report.hpp"
#include "placement/location.hpp"
