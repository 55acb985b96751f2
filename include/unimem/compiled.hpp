/// @file
/// @brief For separate compilation (UNIMEM_SEPARATE_COMPILATION in every translation unit):
/// include in exactly one, before any other unimem header, to define unimem's out-of-line
/// functions (cold error paths, the property cache, report()) once; the CMake target
/// unimem::compiled does this; the generated code is the same (docs/building.md, "Separate
/// compilation").
#pragma once

#if !defined(UNIMEM_SEPARATE_COMPILATION)
#error "<unimem/compiled.hpp> is for separate compilation: define UNIMEM_SEPARATE_COMPILATION \
in every translation unit of the program (or link the CMake target unimem::compiled, which \
does both). Header-only programs do not include it."
#endif
#if defined(UNIMEM_DETAIL_CONFIG_INCLUDED)
#error "<unimem/compiled.hpp> must come before every other unimem header of its translation \
unit (those already included were read without their out-of-line definitions)."
#endif

#define UNIMEM_DETAIL_COMPILING_OUTLINE 1
// Every header that declares out-of-line functions.
#include "unimem.hpp"
#include "core/allocator.hpp"
#include "core/memory_resource.hpp"
