/// @file
/// @brief windows: a loop walks managed ranges window by window; while its kernels work on one
/// window, the next ones move to the GPU on streams of their own and, when the GPU's memory is
/// short, the ones left behind go back to the host, so that no kernel waits for a page fault.
/// Data larger than the GPU streams at the link's speed; data that fits is one window, placed
/// once as a tag would. Not in the umbrella header: include <unimem/placement/window.hpp>.
/// docs/architecture.md, "Windows"; docs/porting.md shows the change from a chunked-copy loop.
/// @code
///   unimem::windows walk(s, unimem::in(b), unimem::in(c), unimem::out(a));
///   for (const unimem::window& w : walk) {
///     unimem::launch(triad, unimem::grid_for(w.size()).on(s), w(a), w(b), w(c), q, w.size());
///   }
/// @endcode
#pragma once

#include "../core/argument_error.hpp"
#include "../core/config.hpp"
#include "../core/detail/backend/backend.hpp"
#include "../core/detail/backend/events.hpp"
#include "../core/detail/backend/pointers.hpp"
#include "../core/detail/placement_record.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#include "../core/event.hpp"
#include "../core/kernel_argument.hpp"
#include "../core/memory_kind.hpp"
#include "../core/stream.hpp"
#include "../core/stream_ref.hpp"
#include "../core/view.hpp"
#include "access.hpp"
#include "budget.hpp"
#include "detail/host_access.hpp"
#include "detail/ledger.hpp"
#include "detail/stamp.hpp"
#include "detail/window_plan.hpp"
#include "detail/window_runtime.hpp"
#include "detail/window_state.hpp"
#include "intent.hpp"
#include "location.hpp"
#include "placement.hpp"
#include "policy.hpp"

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

UNIMEM_BEGIN_NAMESPACE

/// @brief Whether a walk moves windows it has left off the GPU (window_options::eviction).
enum class window_eviction {
  /// When the working set does not fit the GPU's free memory less the reserve (gpu_budget).
  automatic,
  /// Always: the walk keeps at most depth + 2 windows on the GPU, whatever fits.
  always,
  /// Never: windows stay where they were placed (the driver evicts if memory runs out).
  never,
};

/// @brief How a walk is shaped; the defaults suit most loops.
struct window_options {
  /// @brief Elements per window (the last window may have fewer); 0: the default: all of them
  /// (one window) where the working set fits the GPU, else about 8 ms of the host link (its
  /// estimate, host_link_of()), at most 1/(depth + 2) of the usable memory, in whole 2 MiB
  /// granules of each range, at least 64 MiB of the moved ranges together.
  std::size_t window_elements = 0;
  /// @brief Windows placed ahead of the one the kernels work on (1 to 64).
  int depth = 2;
  /// @brief Streams that place windows, in turn (1 to 16): two moves beside each other reach a
  /// higher bandwidth than one (H200: 49-51 GB/s against 44.7 for one prefetch call).
  int transfer_streams = 2;
  /// @brief Whether windows left behind go off the GPU.
  window_eviction eviction = window_eviction::automatic;
  /// @brief GPU memory the walk leaves free (0: default_reserve()).
  std::size_t reserve_bytes = 0;
};

template <class T>
class window_range;
class window;
template <class Runtime>
class basic_windows;


/// @brief One window's part of one of a walk's ranges: a borrowed view (a temporary may be
/// tagged or passed to a kernel) that carries the window's placement record, so a tag over it
/// moves nothing the walk has placed (it converts to `view<T>` and `T*` as a buffer does).
template <class T>
class window_range {
 public:
  using memory_kind = managed_memory;     ///< Managed memory: tags place it, copy() reads it so.
  using element_type = T;                 ///< The element type, const included.
  using unimem_borrowed_range = void;     ///< A temporary may be tagged: it owns nothing.

