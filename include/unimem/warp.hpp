// unimem: portable warp-level code. The warp size as a compile-time constant in device code,
// a lane-mask type wide enough for the target, and shuffles and votes with one meaning on
// every backend: the CUDA *_sync forms on NVIDIA (CUDA, or HIP on NVIDIA), the HIP forms on
// AMD, where a wavefront is 64 lanes on CDNA (gfx9xx) and 32 on RDNA in wave32 (gfx10xx/11xx).
#pragma once

#include "detail/backend.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

UNIMEM_BEGIN_NAMESPACE
namespace warp {

// The warp size of the target being compiled. In the device pass of an AMD build this is the
// wavefront size of the gfx target (32 or 64; clang's __AMDGCN_WAVEFRONT_SIZE). The host pass
// of an AMD build serves several targets at once, so there it is the largest (64): host code
// asks the device instead (unimem::device::warp_size()).
#if defined(UNIMEM_DETAIL_HIP_AMD)
#if defined(__HIP_DEVICE_COMPILE__) && defined(__AMDGCN_WAVEFRONT_SIZE)
#define UNIMEM_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define UNIMEM_WARP_SIZE 64
#endif
/// @brief A set of lanes, one bit per lane: 64 bits on AMD (wave32 uses the low half).
using lane_mask_t = std::uint64_t;
#else
#define UNIMEM_WARP_SIZE 32
/// @brief A set of lanes, one bit per lane (32 on NVIDIA).
using lane_mask_t = std::uint32_t;
#endif

/// @brief Lanes per warp of the target being compiled (device code; see UNIMEM_WARP_SIZE).
inline constexpr int size = UNIMEM_WARP_SIZE;
/// @brief Every lane of a warp of this target.
inline constexpr lane_mask_t full_mask =
    size == 64 ? ~lane_mask_t{0} : static_cast<lane_mask_t>((std::uint64_t{1} << size) - 1);

#if defined(UNIMEM_DEVICE_COMPILER)

/// @brief This thread's lane in its warp (threads are numbered x fastest, then y, then z).
__device__ inline int lane_id() {
  const unsigned linear =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  return static_cast<int>(linear % static_cast<unsigned>(size));
}

namespace detail {

template <class T>
constexpr bool native_shuffle =
    std::is_same<T, int>::value || std::is_same<T, unsigned>::value ||
    std::is_same<T, long long>::value || std::is_same<T, unsigned long long>::value ||
    std::is_same<T, float>::value || std::is_same<T, double>::value;

// One shuffle primitive per kind, on one 32-bit word or a native type.
enum class kind { idx, up, down, bfly };

template <kind K, class T>
__device__ inline T shuffle_native(T v, int arg, int width, lane_mask_t mask) {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  (void)mask;  // the HIP forms on AMD: all lanes named by the mask must take part, as in CUDA
  if constexpr (K == kind::idx) return __shfl(v, arg, width);
  if constexpr (K == kind::up) return __shfl_up(v, static_cast<unsigned>(arg), width);
  if constexpr (K == kind::down) return __shfl_down(v, static_cast<unsigned>(arg), width);
  if constexpr (K == kind::bfly) return __shfl_xor(v, arg, width);
#else
  if constexpr (K == kind::idx) return __shfl_sync(mask, v, arg, width);
  if constexpr (K == kind::up) return __shfl_up_sync(mask, v, static_cast<unsigned>(arg), width);
  if constexpr (K == kind::down) return __shfl_down_sync(mask, v, static_cast<unsigned>(arg), width);
  if constexpr (K == kind::bfly) return __shfl_xor_sync(mask, v, arg, width);
#endif
}

// Any trivially copyable T: natively where the hardware has it, else 32-bit word by word.
template <kind K, class T>
__device__ inline T shuffle(T v, int arg, int width, lane_mask_t mask) {
  static_assert(std::is_trivially_copyable<T>::value, "unimem::warp: shuffled types must be trivially copyable");
  if constexpr (native_shuffle<T>) {
    return shuffle_native<K>(v, arg, width, mask);
  } else {
    constexpr int words = static_cast<int>((sizeof(T) + 3) / 4);
    int w[words] = {};
    memcpy(w, &v, sizeof(T));
    for (int i = 0; i < words; ++i) w[i] = shuffle_native<K>(w[i], arg, width, mask);
    T out;
    memcpy(&out, w, sizeof(T));
    return out;
  }
}

}  // namespace detail

/// @brief The value of `v` held by lane `src_lane` (of this thread's `width`-lane segment).
/// All lanes in `mask` must call it; `width` is a power of two up to size.
template <class T>
__device__ inline T shfl(T v, int src_lane, int width = size, lane_mask_t mask = full_mask) {
  return detail::shuffle<detail::kind::idx>(v, src_lane, width, mask);
}
/// @brief The value of lane (lane - delta); lanes below delta keep their own.
template <class T>
__device__ inline T shfl_up(T v, unsigned delta, int width = size, lane_mask_t mask = full_mask) {
  return detail::shuffle<detail::kind::up>(v, static_cast<int>(delta), width, mask);
}
/// @brief The value of lane (lane + delta); lanes whose source is past the segment keep their own.
template <class T>
__device__ inline T shfl_down(T v, unsigned delta, int width = size, lane_mask_t mask = full_mask) {
  return detail::shuffle<detail::kind::down>(v, static_cast<int>(delta), width, mask);
}
/// @brief The value of lane (lane ^ lane_xor), the butterfly exchange.
template <class T>
__device__ inline T shfl_xor(T v, int lane_xor, int width = size, lane_mask_t mask = full_mask) {
  return detail::shuffle<detail::kind::bfly>(v, lane_xor, width, mask);
}

/// @brief One bit per lane of `mask`: set where `pred` is true. Bits outside the mask are 0.
__device__ inline lane_mask_t ballot(bool pred, lane_mask_t mask = full_mask) {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return static_cast<lane_mask_t>(__ballot(pred ? 1 : 0)) & mask;
#else
  return __ballot_sync(mask, pred ? 1 : 0);
#endif
}
/// @brief True when `pred` is true for some lane of `mask`.
__device__ inline bool any(bool pred, lane_mask_t mask = full_mask) {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return ballot(pred, mask) != 0;
#else
  return __any_sync(mask, pred ? 1 : 0) != 0;
#endif
}
/// @brief True when `pred` is true for every lane of `mask` (lanes outside it do not count).
__device__ inline bool all(bool pred, lane_mask_t mask = full_mask) {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  const lane_mask_t taking_part = static_cast<lane_mask_t>(__ballot(1)) & mask;
  return (ballot(pred, mask) & taking_part) == taking_part;
#else
  return __all_sync(mask, pred ? 1 : 0) != 0;
#endif
}

#endif  // UNIMEM_DEVICE_COMPILER

}  // namespace warp
UNIMEM_END_NAMESPACE
