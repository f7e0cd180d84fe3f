// Learning-rate schedules: a pure function of the global step, so a resumed run only needs the step.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "pd/train/optimizer.h"

namespace pd::train {
namespace {

// The schedule without warmup.
double scheduled(const ScheduleConfig& c, int64_t step) {
  switch (c.kind) {
    case ScheduleKind::Constant: return c.base_lr;
    case ScheduleKind::Step: return c.base_lr * std::pow(c.gamma, static_cast<double>(step / c.step_size));
    case ScheduleKind::MultiStep: {
      auto passed = std::upper_bound(c.milestones.begin(), c.milestones.end(), step) - c.milestones.begin();
      return c.base_lr * std::pow(c.gamma, static_cast<double>(passed));
    }
    case ScheduleKind::Cosine: {
      if (step >= c.total_steps) return c.min_lr;
      double progress = static_cast<double>(step) / static_cast<double>(c.total_steps);
      return c.min_lr + (c.base_lr - c.min_lr) * (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
    }
  }
  return c.base_lr;
}

}  // namespace

LrSchedule::LrSchedule(ScheduleConfig config) : config_(std::move(config)) {
  const ScheduleConfig& c = config_;
  PD_CHECK(std::isfinite(c.base_lr) && c.base_lr >= 0, ErrorCode::kInvalidArgument,
           "LrSchedule: base_lr must be finite and >= 0, but received {}", c.base_lr);
  PD_CHECK(c.warmup_steps >= 0, ErrorCode::kInvalidArgument,
           "LrSchedule: warmup_steps must be >= 0, but received {}", c.warmup_steps);
  PD_CHECK(c.warmup_start_factor >= 0 && c.warmup_start_factor <= 1, ErrorCode::kInvalidArgument,
           "LrSchedule: warmup_start_factor must be in [0, 1], but received {}", c.warmup_start_factor);
  switch (c.kind) {
    case ScheduleKind::Constant: break;
    case ScheduleKind::Step:
      PD_CHECK(c.step_size > 0, ErrorCode::kInvalidArgument,
               "LrSchedule: Step schedule needs step_size > 0, but received {}", c.step_size);
      PD_CHECK(std::isfinite(c.gamma) && c.gamma >= 0, ErrorCode::kInvalidArgument,
               "LrSchedule: gamma must be finite and >= 0, but received {}", c.gamma);
      break;
    case ScheduleKind::MultiStep:
      PD_CHECK(std::isfinite(c.gamma) && c.gamma >= 0, ErrorCode::kInvalidArgument,
               "LrSchedule: gamma must be finite and >= 0, but received {}", c.gamma);
      for (size_t i = 0; i < c.milestones.size(); ++i) {
        PD_CHECK(c.milestones[i] >= 0, ErrorCode::kInvalidArgument,
                 "LrSchedule: MultiStep milestones must be >= 0, but milestone {} is {}", i, c.milestones[i]);
        // upper_bound in lr() relies on the order; an unsorted list is almost surely a typo.
        PD_CHECK(i == 0 || c.milestones[i - 1] < c.milestones[i], ErrorCode::kInvalidArgument,
                 "LrSchedule: MultiStep milestones must be strictly increasing, but milestone {} ({}) follows {}",
                 i, c.milestones[i], c.milestones[i - 1]);
      }
      break;
    case ScheduleKind::Cosine:
      PD_CHECK(c.total_steps > 0, ErrorCode::kInvalidArgument,
               "LrSchedule: Cosine schedule needs total_steps > 0, but received {}", c.total_steps);
      PD_CHECK(std::isfinite(c.min_lr) && c.min_lr >= 0, ErrorCode::kInvalidArgument,
               "LrSchedule: min_lr must be finite and >= 0, but received {}", c.min_lr);
      break;
  }
}

double LrSchedule::lr(int64_t step) const {
  PD_CHECK(step >= 0, ErrorCode::kInvalidArgument, "LrSchedule::lr: step must be >= 0, but received {}", step);
  double lr = scheduled(config_, step);
  if (step < config_.warmup_steps) {
    // Linear ramp of the factor from warmup_start_factor (step 0) to 1 (step warmup_steps), applied to
    // the scheduled lr so that the curve is continuous where warmup ends.
    double f = config_.warmup_start_factor +
               (1.0 - config_.warmup_start_factor) * static_cast<double>(step) / static_cast<double>(config_.warmup_steps);
    lr *= f;
  }
  return lr;
}

}  // namespace pd::train
