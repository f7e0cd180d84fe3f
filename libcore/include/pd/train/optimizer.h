// Optimizers, learning-rate schedules and gradient clipping.
//
//   pd::train::Optimizer opt(params, {.kind = pd::train::OptimizerKind::AdamW, .weight_decay = 0.01});
//   pd::train::LrSchedule sched({.kind = pd::train::ScheduleKind::Cosine, .base_lr = 2e-3, .total_steps = n});
//   pd::train::clip_grad_norm(params, 1.0);
//   opt.step(sched.lr(step));
#pragma once
#include <map>
#include <string>
#include <vector>

#include "pd/core/tensor.h"
#include "pd/model/train_config.h"

namespace pd::train {

class Optimizer {
 public:
  Optimizer(std::vector<NamedParam> params, OptimizerConfig config);
  // Updates every parameter that has a gradient, in place, under no-grad; then clears the gradients.
  void step(double lr);
  void zero_grad();
  // Optimizer state (moments, step count) by name, for checkpoints. load_state checks names and shapes.
  std::map<std::string, Tensor> state() const;
  void load_state(const std::map<std::string, Tensor>& state);
  const std::vector<NamedParam>& params() const { return params_; }
  const OptimizerConfig& config() const { return config_; }

 private:
  std::vector<NamedParam> params_;
  OptimizerConfig config_;
  std::vector<Tensor> m_, v_;  // momentum buffer / first moment, second moment (f32, like the params)
  int64_t steps_ = 0;
};

class LrSchedule {
 public:
  explicit LrSchedule(ScheduleConfig config);
  double lr(int64_t step) const;  // pure function of the global step
 private:
  ScheduleConfig config_;
};

// Scales all gradients so that their global L2 norm is at most max_norm. Returns the norm before clipping.
double clip_grad_norm(const std::vector<NamedParam>& params, double max_norm);

}  // namespace pd::train
