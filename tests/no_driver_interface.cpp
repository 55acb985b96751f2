// unimem built with UNIMEM_NO_PRIVATE_DRIVER_INTERFACE (tests/CMakeLists.txt, the CMake option
// UNIMEM_PRIVATE_DRIVER_INTERFACE=OFF for users): no tools device and no ioctl in the program
// (no_driver_interface.binary reads it for the device's name), the host-access log on the
// page-fault signal, and report() saying why.
#include <unimem/unimem.hpp>

#include <cstdio>
#include <string>

int main() {
  namespace ha = unimem::detail::host_access;
  (void)ha::now();
  const std::string r = unimem::report();
  const bool faults = ha::source() == ha::signal::page_faults;
#if defined(__linux__)
  const bool why = ha::why() == ha::reason::compiled_out;
#else
  const bool why = true;  // no log off Linux
#endif
  const bool said = r.find("not built (UNIMEM_NO_PRIVATE_DRIVER_INTERFACE") != std::string::npos;
  if (!faults || !why || !said) {
    std::printf("no driver interface: FAILED: signal %s, reason %s\n%s", ha::to_string(ha::source()),
                ha::to_string(ha::why()), r.c_str());
    return 1;
  }
  std::printf("no driver interface: page-fault signal, and report() says so\n");
  return 0;
}
