// unimem: the NVIDIA UVM driver's counters of this process, through the tools interface in the
// layout of the loaded module's version (uvm/driver.hpp), for unimem's benchmark and tests; not
// included by the library.
#pragma once

#include "uvm/driver.hpp"  // and <cstdint>

#if defined(UNIMEM_DETAIL_UVM_DRIVER)
#include <sys/mman.h>
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// Managed bytes migrated host -> GPU and back (prefetches and faults) and GPU page faults since
/// construction (after the runtime started); available() false without the driver (AMD, a module
/// version whose layout unimem has not read, UNIMEM_NO_PRIVATE_DRIVER_INTERFACE).
class uvm_counters {
 public:
  uvm_counters() noexcept {
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
    const uvm::driver& d = uvm::real_driver();
    const uvm::match m = uvm::module_layout(d);
    if (m.found == nullptr) return;
    const std::size_t page = d.page_size();
    void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    counters_ = static_cast<volatile std::uint64_t*>(p);
    bytes_ = page;
    int fds[8];
    const int n = d.uvm_fds(fds, 8);
    constexpr std::uint64_t bytes = (1u << uvm::counter_bytes_to_gpu) |
                                    (1u << uvm::counter_bytes_to_host);
    for (int i = 0; i < n && fd_ < 0; ++i) {
      int version = 0;
      const std::uint32_t uvm_fd = static_cast<std::uint32_t>(fds[i]);
      fd_ = uvm::make_tracker(d, *m.found, uvm_fd, nullptr, 0, p,
                              bytes | (1u << uvm::counter_gpu_faults), &version);
      faults_ = fd_ >= 0;
      if (fd_ < 0) fd_ = uvm::make_tracker(d, *m.found, uvm_fd, nullptr, 0, p, bytes, &version);
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
  /// Whether the byte counters can be read (and gpu_faults() where counts_gpu_faults()).
  bool available() const noexcept { return fd_ >= 0; }
  bool counts_gpu_faults() const noexcept { return faults_; }
  /// Bytes migrated host -> GPU and GPU -> host.
  std::uint64_t to_gpu() const noexcept {
    return available() ? counters_[uvm::counter_bytes_to_gpu] : 0;
  }
  std::uint64_t to_host() const noexcept {
    return available() ? counters_[uvm::counter_bytes_to_host] : 0;
  }
  /// GPU page faults on managed memory.
  std::uint64_t gpu_faults() const noexcept {
    return faults_ ? counters_[uvm::counter_gpu_faults] : 0;
  }

 private:
  int fd_ = -1;
  bool faults_ = false;
  std::size_t bytes_ = 0;
  volatile std::uint64_t* counters_ = nullptr;
};
}  // namespace detail
UNIMEM_END_NAMESPACE
