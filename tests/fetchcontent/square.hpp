// The parent project's library: squares a managed buffer's elements on the GPU.
#pragma once
#include <unimem/managed_buffer.hpp>

namespace parent {
void square(unimem::managed_buffer<int>& values);
}
