/// @file
/// @brief Portable warp-level code: the warp size, lane masks, shuffles and votes with one meaning
/// on every backend (the CUDA *_sync forms on NVIDIA, the HIP forms on AMD, where a wavefront is
/// 64 lanes on CDNA and 32 on RDNA unless compiled with -mwavefrontsize64). What is known at
/// compile time: docs/porting.md, "The warp size on ROCm 7 and later".
#pragma once

#include "config.hpp"
#include "detail/backend/backend.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

/// @def UNIMEM_WARP_SIZE
/// @brief The target's warp size for `#if`, defined exactly where warp::static_size is it:
/// always on NVIDIA (32); on AMD only in a device pass of clang <= 21. Test `#ifdef` first.

#if defined(UNIMEM_DETAIL_HIP_AMD)
// Read once, here: clang 21 deprecates the macro (22 removed it); a plain number keeps #if quiet.
#if defined(__HIP_DEVICE_COMPILE__)  // clang's device pass: the only place the size is known
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-pragma"
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#if __AMDGCN_WAVEFRONT_SIZE == 64
#define UNIMEM_WARP_SIZE 64
#else
#define UNIMEM_WARP_SIZE 32
#endif
#endif
#pragma clang diagnostic pop
#endif
#else
#define UNIMEM_WARP_SIZE 32
#endif

UNIMEM_BEGIN_NAMESPACE
/// @brief Warp-level code: the warp size, lane masks, shuffles, votes and reduce() (reduce.hpp).
namespace warp {
#if defined(UNIMEM_DETAIL_HIP_AMD)
/// @brief A set of lanes, one bit per lane: 64 bits on AMD (a wave32 target uses the low half).
using lane_mask_t = std::uint64_t;
inline constexpr int max_size = 64;  ///< The largest warp size of this backend's targets.
#else
/// @brief A set of lanes, one bit per lane: 32 bits on NVIDIA (64 on AMD).
using lane_mask_t = std::uint32_t;
/// @brief The largest warp size of this backend's targets (32; 64 on AMD): sizes lane masks and
/// per-lane arrays.
inline constexpr int max_size = 32;
#endif
/// @brief The smallest warp size of any target, 32: sizes per-warp arrays of a block.
inline constexpr int min_size = 32;
/// @brief Every lane: all bits set (lanes a target lacks never take part, so right everywhere).
inline constexpr lane_mask_t full_mask = ~lane_mask_t{0};

/// @brief The lanes 0 .. n - 1 (every lane for n >= the mask's width; none for n <= 0).
UNIMEM_HOST_DEVICE constexpr lane_mask_t first_lanes(int n) noexcept {
  return n <= 0 ? lane_mask_t{0}
         : n >= static_cast<int>(sizeof(lane_mask_t) * 8)
             ? ~lane_mask_t{0}
             : static_cast<lane_mask_t>((lane_mask_t{1} << n) - 1);
}

namespace detail {
/// warp::static_size where an AMD device pass cannot know the size: using it does not compile.
struct unknown_static_size {
  template <class T, std::enable_if_t<std::is_arithmetic<T>::value, int> = 0>
  constexpr operator T() const noexcept {  // NOLINT
    static_assert(!std::is_arithmetic<T>::value,
                  "unimem::warp::static_size: this compiler does not state the wavefront size at "
                  "compile time (clang >= 22, ROCm 7.2: __AMDGCN_WAVEFRONT_SIZE is gone and "
                  "warpSize is not constexpr). Use unimem::warp::size() (a constant once the "
                  "target's code is generated), warp::max_size or warp::min_size to size arrays, "
                  "or test #ifdef UNIMEM_WARP_SIZE.");
    return T{};
  }
};
}  // namespace detail

#if defined(UNIMEM_WARP_SIZE)
/// @brief The target's warp size as a constant expression where the compiler states it (NVIDIA;
/// AMD device passes of clang <= 21; an AMD host pass serves several targets: max_size). Under
/// clang >= 22 using it does not compile (ask warp::size()): unimem never guesses.
inline constexpr int static_size = UNIMEM_WARP_SIZE;
#elif defined(__HIP_DEVICE_COMPILE__)
inline constexpr detail::unknown_static_size static_size{};
#else
inline constexpr int static_size = max_size;
#endif

#if defined(UNIMEM_DEVICE_COMPILER)

#if defined(UNIMEM_DETAIL_HIP_AMD)
/// @brief The warp size of the target being compiled, 32 or 64: no constant expression on AMD
/// (clang >= 22 does not state it), but folded to a constant in each target's generated code.
__device__ inline int size() noexcept {
#if defined(UNIMEM_WARP_SIZE)
  return UNIMEM_WARP_SIZE;
#elif defined(__HIP_DEVICE_COMPILE__)
  return __builtin_amdgcn_wavefrontsize();
#else
  return max_size;  // the host pass only checks device code; it never runs it
#endif
}
#else
/// @brief The warp size of the target being compiled: constexpr 32 on NVIDIA.
__host__ __device__ constexpr int size() noexcept { return 32; }
#endif

/// @brief This thread's lane in its warp (threads are numbered x fastest, then y, then z).
__device__ inline int lane_id() {
  const unsigned linear =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  return static_cast<int>(linear % static_cast<unsigned>(size()));
}

namespace detail {
template <class T>
constexpr bool native_shuffle =
    std::is_same<T, int>::value || std::is_same<T, unsigned>::value ||
    std::is_same<T, long long>::value || std::is_same<T, unsigned long long>::value ||
    std::is_same<T, float>::value || std::is_same<T, double>::value;

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

/// @brief `v` of lane `src_lane` of this thread's `width`-lane segment (a power of two up to
/// size()). All lanes in `mask` must call it, as every shuffle and vote.
template <class T>
__device__ inline T shfl(T v, int src_lane, int width = size(), lane_mask_t mask = full_mask) {
  return detail::shuffle<detail::kind::idx>(v, src_lane, width, mask);
}
/// @brief The value of lane (lane - delta); lanes below delta keep their own.
template <class T>
__device__ inline T shfl_up(T v, unsigned delta, int width = size(), lane_mask_t mask = full_mask) {
  return detail::shuffle<detail::kind::up>(v, static_cast<int>(delta), width, mask);
}
/// @brief The value of lane (lane + delta); lanes whose source is past the segment keep theirs.
template <class T>
__device__ inline T shfl_down(T v, unsigned delta, int width = size(), lane_mask_t mask = full_mask) {
  return detail::shuffle<detail::kind::down>(v, static_cast<int>(delta), width, mask);
}
/// @brief The value of lane (lane ^ lane_xor), the butterfly exchange.
template <class T>
__device__ inline T shfl_xor(T v, int lane_xor, int width = size(), lane_mask_t mask = full_mask) {
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