  /// @brief Nothing.
  constexpr window_range() noexcept = default;
  /// @brief Elements `v` with the record `r` (a walk makes them: window::operator()).
  window_range(unimem::view<T> v, detail::placement_record* r) noexcept : v_(v), record_(r) {}
  /// @brief The elements.
  [[nodiscard]] constexpr unimem::view<T> view() const noexcept { return v_; }
  /// @brief The first element.
  [[nodiscard]] constexpr T* data() const noexcept { return v_.data(); }
  /// @brief The number of elements.
  [[nodiscard]] constexpr std::size_t size() const noexcept { return v_.size(); }

  /// @brief The view (unimem's customization point).
  friend unimem::view<T> unimem_view(const window_range& r) noexcept { return r.v_; }
  /// @brief The window's placement record (the placement layer's hook).
  friend detail::placement_record* unimem_detail_placement_record(const window_range& r) noexcept {
    return r.record_;
  }

 private:
  unimem::view<T> v_;
  detail::placement_record* record_ = nullptr;
};

/// @brief One window of a walk: which elements (offset(), size(); the last window may have
/// fewer than the others) and, through operator(), each range's part of it.
class window {
 public:
  /// @brief Which window (0 holds the lowest addresses, whichever way the walk goes).
  [[nodiscard]] std::size_t index() const noexcept { return index_; }
  /// @brief Its first element.
  [[nodiscard]] std::size_t offset() const noexcept { return state_->offset(index_); }
  /// @brief Its elements.
  [[nodiscard]] std::size_t size() const noexcept { return state_->size(index_); }

  /// @brief Range r's part of this window, r being one of the walk's ranges (the buffer, view or
  /// container that was tagged); a window_range, which kernels take as `T*` or `view<T>` and
  /// tags take without placing what the walk placed.
  /// @throws unimem::invalid_argument when r is not one of the walk's ranges.
  template <class R, detail::if_range<R> = 0>
  auto operator()(R&& r) const {
    const auto v = to_view(r);
    using E = typename decltype(v)::element_type;
    const std::size_t slot = state_->find(v.data(), v.size_bytes());
    if (slot == detail::window_state::npos || state_->slots[slot].element_size != sizeof(E)) {
      detail::throw_refused<invalid_argument>(detail::refusal(
          "unimem::window: the range is not one of the walk's (pass the buffer, view or "
          "container that was tagged when the walk was made)"));
    }
    return window_range<E>(v.subview(offset(), size()), state_->record(slot, index_));
  }

 private:
  template <class Runtime>
  friend class basic_windows;
  window(detail::window_state* s, std::size_t i) noexcept : state_(s), index_(i) {}
  detail::window_state* state_;
  std::size_t index_;
};

/// @brief A walk through managed ranges of equal length, window by window, over a runtime
/// table; programs use unimem::windows (the runtime's), tests a fake (the schedule's tests).
///
/// What moves, by the ranges' tags, where the working set does not fit (or eviction is always):
/// `in(a)` is given read-mostly advice for the walk and placed as a read-only copy, which the
/// driver may drop when it needs the room (the host's copy is current: nothing to copy back;
/// the oversubscribe benchmark measures it); `inout(b)` and
/// `out(c, intent::move)` are placed and moved back to the host once their window's kernels are
/// done, on a stream of their own, beside the next placements; `out(c)` is mapped for the walk
/// (intent map: the kernels write straight into host memory, nothing is placed or moved back);
/// a range whose intent is map (`in(a, intent::map)`, set_intent()) stays mapped. Memory that
/// takes no advice (CUDA 13's pools of managed memory) is placed and moved back instead. Where
/// the working set fits, every range is placed and stays, as a tag places it, and later passes
/// move nothing (placement records). Devices that do not migrate pages (an APU, AMD without
/// XNACK) hand out the windows and move nothing (status()).
///
/// Ordering: the kernels of a window must run on the walk's stream (or be ordered after it):
/// it waits, on the device, for the window's placement before them; the move back waits for
/// them. No host synchronisation anywhere. After the last window the walk's stream waits for
/// the last move back, so that work queued on it after the loop (a synchronisation, a free)
/// comes after all of the walk's. The walk's advice is withdrawn when it is destroyed.
///
/// begin() starts a pass (forward), backward() a backward one; a pass may be restarted (windows
/// left on the GPU by a pass left early are moved back first) and a walk kept for many passes.
/// Move-only; not thread-safe; the ranges must outlive it.
template <class Runtime>
class basic_windows {
 public:
  class iterator;
  class pass;

