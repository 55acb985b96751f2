// ctest python.route_a_throws: the allocator's symbols for callers that use the pointer unchecked
// (torch's change_current_allocator, route A, and the benchmark's naive allocator) throw a
// catchable std::exception into a C++ caller, as torch's own allocators do, instead of returning
// a null pointer or stopping the process. Loaded as torch loads it (dlopen, dlsym, a plain
// function pointer) and asked for memory on a GPU no machine has.
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <exception>
#include <new>

namespace {
using alloc_fn = void* (*)(std::size_t, int, void*);
using last_error_fn = int (*)(char*, std::size_t);

bool throws(void* library, const char* name, std::size_t size, int device) {
  const auto f = reinterpret_cast<alloc_fn>(dlsym(library, name));
  const auto last = reinterpret_cast<last_error_fn>(dlsym(library, "unimem_last_error"));
  if (f == nullptr || last == nullptr) {
    std::printf("%s: not exported (%s)\n", name, dlerror());
    return false;
  }
  try {
    void* p = f(size, device, nullptr);
    std::printf("%s: returned %p instead of throwing\n", name, p);
    return false;
  } catch (const std::exception& e) {
    char noted[256] = {};
    const int status = last(noted, sizeof noted);
    std::printf("%s: threw %s: %s (last error %d: %s)\n", name,
                dynamic_cast<const std::bad_alloc*>(&e) != nullptr ? "std::bad_alloc"
                                                                    : "std::exception",
                e.what(), status, noted);
    return status != 0;
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s LIBRARY (libunimem_allocator.so)\n", argv[0]);
    return 2;
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::printf("cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  // Route A: a GPU that does not exist, refused with and without a GPU. The naive allocator
  // takes no device (it allocates on the current one): a size past PTRDIFF_MAX, refused before
  // the runtime is asked, with and without a GPU.
  const bool route_a = throws(library, "unimem_torch_alloc_or_throw", 100, 1 << 20);
  const std::size_t too_large = static_cast<std::size_t>(-1) / 2 + 1;
  std::printf("%s\n", route_a && throws(library, "unimem_naive_managed_alloc", too_large, 0)
                          ? "route_a_throws: both threw into their C++ caller"
                          : "route_a_throws: FAILED");
  return 0;
}
