// unimem (internal): the kernel behind uvm/driver.hpp's seam: the module's version in sysfs, the
// process's descriptors in /proc, the tools device and its ioctls, kcmp and fstat; and, for the
// self-check of a layout not read at the module's tag, a managed page of the GPU runtime.
// Absent where UNIMEM_NO_PRIVATE_DRIVER_INTERFACE is defined, and off Linux.
#pragma once

#include "driver.hpp"

#if defined(UNIMEM_DETAIL_UVM_DRIVER)
#include "../../../core/detail/backend/placement.hpp"

#include <sys/ioctl.h>
#include <sys/stat.h>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace uvm {
namespace real {
inline bool module_version(char* out, std::size_t size) noexcept {
  int fd = -1;
  for (int tries = 0; tries < 8 && fd < 0; ++tries) {
    fd = open("/sys/module/nvidia_uvm/version", O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno != EINTR) break;
  }
  if (fd < 0 || size == 0) {
    if (fd >= 0) ::close(fd);
    return false;
  }
  ssize_t n = -1;
  for (int tries = 0; tries < 8 && n < 0; ++tries) {
    n = read(fd, out, size - 1);
    if (n < 0 && errno != EINTR) break;
  }
  ::close(fd);
  if (n <= 0) return false;
  out[n] = '\0';
  return true;
}
inline int uvm_fds(int* out, int max) noexcept {
  return fds_linked_to("/dev/nvidia-uvm", out, max);
}
inline int open_tools() noexcept {
  for (int tries = 0; tries < 8; ++tries) {
    const int fd = open("/dev/nvidia-uvm-tools", O_RDWR | O_CLOEXEC);
    if (fd >= 0) return fd;
    if (errno != EINTR) return -errno;
  }
  return -EINTR;
}
inline int call(int fd, unsigned long request, unsigned char* block, std::size_t) noexcept {
  return ::ioctl(fd, request, block) == 0 ? 0 : -errno;
}
inline void close_fd(int fd) noexcept { ::close(fd); }
inline bool identity(int fd, file_id* out) noexcept {
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  *out = file_id{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  return true;
}
/// Whether fd and dup_fd are open on the same file (fstat's st_dev and st_ino): what tells where
/// kcmp is missing. (A runtime that reopened /dev/nvidia-uvm at the same number is the same file
/// then: the limit of what fstat can tell.)
inline bool same_identity(int fd, int dup_fd) noexcept {
  file_id a{}, b{};
  return identity(fd, &a) && identity(dup_fd, &b) && a.dev == b.dev && a.ino == b.ino;
}
inline bool same_file(int fd, int dup_fd) noexcept {
#if defined(SYS_kcmp)
  const long pid = static_cast<long>(getpid());
  const long r = syscall(SYS_kcmp, pid, pid, 0 /* KCMP_FILE */, fd, dup_fd);
  if (r == 0 || r == 1 || r == 2) return r == 0;
  if (r < 0 && errno == EBADF) return false;  // fd is closed
#endif
  return same_identity(fd, dup_fd);  // no kcmp (seccomp, a kernel without it)
}
inline int dup_fd(int fd) noexcept { return fcntl(fd, F_DUPFD_CLOEXEC, 0); }
inline std::size_t page_size() noexcept {
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<std::size_t>(p) : 4096;
}
inline void* map_managed(std::size_t bytes) noexcept { return backend::probe_managed(bytes); }
inline void unmap_managed(void* p) noexcept { backend::probe_free(p); }
inline void touch(unsigned char* p) noexcept { *static_cast<volatile unsigned char*>(p) = 1; }
}  // namespace real

/// The kernel.
inline const driver& real_driver() noexcept {
  static constexpr driver d{real::module_version, real::uvm_fds,     real::open_tools,
                            real::call,           real::close_fd,    real::same_file,
                            real::identity,       real::dup_fd,      real::page_size,
                            real::map_managed,    real::unmap_managed, real::touch};
  return d;
}
}  // namespace uvm
}  // namespace detail
UNIMEM_END_NAMESPACE
#endif  // UNIMEM_DETAIL_UVM_DRIVER
