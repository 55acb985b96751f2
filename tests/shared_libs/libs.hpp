// Two shared libraries, each built with -fvisibility=hidden (as plugins and Python extensions
// are), that use unimem on buffers the program owns (tests/shared_libs/main.cpp). Each library
// has its own hidden copy of every inline function and its statics; what they must agree on
// lives in the buffer object itself (its placement record) and in the runtime (advice, the
// process's page-fault count), never in a table of one library.
#pragma once

#include <unimem/unimem.hpp>

#include <cstddef>

#if defined(_WIN32)
#define SHARED_LIBS_EXPORT __declspec(dllexport)
#else
#define SHARED_LIBS_EXPORT __attribute__((visibility("default")))
#endif

using shared_buffer = unimem::managed_buffer<float>;

// Library A: advice, intents and moves through views.
SHARED_LIBS_EXPORT void lib_a_read_mostly_and_read(shared_buffer& x, unimem::stream& s);
SHARED_LIBS_EXPORT void lib_a_launch_in(shared_buffer& x, unimem::stream& s);
SHARED_LIBS_EXPORT void lib_a_map_view(shared_buffer& x);
SHARED_LIBS_EXPORT void lib_a_ready_view(shared_buffer& x, unimem::stream& s);
// Library B: tagged launches that overwrite or read the buffer, and intent queries.
SHARED_LIBS_EXPORT void lib_b_launch_out(shared_buffer& x, float value, unimem::stream& s);
SHARED_LIBS_EXPORT void lib_b_launch_in(shared_buffer& x, unimem::stream& s);
SHARED_LIBS_EXPORT unimem::intent lib_b_get_intent(const shared_buffer& x);
