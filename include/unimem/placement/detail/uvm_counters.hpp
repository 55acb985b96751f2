// unimem: the NVIDIA UVM driver's counters of this process, through the tools interface in the
// layout of the loaded module's version (uvm/driver.hpp): one read at that version, or one the
// host-access log's self-check proved on this driver; for unimem's benchmark and tests, not
// included by the library.
#pragma once

#include "host_access.hpp"  // and <cstdint>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// Managed bytes migrated host -> GPU and back (prefetches and faults) and GPU page faults since
/// construction (after the runtime started); available() false without the driver (AMD, a module
/// version neither read nor proven here, UNIMEM_NO_PRIVATE_DRIVER_INTERFACE).
class uvm_counters {
 public:
  uvm_counters() noexcept {
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
    const uvm::driver& d = uvm::real_driver();
    std::uint64_t v = 0;
    const uvm::match m = uvm::module_layout(d, &v);
    if (m.found == nullptr || (m.how != uvm::match::read && !host_access::proven(v))) return;
    const std::size_t page = d.page_size();
    void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    counters_ = static_cast<volatile std::uint64_t*>(p);
    bytes_ = page;
    int fds[8];
    const int n = d.uvm_fds(fds, 8);
    // The driver takes any counter flags: bytes both ways and GPU faults, in one call.
    constexpr std::uint64_t wanted = (1u << uvm::counter_bytes_to_gpu) |
                                     (1u << uvm::counter_bytes_to_host) |
                                     (1u << uvm::counter_gpu_faults);
    const uvm::queue_spec counters{{nullptr, nullptr}, 0, p};
    for (int i = 0; i < n && fd_ < 0; ++i) {
      int version = 0;
      fd_ = uvm::open_tracker(d, *m.found, static_cast<std::uint32_t>(fds[i]), counters, &version);
      if (fd_ >= 0 && !uvm::enable(d, fd_, false, wanted)) {
        d.close(fd_);
        fd_ = -1;
      }
    }
#endif
  }
  ~uvm_counters() {
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
    if (fd_ >= 0) uvm::real_driver().close(fd_);
    if (counters_ != nullptr) munmap(const_cast<std::uint64_t*>(counters_), bytes_);
#endif
  }
  uvm_counters(const uvm_counters&) = delete;
  uvm_counters& operator=(const uvm_counters&) = delete;
  /// Whether the counters can be read.
  bool available() const noexcept { return fd_ >= 0; }
  bool counts_gpu_faults() const noexcept { return available(); }
  /// Bytes migrated host -> GPU and GPU -> host.
  std::uint64_t to_gpu() const noexcept {
    return available() ? counters_[uvm::counter_bytes_to_gpu] : 0;
  }
  std::uint64_t to_host() const noexcept {
    return available() ? counters_[uvm::counter_bytes_to_host] : 0;
  }
  /// GPU page faults on managed memory.
  std::uint64_t gpu_faults() const noexcept {
    return available() ? counters_[uvm::counter_gpu_faults] : 0;
  }

 private:
  int fd_ = -1;
  std::size_t bytes_ = 0;
  volatile std::uint64_t* counters_ = nullptr;
};
}  // namespace detail
UNIMEM_END_NAMESPACE
