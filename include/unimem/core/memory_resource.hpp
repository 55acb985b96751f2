/// @file
/// @brief std::pmr::memory_resource implementations for managed, device and pinned memory.
#pragma once

#include "config.hpp"
#include "detail/owned_array.hpp"
#include "device.hpp"
#include "error.hpp"
#include "memory_kind.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory_resource>
#include <mutex>
#include <new>
#include <unordered_map>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

/// The runtimes' alignment; larger ones over-allocate and remember the original pointer.
constexpr std::size_t runtime_alignment = 256;

/// The three resources' allocation over memory kind Kind; a throwing allocation leaves nothing.
template <class Kind>
class runtime_resource : public std::pmr::memory_resource {
 protected:
  virtual const char* resource_name() const noexcept = 0;  ///< The name used in messages.
  /// Allocates through Kind (the device resource makes its device current first).
  virtual void* raw_allocate(std::size_t bytes) {
    return Kind::allocate(bytes, resource_name(), call_site::current());
  }

  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) throw std::bad_alloc();
    if (bytes == 0) bytes = 1;  // a unique, non-null pointer for every allocation
    const bool over = alignment > runtime_alignment;
    (void)checked_bytes(bytes, 1, resource_name());
    if (over) (void)checked_bytes(bytes + alignment, 1, resource_name());  // bytes < 2^63: no wrap
    void* raw = raw_allocate(over ? bytes + alignment : bytes);
    if (!over) return raw;
    const auto address = reinterpret_cast<std::uintptr_t>(raw);
    void* aligned = reinterpret_cast<void*>((address + alignment - 1) & ~(alignment - 1));
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      originals_.emplace(aligned, raw);
    } catch (...) {
      Kind::deallocate(raw, bytes + alignment);
      throw;
    }
    return aligned;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    if (p == nullptr) return;
    if (bytes == 0) bytes = 1;  // as allocated
    if (alignment > runtime_alignment) {
      bytes += alignment;
      std::lock_guard<std::mutex> lock(mutex_);
      const auto it = originals_.find(p);
      if (it == originals_.end()) return;  // not ours: never free what we did not allocate
      p = it->second;
      originals_.erase(it);
    }
    Kind::deallocate(p, bytes);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, void*> originals_;
};

}  // namespace detail

/// @brief Managed memory as a std::pmr::memory_resource (any power-of-two alignment; allocation
/// failure throws unimem::error).
class managed_memory_resource final : public detail::runtime_resource<managed_memory> {
 private:
  const char* resource_name() const noexcept override { return "managed_memory_resource"; }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return dynamic_cast<const managed_memory_resource*>(&other) != nullptr;
  }
};

/// @brief Page-locked host memory as a std::pmr::memory_resource.
class pinned_memory_resource final : public detail::runtime_resource<pinned_memory> {
 private:
  const char* resource_name() const noexcept override { return "pinned_memory_resource"; }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return dynamic_cast<const pinned_memory_resource*>(&other) != nullptr;
  }
};

/// @brief Memory of one GPU as a std::pmr::memory_resource, for elements the CPU never touches.
class device_memory_resource final : public detail::runtime_resource<device_memory> {
 public:
  /// @brief Allocates on the current device.
  explicit device_memory_resource(call_site where = call_site::current())
      : device_(device::current(where).device_id()) {}
  /// @brief Allocates on device d.
  explicit device_memory_resource(const device& d) : device_(d.device_id()) {}
  [[nodiscard]] int device_id() const noexcept { return device_; }  ///< The device it allocates on.

 private:
  const char* resource_name() const noexcept override { return "device_memory_resource"; }
  void* raw_allocate(std::size_t bytes) override {
    device_guard g(device_);
    return device_memory::allocate(bytes, resource_name(), call_site::current());
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    const auto* o = dynamic_cast<const device_memory_resource*>(&other);
    return o != nullptr && o->device_ == device_;
  }
  int device_;
};

UNIMEM_END_NAMESPACE
