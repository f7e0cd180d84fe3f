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
  // `owned` (one flag per parameter; empty = all) shards the optimizer state, as ZeRO stage 1 does:
  // state is kept, and updates are made, only for the owned parameters; the others are some other
  // rank's to update (pd::dist::ShardedUpdate sends them around).
  Optimizer(std::vector<NamedParam> params, OptimizerConfig config, std::vector<bool> owned = {});
  // Updates every owned parameter that has a gradient, in place, under no-grad; then clears all gradients.
  void step(double lr);
  void zero_grad();
  // Optimizer state (moments, step count) by name, for checkpoints: the owned parameters' only.
  // load_state checks names and shapes; when sharded, it takes the owned parameters' entries of a
  // state that may hold every parameter's.
  // With copies = false, the live tensors (to read at once, not to keep).
  std::map<std::string, Tensor> state(bool copies = true) const;
  // The per-parameter entries of the state: "m" and "v" ("name.m", "name.v") for Adam, "m" for momentum.
  std::vector<std::string> state_suffixes() const;
  void load_state(const std::map<std::string, Tensor>& state);
  const std::vector<NamedParam>& params() const { return params_; }
  const OptimizerConfig& config() const { return config_; }
  bool owns(size_t param) const { return owned_.empty() || owned_[param]; }
  int64_t state_bytes() const;  // the moments this optimizer holds

 private:
  std::vector<NamedParam> params_;
  OptimizerConfig config_;
  std::vector<bool> owned_;
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
