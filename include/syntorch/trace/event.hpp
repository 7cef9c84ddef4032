#pragma once
// The trace event model that every simulator layer emits into and every trace format writes out.
//
// A trace is a set of processes (one per rank or device, identified by pid), each holding named
// tracks: thread-like tracks (pid + tid) that carry slices, instants and flow endpoints, and
// counter tracks (a name and a unit) that carry sampled values. Events refer to tracks by TrackId,
// an index the Recorder hands out; a Sink always learns a track's description (TrackInfo) before
// the first event on it. Times are integer picoseconds.
//
// Event structs are views: names, categories and args point into the caller's storage and are
// valid only for the duration of the Sink call that receives them. Emitting allocates nothing.

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace syntorch::trace {

using TimePs = std::uint64_t;  // simulated time, picoseconds

inline constexpr TimePs kPsPerUs = 1'000'000;

// The value of one key/value argument: a signed or unsigned 64-bit integer, a double, a bool or
// a string (a view; the caller keeps the characters alive for the duration of the emit call).
// Implicit constructors by design, so that {"bytes", 4096} or {"kernel", name} just work.
class ArgValue {
 public:
  enum class Type : std::uint8_t { kInt64, kUint64, kDouble, kBool, kString };

  constexpr ArgValue(bool v) noexcept : type_(Type::kBool) { u_.b = v; }
  template <typename T>
    requires(std::is_integral_v<T> && std::is_signed_v<T>)
  constexpr ArgValue(T v) noexcept : type_(Type::kInt64) {
    u_.i = static_cast<std::int64_t>(v);
  }
  template <typename T>
    requires(std::is_integral_v<T> && std::is_unsigned_v<T> && !std::is_same_v<T, bool>)
  constexpr ArgValue(T v) noexcept : type_(Type::kUint64) {
    u_.u = static_cast<std::uint64_t>(v);
  }
  template <typename T>
    requires std::is_floating_point_v<T>
  constexpr ArgValue(T v) noexcept : type_(Type::kDouble) {
    u_.d = static_cast<double>(v);
  }
  constexpr ArgValue(std::string_view v) noexcept : type_(Type::kString) {
    u_.s.data = v.data();
    u_.s.size = v.size();
  }
  constexpr ArgValue(const char* v) noexcept : ArgValue(std::string_view(v)) {}
  ArgValue(const std::string& v) noexcept : ArgValue(std::string_view(v)) {}

  constexpr Type type() const noexcept { return type_; }
  constexpr std::int64_t as_int64() const noexcept { return u_.i; }
  constexpr std::uint64_t as_uint64() const noexcept { return u_.u; }
  constexpr double as_double() const noexcept { return u_.d; }
  constexpr bool as_bool() const noexcept { return u_.b; }
  constexpr std::string_view as_string() const noexcept { return {u_.s.data, u_.s.size}; }

 private:
  struct StringRef {
    const char* data;
    std::size_t size;
  };
  union Storage {
    std::int64_t i;
    std::uint64_t u;
    double d;
    bool b;
    StringRef s;
  };
  Storage u_{};
  Type type_;
};

// One key/value argument of a span or instant, e.g. {"bytes", 4096} or {"kernel", "gemm_128x128"}.
struct Arg {
  std::string_view key;
  ArgValue value;
};

// Names a track; an index into the Recorder's track table. Default-constructed ids name nothing.
struct TrackId {
  static constexpr std::uint32_t kInvalid = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t index = kInvalid;

  constexpr bool valid() const noexcept { return index != kInvalid; }
  friend constexpr bool operator==(TrackId, TrackId) = default;
};

enum class TrackKind : std::uint8_t {
  kThread,   // slices, instants and flow endpoints, like an OS thread's timeline
  kCounter,  // a series of sampled values
};

// A process: one rank or device. Sinks order processes by sort_index (smaller first).
// A rank's process id: pid = rank + 1, since trace viewers read pid 0 as the idle task
// ("swapper") and fold it away. Writers that speak of ranks (Chakra files, CSV rows) map back.
constexpr std::int32_t pid_of_rank(int rank) { return rank + 1; }
constexpr int rank_of_pid(std::int32_t pid) { return pid - 1; }

struct ProcessInfo {
  std::int32_t pid = 0;
  std::string name;
  std::int32_t sort_index = 0;
};

// A track inside a process. For thread tracks tid is unique within the pid and unit is empty;
// counter tracks have tid 0, a name unique within the pid, and a unit (may be empty).
struct TrackInfo {
  TrackId id;
  TrackKind kind = TrackKind::kThread;
  std::int32_t pid = 0;
  std::int32_t tid = 0;
  std::string name;
  std::string unit;
  std::int32_t sort_index = 0;  // order among the tracks of its process (smaller first)
};

// A complete slice [begin_ps, end_ps] on a thread track; slices on one track nest.
struct SpanEvent {
  TrackId track;
  std::string_view name;
  std::string_view category;
  TimePs begin_ps = 0;
  TimePs end_ps = 0;
  std::span<const Arg> args;
};

// A point event on a thread track.
struct InstantEvent {
  TrackId track;
  std::string_view name;
  std::string_view category;
  TimePs ts_ps = 0;
  std::span<const Arg> args;
};

// One sample of a counter track; the value holds from ts_ps until the next sample.
struct CounterEvent {
  TrackId track;
  TimePs ts_ps = 0;
  double value = 0;
};

enum class FlowPhase : std::uint8_t { kBegin, kStep, kEnd };

// One endpoint of a flow arrow (e.g. an op to the kernels it launched). Endpoints with the same
// flow_id form one flow; each binds to the slice enclosing ts_ps on its track.
struct FlowEvent {
  std::uint64_t flow_id = 0;
  FlowPhase phase = FlowPhase::kBegin;
  TrackId track;
  TimePs ts_ps = 0;
  std::string_view name;
  std::string_view category;
};

}  // namespace syntorch::trace
