// unimem (internal): a log of numbered spans the host may have taken from the GPUs, so a
// placement record (placement_record.hpp) keeps the newest number and a tagged launch moves back
// only its buffer's spans logged since. Signals: uvm_events, where the NVIDIA UVM driver queues an
// event in our memory for each CPU fault on managed memory before the access completes (logged
// as its 2 MiB VA block, the unit a CPU fault moves) and for each migration to the CPU (eviction,
// another library's prefetch: logged as the span it moved), talked to only in a layout read at
// the module's version or proven on this driver by a self-check (uvm/layout.hpp, behind the seam
// of uvm/driver.hpp); else page_faults (AMD, no driver, refused, UNIMEM_HOST_ACCESS=page-faults,
// or built with UNIMEM_NO_PRIVATE_DRIVER_INTERFACE): any change of the process's fault count logs
// everything. The log is a memfd named with the process's id that every copy of unimem in the
// process finds in /proc/self/fd; a child after fork() makes its own. A wrong belief costs speed,
// never data: a page the log misses comes back by a GPU fault. Off Linux, no log.
//
// Its rooms: host_access/region.hpp (the memory and its memfd), host_access/fork.hpp (what each
// copy keeps, fork()), host_access/tracker.hpp (the driver's queue, the self-check),
// host_access/log.hpp (now(), decide(), announce(), describe()).
#pragma once

#include "host_access/log.hpp"
