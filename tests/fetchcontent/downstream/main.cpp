// Downstream of the parent project: its library, through its installed package.
#include <square.hpp>

#include <unimem/device.hpp>

#include <cstdio>

int main() {
  if (unimem::device_count() == 0) {
    std::printf("downstream: no GPU here: configured, built and linked\n");
    return 0;
  }
  unimem::managed_buffer<int> v{1, 2, 3};
  parent::square(v);
  const bool ok = v[0] == 1 && v[1] == 4 && v[2] == 9;
  std::printf("downstream: %s (%d %d %d)\n", ok ? "OK" : "WRONG", v[0], v[1], v[2]);
  return ok ? 0 : 1;
}
