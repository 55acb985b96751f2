// unimem (internal, runtime-free): the NVIDIA UVM driver's tools interface behind one seam. What
// unimem asks of the kernel (the module's version, the process's /dev/nvidia-uvm descriptors, a
// tools descriptor, an ioctl, a file's identity, the page size, and for the self-check a managed
// page to touch) goes through a `driver`, a table of functions: real_driver() (uvm/kernel.hpp) is
// the kernel, tests hand a fake that answers as each module version would (UvmDriver.* in
// tests/test_uvm_driver.cpp). Only slow paths use it (attaching a tracker, checking one).
// UNIMEM_NO_PRIVATE_DRIVER_INTERFACE builds unimem without the kernel side: no ioctl, no tools
// device.
#pragma once

#include "../../../core/config.hpp"
#include "layout.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__linux__)
#if !defined(UNIMEM_NO_PRIVATE_DRIVER_INTERFACE)
#define UNIMEM_DETAIL_UVM_DRIVER 1
#endif
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace uvm {
/// What identifies an open file's file (fstat's st_dev, st_ino).
struct file_id {
  std::uint64_t dev, ino;
};

/// The kernel side of the tools interface. Every function is noexcept and reports failure by
/// its value; a fake implements the same contract.
struct driver {
  /// The loaded module's version text (/sys/module/nvidia_uvm/version), NUL-terminated in
  /// out[size]; false if there is none.
  bool (*module_version)(char* out, std::size_t size) noexcept;
  /// Up to max of the process's /dev/nvidia-uvm descriptors, lowest first; how many.
  int (*uvm_fds)(int* out, int max) noexcept;
  /// A new /dev/nvidia-uvm-tools descriptor (close-on-exec), or -errno.
  int (*open_tools)() noexcept;
  /// ioctl(fd, request, block), where `bytes` bytes at block can be read and written and the page
  /// after them cannot: 0 where the call went through (the driver's status is in the block),
  /// else -errno (-EFAULT: the driver's block is larger than `bytes`; it read and wrote nothing).
  int (*ioctl)(int fd, unsigned long request, unsigned char* block, std::size_t bytes) noexcept;
  void (*close)(int fd) noexcept;
  /// Whether descriptor `fd` still refers to the open file that `dup_fd` duplicated (the
  /// runtime's UVM file a tracker was attached to): false once the runtime closed it or opened
  /// another (cudaDeviceReset). kcmp where the kernel has it, else the files' identity.
  bool (*same_file)(int fd, int dup_fd) noexcept;
  /// The identity of the file open at fd (fstat); false if fd is not open.
  bool (*identity)(int fd, file_id* out) noexcept;
  /// A duplicate of fd (close-on-exec), or -1.
  int (*dup)(int fd) noexcept;
  /// The system's page size (the driver maps whole pages and wants them aligned).
  std::size_t (*page_size)() noexcept;
  /// `bytes` of managed memory of this process that no one has touched, or null; and its free.
  void* (*map_managed)(std::size_t bytes) noexcept;
  void (*unmap_managed)(void* p) noexcept;
  /// One CPU write at p (managed memory of map_managed): a CPU fault the driver reports.
  void (*touch)(unsigned char* p) noexcept;
};

#if defined(__linux__)
/// Calls `found(fd)` for each descriptor listed in `dir` (the process's: /proc/self/fd) whose
/// link reads `target`, in the directory's order (not numeric); false if `dir` cannot be read.
/// Async-signal-safe (open, getdents64, readlinkat: no allocation), so that a fork handler may
/// call it.
template <class Found>
bool each_fd_linked_to(const char* target, const char* dir, Found&& found) noexcept {
  const int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return false;
  alignas(8) unsigned char entries[2048];  // struct linux_dirent64: ino, off, reclen, type, name
  for (long got = 0; (got = syscall(SYS_getdents64, d, entries, sizeof entries)) > 0;) {
    for (long at = 0; at + 19 < got;) {
      unsigned short length = 0;
      std::memcpy(&length, entries + at + 16, sizeof length);
      const char* name = reinterpret_cast<const char*>(entries + at + 19);
      at += length == 0 ? got : length;
      int fd = 0, digits = 0;
      for (const char* c = name; *c >= '0' && *c <= '9' && digits < 9; ++c, ++digits) {
        fd = fd * 10 + (*c - '0');
      }
      if (digits == 0 || name[digits] != '\0') continue;  // ".", ".."
      char link[128];
      const ssize_t len = readlinkat(d, name, link, sizeof link - 1);
      if (len <= 0) continue;
      link[len] = '\0';
      if (std::strcmp(link, target) == 0) found(fd);
    }
  }
  close(d);
  return true;
}

/// Up to `max` of the descriptors listed in `dir` whose link reads `target`, the lowest first
/// (kept sorted: a directory's order is not numeric); returns how many. Async-signal-safe.
inline int fds_linked_to(const char* target, int* out, int max,
                         const char* dir = "/proc/self/fd") noexcept {
  if (max <= 0) return 0;
  int n = 0;
  (void)each_fd_linked_to(target, dir, [&](int fd) noexcept {
    if (n == max) {
      if (fd > out[max - 1]) return;
      n = max - 1;  // full: the largest kept gives way
    }
    int i = n++;
    for (; i > 0 && out[i - 1] > fd; --i) out[i] = out[i - 1];
    out[i] = fd;
  });
  return n;
}

/// The lowest descriptor listed in `dir` whose link reads `target`, or -1. Async-signal-safe.
inline int lowest_fd_linked_to(const char* target, const char* dir = "/proc/self/fd") noexcept {
  int lowest = -1;
  (void)each_fd_linked_to(target, dir, [&](int fd) noexcept {
    if (lowest < 0 || fd < lowest) lowest = fd;
  });
  return lowest;
}

/// Whether an error opening the tools device may pass (the descriptor table or memory full, a
/// signal): tried again later. Anything else (no device node, no permission) is final.
inline bool passing_error(int e) noexcept {
  return e == EMFILE || e == ENFILE || e == ENOMEM || e == EINTR || e == EAGAIN || e == EBUSY;
}

/// Bytes that end where an inaccessible page begins, for the ioctls' blocks: a driver whose
/// block is larger than the layout's faults in its copy-in (EFAULT) instead of reading and
/// writing past the block.
class guarded_block {
 public:
  guarded_block() noexcept {
    const long p = sysconf(_SC_PAGESIZE);
    page_ = p > 0 ? static_cast<std::size_t>(p) : 4096;
    void* m = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;
    base_ = static_cast<unsigned char*>(m);
    if (mprotect(base_ + page_, page_, PROT_NONE) != 0) {
      munmap(base_, 2 * page_);
      base_ = nullptr;
    }
  }
  ~guarded_block() {
    if (base_ != nullptr) munmap(base_, 2 * page_);
  }
  guarded_block(const guarded_block&) = delete;
  guarded_block& operator=(const guarded_block&) = delete;
  explicit operator bool() const noexcept { return base_ != nullptr; }
  /// The last n bytes before the guard, zeroed.
  unsigned char* last(std::size_t n) noexcept {
    std::memset(base_ + page_ - n, 0, n);
    return base_ + page_ - n;
  }

 private:
  unsigned char* base_ = nullptr;
  std::size_t page_ = 0;
};

/// Where a tracker's memory is: a queue of `entries` entries (a power of two; 0: a counters
/// tracker) for each queue version, each ending where a guard page begins (a driver whose entry
/// is larger than the layout's cannot pin it), and its control page (or the counters).
struct queue_spec {
  void* queue[2];  // version 1, version 2
  std::uint32_t entries;
  void* control;
};

/// Why open_tracker() gave no tracker: no tools device (final), one that could not be opened for
/// now (passing_error(): try again later), a driver that refused the layout's block.
constexpr int no_tools_device = -1, tools_busy = -2, refused_by_driver = -3;

/// A tracker on a fresh tools descriptor over the UVM file `uvm_fd`, in layout l: version-2
/// entries where the layout has them and the driver grants them, else version 1; no event or
/// counter enabled yet (enable()). The descriptor and the queue version granted, or why none
/// (*error: the errno of tools_busy).
inline int open_tracker(const driver& d, const layout& l, std::uint32_t uvm_fd,
                        const queue_spec& q, int* queue_version, int* error = nullptr) noexcept {
  if (!fits(l)) return refused_by_driver;
  guarded_block block;
  if (!block) return tools_busy;
  for (int v = (q.entries != 0 && l.v2_request != 0) ? 2 : 1; v >= 1; --v) {
    const int tools = d.open_tools();
    if (tools < 0) {
      if (error != nullptr) *error = -tools;
      return passing_error(-tools) ? tools_busy : no_tools_device;
    }
    unsigned char* b = block.last(l.params_bytes);
    init_params(l, b, reinterpret_cast<std::uintptr_t>(q.queue[v - 1]), q.entries,
                reinterpret_cast<std::uintptr_t>(q.control), uvm_fd, q.entries == 0 ? 1 : 0, v);
    if (d.ioctl(tools, init_request_for(l, v), b, l.params_bytes) == 0 && accepted(l, b, v)) {
      *queue_version = v;
      return tools;
    }
    d.close(tools);
  }
  return refused_by_driver;
}

/// Enables the events `flags` of a queue tracker, or the counters `flags` of a counters one.
inline bool enable(const driver& d, int tools, bool queue, std::uint64_t flags) noexcept {
  guarded_block block;
  if (!block) return false;
  unsigned char* b = block.last(flags_bytes);
  flags_params(b, flags);
  return d.ioctl(tools, queue ? enable_events_request : enable_counters_request, b,
                 flags_bytes) == 0 &&
         flags_accepted(b);
}
#endif  // __linux__

/// The loaded module's version and layout (unreadable without the module).
inline match module_layout(const driver& d, std::uint64_t* version_out = nullptr) noexcept {
  char text[64];
  const bool there = d.module_version(text, sizeof text);
  const std::uint64_t v = there ? parse_version(text) : 0;
  if (version_out != nullptr) *version_out = v;
  return there ? find_layout(v) : match{nullptr, match::unreadable};
}
}  // namespace uvm
}  // namespace detail
UNIMEM_END_NAMESPACE
