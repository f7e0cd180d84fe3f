#include "step_profile.h"

#include <fmt/format.h>

#include <algorithm>

namespace pd::train {
namespace {

constexpr const char* kPhaseNames[] = {"data (waiting for the batch)", "forward + loss", "backward",
                                       "optimizer (+ clipping)", "other (bookkeeping, progress, checkpoints)"};
constexpr size_t kTopOps = 12;

}  // namespace

StepProfile::StepProfile(bool enabled, bool per_op) : enabled_(enabled), per_op_(enabled && per_op) {}

StepProfile::~StepProfile() {
  if (per_op_) profiler::set_profiling(false);
}

void StepProfile::begin_epoch() {
  if (!enabled_) return;
  ns_ = {};
  steps_ = 0;
  alloc_at_start_ = cpu_allocator().stats();
  if (per_op_) {
    profiler::profile_reset();
    profiler::set_profiling(true);
  }
  last_ = Clock::now();
}

void StepProfile::end_epoch() {
  if (!enabled_) return;
  alloc_at_end_ = cpu_allocator().stats();
  if (!per_op_) return;
  profiler::set_profiling(false);
  ops_ = profiler::profile_snapshot();
}

std::string StepProfile::report(int64_t epoch) const {
  if (!enabled_ || steps_ == 0) return "";
  int64_t total_ns = 0;
  for (int64_t ns : ns_) total_ns += ns;
  const double steps = static_cast<double>(steps_);
  const double step_ms = total_ns / 1e6 / steps;
  auto share = [&](double ns) { return total_ns > 0 ? 100.0 * ns / static_cast<double>(total_ns) : 0.0; };
  std::string out = fmt::format("profile of epoch {}: {} steps, {:.3f} ms per step\n", epoch, steps_, step_ms);
  out += fmt::format("  {:<44} {:>10} {:>7}\n", "phase", "ms/step", "share");
  for (size_t i = 0; i < ns_.size(); ++i)
    out += fmt::format("  {:<44} {:>10.4f} {:>6.1f}%\n", kPhaseNames[i], ns_[i] / 1e6 / steps, share(ns_[i]));
  if (per_op_) {
    std::vector<profiler::OpStat> ops = ops_;
    const double overhead = profiler::timer_overhead_ns();
    std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.ns > b.ns; });
    out += fmt::format("  {:<44} {:>10} {:>7} {:>10}\n", "op (exclusive time, data thread excluded)", "ms/step", "share",
                       "calls/step");
    for (size_t i = 0; i < std::min(kTopOps, ops.size()); ++i) {
      const double ns = std::max(0.0, static_cast<double>(ops[i].ns) - overhead * static_cast<double>(ops[i].calls));
      out += fmt::format("  {:<44} {:>10.4f} {:>6.1f}% {:>10.1f}\n", ops[i].name, ns / 1e6 / steps, share(ns),
                         ops[i].calls / steps);
    }
    if (ops.size() > kTopOps) out += fmt::format("  ({} more ops)\n", ops.size() - kTopOps);
  } else {
    out += "  (per-op times not collected: the NaN/Inf check holds the op hook)\n";
  }
  const AllocatorStats& now = alloc_at_end_;
  const int64_t hits = now.cache_hits - alloc_at_start_.cache_hits;
  const int64_t misses = now.system_allocations - alloc_at_start_.system_allocations;
  const int64_t all = hits + misses;
  out += fmt::format("  allocator: {:.1f} allocations per step, {:.2f}% from the cache, {} reached the system allocator; "
                     "peak {:.1f} MiB in use, {:.1f} MiB held (in use + cached)\n",
                     all / steps, all > 0 ? 100.0 * hits / static_cast<double>(all) : 100.0, misses,
                     now.peak_allocated_bytes / 1048576.0, now.peak_held_bytes / 1048576.0);
  return out;
}

}  // namespace pd::train
