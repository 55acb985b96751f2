// unimem (internal, runtime-free, no system header): the NVIDIA UVM driver's tools interface as
// each module version declares it. The interface is private: its ioctl numbers carry no size
// (UVM_IOCTL_BASE(i) is i), its parameter block changed three times (550.40.53, 560, 565) and a
// queue's control page once (550.40.53's version-2 queues). The layouts below were read in the
// open kernel module's own source (github NVIDIA/open-gpu-kernel-modules, uvm_ioctl.h,
// uvm_types.h and uvm_tools.c under kernel-open/nvidia-uvm, at every release tag from 515.43.04
// to 595.45.04; docs/architecture.md lists them). A version read is talked to in its row's
// layout; any other (a later point release, a branch not read) only in the newest layout read
// at or before it, and only once a self-check on this driver proved it (host_access/tracker.hpp).
#pragma once

#include "../../../core/config.hpp"

#include <cstddef>
#include <cstdint>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace uvm {
/// A module version, major.minor[.patch], as one number that orders as the versions do.
constexpr std::uint64_t version(std::uint32_t major, std::uint32_t minor,
                                std::uint32_t patch = 0) noexcept {
  return (std::uint64_t{major} << 32) | (std::uint64_t{minor & 0xffffu} << 16) |
         (patch & 0xffffu);
}
constexpr std::uint32_t branch_of(std::uint64_t v) noexcept {
  return static_cast<std::uint32_t>(v >> 32);
}

/// Parses what /sys/module/nvidia_uvm/version holds ("580.142\n", "550.40.07\n"): 2 or 3
/// decimal parts (major < 10^6, the others < 65536), then nothing but white space. 0 if not.
inline std::uint64_t parse_version(const char* text) noexcept {
  std::uint32_t part[3] = {0, 0, 0};
  int parts = 0;
  const char* p = text;
  while (parts < 3) {
    std::uint32_t n = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; ++p, ++digits) {
      n = n * 10 + static_cast<std::uint32_t>(*p - '0');
      if (digits >= 6) return 0;
    }
    if (digits == 0 || (parts > 0 && n > 0xffffu)) return 0;
    part[parts++] = n;
    if (*p != '.') break;
    ++p;
  }
  if (parts < 2) return 0;
  for (; *p != '\0'; ++p) {
    if (*p != '\n' && *p != ' ' && *p != '\t' && *p != '\r') return 0;
  }
  return version(part[0], part[1], part[2]);
}

/// How UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS ends after rmStatus's predecessors (three NvU64
/// addresses and sizes at 0, 8, 16; the processor UUID at 24; allProcessors at 40; uvmFd at 44).
enum class params_kind : unsigned char {
  plain,              // 56 bytes, rmStatus at 48; queue version 1 (ioctl 56), 2 by its own ioctl
  requested_granted,  // 64 bytes: rmStatus 48, requestedVersion 52 (in), grantedVersion 56 (out)
  version_first,      // 56 bytes: version 48 (in), rmStatus 52
};

/// One layout, over the module versions [first, newest] read with it.
struct layout {
  std::uint64_t first, newest;
  params_kind params;
  unsigned char params_bytes;   // what the driver copies in and out
  unsigned char status_at;      // NV_STATUS rmStatus (0: NV_OK)
  unsigned char version_at;     // the requested queue version (0: none: the ioctl says it)
  unsigned char granted_at;     // the granted queue version (0: none)
  unsigned char v2_request;     // the ioctl that makes a version-2 queue (0: none)
  unsigned char v2_dropped_at;  // dropped[] in a version-2 queue's control page
};

