// The spellings deprecated in 0.2.0 (CHANGELOG.md, "Deprecated") still compile and do what
// their replacements do, until 0.3 removes them. This is the only file of unimem that uses
// them: the pragma silences their warnings here alone, and the rest of the project builds with
// -Werror and no deprecation warning (a new use of an old name anywhere else fails the build).
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

#include "test_support.hpp"

#include <string>
#include <type_traits>
#include <utility>

using unimem::location;

// ---- the old names are the same entities as the new ones ----

static_assert(std::is_same<unimem::stream::flags, unimem::stream::blocking_mode>::value,
              "stream::flags is blocking_mode under its old name");
static_assert(std::is_same<unimem::event::flags, unimem::event::timing_mode>::value,
              "event::flags is timing_mode under its old name");
static_assert(unimem::stream::flags::non_blocking == unimem::stream::blocking_mode::non_blocking);
static_assert(unimem::event::flags::disable_timing == unimem::event::timing_mode::disable_timing);
static_assert(unimem::mapped == unimem::intent::map, "unimem::mapped is intent::map");
static_assert(unimem::moved == unimem::intent::move, "unimem::moved is intent::move");
static_assert(unimem::unspecified_device == unimem::no_device, "one constant, one value");
static_assert(unimem::launch_config().device == unimem::no_device);
static_assert(unimem::stream_ref().device_id() == unimem::no_device);
static_assert(unimem::location::host().device_id() == unimem::no_device);
static_assert(std::is_same<unimem::device_list, decltype(unimem::devices())>::value,
              "device_list names what devices() returns, a std::vector<device>");
static_assert(std::is_same<decltype(std::declval<const unimem::device_buffer<int>&>().cview()),
                           unimem::view<const int>>::value);
static_assert(std::is_same<decltype(std::declval<const unimem::managed_buffer<int>&>().cview()),
                           unimem::view<const int>>::value);

namespace {
// Kernels for the launches below: the deprecated tags' intents reach the kernel's data as the
// new ones' do.
__global__ void deprecated_add(const float* a, float* b, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) b[i] += a[i];
}
}  // namespace

TEST(Deprecated, BytesAndCviewAreSizeBytesAndTheConstView) {
  // Empty buffers allocate nothing: no GPU needed.
  const unimem::managed_buffer<double> m;
  const unimem::pinned_buffer<double> p;
  const unimem::device_buffer<double> d;
  EXPECT_EQ(m.bytes(), m.size_bytes());
  EXPECT_EQ(p.bytes(), p.size_bytes());
  EXPECT_EQ(d.bytes(), d.size_bytes());
  EXPECT_EQ(m.cview().data(), std::as_const(m).view().data());
  EXPECT_EQ(d.cview().size(), std::as_const(d).view().size());
}

TEST(Deprecated, BytesAndCviewOfBuffersWithElements) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<double> m(1000, 1.0);
  unimem::pinned_buffer<double> p(10, 1.0);
  unimem::device_buffer<double> d(7);
  EXPECT_EQ(m.bytes(), 8000u);
  EXPECT_EQ(m.bytes(), m.size_bytes());
  EXPECT_EQ(p.bytes(), p.size_bytes());
  EXPECT_EQ(d.bytes(), 56u);
  const unimem::view<const double> cv = m.cview();
  EXPECT_EQ(cv.data(), std::as_const(m).view().data());
  EXPECT_EQ(cv.size(), m.size());
  EXPECT_EQ(p.cview().data(), p.data());
  EXPECT_EQ(d.cview().data(), std::as_const(d).data());
}

TEST(Deprecated, MappedAndMovedTagAsTheIntents) {
  using unimem::detail::intent_choice;
  unimem::managed_buffer<int> b;
  EXPECT_EQ(unimem::in(b, unimem::mapped).how, intent_choice::map);
  EXPECT_EQ(unimem::out(b, unimem::moved).how, intent_choice::move);
  EXPECT_EQ(unimem::inout(b.view(), unimem::mapped).how,
            unimem::inout(b.view(), unimem::intent::map).how);
}

TEST(Deprecated, IntentOfIsGetIntent) {
  unimem::managed_buffer<int> empty;  // no runtime call for an empty range
  EXPECT_EQ(unimem::intent_of(empty), unimem::get_intent(empty));
  EXPECT_EQ(unimem::intent_of(empty.view()), unimem::intent::move);
}

TEST(Deprecated, IntentOfAndMappedOnAGpu) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = 1 << 16;
  unimem::managed_buffer<float> a(n, 1.0f), b(n, 2.0f);
  unimem::launch(deprecated_add, unimem::grid_for(n), unimem::in(a, unimem::mapped),
                 unimem::inout(b, unimem::mapped), n);
  unimem::synchronize();
  EXPECT_EQ(b[n - 1], 3.0f);
  EXPECT_EQ(unimem::intent_of(b), unimem::get_intent(b));
  EXPECT_EQ(unimem::intent_of(b.view()), unimem::get_intent(b.view()));
  if (unimem::migrates_on_demand(location::device(0))) {
    EXPECT_EQ(unimem::intent_of(b), unimem::intent::map);
    EXPECT_EQ(unimem::set_intent(b, unimem::moved), unimem::hint_status::applied);
    EXPECT_EQ(unimem::intent_of(b), unimem::intent::move);
  }
}