  /// @brief A walk over the tagged ranges, on stream s, with the default options.
  /// @throws unimem::invalid_argument for ranges of different lengths, ranges that overlap,
  /// device memory or invalid options; unimem::error for a failed runtime call.
  template <class... Tags>
  explicit basic_windows(detail::located_stream s, const Tags&... tags)
      : basic_windows(Runtime(), s, window_options(), tags...) {}
  /// @brief The same with options o.
  template <class... Tags>
  basic_windows(detail::located_stream s, const window_options& o, const Tags&... tags)
      : basic_windows(Runtime(), s, o, tags...) {}
  /// @brief The same over the runtime table rt (the tests' fake).
  template <class... Tags>
  basic_windows(Runtime rt, detail::located_stream s, const window_options& o, const Tags&... tags)
      : rt_(std::move(rt)), stream_(s.stream), where_(s.where), options_(o) {
    static_assert(sizeof...(Tags) > 0,
                  "unimem::windows: give the ranges the loop walks, each with its access tag: "
                  "in(a), out(c), inout(b)");
    state_.slots.reserve(sizeof...(Tags));
    (state_.slots.push_back(detail::slot_of(tags)), ...);
    set_up();
  }

  basic_windows(const basic_windows&) = delete;             ///< Not copyable: owns streams.
  basic_windows& operator=(const basic_windows&) = delete;  ///< Not copyable.
  /// @brief Takes the other walk; the other is left empty (it hands out no windows).
  basic_windows(basic_windows&& other) noexcept
      : rt_(std::move(other.rt_)),
        stream_(other.stream_),
        where_(other.where_),
        options_(other.options_),
        state_(std::move(other.state_)),
        plan_(std::move(other.plan_)),
        ops_(std::move(other.ops_)),
        recorded_(std::move(other.recorded_)),
        budget_(other.budget_),
        slot_count_(other.slot_count_),
        owned_streams_(other.owned_streams_),
        status_(other.status_),
        evicts_(other.evicts_),
        live_(std::exchange(other.live_, false)),
        serial_(other.serial_),
        entered_(other.entered_),
        pass_where_(other.pass_where_) {
    other.state_ = detail::window_state();
    other.plan_ = detail::window_plan();
    other.serial_ += 1;
  }
  /// @brief Ends this walk (as the destructor) and takes the other's.
  basic_windows& operator=(basic_windows&& other) noexcept {
    if (this != &other) {
      this->~basic_windows();
      new (this) basic_windows(std::move(other));
    }
    return *this;
  }
  /// @brief Orders the walk's streams before its stream (what follows on it comes after all
  /// the walk queued) and withdraws the walk's advice; never throws.
  ~basic_windows() { finish(); }

  /// @brief Starts a forward pass: the first `depth` windows are placed.
  /// @throws unimem::error for a failed runtime call (naming the line of the loop).
  iterator begin(call_site where = call_site::current()) { return start(false, where); }
  /// @brief The end of any pass.
  iterator end() noexcept { return iterator(this, state_.count, 0); }
  /// @brief A backward pass, from the last window (`for (const auto& w : walk.backward())`).
  pass backward(call_site where = call_site::current()) noexcept { return pass(this, true, where); }

