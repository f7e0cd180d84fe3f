// The training recipe a model YAML describes (optimizer, schedule) and the parameter handle the
// optimizers update. Plain data, kept with the model YAML that fills it so that pd/model does not
// depend on pd/train (which builds on pd/model); pd/train/optimizer.h implements them.
#pragma once
#include <cstdint>
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

}  // namespace pd::train
