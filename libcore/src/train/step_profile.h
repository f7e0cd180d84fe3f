// pd-train --profile: where a training step's time goes. Each step is split into phases (waiting for
// the batch, forward + loss, backward with the gradient allreduce, the optimizer with clipping, and the
// rest: bookkeeping, progress, checkpoints), the ops' exclusive times come from the op profiler
// (pd/ops/op_profiler.h), and the caching allocator says how many allocations it served from its cache.
// Printed after each epoch, the way PyTorch's profiler prints key_averages().
//
//   StepProfile prof(true);
//   prof.begin_epoch();
//   for (...) { prof.mark(Phase::data); ...; prof.mark(Phase::forward); ...; prof.end_step(); }
//   prof.end_epoch();
//   fmt::print(stderr, "{}", prof.report(epoch));
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <string>

#include <vector>

#include "pd/ops/op_profiler.h"
#include "pd/core/allocator.h"

namespace pd::train {

enum class Phase { data, forward, backward, optimizer, other };

class StepProfile {
 public:
  // With per_op false (another op observer is installed, e.g. --check-nan-inf) only phases are timed.
  StepProfile(bool enabled, bool per_op);
  ~StepProfile();
  StepProfile(const StepProfile&) = delete;
  StepProfile& operator=(const StepProfile&) = delete;

  bool enabled() const { return enabled_; }
  void begin_epoch();
  // The time since the previous mark (or since the step began) was spent in `phase`.
  void mark(Phase phase) {
    if (!enabled_) return;
    const auto now = Clock::now();
    ns_[static_cast<int>(phase)] += std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_).count();
    last_ = now;
  }
  void end_step() {
    mark(Phase::other);
    ++steps_;
  }
  // Stops the op profiler, so that evaluation is not counted.
  void end_epoch();
  // The epoch's table: phases, the ops with the most time, the allocator's cache hits.
  std::string report(int64_t epoch) const;

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_, per_op_;
  std::array<int64_t, 5> ns_{};
  int64_t steps_ = 0;
  Clock::time_point last_;
  AllocatorStats alloc_at_start_, alloc_at_end_;
  std::vector<profiler::OpStat> ops_;
};

}  // namespace pd::train
