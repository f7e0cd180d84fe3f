// Per-op timing for pd-bench's model mode and the --profile of pd-infer and pd-train. While profiling
// is on, an OpObserver (pd/ops/op_observer.h, the hook every generated op opens) times each op call on
// the profiling thread. Times are exclusive: an op that calls other ops (casts, grad formulas) is
// charged only for its own work, so that the per-op times add up.
//
//   pd::profiler::set_profiling(true);
//   net.forward(...);                       // every op call records (name, ns)
//   for (auto& s : pd::profiler::profile_snapshot()) ...
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace pd::profiler {

namespace detail {
extern std::atomic<bool> g_profiling;
struct Frame;
Frame* push_frame(const char* name);  // nullptr when nesting is too deep to record
void pop_frame(Frame* frame);
}  // namespace detail


struct OpStat {
  std::string name;
  int64_t calls = 0;
  int64_t ns = 0;  // exclusive time, timer overhead not yet subtracted
};

// Turns profiling on or off for the calling thread (the one that runs the ops).
void set_profiling(bool enabled);
bool profiling();
void profile_reset();
std::vector<OpStat> profile_snapshot();  // summed over threads, by name
// Nanoseconds one profiled, empty op scope costs (median of many), to subtract per call.
double timer_overhead_ns();

}  // namespace pd::profiler
