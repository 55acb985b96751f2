// unimem: the definitions of unimem's out-of-line functions, for separate compilation.
//
// By default unimem is header-only: every translation unit compiles the functions it uses,
// including the cold paths that build and throw errors, the device-property cache and report().
// A program that would rather compile those once defines UNIMEM_SEPARATE_COMPILATION in every
// translation unit and includes this header in exactly one of them (the CMake target
// unimem::compiled is that translation unit; link it instead of unimem::unimem). Templates and
// the small functions of the fast paths stay inline either way, so the generated code is the
// same; only where it is compiled changes. scripts/compile_time.sh measures both ways.
/// @file
/// @brief For separate compilation (UNIMEM_SEPARATE_COMPILATION): include in exactly one
/// translation unit, before any other unimem header, to define unimem's out-of-line functions
/// (the CMake target unimem::compiled does this).
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
// Every header that declares out-of-line functions (the umbrella header and the two it leaves
// out).
#include "unimem.hpp"
#include "allocator.hpp"
#include "memory_resource.hpp"