  /// @brief The number of windows.
  [[nodiscard]] std::size_t size() const noexcept { return state_.count; }
  /// @brief Elements per window (the last may have fewer).
  [[nodiscard]] std::size_t window_elements() const noexcept { return state_.per_window; }
  /// @brief Elements of each range.
  [[nodiscard]] std::size_t elements() const noexcept { return state_.elements; }
  /// @brief The walk's device.
  [[nodiscard]] int device_id() const noexcept { return state_.device; }
  /// @brief The walk's stream.
  [[nodiscard]] stream_ref stream() const noexcept { return stream_; }
  /// @brief Whether windows left behind go off the GPU (the working set does not fit, or
  /// window_eviction::always).
  [[nodiscard]] bool evicts() const noexcept { return evicts_; }
  /// @brief applied (windows move), empty (no elements), not_needed (an APU: nothing to move),
  /// unsupported (the device cannot migrate pages; windows are handed out, nothing moves).
  [[nodiscard]] hint_status status() const noexcept { return status_; }
  /// @brief Whether the walk keeps range r in host memory (mapped: written or read over the
  /// bus) rather than placing its windows.
  /// @throws unimem::invalid_argument when r is not one of the walk's ranges.
  template <class R, detail::if_range<R> = 0>
  [[nodiscard]] bool maps(R&& r) const {
    const auto v = to_view(r);
    const std::size_t slot = state_.find(v.data(), v.size_bytes());
    if (slot == detail::window_state::npos) detail::refuse_walk("the range is not one of the walk's");
    return state_.slots[slot].role == detail::window_role::mapped;
  }

  /// @brief A position in a pass: `*it` gives the window (its placement is waited for on the
  /// walk's stream), `++it` leaves it (its kernels are done on the walk's stream; the next
  /// placement and, with eviction, its move back are queued).
  class iterator {
   public:
    using value_type = window;               ///< A window.
    using difference_type = std::ptrdiff_t;  ///< Positions apart.
    using reference = window;                ///< Windows are values.
    using pointer = void;                    ///< No pointer to a window.

    /// @brief The window here; the walk's stream waits for its placement (once).
    /// @throws unimem::error for a failed runtime call.
    window operator*() const { return w_->enter(ordinal_, serial_); }
    /// @brief Leaves the window and goes to the next.
    /// @throws unimem::error for a failed runtime call.
    iterator& operator++() {
      w_->leave(ordinal_, serial_);
      ++ordinal_;
      return *this;
    }
    /// @brief The same position.
    friend bool operator==(const iterator& a, const iterator& b) noexcept {
      return a.ordinal_ == b.ordinal_;
    }
    /// @brief Different positions.
    friend bool operator!=(const iterator& a, const iterator& b) noexcept {
      return a.ordinal_ != b.ordinal_;
    }

   private:
    friend class basic_windows;
    iterator(basic_windows* w, std::size_t o, std::uint64_t serial) noexcept
        : w_(w), ordinal_(o), serial_(serial) {}
    basic_windows* w_;
    std::size_t ordinal_;
    std::uint64_t serial_;
  };

  /// @brief One pass, as a range for a range-for (backward()).
  class pass {
   public:
    /// @brief Starts the pass.
    iterator begin() { return w_->start(backward_, where_); }
    /// @brief Its end.
    iterator end() noexcept { return w_->end(); }

   private:
    friend class basic_windows;
    pass(basic_windows* w, bool backward, call_site where) noexcept
        : w_(w), backward_(backward), where_(where) {}
    basic_windows* w_;
    bool backward_;
    call_site where_;
  };

 private:
  static constexpr std::size_t none = ~std::size_t{0};

