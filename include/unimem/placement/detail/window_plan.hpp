// unimem (internal, runtime-free): the schedule of a walk through windows (windows.hpp) as a pure
// computation: which windows are placed on the GPU, moved back or let go, on which stream, and
// which events order them, step by step. windows.hpp runs the operations through the runtime;
// the tests read them without a GPU (tests/test_window.cpp).
//
// Streams: 0 is the walk's own (the user's kernels run there), 1..T carry the placements (window
// o of a pass on 1 + o % T, so that consecutive windows move beside each other), T + 1 the moves
// back to the host. Each window has three events: `ready` (its placement is done: the walk's
// stream waits for it before the window's kernels), `done` (its kernels are done: recorded on
// the walk's stream when the loop leaves it; the move back waits for it) and `evicted` (its move
// back is done: the placement two windows later waits for it, so that at most depth + 1 windows
// are on the GPU at once, plus the one moving out). No operation waits on the host.
#pragma once

#include "../../core/config.hpp"

#include <cstddef>
#include <vector>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// One operation of a walk.
struct window_op {
  enum class kind : unsigned char {
    place,      ///< the window's placed ranges to the GPU, on `stream`
    move_back,  ///< its written ranges to the host on `stream`, the rest let go
    release,    ///< let go without moving anything (the driver drops read-only copies)
    record,     ///< record event `ev` of `window` on `stream`
    wait,       ///< `stream` waits for event `ev` of `window`
  };
  enum class event : unsigned char { none, ready, done, evicted, begun };
  kind what;
  std::size_t window;
  int stream;
  event ev;

  friend bool operator==(const window_op& a, const window_op& b) noexcept {
    return a.what == b.what && a.window == b.window && a.stream == b.stream && a.ev == b.ev;
  }
  friend bool operator!=(const window_op& a, const window_op& b) noexcept { return !(a == b); }
};

/// The shape of a walk.
struct window_geometry {
  std::size_t count = 0;     ///< windows
  int depth = 2;             ///< windows placed ahead of the one the kernels work on (>= 1)
  int transfer_streams = 2;  ///< streams that place windows (>= 1)
  bool evicts = false;       ///< the GPU's memory is short: each window is let go when left
  bool moves_back = false;   ///< (evicts) some range is moved back to the host, not let go
};

/// The schedule. begin() starts a pass (forward or backward); for the pass's o-th window,
/// enter(o) before its kernels and leave(o) after them; each appends its operations to `ops`.
class window_plan {
 public:
  static constexpr int walk_stream = 0;

  window_plan() = default;
  explicit window_plan(const window_geometry& g) : g_(g), state_(g.count, 0) {
    if (g_.depth < 1) g_.depth = 1;
    if (g_.transfer_streams < 1) g_.transfer_streams = 1;
    if (!g_.evicts) g_.moves_back = false;
  }

  [[nodiscard]] const window_geometry& geometry() const noexcept { return g_; }
  /// The stream of the moves back.
  [[nodiscard]] int evict_stream() const noexcept { return g_.transfer_streams + 1; }
  /// The stream that places the pass's o-th window.
  [[nodiscard]] int transfer_stream(std::size_t o) const noexcept {
    return 1 + static_cast<int>(o % static_cast<std::size_t>(g_.transfer_streams));
  }
  /// Whether this pass walks from the last window to the first.
  [[nodiscard]] bool backward() const noexcept { return backward_; }
  /// The window (0 is the lowest addresses) that is the o-th of this pass.
  [[nodiscard]] std::size_t window_at(std::size_t o) const noexcept {
    return backward_ ? g_.count - 1 - o : o;
  }
  /// Whether window w is on the GPU by this plan's operations (placed and not let go).
  [[nodiscard]] bool placed(std::size_t w) const noexcept {
    return w < state_.size() && (state_[w] & placed_flag) != 0;
  }

