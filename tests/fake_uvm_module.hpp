// A fake NVIDIA UVM module for the tests of the host-access log (test_host_access.cpp,
// test_uvm_driver.cpp), behind the seam of placement/detail/uvm/driver.hpp. Each fake plays one
// module version as its source declares it, written here from the driver's own files (github
// NVIDIA/open-gpu-kernel-modules, kernel-open/nvidia-uvm at the tag named), not from unimem's
// table:
//   uvm_api.h    __UVM_ROUTE_CMD_STACK: the ioctl copies sizeof(its params) in (EFAULT if it
//                cannot: nothing is done) and out, rmStatus always written;
//   uvm_ioctl.h  the init block of each version: its size, where it reads the requested queue
//                version and writes rmStatus and grantedVersion; the ioctls it has;
//   uvm_tools.c  create_event_tracker(): the UVM file must be open, /dev/nvidia-uvm and a va
//                space's; a queue of a power of two >= 2 entries; map_user_pages() pins
//                DIV_ROUND_UP(size, PAGE_SIZE) writable pages from a PAGE_SIZE-aligned address,
//                for the queue (entries x sizeof(entry)) and for the control page
//                (sizeof(UvmToolsEventControlData(_V2))); enqueue_event(): indices masked, one
//                slot kept free, dropped[type] counted when full, the entry copied, then
//                put_ahead and put_behind set (no write barrier); record_cpu_fault(): the
//                faulting address (vmf->address, page-aligned), pid and thread id;
//   uvm_types.h  UvmEventEntry(_V1|_V2), UvmEventCpuFaultInfo, UvmEventMigrationInfo(_V2),
//                UvmToolsEventControlData(_V2).
// A test may change a fake to play a later release that changed its layout.
#pragma once

#include "test_support.hpp"

#include <unimem/placement/detail/host_access.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#if defined(__linux__)
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__linux__)
namespace fake_uvm {
namespace ha = unimem::detail::host_access;
namespace uvm = unimem::detail::uvm;
constexpr std::uint32_t nv_ok = 0, nv_err_illegal_action = 0x16,
                        nv_err_insufficient_permissions = 0x1b, nv_err_invalid_address = 0x1e,
                        nv_err_invalid_argument = 0x1f;

/// Whether [p, p + bytes) is mapped writable in this process (/proc/self/maps), as
/// pin_user_pages(FOLL_WRITE) needs.
inline bool writable(std::uintptr_t p, std::size_t bytes) {
  std::FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return false;
  std::uintptr_t at = p;
  const std::uintptr_t end = p + bytes;
  char line[512];
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> w;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[1] == 'w') {
      w.emplace_back(lo, hi);
    }
  }
  std::fclose(f);
  for (bool moved = true; at < end && moved;) {
    moved = false;
    for (const auto& m : w) {
      if (m.first <= at && at < m.second) {
        at = m.second;
        moved = true;
      }
    }
  }
  return at >= end;
}

struct module {
  // What the version's source says (module_as_at()).
  std::string version_text;        // /sys/module/nvidia_uvm/version ("": no module loaded)
  std::size_t params_bytes = 56;   // sizeof(UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS)
  std::size_t status_at = 48;      // rmStatus
  int version_in_at = -1;          // requestedVersion (550, 555) or version (560)
  int granted_at = -1;             // grantedVersion (550, 555)
  bool init_v2_ioctl = false;      // UVM_TOOLS_INIT_EVENT_TRACKER_V2 (76), from 565
  bool has_v2 = false;             // a version-2 queue at all (550.40.53 on)
  std::size_t entry_v1 = 64, entry_v2 = 72;       // sizeof(UvmEventEntry(_V1)), (_V2)
  std::size_t control_v1 = 528, control_v2 = 528;  // sizeof(UvmToolsEventControlData(_V2))
  std::size_t v2_dropped_at = 16;  // dropped[] in a version-2 queue's control page
  std::size_t cpu_fault_address_at = 8, cpu_fault_pid_at = 24;  // UvmEventCpuFaultInfo
  // The process and the system.
  bool refuse_v2 = false;          // (a module that refuses version-2 queues)
  bool refuse = false;             // (a module that refuses every tracker)
  int open_error = 0;              // errno of open("/dev/nvidia-uvm-tools") (0: it opens)
  int open_errors = 1 << 30;       // how many opens fail so, before they open
  std::vector<int> uvm_fds{4, 5};  // the process's /dev/nvidia-uvm descriptors: the CUDA
  std::vector<int> va_spaces{5};   // driver's mm one, and its va space one
  std::size_t page = 4096;         // PAGE_SIZE
  bool same_file = true;           // the runtime's UVM file is still the one watched
  bool dup_fails = false;
  uvm::file_id uvm_file{7, 4242};  // the identity of what the UVM descriptors name
  bool publish_before_writing = false;  // (an aarch64 reader: the index seen before the entry)

