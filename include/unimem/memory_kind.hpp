/// @file
/// @brief The 0.2 path of <unimem/core/memory_kind.hpp>: it forwards there (and to what this path gave in 0.2),
/// until 0.4 removes it (docs/architecture.md, "Layers"; CHANGELOG.md).
#pragma once

#include "core/memory_kind.hpp"
#include "core/view.hpp"
