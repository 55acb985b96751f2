// unimem: the NVIDIA UVM driver's counters of this process (host_access.hpp's tools interface),
// for unimem's benchmark and tests; not included by the library.
#pragma once

#include "host_access.hpp"  // and <cstdint>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// Managed bytes migrated host -> GPU and back (prefetches and faults) and GPU page faults since
/// construction (after the runtime started); available() false without the driver (AMD...).
class uvm_counters {
 public:
  uvm_counters() noexcept {
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
    namespace uvm = host_access::uvm;
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    counters_ = static_cast<volatile std::uint64_t*>(p);
    fd_ = uvm::open_tools([&](int tools, std::uint32_t uvm_fd) {
      uvm::init_params params{0, 0, reinterpret_cast<std::uintptr_t>(p), {}, 1, uvm_fd, 0};
      uvm::flags_params bytes{(1u << htd) | (1u << dth), 0};  // no queue, all processors
      uvm::flags_params all{bytes.flags | (1u << gpu_fault_count), 0};  // newer drivers only
      return uvm::call(tools, uvm::init_v1, params) &&
             ((faults_ = uvm::call(tools, uvm::enable_counters, all)) ||
              uvm::call(tools, uvm::enable_counters, bytes));
    });
#endif
  }
  ~uvm_counters() {
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
    if (fd_ >= 0) close(fd_);
    if (counters_ != nullptr) munmap(const_cast<std::uint64_t*>(counters_), 4096);
#endif
  }
  uvm_counters(const uvm_counters&) = delete;
  uvm_counters& operator=(const uvm_counters&) = delete;
  /// Whether the byte counters can be read (and gpu_faults() where counts_gpu_faults()).
  bool available() const noexcept { return fd_ >= 0; }
  bool counts_gpu_faults() const noexcept { return faults_; }
  /// Bytes migrated host -> GPU and GPU -> host.
  std::uint64_t to_gpu() const noexcept { return available() ? counters_[htd] : 0; }
  std::uint64_t to_host() const noexcept { return available() ? counters_[dth] : 0; }
  /// GPU page faults on managed memory.
  std::uint64_t gpu_faults() const noexcept { return faults_ ? counters_[gpu_fault_count] : 0; }

 private:
  // UvmCounterNameBytesXferHtD, ...DtH, ...GpuPageFaultCount
  static constexpr int htd = 0, dth = 1, gpu_fault_count = 9;
  int fd_ = -1;
  bool faults_ = false;
  volatile std::uint64_t* counters_ = nullptr;
};
}  // namespace detail
UNIMEM_END_NAMESPACE