  struct tracker {
    int fd;
    unsigned char* queue;
    std::uint32_t entries;
    unsigned char* control;
    int version;
    std::uint64_t events = 0;
    bool open = true;
    bool made = false;
  };
  struct managed {
    unsigned char* base;
    std::size_t bytes;
    std::vector<bool> touched;
  };
  std::vector<tracker> trackers;
  std::vector<managed> memory;                     // map_managed()'s, until unmap_managed()
  std::vector<std::pair<unsigned char*, std::vector<unsigned char>>> pending;  // not written yet
  std::vector<std::string> problems;  // what the kernel would have refused or broken
  int calls = 0;                      // ioctls and opens of the tools device
  int next_fd = 100;

  tracker* find(int fd) {
    for (tracker& t : trackers) {
      if (t.fd == fd && t.open) return &t;
    }
    return nullptr;
  }
  tracker* queue_tracker() {
    for (tracker& t : trackers) {
      if (t.open && t.queue != nullptr && t.events != 0) return &t;
    }
    return nullptr;
  }
  std::size_t entry_bytes(const tracker& t) const { return t.version == 2 ? entry_v2 : entry_v1; }
  std::size_t dropped_at(const tracker& t) const { return t.version == 2 ? v2_dropped_at : 16; }
  std::size_t control_bytes(const tracker& t) const {
    return t.version == 2 ? control_v2 : control_v1;
  }

  int open_tools() {
    ++calls;
    if (open_error != 0 && open_errors > 0) {
      --open_errors;
      return -open_error;
    }
    trackers.push_back({next_fd, nullptr, 0, nullptr, 0});
    return next_fd++;
  }

  /// map_user_pages(): DIV_ROUND_UP(size, PAGE_SIZE) writable pages at an aligned address.
  std::uint32_t pin(std::uint64_t va, std::uint64_t size) const {
    const std::uint64_t bytes = (size + page - 1) / page * page;
    if (va % page != 0 || va == 0 || bytes == 0 || va + bytes < va) return nv_err_invalid_address;
    return writable(static_cast<std::uintptr_t>(va), static_cast<std::size_t>(bytes))
               ? nv_ok
               : nv_err_invalid_argument;
  }