  // ---- set-up ----
  void set_up() {
    using detail::window_role;
    if (options_.depth < 1 || options_.depth > 64) detail::refuse_walk("depth must be 1 to 64");
    if (options_.transfer_streams < 1 || options_.transfer_streams > 16) {
      detail::refuse_walk("transfer_streams must be 1 to 16");
    }
    std::vector<detail::window_slot>& slots = state_.slots;
    state_.elements = slots[0].bytes / slots[0].element_size;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].bytes / slots[i].element_size != state_.elements) {
        detail::refuse_walk("its ranges must have the same number of elements (make one walk "
                            "per length)");
      }
      const auto lo = reinterpret_cast<std::uintptr_t>(slots[i].ptr);
      for (std::size_t j = 0; j < i; ++j) {
        const auto lo2 = reinterpret_cast<std::uintptr_t>(slots[j].ptr);
        if (slots[i].bytes != 0 && slots[j].bytes != 0 && lo < lo2 + slots[j].bytes &&
            lo2 < lo + slots[i].bytes) {
          detail::refuse_walk("two of its ranges overlap (tag each range once)");
        }
      }
    }
    live_ = true;
    if (state_.elements == 0) {
      status_ = hint_status::empty;
      return;
    }
    const int d = rt_.device_of(stream_, where_);
    state_.device = d;
    for (const detail::window_slot& s : slots) {
      if (s.record == nullptr && rt_.is_device_memory(s.ptr)) {
        detail::refuse_walk("a range is device memory, which is on the GPU already: walk "
                            "managed memory");
      }
    }
    status_ = rt_.placement(d, where_);
    slot_count_ = static_cast<std::size_t>(options_.depth) + 2;
    if (status_ == hint_status::applied) {
      decide(d);
      // Streams and events first: a walk whose making fails leaves no advice behind.
      recorded_.assign(3 * slot_count_ + 1, 0);
      owned_streams_ = options_.transfer_streams + (evicts_ ? 1 : 0);
      rt_.make(d, owned_streams_, static_cast<int>(recorded_.size()), where_);
      if (evicts_) {
        try {
          give_advice(d);
        } catch (...) {
          withdraw_advice();
          throw;
        }
      }
    } else {
      for (detail::window_slot& s : slots) s.role = window_role::mapped;  // nothing moves
    }
    state_.per_window = options_.window_elements != 0 ? options_.window_elements
                        : !evicts_
                            ? state_.elements
                            : detail::default_window_elements(slots, state_.elements,
                                                              rt_.link_bytes_per_second(d),
                                                              budget_.usable(), options_.depth);
    if (state_.per_window > state_.elements) state_.per_window = state_.elements;
    state_.count = (state_.elements + state_.per_window - 1) / state_.per_window;
    state_.records = std::vector<detail::placement_record>(slots.size() * state_.count);
    bool moves_back = false;
    for (const detail::window_slot& s : slots) moves_back |= s.role == window_role::moved_back;
    plan_ = detail::window_plan(
        {state_.count, options_.depth, options_.transfer_streams, evicts_, moves_back});
    if (status_ != hint_status::applied) return;  // nothing moves: the plan numbers the windows
    const std::uint64_t mapped_stamp = detail::placement_stamp::make(d, true, rt_.now());
    for (std::size_t i = 0; i < slots.size(); ++i) {
      // Windows of a buffer placed whole start as placed; mapped ranges as mapped (tags of
      // them then move nothing).
      const std::uint64_t whole = slots[i].record != nullptr ? slots[i].record->stamp() : 0;
      const bool whole_here = detail::placement_stamp::device_of(whole) == d;
      for (std::size_t w = 0; w < state_.count; ++w) {
        detail::placement_record* r = state_.record(i, w);
        if (slots[i].role == window_role::mapped) {
          r->set(mapped_stamp);
        } else if (whole_here && r != slots[i].record) {
          r->set(whole);
        }
      }
    }

  }

  /// Which ranges are mapped (by their intent), the budget, and whether the walk evicts.
  void decide(int d) {
    using detail::window_role;
    std::size_t working = 0, resident = 0;
    for (std::size_t i = 0; i < state_.slots.size(); ++i) {
      detail::window_slot& s = state_.slots[i];
      const bool mapped = s.how == detail::intent_choice::map ||
                          (s.how == detail::intent_choice::follow &&
                           rt_.is_mapped(state_.whole(i), where_));
      s.role = mapped ? window_role::mapped : window_role::moved;
      if (mapped) continue;
      working += s.bytes;
      const std::uint64_t w = s.record != nullptr ? s.record->stamp() : 0;
      if (detail::placement_stamp::device_of(w) == d && !detail::placement_stamp::mapped_of(w)) {
        resident += s.bytes;
      }
    }
    budget_ = rt_.budget(d, options_.reserve_bytes, where_);
    budget_.free_memory += resident;  // what the walk's own ranges hold is the walk's to move
    const bool fits = budget_.fits(working);
    if (working >= detail::ledger::noted_min_bytes) {
      detail::ledger::placed_range(d, working, budget_.free_memory);
    }
    evicts_ = options_.eviction == window_eviction::always ||
              (options_.eviction == window_eviction::automatic && !fits);
  }
  /// A walk that evicts, by tag: `in` read-mostly (a copy the driver drops), `out` mapped
  /// (written over the bus) unless its intent is move, the rest moved back; memory that takes
  /// no advice moved back too. Buffers forget their placement: parts of them will move.
  void give_advice(int d) {
    using detail::window_role;
    for (std::size_t i = 0; i < state_.slots.size(); ++i) {
      detail::window_slot& s = state_.slots[i];
      if (s.role == window_role::mapped) continue;
      const detail::placement_range all = state_.whole(i);
      if (s.record != nullptr) s.record->forget();  // parts of it will move
      if (s.mode == access_mode::in) {
        if (rt_.is_read_mostly(all, where_)) {
          s.role = window_role::duplicated;
        } else if (rt_.read_mostly(all, true, where_)) {
          s.role = window_role::duplicated;
          s.gave_read_mostly = true;
        } else {
          s.role = window_role::moved_back;
        }
      } else if (s.mode == access_mode::out && s.how != detail::intent_choice::move &&
                 rt_.map(all, d, where_)) {
        s.role = window_role::mapped;
        s.gave_mapping = true;
      } else {
        s.role = window_role::moved_back;
      }
    }
  }
  /// Withdraws the advice the walk gave; never throws (advice that stays is slower, not wrong).
  void withdraw_advice() noexcept {
    for (std::size_t i = 0; i < state_.slots.size(); ++i) {
      detail::window_slot& s = state_.slots[i];
      try {
        if (s.gave_mapping) rt_.unmap(state_.whole(i), state_.device, where_);
        if (s.gave_read_mostly) (void)rt_.read_mostly(state_.whole(i), false, where_);
      } catch (...) {
      }
      s.gave_mapping = s.gave_read_mostly = false;
    }
  }

  // ---- passes ----
  iterator start(bool backward, call_site where) {
    check_live();
    serial_ += 1;
    pass_where_ = where;
    entered_ = none;
    if (state_.count == 0) return end();
    ops_.clear();
    plan_.begin(backward, ops_);
    if (status_ == hint_status::applied) run();
    return iterator(this, 0, serial_);
  }
  void check_live() const {
    if (!live_) detail::refuse_walk("the walk was moved from");
  }
  void check_pass(std::uint64_t serial) const {
    check_live();
    if (serial != serial_) {
      detail::refuse_walk("an iterator of a pass that has ended (begin() started another, or an "
                          "error ended it)");
    }
  }
  window enter(std::size_t o, std::uint64_t serial) {
    check_pass(serial);
    const window here(&state_, plan_.window_at(o));
    if (entered_ == o) return here;
    entered_ = o;
    if (status_ != hint_status::applied) return here;
    ops_.clear();
    plan_.enter(o, ops_);
    run();
    return here;
  }
  void leave(std::size_t o, std::uint64_t serial) {
    if (entered_ != o) (void)enter(o, serial);
    check_pass(serial);
    entered_ = none;
    if (status_ != hint_status::applied) return;
    ops_.clear();
    plan_.leave(o, ops_);
    run();
    if (o + 1 == state_.count && !evicts_) settle();
  }

  /// Runs ops_; a failure ends the pass (its iterators refuse to go on) and throws, naming the
  /// loop's line.
  void run() {
    try {
      bool queued = false;  // by the last place
      for (const detail::window_op& op : ops_) apply(op, queued);
    } catch (...) {
      serial_ += 1;
      throw;
    }
  }
  std::size_t event_index(detail::window_op::event e, std::size_t w) const noexcept {
    using ev = detail::window_op::event;
    const std::size_t k = w % slot_count_;
    switch (e) {
      case ev::ready: return k;
      case ev::done: return slot_count_ + k;
      case ev::evicted: return 2 * slot_count_ + k;
      default: return 3 * slot_count_;
    }
  }
  stream_ref stream_of(int id) const noexcept { return id == 0 ? stream_ : rt_.stream(id - 1); }
  void apply(const detail::window_op& op, bool& queued) {
    using k = detail::window_op::kind;
    using detail::window_role;
    const int d = state_.device;
    switch (op.what) {
      case k::place:
        queued = false;
        for (std::size_t i = 0; i < state_.slots.size(); ++i) {
          if (!state_.slots[i].placed()) continue;
          queued = rt_.place(state_.range(i, op.window), d, stream_of(op.stream), pass_where_) ||
                   queued;
        }
        break;
      case k::move_back:
      case k::release:
        for (std::size_t i = 0; i < state_.slots.size(); ++i) {
          const window_role role = state_.slots[i].role;
          if (role == window_role::moved_back && op.what == k::move_back) {
            rt_.move_to_host(state_.range(i, op.window), d, stream_of(op.stream), pass_where_);
          }
          if (role == window_role::moved_back || role == window_role::duplicated) {
            state_.record(i, op.window)->forget();  // the driver may drop a copy at any time
          }
        }
        break;
      case k::record: {
        const std::size_t e = event_index(op.ev, op.window);
        if (op.ev == detail::window_op::event::ready && !queued) {
          recorded_[e] = 0;  // nothing to wait for
          break;
        }
        rt_.record(rt_.event(static_cast<int>(e)), stream_of(op.stream), pass_where_);
        recorded_[e] = op.window + 1;
        break;
      }
      case k::wait: {
        const std::size_t e = event_index(op.ev, op.window);
        if (recorded_[e] != op.window + 1) break;  // never recorded: nothing was queued
        rt_.wait(stream_of(op.stream), rt_.event(static_cast<int>(e)), pass_where_);
        break;
      }
    }
  }
  /// At the end of a pass that keeps its windows: a buffer all of whose windows hold on the GPU
  /// is recorded there whole (as of its oldest window), so that tags over it move nothing.
  void settle() noexcept {
    if (state_.count < 2) return;
    for (std::size_t i = 0; i < state_.slots.size(); ++i) {
      detail::window_slot& s = state_.slots[i];
      if (s.record == nullptr || s.role != detail::window_role::moved) continue;
      std::uint64_t oldest = 0;
      bool all = true;
      for (std::size_t w = 0; w < state_.count && all; ++w) {
        const std::uint64_t st = state_.record(i, w)->stamp();
        all = detail::placement_stamp::device_of(st) == state_.device &&
              !detail::placement_stamp::mapped_of(st);
        if (all && (oldest == 0 || detail::placement_stamp::entry_of(st) <
                                       detail::placement_stamp::entry_of(oldest))) {
          oldest = st;
        }
      }
      if (all) s.record->set(oldest);
    }
  }
  /// The walk's end: its streams ordered before its stream, its advice withdrawn; never throws.
  void finish() noexcept {
    if (!live_) return;
    live_ = false;
    if (status_ == hint_status::applied && !recorded_.empty()) {
      const auto e = rt_.event(static_cast<int>(3 * slot_count_));
      for (int i = 0; i < owned_streams_; ++i) {
        try {
          rt_.record(e, rt_.stream(i), where_);
          rt_.wait(stream_, e, where_);
        } catch (...) {  // a destructor never throws; the streams' work still completes
        }
      }
    }
    withdraw_advice();
  }

  Runtime rt_;
  stream_ref stream_;
  call_site where_;
  window_options options_;
  detail::window_state state_;
  detail::window_plan plan_;
  std::vector<detail::window_op> ops_;
  std::vector<std::size_t> recorded_;  // per event: the window it was last recorded for, + 1
  gpu_budget budget_;
  std::size_t slot_count_ = 1;
  int owned_streams_ = 0;
  hint_status status_ = hint_status::empty;
  bool evicts_ = false;
  bool live_ = false;
  std::uint64_t serial_ = 0;
  std::size_t entered_ = none;
  call_site pass_where_{};
};

/// @brief The walk programs use: basic_windows over the runtime (see basic_windows).
/// @code
///   unimem::windows walk(s, unimem::in(x), unimem::inout(y));   // y = f(x, y), x and y huge
///   for (int step = 0; step < steps; ++step) {
///     for (const unimem::window& w : walk) {                     // forward, then the next pass
///       unimem::launch(f, unimem::grid_for(w.size()).on(s), w(x), w(y), w.size());
///     }
///   }
/// @endcode
using windows = basic_windows<detail::window_runtime>;

UNIMEM_END_NAMESPACE
