// unimem (internal, runtime-free): the NVIDIA UVM driver's tools interface behind one seam. What
// unimem asks of the kernel (the module's version, the process's /dev/nvidia-uvm descriptors, a
// tools descriptor, an ioctl, the page size) goes through a `driver`, a table of functions:
// real_driver() is the kernel, tests hand a fake that answers as each module version would
// (tests/test_uvm_driver.cpp). Only slow paths use it (attaching a tracker, checking one).
// UNIMEM_NO_PRIVATE_DRIVER_INTERFACE builds unimem without it: no ioctl, no tools device.
#pragma once

#include "../../../core/config.hpp"
#include "layout.hpp"

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#if !defined(UNIMEM_NO_PRIVATE_DRIVER_INTERFACE)
#define UNIMEM_DETAIL_UVM_DRIVER 1
#endif
#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace uvm {
/// The kernel side of the tools interface. Every function is noexcept and reports failure by
/// its value; a fake implements the same contract.
struct driver {
  /// The loaded module's version text (/sys/module/nvidia_uvm/version), NUL-terminated in
  /// out[size]; false if there is none.
  bool (*module_version)(char* out, std::size_t size) noexcept;
  /// Up to max of the process's /dev/nvidia-uvm descriptors, lowest first; how many.
  int (*uvm_fds)(int* out, int max) noexcept;
  /// A new /dev/nvidia-uvm-tools descriptor (close-on-exec), or -1.
  int (*open_tools)() noexcept;
  /// ioctl(fd, request, block): 0 where the call went through (the driver's status is in the
  /// block), else -1. The block is arg_bytes long, zeroed past what unimem set.
  int (*ioctl)(int fd, unsigned long request, arg_block* block) noexcept;
  void (*close)(int fd) noexcept;
  /// Whether descriptor `fd` still refers to the file that `dup_fd` duplicated (the runtime's
  /// UVM file a tracker was attached to): false once the runtime closed it or opened another
  /// (cudaDeviceReset).
  bool (*same_file)(int fd, int dup_fd) noexcept;
  /// A duplicate of fd (close-on-exec), or -1.
  int (*dup)(int fd) noexcept;
  /// The system's page size (the driver maps whole pages and wants them aligned).
  std::size_t (*page_size)() noexcept;
};

#if defined(__linux__)
/// Up to `max` of the process's descriptors whose /proc/self/fd link reads `target`, lowest
/// first; returns how many. (readdir's order is not numeric: the list is sorted.)
inline int fds_linked_to(const char* target, int* out, int max) noexcept {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  int n = 0;
  while (const dirent* e = readdir(d)) {
    char link[128];  // ".", ".." and the directory's own descriptor link to no target
    const ssize_t len = n < max ? readlinkat(dirfd(d), e->d_name, link, sizeof link - 1) : 0;
    if (len <= 0) continue;
    link[len] = '\0';
    if (std::strcmp(link, target) != 0) continue;
    const int fd = std::atoi(e->d_name);
    int i = n++;
    for (; i > 0 && out[i - 1] > fd; --i) out[i] = out[i - 1];
    out[i] = fd;
  }
  closedir(d);
  return n;
}
#endif

#if defined(UNIMEM_DETAIL_UVM_DRIVER)
namespace real {
inline bool module_version(char* out, std::size_t size) noexcept {
  const int fd = open("/sys/module/nvidia_uvm/version", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || size == 0) {
    if (fd >= 0) ::close(fd);
    return false;
  }
  const ssize_t n = read(fd, out, size - 1);
  ::close(fd);
  if (n <= 0) return false;
  out[n] = '\0';
  return true;
}
inline int uvm_fds(int* out, int max) noexcept {
  return fds_linked_to("/dev/nvidia-uvm", out, max);
}
inline int open_tools() noexcept { return open("/dev/nvidia-uvm-tools", O_RDWR | O_CLOEXEC); }
inline int call(int fd, unsigned long request, arg_block* block) noexcept {
  return ::ioctl(fd, request, block->bytes) == 0 ? 0 : -1;
}
inline void close_fd(int fd) noexcept { ::close(fd); }
inline bool same_file(int fd, int dup_fd) noexcept {
#if defined(SYS_kcmp)
  const long pid = static_cast<long>(getpid());
  const long r = syscall(SYS_kcmp, pid, pid, 0 /* KCMP_FILE */, fd, dup_fd);
  if (r == 0 || r == 1 || r == 2) return r == 0;
#endif
  // No kcmp (seccomp, an old kernel): the descriptor must still be a /dev/nvidia-uvm one.
  char path[32], link[32];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  const ssize_t len = readlink(path, link, sizeof link - 1);
  if (len <= 0) return false;
  link[len] = '\0';
  return std::strcmp(link, "/dev/nvidia-uvm") == 0;
}
inline int dup_fd(int fd) noexcept { return fcntl(fd, F_DUPFD_CLOEXEC, 0); }
inline std::size_t page_size() noexcept {
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<std::size_t>(p) : 4096;
}
}  // namespace real

/// The kernel.
inline const driver& real_driver() noexcept {
  static constexpr driver d{real::module_version, real::uvm_fds,  real::open_tools,
                            real::call,           real::close_fd, real::same_file,
                            real::dup_fd,         real::page_size};
  return d;
}
#endif

/// The loaded module's version and layout (unreadable without the module).
inline match module_layout(const driver& d, std::uint64_t* version_out = nullptr) noexcept {
  char text[64];
  const std::uint64_t v = d.module_version(text, sizeof text) ? parse_version(text) : 0;
  if (version_out != nullptr) *version_out = v;
  return find_layout(v);
}

/// Makes a tracker on a fresh tools descriptor over the UVM file `uvm_fd`, in layout l: a queue
/// of `entries` entries (a power of two) at `queue` with its control page at `control` (both
/// page-aligned), version 2 entries where the layout has them, else version 1, its events
/// `events` enabled; or, with entries == 0, counters at `control` with `events` the counters
/// enabled (version 1: no queue). The descriptor (refused_by_driver, no_tools_device: none) and
/// the queue version granted.
constexpr int refused_by_driver = -1, no_tools_device = -2;
inline int make_tracker(const driver& d, const layout& l, std::uint32_t uvm_fd, void* queue,
                        std::uint32_t entries, void* control, std::uint64_t events,
                        int* queue_version) noexcept {
  for (int v = (entries != 0 && l.v2_request != 0) ? 2 : 1; v >= 1; --v) {
    const int tools = d.open_tools();
    if (tools < 0) return no_tools_device;
    arg_block init = init_params(l, reinterpret_cast<std::uintptr_t>(queue), entries,
                                 reinterpret_cast<std::uintptr_t>(control), uvm_fd,
                                 entries == 0 ? 1 : 0, v);
    arg_block enable = flags_params(events);
    if (d.ioctl(tools, init_request_for(l, v), &init) == 0 && accepted(l, init, v) &&
        d.ioctl(tools, entries != 0 ? enable_events_request : enable_counters_request,
                &enable) == 0 &&
        flags_accepted(enable)) {
      *queue_version = v;
      return tools;
    }
    d.close(tools);
  }
  return refused_by_driver;
}
}  // namespace uvm
}  // namespace detail
UNIMEM_END_NAMESPACE