  int ioctl(int fd, unsigned long request, unsigned char* block, std::size_t bytes) {
    ++calls;
    tracker* t = find(fd);
    if (t == nullptr) return -ENOTTY;  // not a tools descriptor
    const bool flags = request == 58 || request == 60;
    const bool init = request == 56 || (request == 76 && init_v2_ioctl);
    if (!flags && !init) return -ENOTTY;
    const std::size_t size = flags ? 16 : params_bytes;
    if (size > bytes) return -EFAULT;  // copy_from_user() into the page after the block
    unsigned char p[128] = {};
    std::memcpy(p, block, size);
    std::uint32_t status = nv_ok;
    auto get64 = [&](std::size_t at) { std::uint64_t v; std::memcpy(&v, p + at, 8); return v; };
    auto get32 = [&](std::size_t at) { std::uint32_t v; std::memcpy(&v, p + at, 4); return v; };
    auto put32 = [&](std::size_t at, std::uint32_t v) { std::memcpy(p + at, &v, 4); };
    if (init) {
      int v = request == 76 ? 2 : 1;
      if (version_in_at >= 0) {
        const std::uint32_t asked = get32(static_cast<std::size_t>(version_in_at));
        if (asked != 1 && asked != 2) status = nv_err_invalid_argument;
        v = static_cast<int>(asked);
      }
      if ((v == 2 && (!has_v2 || refuse_v2)) || refuse) status = nv_err_invalid_argument;
      const std::uint32_t uvm_fd = get32(44);
      bool open_uvm = false, va_space = false;
      for (int u : uvm_fds) open_uvm = open_uvm || static_cast<std::uint32_t>(u) == uvm_fd;
      for (int u : va_spaces) va_space = va_space || static_cast<std::uint32_t>(u) == uvm_fd;
      if (status == nv_ok && !open_uvm) status = nv_err_insufficient_permissions;  // fget()
      if (status == nv_ok && !va_space) status = nv_err_illegal_action;  // not UVM_FD_VA_SPACE
      const std::uint64_t queue = get64(0), entries = get64(8), control = get64(16);
      tracker probe{fd, nullptr, 0, nullptr, v};
      if (status == nv_ok && entries != 0 &&
          (entries > 0xffffffffu || entries < 2 || (entries & (entries - 1)) != 0)) {
        status = nv_err_invalid_argument;  // queue_buffer_count: a power of 2, at least 2
      }
      if (status == nv_ok && entries != 0) status = pin(queue, entries * entry_bytes(probe));
      if (status == nv_ok) {
        status = pin(control, entries != 0 ? control_bytes(probe) : 8 * uvm::counters);
      }
      if (status == nv_ok && t->made) status = nv_err_invalid_argument;  // private_data taken
      if (status == nv_ok) {
        t->queue = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(entries != 0 ? queue : 0));
        t->entries = static_cast<std::uint32_t>(entries);
        t->control = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(control));
        t->version = v;
        t->made = true;
        if (granted_at >= 0) put32(static_cast<std::size_t>(granted_at), static_cast<std::uint32_t>(v));
      }
      put32(status_at, status);
    } else {  // enable events (a queue) / counters (none)
      const std::uint64_t mask = get64(0);
      if (!t->made || (request == 58) != (t->entries != 0) ||
          (request == 58 && (mask & ~std::uint64_t{0x7ffe}) != 0)) {
        status = nv_err_invalid_argument;  // mask_contains_invalid_events(): types 1..14
      } else {
        t->events |= mask;
      }
      put32(8, status);
    }
    std::memcpy(block, p, size);  // copy out
    return 0;
  }

  /// The kernel's enqueue_event(): false when the event was dropped (or not asked for).
  bool enqueue(const unsigned char* entry, unsigned char type) {
    tracker* t = queue_tracker();
    if (t == nullptr || (t->events & (std::uint64_t{1} << type)) == 0) return false;
    auto* ctrl = reinterpret_cast<std::uint32_t*>(t->control);
    const std::uint32_t size = t->entries, mask = size - 1;
    // (The kernel reads get_behind plainly and orders its copy after it by the dependency; the
    // C++ model here needs acquire for the same.)
    const std::uint32_t get_behind = __atomic_load_n(&ctrl[1], __ATOMIC_ACQUIRE) & mask;
    const std::uint32_t put_behind = __atomic_load_n(&ctrl[3], __ATOMIC_RELAXED) & mask;
    if (((size + get_behind - put_behind) & mask) == 1) {
      auto* dropped = reinterpret_cast<std::uint64_t*>(t->control + dropped_at(*t));
      __atomic_fetch_add(&dropped[type], 1, __ATOMIC_RELAXED);
      return false;
    }
    unsigned char* slot = t->queue + std::size_t{put_behind} * entry_bytes(*t);
    if (publish_before_writing) {
      pending.emplace_back(slot, std::vector<unsigned char>(entry, entry + entry_bytes(*t)));
    } else {
      std::memcpy(slot, entry, entry_bytes(*t));
    }
    __atomic_store_n(&ctrl[2], (put_behind + 1) & mask, __ATOMIC_RELEASE);
    __atomic_store_n(&ctrl[3], (put_behind + 1) & mask, __ATOMIC_RELEASE);
    return true;
  }
  /// Writes the entries published before they were written.
  void finish_pending() {
    for (auto& p : pending) std::memcpy(p.first, p.second.data(), p.second.size());
    pending.clear();
  }

  /// record_cpu_fault(): UvmEventCpuFaultInfo (accessType 2: a write).
  bool cpu_fault(std::uint64_t address) {
    unsigned char e[96] = {};
    e[0] = 1;
    e[1] = 2;
    const std::uint64_t stamp = 12345;
    const auto pid = static_cast<std::uint32_t>(getpid());
    const auto thread = static_cast<std::uint32_t>(syscall(SYS_gettid));
    std::memcpy(e + cpu_fault_address_at, &address, 8);
    std::memcpy(e + 16, &stamp, 8);
    std::memcpy(e + cpu_fault_pid_at, &pid, 4);
    std::memcpy(e + cpu_fault_pid_at + 4, &thread, 4);
    return enqueue(e, 1);
  }
  /// UvmEventMigrationInfo(_V1 | _V2) from processor src to dst (0: the CPU).
  bool migration(unsigned src, unsigned dst, std::uint64_t address, std::uint64_t bytes,
                 unsigned char cause) {
    tracker* t = queue_tracker();
    unsigned char e[96] = {};
    e[0] = 2;
    if (t != nullptr && t->version == 2) {
      e[1] = cause;
      e[4] = static_cast<unsigned char>(src);
      e[6] = static_cast<unsigned char>(dst);
      std::memcpy(e + 16, &address, 8);
      std::memcpy(e + 24, &bytes, 8);
    } else {
      e[1] = cause;
      e[2] = static_cast<unsigned char>(src);
      e[3] = static_cast<unsigned char>(dst);
      std::memcpy(e + 8, &address, 8);
      std::memcpy(e + 16, &bytes, 8);
    }
    return enqueue(e, 2);
  }
  std::uint64_t dropped(unsigned char type) {
    tracker* t = queue_tracker();
    return reinterpret_cast<std::uint64_t*>(t->control + dropped_at(*t))[type];
  }

  // Managed memory: the first CPU touch of each page is a CPU fault (uvm_va_block.c's
  // block_cpu_fault_locked() notifies the tools at the first try of each fault).
  void* map_managed(std::size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    memory.push_back({static_cast<unsigned char*>(p), bytes, std::vector<bool>(bytes / page)});
    return p;
  }
  void unmap_managed(void* p) {
    for (std::size_t i = 0; i < memory.size(); ++i) {
      if (memory[i].base == p) {
        munmap(p, memory[i].bytes);
        memory.erase(memory.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    }
    problems.push_back("unmap_managed of memory not mapped");
  }
  void touch(unsigned char* p) {
    for (managed& m : memory) {
      if (m.base <= p && p < m.base + m.bytes) {
        const std::size_t k = static_cast<std::size_t>(p - m.base) / page;
        if (!m.touched[k]) {
          m.touched[k] = true;
          (void)cpu_fault(reinterpret_cast<std::uintptr_t>(m.base + k * page));
        }
      }
    }
    *p = 1;
  }
};

inline module*& the_fake() {
  static module* m = nullptr;
  return m;
}

inline const uvm::driver& fake_driver() {
  static constexpr uvm::driver d{
      [](char* out, std::size_t size) noexcept {
        if (the_fake()->version_text.empty()) return false;
        std::snprintf(out, size, "%s\n", the_fake()->version_text.c_str());
        return true;
      },
      [](int* out, int max) noexcept {
        int n = 0;
        for (int fd : the_fake()->uvm_fds) {
          if (n < max) out[n++] = fd;
        }
        return n;
      },
      []() noexcept { return the_fake()->open_tools(); },
      [](int fd, unsigned long request, unsigned char* block, std::size_t bytes) noexcept {
        return the_fake()->ioctl(fd, request, block, bytes);
      },
      [](int fd) noexcept {
        if (module::tracker* t = the_fake()->find(fd)) t->open = false;
      },
      [](int, int) noexcept { return the_fake()->same_file; },
      [](int, uvm::file_id* out) noexcept {
        *out = the_fake()->uvm_file;
        return true;
      },
      [](int) noexcept { return the_fake()->dup_fails ? -1 : the_fake()->next_fd++; },
      []() noexcept { return the_fake()->page; },
      [](std::size_t bytes) noexcept { return the_fake()->map_managed(bytes); },
      [](void* p) noexcept { the_fake()->unmap_managed(p); },
      [](unsigned char* p) noexcept { the_fake()->touch(p); }};
  return d;
}

/// The UVM descriptors a child after fork() inherited, for attach_to_fake (-1: all).
inline std::vector<int>& inherited() {
  static std::vector<int> fds;
  return fds;
}
inline int attach_to_fake(ha::region* r) noexcept {
  const std::vector<int>& in = inherited();
  return ha::attach_with(r, fake_driver(), true, in.data(), static_cast<int>(in.size()));
}

/// A log laid out for the fake's page size (aligned to it: a 64 KiB page too), with its guard
/// pages, as make_region() leaves a shared one.
struct log {
  explicit log(std::size_t page) : page_(page), bytes_(ha::offsets_for(page).bytes + page) {
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) base_ = nullptr;
    if (base_ != nullptr) {
      const std::uintptr_t b = reinterpret_cast<std::uintptr_t>(base_);
      auto* at = reinterpret_cast<ha::region*>((b + page - 1) / page * page);
      if (ha::guard(at, page) && ha::fill_region(at, page, 1)) r = at;
    }
  }
  ~log() {
    if (base_ != nullptr) munmap(base_, bytes_);
  }
  log(const log&) = delete;
  log& operator=(const log&) = delete;
  std::uint64_t now() { return ha::now(r, attach_to_fake, page_); }
  /// The spans of [lo, hi) logged in (since, upto] (-1: the whole range).
  int touched(std::uint64_t since, std::uint64_t upto, std::uintptr_t lo, std::uintptr_t hi,
              ha::span* out, int max = 4) {
    return ha::touched_in(r, since, upto, lo, hi, 0, out, max);
  }
  std::size_t page() const { return page_; }
  ha::region* r = nullptr;

 private:
  std::size_t page_, bytes_;
  void* base_ = nullptr;
};

