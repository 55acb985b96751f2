/// @file
/// @brief The library's version, as macros.
#pragma once

/// @brief The major version number.
#define UNIMEM_VERSION_MAJOR 0
/// @brief The minor version number.
#define UNIMEM_VERSION_MINOR 3
/// @brief The patch version number.
#define UNIMEM_VERSION_PATCH 0
/// @brief The version as one number for `#if`: major * 10000 + minor * 100 + patch.
#define UNIMEM_VERSION \
  (UNIMEM_VERSION_MAJOR * 10000 + UNIMEM_VERSION_MINOR * 100 + UNIMEM_VERSION_PATCH)
/// @brief The version as a string, "major.minor.patch".
#define UNIMEM_VERSION_STRING "0.3.0"
