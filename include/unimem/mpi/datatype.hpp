/// @file
/// @brief unimem::mpi::datatype<T>() and the datatype of one message of any count.
#pragma once

#include <mpi.h>

#include "../core/config.hpp"
#include "error.hpp"

#include <cstddef>
#include <limits>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {
namespace detail {
template <class T>
struct builtin_datatype : std::false_type {};
#define UNIMEM_DETAIL_MPI_BUILTIN(T, M)                   \
  template <>                                             \
  struct builtin_datatype<T> : std::true_type {           \
    static MPI_Datatype get() noexcept { return M; }      \
  };
UNIMEM_DETAIL_MPI_BUILTIN(char, MPI_CHAR)
UNIMEM_DETAIL_MPI_BUILTIN(signed char, MPI_SIGNED_CHAR)
UNIMEM_DETAIL_MPI_BUILTIN(unsigned char, MPI_UNSIGNED_CHAR)
UNIMEM_DETAIL_MPI_BUILTIN(wchar_t, MPI_WCHAR)
UNIMEM_DETAIL_MPI_BUILTIN(short, MPI_SHORT)
UNIMEM_DETAIL_MPI_BUILTIN(unsigned short, MPI_UNSIGNED_SHORT)
UNIMEM_DETAIL_MPI_BUILTIN(int, MPI_INT)
UNIMEM_DETAIL_MPI_BUILTIN(unsigned, MPI_UNSIGNED)
UNIMEM_DETAIL_MPI_BUILTIN(long, MPI_LONG)
UNIMEM_DETAIL_MPI_BUILTIN(unsigned long, MPI_UNSIGNED_LONG)
UNIMEM_DETAIL_MPI_BUILTIN(long long, MPI_LONG_LONG)
UNIMEM_DETAIL_MPI_BUILTIN(unsigned long long, MPI_UNSIGNED_LONG_LONG)
UNIMEM_DETAIL_MPI_BUILTIN(float, MPI_FLOAT)
UNIMEM_DETAIL_MPI_BUILTIN(double, MPI_DOUBLE)
UNIMEM_DETAIL_MPI_BUILTIN(long double, MPI_LONG_DOUBLE)
UNIMEM_DETAIL_MPI_BUILTIN(bool, MPI_CXX_BOOL)
#undef UNIMEM_DETAIL_MPI_BUILTIN
/// A committed datatype of sizeof(T) contiguous bytes, made once per T.
template <class T>
MPI_Datatype bytes_datatype(call_site where) {
  struct made {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    explicit made(call_site w) {
      check(MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &type),
            "MPI_Type_contiguous", w);
      check(MPI_Type_commit(&type), "MPI_Type_commit", w);
    }
  };
  static const made m(where);  // a throw leaves it unmade: the next call tries again
  return m.type;
}
/// The datatype and count of one message of `count` elements of `base`: above INT_MAX, one
/// element of a derived type of the same type signature (2^30-element blocks, then the rest),
/// which a receiver's own derived type or an MPI-4 large-count call matches. Move-only.
class message_type {
 public:
  message_type() noexcept = default;
  message_type(MPI_Datatype base, std::size_t count, call_site where) : type_(base) {
    if (count <= static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      count_ = static_cast<int>(count);
      return;
    }
    constexpr std::size_t block = std::size_t{1} << 30;
    const std::size_t blocks = count / block, rest = count % block;
    MPI_Datatype one_block = MPI_DATATYPE_NULL, all_blocks = MPI_DATATYPE_NULL;
    MPI_Datatype tail = MPI_DATATYPE_NULL, made = MPI_DATATYPE_NULL;
    auto free_parts = [&]() noexcept {
      for (MPI_Datatype* t : {&one_block, &all_blocks, &tail}) {
        if (*t != MPI_DATATYPE_NULL) MPI_Type_free(t);
      }
    };
    try {
      check(MPI_Type_contiguous(static_cast<int>(block), base, &one_block), "MPI_Type_contiguous",
            where);
      check(MPI_Type_contiguous(static_cast<int>(blocks), one_block, &all_blocks),
            "MPI_Type_contiguous", where);
      if (rest == 0) {
        check(MPI_Type_dup(all_blocks, &made), "MPI_Type_dup", where);
      } else {
        check(MPI_Type_contiguous(static_cast<int>(rest), base, &tail), "MPI_Type_contiguous",
              where);
        MPI_Aint lower = 0, extent = 0;
        check(MPI_Type_get_extent(base, &lower, &extent), "MPI_Type_get_extent", where);
        int lengths[2] = {1, 1};
        MPI_Aint offsets[2] = {0, static_cast<MPI_Aint>(blocks * block) * extent};
        MPI_Datatype parts[2] = {all_blocks, tail};
        check(MPI_Type_create_struct(2, lengths, offsets, parts, &made), "MPI_Type_create_struct",
              where);
      }
      check(MPI_Type_commit(&made), "MPI_Type_commit", where);
    } catch (...) {
      if (made != MPI_DATATYPE_NULL) MPI_Type_free(&made);
      free_parts();
      throw;
    }
    free_parts();
    type_ = made;
    count_ = 1;
    owned_ = true;
  }
  message_type(const message_type&) = delete;
  message_type& operator=(const message_type&) = delete;
  message_type(message_type&& o) noexcept
      : type_(std::exchange(o.type_, MPI_DATATYPE_NULL)),
        count_(std::exchange(o.count_, 0)),
        owned_(std::exchange(o.owned_, false)) {}
  message_type& operator=(message_type&& o) noexcept {
    std::swap(type_, o.type_);
    std::swap(count_, o.count_);
    std::swap(owned_, o.owned_);
    return *this;
  }
  ~message_type() {
    if (!owned_) return;  // a built-in or cached type: nothing to free (no MPI call a message)
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized == 0) MPI_Type_free(&type_);
  }
  MPI_Datatype type() const noexcept { return type_; }
  int count() const noexcept { return count_; }
  /// The elements a receive got, each of `basic` MPI basic elements.
  /// @throws unimem::mpi::error (MPI_ERR_TYPE) for a message of no whole number of elements.
  std::size_t elements(const MPI_Status& s, std::size_t basic, call_site where) const {
    MPI_Count n = 0;
    check(MPI_Get_elements_x(&s, type_, &n), "MPI_Get_elements_x", where);
    const auto b = static_cast<MPI_Count>(basic);
    if (n == MPI_UNDEFINED || n < 0 || n % b != 0) {
      throw_mpi(MPI_ERR_TYPE, "unimem::mpi::recv", where,
                "the message is not a whole number of elements of the receive range");
    }
    return static_cast<std::size_t>(n / b);
  }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  int count_ = 0;
  bool owned_ = false;
};
}  // namespace detail
/// @brief Whether T has an MPI predefined datatype (arithmetic types, bool), as allreduce needs.
template <class T>
inline constexpr bool has_builtin_datatype_v = detail::builtin_datatype<std::remove_cv_t<T>>::value;
/// @brief The MPI datatype of T: the predefined one for arithmetic types and bool, else (any
/// trivially copyable T) a contiguous type of sizeof(T) bytes, made once with MPI initialised.
/// @throws unimem::mpi::error when MPI cannot make the type.
template <class T>
MPI_Datatype datatype(call_site where = call_site::current()) {
  using U = std::remove_cv_t<T>;
  static_assert(std::is_trivially_copyable<U>::value,
                "unimem::mpi sends trivially copyable types only: MPI copies them bit by bit");
  if constexpr (detail::builtin_datatype<U>::value) {
    return detail::builtin_datatype<U>::get();
  } else {
    return detail::bytes_datatype<U>(where);
  }
}
}  // namespace mpi
UNIMEM_END_NAMESPACE
