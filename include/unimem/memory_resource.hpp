// unimem: std::pmr::memory_resource implementations for managed, device and pinned memory.
#pragma once

#include "detail/backend.hpp"
#include "device.hpp"
#include "error.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory_resource>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

/// The runtimes return memory aligned to at least this; larger alignments are made by
/// over-allocating and remembering the original pointer.
constexpr std::size_t runtime_alignment = 256;

/// The allocation logic of the three resources. Derived provides `name`, raw_allocate() and
/// raw_deallocate(). Strong exception safety: an allocation that throws leaves nothing behind.
template <class Derived>
class runtime_resource : public std::pmr::memory_resource {
 protected:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) throw std::bad_alloc();
    if (bytes == 0) bytes = 1;  // a unique, non-null pointer for every allocation
    const bool over = alignment > runtime_alignment;
    if (over && bytes > std::numeric_limits<std::size_t>::max() - alignment) throw std::bad_alloc();
    void* raw = nullptr;
    const backend::result r =
        static_cast<Derived*>(this)->raw_allocate(&raw, over ? bytes + alignment : bytes);
    if (r.code != backend::success) {
      throw_error(r, __FILE__, __LINE__,
                  std::string(Derived::name) + ": " + std::to_string(bytes) + " bytes aligned to " +
                      std::to_string(alignment));
    }
    if (!over) return raw;
    const auto address = reinterpret_cast<std::uintptr_t>(raw);
    void* aligned = reinterpret_cast<void*>((address + alignment - 1) & ~(alignment - 1));
    try {  // recording the original pointer may throw (bad_alloc): then nothing stays allocated
      std::lock_guard<std::mutex> lock(mutex_);
      originals_.emplace(aligned, raw);
    } catch (...) {
      static_cast<Derived*>(this)->raw_deallocate(raw);
      throw;
    }
    return aligned;
  }
  void do_deallocate(void* p, std::size_t, std::size_t alignment) override {
    if (p == nullptr) return;
    if (alignment > runtime_alignment) {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto it = originals_.find(p);
      if (it == originals_.end()) return;  // not ours: never free what we did not allocate
      p = it->second;
      originals_.erase(it);
    }
    static_cast<Derived*>(this)->raw_deallocate(p);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, void*> originals_;
};

}  // namespace detail

/// @brief Managed memory as a std::pmr::memory_resource (e.g. for std::pmr::vector).
/// Any power-of-two alignment; allocation failure throws unimem::error.
class managed_memory_resource final : public detail::runtime_resource<managed_memory_resource> {
 public:
  static constexpr const char* name = "managed_memory_resource";
  detail::backend::result raw_allocate(void** p, std::size_t bytes) noexcept {
    return detail::backend::malloc_managed(p, bytes);
  }
  void raw_deallocate(void* p) noexcept { (void)detail::backend::free(p); }

 private:
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return dynamic_cast<const managed_memory_resource*>(&other) != nullptr;
  }
};

/// @brief Page-locked host memory as a std::pmr::memory_resource.
class pinned_memory_resource final : public detail::runtime_resource<pinned_memory_resource> {
 public:
  static constexpr const char* name = "pinned_memory_resource";
  detail::backend::result raw_allocate(void** p, std::size_t bytes) noexcept {
    return detail::backend::malloc_pinned(p, bytes);
  }
  void raw_deallocate(void* p) noexcept { (void)detail::backend::free_pinned(p); }

 private:
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return dynamic_cast<const pinned_memory_resource*>(&other) != nullptr;
  }
};

/// @brief Memory of one GPU as a std::pmr::memory_resource. The memory is not accessible from
/// the CPU: use it for containers whose elements only kernels and copies touch.
class device_memory_resource final : public detail::runtime_resource<device_memory_resource> {
 public:
  static constexpr const char* name = "device_memory_resource";
  /// @brief Allocates on the current device.
  device_memory_resource() : device_(device::current().id()) {}
  /// @brief Allocates on device d. @throws unimem::error for an invalid device
  explicit device_memory_resource(const device& d) : device_(d.id()) {}
  [[nodiscard]] int device_id() const noexcept { return device_; }

  detail::backend::result raw_allocate(void** p, std::size_t bytes) {
    device_guard g(device_);
    return detail::backend::malloc_device(p, bytes);
  }
  void raw_deallocate(void* p) noexcept { (void)detail::backend::free(p); }

 private:
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    const auto* o = dynamic_cast<const device_memory_resource*>(&other);
    return o != nullptr && o->device_ == device_;
  }
  int device_;
};

UNIMEM_END_NAMESPACE
