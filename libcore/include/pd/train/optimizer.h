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

namespace pd::train {

struct NamedParam {
  std::string name;
  Tensor value;  // a leaf with requires_grad; updated in place by step()
};

enum class OptimizerKind { SGD, Momentum, Adam, AdamW };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::SGD;
  double momentum = 0.9;     // Momentum
  bool nesterov = false;     // Momentum
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam, AdamW
  double weight_decay = 0.0; // L2 added to the gradient (SGD, Momentum, Adam); decoupled for AdamW
};

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

enum class ScheduleKind { Constant, Step, MultiStep, Cosine };

struct ScheduleConfig {
  ScheduleKind kind = ScheduleKind::Constant;
  double base_lr = 0.01;
  int64_t total_steps = 0;            // Cosine: anneal to min_lr over these steps
  double min_lr = 0.0;                // Cosine
  int64_t step_size = 0;              // Step: multiply by gamma every step_size steps
  std::vector<int64_t> milestones;    // MultiStep: multiply by gamma at each milestone
  double gamma = 0.1;
  int64_t warmup_steps = 0;           // linear warmup from warmup_start_factor * lr
  double warmup_start_factor = 0.0;
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
