// unimem: the NVIDIA UVM driver's counters of this process: bytes of managed memory migrated
// host -> GPU and GPU -> host (prefetches and faults alike) and GPU page faults, read through
// the driver's tools interface as host_access.hpp attaches to it. For unimem's benchmark and
// tests (what a launch really moved, whether a kernel faulted); not included by the library.
// Absent (available() false) where the driver or its tools device is missing (AMD, other
// systems, no /proc).
#pragma once

#include "host_access.hpp"

#include <cstdint>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

class uvm_counters {
 public:
  uvm_counters() noexcept {
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
    namespace ha = host_access;
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    counters_ = static_cast<volatile std::uint64_t*>(p);
    int fds[8];
    int found = 0;
    (void)ha::for_each_fd([&](int fd, const char* target) {
      if (found < 8 && std::strcmp(target, "/dev/nvidia-uvm") == 0) fds[found++] = fd;
    });
    for (int i = 0; i < found && fd_ < 0; ++i) {
      const int tools = open("/dev/nvidia-uvm-tools", O_RDWR | O_CLOEXEC);
      if (tools < 0) break;
      ha::uvm::init_params params{};
      params.control_buffer = reinterpret_cast<std::uintptr_t>(p);  // no queue: counters
      params.all_processors = 1;
      params.uvm_fd = static_cast<std::uint32_t>(fds[i]);
      if (ioctl(tools, ha::uvm::init_v1, &params) == 0 && params.status == 0) {
        // The GPU fault counter exists in newer drivers only.
        ha::uvm::flags_params all{(1u << htd) | (1u << dth) | (1u << gpu_fault_count), 0};
        ha::uvm::flags_params bytes{(1u << htd) | (1u << dth), 0};
        if (ioctl(tools, enable_counters, &all) == 0 && all.status == 0) {
          fd_ = tools;
          faults_ = true;
        } else if (ioctl(tools, enable_counters, &bytes) == 0 && bytes.status == 0) {
          fd_ = tools;
        }
      }
      if (fd_ != tools) close(tools);
    }
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
  /// Bytes migrated host -> GPU and GPU -> host since the counters were attached.
  std::uint64_t to_gpu() const noexcept { return available() ? counters_[htd] : 0; }
  std::uint64_t to_host() const noexcept { return available() ? counters_[dth] : 0; }
  /// GPU page faults on managed memory since the counters were attached.
  std::uint64_t gpu_faults() const noexcept { return faults_ ? counters_[gpu_fault_count] : 0; }

 private:
  static constexpr unsigned long enable_counters = 60;  // UVM_TOOLS_ENABLE_COUNTERS
  // UvmCounterNameBytesXferHtD, ...DtH, ...GpuPageFaultCount
  static constexpr int htd = 0, dth = 1, gpu_fault_count = 9;
  int fd_ = -1;
  bool faults_ = false;
  volatile std::uint64_t* counters_ = nullptr;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