  /// A new pass. With evictions, windows a pass left early (placed ahead, never left) that are
  /// not among the first `depth` of this one are moved back first, once the walk's stream has
  /// reached this point; then the first `depth` windows are placed, after the last move back
  /// (of the pass before or of these) has made room.
  void begin(bool backward, std::vector<window_op>& ops) {
    backward_ = backward;
    for (unsigned char& s : state_) s = static_cast<unsigned char>(s & placed_flag);
    const std::size_t ahead = first_placed();
    std::size_t& last = last_moved_;
    bool stale = false;
    if (g_.evicts) {
      for (std::size_t o = ahead; o < g_.count; ++o) {
        const std::size_t w = window_at(o);
        if (!placed(w)) continue;
        if (g_.moves_back && !stale) {
          ops.push_back({window_op::kind::record, 0, walk_stream, window_op::event::begun});
          ops.push_back({window_op::kind::wait, 0, evict_stream(), window_op::event::begun});
          stale = true;
        }
        let_go(w, ops);
      }
    }
    for (std::size_t o = 0; o < ahead; ++o) {
      if (last != none) {  // the room they leave first
        ops.push_back({window_op::kind::wait, last, transfer_stream(o), window_op::event::evicted});
      }
      place(o, ops);
    }
  }
  /// Before the kernels of the pass's o-th window: the walk's stream waits for its placement.
  void enter(std::size_t o, std::vector<window_op>& ops) {
    const std::size_t w = window_at(o);
    if ((state_[w] & ready_flag) != 0) {
      ops.push_back({window_op::kind::wait, w, walk_stream, window_op::event::ready});
    }
  }
  /// After them: with evictions the window is moved back once its kernels are done (or let
  /// go); the window `depth` further is placed, after the move back before this one (of the
  /// window before, or of the pass before) has made room;
  /// the last window of a pass makes the walk's stream wait for the last move back, so that what
  /// follows the loop on it comes after everything the walk queued.
  void leave(std::size_t o, std::vector<window_op>& ops) {
    const std::size_t w = window_at(o);
    const std::size_t before = last_moved_;  // the move back before this window's
    if (g_.evicts) {
      if (g_.moves_back) {
        ops.push_back({window_op::kind::record, w, walk_stream, window_op::event::done});
        ops.push_back({window_op::kind::wait, w, evict_stream(), window_op::event::done});
      }
      let_go(w, ops);
    }
    const std::size_t next = o + static_cast<std::size_t>(g_.depth);
    if (next < g_.count) {
      if (g_.moves_back && before != none) {
        ops.push_back({window_op::kind::wait, before, transfer_stream(next),
                       window_op::event::evicted});
      }
      place(next, ops);
    }
    if (o + 1 == g_.count && g_.moves_back) {
      ops.push_back({window_op::kind::wait, w, walk_stream, window_op::event::evicted});
    }
  }

 private:
  static constexpr std::size_t none = ~std::size_t{0};
  static constexpr unsigned char placed_flag = 1;
  static constexpr unsigned char ready_flag = 2;

  std::size_t first_placed() const noexcept {
    const std::size_t d = static_cast<std::size_t>(g_.depth);
    return d < g_.count ? d : g_.count;
  }
  void place(std::size_t o, std::vector<window_op>& ops) {
    const std::size_t w = window_at(o);
    const int t = transfer_stream(o);
    ops.push_back({window_op::kind::place, w, t, window_op::event::none});
    ops.push_back({window_op::kind::record, w, t, window_op::event::ready});
    state_[w] = placed_flag | ready_flag;
  }
  /// Moves window w back on the evict stream (recording `evicted`), or lets it go.
  void let_go(std::size_t w, std::vector<window_op>& ops) {
    if (g_.moves_back) {
      ops.push_back({window_op::kind::move_back, w, evict_stream(), window_op::event::none});
      ops.push_back({window_op::kind::record, w, evict_stream(), window_op::event::evicted});
      last_moved_ = w;
    } else {
      ops.push_back({window_op::kind::release, w, -1, window_op::event::none});
    }
    state_[w] = 0;
  }

  window_geometry g_;
  bool backward_ = false;
  std::size_t last_moved_ = none;     // the window of the last move back (its event: evicted)
  std::vector<unsigned char> state_;  // per window: placed_flag, ready_flag (this pass)
};

}  // namespace detail
UNIMEM_END_NAMESPACE