TEST(Deprecated, MigrationSupportedIsMigratesOnDemand) {
  if (!unimem_test::has_gpu()) {
    EXPECT_THROW((void)unimem::migration_supported(location::device(0)), unimem::error);
    EXPECT_THROW((void)unimem::migrates_on_demand(location::device(0)), unimem::error);
    return;
  }
  for (int id = 0; id < unimem::device_count(); ++id) {
    EXPECT_EQ(unimem::migration_supported(location::device(id)),
              unimem::migrates_on_demand(location::device(id)));
    EXPECT_EQ(unimem::migration_supported(location::device(id)),
              unimem::device(id).migrates_on_demand());
  }
  EXPECT_EQ(unimem::migration_supported(location::host()),
            unimem::migrates_on_demand(location::host()));
  EXPECT_THROW((void)unimem::migration_supported(location::device(unimem::device_count())),
               unimem::error);
}

TEST(Deprecated, IdIsDeviceId) {
  UNIMEM_REQUIRE_GPU();
  for (int id = 0; id < unimem::device_count(); ++id) {
    const unimem::device d(id);
    EXPECT_EQ(d.id(), d.device_id());
    const unimem::device_properties p = d.properties();
    EXPECT_EQ(p.id, p.device_id);
    EXPECT_EQ(p.device_id, id);
    const unimem::device_properties copy = p;  // copies of the struct do not warn
    EXPECT_EQ(copy.id, id);
  }
  EXPECT_EQ(unimem::device::current().id(), unimem::device::current().device_id());
}

TEST(Deprecated, LaunchConfigDeviceIsDeviceId) {
  const unimem::launch_config c = unimem::launch_config().on_device(3);
  EXPECT_EQ(c.device, 3) << "on_device() sets the old name too";
  EXPECT_EQ(c.device_id, 3);
  unimem::launch_config old;
  old.device = 1;  // code written against the old name: still names the launching device
  EXPECT_TRUE(old.names_device());
  EXPECT_EQ(old.named_device(), 1);
  unimem::launch_config both;
  both.device = 1;
  both.device_id = 2;  // the new name wins where both are set
  EXPECT_EQ(both.named_device(), 2);
  const unimem::launch_config copy = both;  // copies of the struct do not warn
  EXPECT_EQ(copy.device, 1);
}

TEST(Deprecated, UnspecifiedDeviceIsNoDevice) {
  const unimem::launch_config c;
  EXPECT_EQ(c.device, unimem::unspecified_device);
  EXPECT_FALSE(c.names_device());
  EXPECT_EQ(unimem::stream_ref().device_id(), unimem::unspecified_device);
}

TEST(Deprecated, FirstTouchWhereIsLocation) {
  unimem::first_touch_t ft = unimem::first_touch(location::device(3));
  EXPECT_EQ(ft.where, location::device(3));  // reads the member location
  ft.where = location::host();                // writes it
  EXPECT_EQ(ft.location, location::host());
  ft.location = location::device(1);
  EXPECT_EQ(*ft.where, location::device(1));
  EXPECT_FALSE(unimem::first_touch(unimem::stream_ref()).where.has_value());
  const unimem::first_touch_t copy = ft;
  EXPECT_EQ(copy.where, location::device(1));
  const unimem::first_touch_t none;
  EXPECT_FALSE(none.where.has_value());
  EXPECT_FALSE(none.location.has_value());
}

TEST(Deprecated, FirstTouchWhereOnAGpu) {
  UNIMEM_REQUIRE_GPU();
  unimem::first_touch_t ft;
  ft.where = location::device(0);  // the old member: the pages start on GPU 0
  unimem::managed_buffer<int> b(4096, ft);
  b.ready_for_host();
  EXPECT_EQ(b[4095], 0);
}

TEST(Deprecated, DeviceListHoldsWhatDevicesReturns) {
  const unimem::device_list all = unimem::devices();  // no GPU: empty
  ASSERT_EQ(all.size(), static_cast<std::size_t>(unimem::device_count()));
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].device_id(), static_cast<int>(i));
}

TEST(Deprecated, StreamAndEventFlagsAreTheModes) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream s(unimem::stream::flags::non_blocking);
  unimem::event start(unimem::event::flags::timing), stop(unimem::event::flags::timing);
  unimem::event order(unimem::event::flags::disable_timing);
  start.record(s);
  stop.record(s);
  order.record(s);
  EXPECT_GE(unimem::elapsed_ms(start, stop), 0.0f);
  s.synchronize();
  EXPECT_TRUE(order.ready());
}

TEST(Deprecated, ManagedBufferPlacementMembersAreTheFreeFunctions) {
  // An empty buffer: every call answers before any runtime call, so no GPU is needed.
  unimem::managed_buffer<int> b;
  const location gpu = location::device(0);
  EXPECT_EQ(b.prefetch(gpu), unimem::prefetch(b, gpu));
  EXPECT_EQ(b.advise(unimem::advice::read_mostly), unimem::hint_status::empty);
  EXPECT_EQ(b.advise(unimem::advice::accessed_by, gpu), unimem::hint_status::empty);
  EXPECT_EQ(b.unadvise(unimem::advice::read_mostly), unimem::hint_status::empty);
  EXPECT_EQ(b.unadvise(unimem::advice::accessed_by, gpu), unimem::hint_status::empty);
  EXPECT_THROW(b.advise(unimem::advice::preferred_location), unimem::argument_error);
  EXPECT_FALSE(b.is_read_mostly());
  EXPECT_FALSE(b.preferred_location().has_value());
  EXPECT_FALSE(b.last_prefetch_location().has_value());
  EXPECT_TRUE(b.accessed_by().empty());
  EXPECT_EQ(b.ready_for_host(), unimem::hint_status::empty);
  EXPECT_NO_THROW(b.attach(unimem::default_stream));
}
