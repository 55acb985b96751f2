/// @file
/// @brief dims, launch_config and grid_for(). Runtime-free.
#pragma once

#include "argument_error.hpp"
#include "config.hpp"
#include "stream_ref.hpp"

#include <cstddef>
#include <cstdint>
#include <type_traits>

UNIMEM_BEGIN_NAMESPACE

/// @brief Extents of a grid or a block in up to three dimensions, like dim3.
struct dims {
  unsigned x = 1;  ///< extent in x
  unsigned y = 1;  ///< extent in y
  unsigned z = 1;  ///< extent in z

  /// @brief 1 x 1 x 1.
  constexpr dims() noexcept = default;
  /// @brief x_ x y_ x z_.
  constexpr dims(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) noexcept  // NOLINT: like dim3
      : x(x_), y(y_), z(z_) {}
  /// From the runtime's dim3 or any type with unsigned x, y, z members.
  template <class D, std::enable_if_t<std::is_convertible<decltype(D::x), unsigned>::value &&
                                          std::is_convertible<decltype(D::y), unsigned>::value &&
                                          std::is_convertible<decltype(D::z), unsigned>::value &&
                                          !std::is_same<D, dims>::value,
                                      int> = 0>
  constexpr dims(const D& d) noexcept : x(d.x), y(d.y), z(d.z) {}  // NOLINT

  /// @brief x * y * z, saturated at 2^64 - 1 (no grid a runtime accepts gets there).
  [[nodiscard]] constexpr std::uint64_t volume() const noexcept {
    return saturating_product(saturating_product(x, y), z);
  }

  /// @brief a * b, or 2^64 - 1 where the product does not fit in 64 bits.
  [[nodiscard]] static constexpr std::uint64_t saturating_product(std::uint64_t a,
                                                                  std::uint64_t b) noexcept {
    return a != 0 && b > ~std::uint64_t{0} / a ? ~std::uint64_t{0} : a * b;
  }
  /// @brief True when some extent is zero.
  [[nodiscard]] constexpr bool empty() const noexcept { return x == 0 || y == 0 || z == 0; }

  /// @brief Same extents.
  friend constexpr bool operator==(const dims& a, const dims& b) noexcept {
    return a.x == b.x && a.y == b.y && a.z == b.z;
  }
  /// @brief Different extents.
  friend constexpr bool operator!=(const dims& a, const dims& b) noexcept { return !(a == b); }
};

/// @brief How to launch a kernel: grid, block, dynamic shared memory, stream, device. An empty
/// grid (e.g. grid_for(0)) launches nothing and succeeds; a zero block extent is an error.
struct launch_config {
  dims grid{1};               ///< blocks in the grid
  dims block{1};              ///< threads per block
  std::size_t shared_bytes = 0;  ///< dynamic shared memory per block, in bytes
  stream_ref stream{};        ///< the stream the kernel is queued on
  /// @brief The device to launch on; no_device: the stream's where known, else the current one.
  /// launch() throws unimem::error for an id that names no device or another stream's device.
  int device_id = no_device;

  /// @brief True when a device is named (on_device() was called).
  [[nodiscard]] constexpr bool names_device() const noexcept { return device_id != no_device; }

  /// @brief One block of one thread on the default stream.
  constexpr launch_config() noexcept = default;
  /// @brief grid_ blocks of block_ threads, shared_bytes_ of dynamic shared memory, on stream_.
  constexpr launch_config(dims grid_, dims block_, std::size_t shared_bytes_ = 0,
                          stream_ref stream_ = {}) noexcept
      : grid(grid_), block(block_), shared_bytes(shared_bytes_), stream(stream_) {}

  /// @brief The same configuration on another stream.
  [[nodiscard]] constexpr launch_config on(stream_ref s) const noexcept {
    launch_config c = *this;
    c.stream = s;
    return c;
  }
  /// @brief The same configuration on device `id` (made current for the launch only).
  [[nodiscard]] constexpr launch_config on_device(int id) const noexcept {
    launch_config c = *this;
    c.device_id = id;
    return c;
  }
  /// @brief The same configuration with `bytes` of dynamic shared memory per block.
  [[nodiscard]] constexpr launch_config with_shared_bytes(std::size_t bytes) const noexcept {
    launch_config c = *this;
    c.shared_bytes = bytes;
    return c;
  }
  /// @brief Total threads, saturated at 2^64 - 1 (never wrapped), which the largest grids exceed.
  [[nodiscard]] constexpr std::uint64_t threads() const noexcept {
    return dims::saturating_product(grid.volume(), block.volume());
  }
  /// @brief True when the grid has no blocks: launching it does nothing.
  [[nodiscard]] constexpr bool empty() const noexcept { return grid.empty(); }
};

/// The largest grid.x both CUDA and HIP accept: 2^31 - 1.
inline constexpr std::uint64_t max_grid_x = 0x7fffffffu;

namespace detail {
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_grid_for(
    std::uint64_t n, unsigned block, std::uint64_t blocks)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  if (block == 0) {
    throw_refused<invalid_argument>(refusal("unimem::grid_for: the block size must be positive"));
  }
  throw_refused<length_error>(refusal("unimem::grid_for: ").append(n)
      .append(" threads in blocks of ").append(block).append(" need ").append(blocks)
      .append(" blocks, more than the 2^31 - 1 a grid can have; use a grid-stride loop with a "
              "fixed grid"));
}
#else
    ;
#endif
}  // namespace detail

/// @brief A 1-D configuration of ceil(n / block) blocks of `block` threads (n = 0: empty grid).
/// @throws unimem::invalid_argument when block is 0; unimem::length_error when n needs more
/// than 2^31 - 1 blocks (use a grid-stride loop).
inline launch_config grid_for(std::size_t n, unsigned block = 256) {
  if (block == 0) detail::throw_grid_for(n, block, 0);
  const std::uint64_t blocks = std::uint64_t{n} / block + (std::uint64_t{n} % block != 0 ? 1 : 0);
  if (blocks > max_grid_x) detail::throw_grid_for(n, block, blocks);
  return launch_config(dims(static_cast<unsigned>(blocks)), dims(block));
}

UNIMEM_END_NAMESPACE
