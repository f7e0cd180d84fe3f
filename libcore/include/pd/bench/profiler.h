// Per-op timing for pd-bench's model mode. The generated op API opens one OpTimer per op call; it
// costs one relaxed atomic load while profiling is off. Times are exclusive: an op that calls other
// ops (casts, grad formulas) is charged only for its own work, so that the per-op times add up.
//
//   pd::bench::set_profiling(true);
//   net.forward(...);                       // every op call records (name, ns)
//   for (auto& s : pd::bench::profile_snapshot()) ...
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace pd::bench {

namespace detail {
extern std::atomic<bool> g_profiling;
struct Frame;
Frame* push_frame(const char* name);
void pop_frame(Frame* frame);
}  // namespace detail

class OpTimer {
 public:
  // `name` must outlive the program (the generated code passes its static kOp).
  explicit OpTimer(const char* name)
      : frame_(detail::g_profiling.load(std::memory_order_relaxed) ? detail::push_frame(name) : nullptr) {}
  ~OpTimer() {
    if (frame_) detail::pop_frame(frame_);
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  detail::Frame* frame_;
};

struct OpStat {
  std::string name;
  int64_t calls = 0;
  int64_t ns = 0;  // exclusive time, timer overhead not yet subtracted
};

void set_profiling(bool enabled);
bool profiling();
void profile_reset();
std::vector<OpStat> profile_snapshot();  // summed over threads, by name
// Nanoseconds one enabled, empty OpTimer scope costs (median of many), to subtract per call.
double timer_overhead_ns();

}  // namespace pd::bench
