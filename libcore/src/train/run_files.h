// The run directory's human-facing files: metrics.jsonl lines and the loss/accuracy plot.
#pragma once
#include <string>
#include <vector>

namespace pd::train {

struct EpochMetrics {
  int64_t epoch = 0;
  double train_loss = 0, test_loss = 0, test_acc = 0, samples_per_s = 0, seconds = 0, lr = 0;
  int64_t steps = 0;
  double loss_scale = 0;      // f16 mixed precision: the loss scale at the epoch's end (0: not scaling)
  int64_t skipped_steps = 0;  // steps skipped so far for non-finite gradients (with loss scaling)
};

std::string metrics_json(const EpochMetrics& m);
std::vector<EpochMetrics> read_metrics(const std::string& path);  // tolerant of a missing file
// An SVG with train/test loss (left axis) and test accuracy (right axis) per epoch.
std::string metrics_svg(const std::vector<EpochMetrics>& history, const std::string& title);

}  // namespace pd::train