// Fixed in every version read: the ioctl numbers, a queue entry's type in its first byte,
// the control page (get_ahead, get_behind, put_ahead, put_behind: NvU32 at 0, 4, 8, 12;
// NvU64 dropped[64], by event type, at 16 but where v2_dropped_at says), the events and the
// counters unimem uses. Entries: 64 bytes (version 1) or 72 (version 2); a CPU fault's address
// at 8, the faulting process and thread (NvU32) at 24 and 28 in both; a migration's source and
// destination processor (0: the CPU) at 2 and 3 (NvU8, version 1) or 4 and 6 (NvU16, version
// 2), its address and bytes at 8 and 16 (version 1) or 16 and 24 (version 2).
constexpr unsigned long init_request = 56, enable_events_request = 58,
                        enable_counters_request = 60, init_v2_request = 76;
constexpr unsigned char cpu_fault_event = 1, migration_event = 2;  // UvmEventType
constexpr std::uint32_t event_types = 64;                          // UvmEventNumTypesAll
constexpr int counter_bytes_to_gpu = 0, counter_bytes_to_host = 1, counter_gpu_faults = 9,
              counters = 10;  // UvmCounterName..., UVM_TOTAL_COUNTERS
constexpr std::size_t entry_bytes(int queue_version) noexcept {
  return queue_version == 2 ? 72 : 64;
}
constexpr std::size_t max_entry_bytes = 72, control_bytes = 16 + 8 + 8 * event_types;  // 536
constexpr std::size_t cpu_fault_pid_at = 24, cpu_fault_thread_at = 28;
/// The largest init block of any layout, and the enable ioctls' block.
constexpr std::size_t max_params_bytes = 64, flags_bytes = 16;

constexpr layout plain(std::uint64_t first, std::uint64_t newest, bool v2) noexcept {
  return {first, newest, params_kind::plain, 56, 48, 0, 0,
          static_cast<unsigned char>(v2 ? init_v2_request : 0), 16};
}
/// Every layout read, by module version (docs/architecture.md lists the same rows).
constexpr layout layouts[] = {
    plain(version(515, 43, 4), version(515, 105, 1), false),
    plain(version(520, 56, 6), version(520, 61, 7), false),
    plain(version(525, 47, 4), version(525, 147, 5), false),
    plain(version(530, 30, 2), version(530, 41, 3), false),
    plain(version(535, 43, 2), version(535, 288, 1), false),
    plain(version(545, 23, 6), version(545, 29, 6), false),
    plain(version(550, 40, 7), version(550, 40, 7), false),
    // UvmToolsEventControlData_V2 (536 bytes: a version field at 16, dropped[] at 24).
    {version(550, 40, 53), version(550, 163, 1), params_kind::requested_granted, 64, 48, 52, 56,
     static_cast<unsigned char>(init_request), 24},
    {version(555, 42, 2), version(555, 58, 2), params_kind::requested_granted, 64, 48, 52, 56,
     static_cast<unsigned char>(init_request), 16},
    {version(560, 28, 3), version(560, 35, 3), params_kind::version_first, 56, 52, 48, 0,
     static_cast<unsigned char>(init_request), 16},
    plain(version(565, 57, 1), version(565, 77), true),
    plain(version(570, 86, 15), version(570, 211, 1), true),
    plain(version(575, 51, 2), version(575, 64, 5), true),
    plain(version(580, 65, 6), version(580, 142), true),
    plain(version(590, 44, 1), version(590, 48, 1), true),
    plain(version(595, 44, 2), version(595, 45, 4), true),
};
/// Whether layout l's fields lie inside its block (the addresses, sizes and descriptor in the
/// first 48 bytes, then the status and version fields).
constexpr bool fits(const layout& l) noexcept {
  return l.params_bytes >= 48 && l.params_bytes <= max_params_bytes &&
         l.status_at >= 48 && l.status_at + 4u <= l.params_bytes &&
         (l.version_at == 0 || l.version_at + 4u <= l.params_bytes) &&
         (l.granted_at == 0 || l.granted_at + 4u <= l.params_bytes);
}
constexpr bool every_block_fits() noexcept {
  for (const layout& l : layouts) {
    if (!fits(l)) return false;
  }
  return true;
}
static_assert(every_block_fits(), "a layout's block is larger than max_params_bytes");