/// The fake as the module of that version is, read at its tag (a branch after the newest read
/// plays the newest's).
inline module module_as_at(const std::string& version) {
  module m;
  m.version_text = version;
  const unsigned branch = static_cast<unsigned>(std::stoul(version));
  if (version == "550.40.07" || branch < 550) return m;  // 56 bytes, version 1 only
  m.has_v2 = true;
  if (branch == 550 || branch == 555) {  // requestedVersion 52 (in), grantedVersion 56 (out)
    m.params_bytes = 64;
    m.version_in_at = 52;
    m.granted_at = 56;
    if (branch == 550) {  // UvmToolsEventControlData_V2: version, padding, then dropped[]
      m.control_v2 = 536;
      m.v2_dropped_at = 24;
    }
  } else if (branch == 560) {  // version 48 (in), rmStatus 52
    m.version_in_at = 48;
    m.status_at = 52;
  } else {  // 565 on: version 2 by its own ioctl
    m.init_v2_ioctl = true;
  }
  return m;
}

/// The first and last release tag of every branch read (git tag, NVIDIA/open-gpu-kernel-modules),
/// with 550.40.53, the first of 550's second layout.
inline std::vector<std::string> every_row_boundary() {
  return {"515.43.04", "515.105.01", "520.56.06", "520.61.07", "525.47.04",  "525.147.05",
          "530.30.02", "530.41.03",  "535.43.02", "535.288.01", "545.23.06", "545.29.06",
          "550.40.07", "550.40.53",  "550.163.01", "555.42.02", "555.58.02", "560.28.03",
          "560.35.03", "565.57.01",  "565.77",     "570.86.15", "570.211.01", "575.51.02",
          "575.64.05", "580.65.06",  "580.142",    "590.44.01", "590.48.01", "595.44.02",
          "595.45.04"};
}

struct use {
  explicit use(module& m) { the_fake() = &m; }
  ~use() { the_fake() = nullptr; }
  use(const use&) = delete;
  use& operator=(const use&) = delete;
};
}  // namespace fake_uvm
#endif  // __linux__