/// What a module version gets: the layout to talk to it in, and whether it was read.
struct match {
  const layout* found;  // null: none (no version)
  enum how_kind : unsigned char {
    read,         // a version in [first, newest] of a row: that row's layout
    unread,       // any other version (a later point release, a branch not read): the newest
                  // layout read at or before it (the oldest before every row), used only once
                  // the self-check proved it on this driver (550.40.07 -> 550.40.53 changed
                  // the layout inside one branch: a branch's newest row proves nothing)
    unparseable,  // text that is not a version
    unreadable,   // no version text (no module loaded)
  } how;
};

/// The layout of module version v (0: text that was no version).
inline match find_layout(std::uint64_t v) noexcept {
  if (v == 0) return {nullptr, match::unparseable};
  const layout* at_or_before = nullptr;
  for (const layout& l : layouts) {
    if (l.first <= v && v <= l.newest) return {&l, match::read};
    if (l.first <= v) at_or_before = &l;
  }
  return {at_or_before != nullptr ? at_or_before : &layouts[0], match::unread};
}

inline void put32(unsigned char* b, std::size_t at, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void put64(unsigned char* b, std::size_t at, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<unsigned char>(v >> (8 * i));
}
inline std::uint32_t get32(const unsigned char* b, std::size_t at) noexcept {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | b[at + i];
  return v;
}
inline std::uint64_t get64(const unsigned char* b, std::size_t at) noexcept {
  return get32(b, at) | (std::uint64_t{get32(b, at + 4)} << 32);
}

/// What unimem leaves in a status field before the call: no NV_STATUS (NV_OK is 0), so a driver
/// that wrote its status elsewhere is not read as having accepted.
constexpr std::uint32_t status_unset = 0xffffffffu;

/// UVM_TOOLS_INIT_EVENT_TRACKER(_V2)_PARAMS in layout l, in the l.params_bytes at b (zeroed by
/// the caller), for a queue of `entries` entries (0: a counters tracker) of queue version
/// `queue_version` (1 or 2). Little-endian, as every platform the module builds for (x86-64,
/// aarch64, ppc64le).
inline void init_params(const layout& l, unsigned char* b, std::uint64_t queue,
                        std::uint32_t entries, std::uint64_t control, std::uint32_t uvm_fd,
                        std::uint32_t all_processors, int queue_version) noexcept {
  put64(b, 0, queue);
  put64(b, 8, entries);
  put64(b, 16, control);
  put32(b, 40, all_processors);
  put32(b, 44, uvm_fd);
  if (l.version_at != 0) put32(b, l.version_at, static_cast<std::uint32_t>(queue_version));
  put32(b, l.status_at, status_unset);
}

/// The ioctl that makes a queue of that version in layout l (0: none).
constexpr unsigned long init_request_for(const layout& l, int queue_version) noexcept {
  return queue_version == 1 ? init_request : l.v2_request;
}

/// Whether the driver's answer in b accepted the request: NV_OK where the layout has the status,
/// and the version granted where the layout returns one.
inline bool accepted(const layout& l, const unsigned char* b, int queue_version) noexcept {
  return get32(b, l.status_at) == 0 &&
         (l.granted_at == 0 || get32(b, l.granted_at) == static_cast<std::uint32_t>(queue_version));
}

/// UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS_PARAMS / UVM_TOOLS_ENABLE_COUNTERS_PARAMS (flags_bytes in
/// every version: the flags, then rmStatus at 8), in the zeroed flags_bytes at b.
inline void flags_params(unsigned char* b, std::uint64_t flags) noexcept {
  put64(b, 0, flags);
  put32(b, 8, status_unset);
}
inline bool flags_accepted(const unsigned char* b) noexcept { return get32(b, 8) == 0; }
}  // namespace uvm
}  // namespace detail
UNIMEM_END_NAMESPACE
