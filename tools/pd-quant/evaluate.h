// Scoring quantized programs against the f32 model on a labelled set: top-1 accuracy, and how far the
// outputs moved from the f32 ones (relative mean square), the finer signal when a change flips few
// predictions. The f32 outputs are computed once; every program is compiled for this machine, as
// pd-infer would run it.
#pragma once
#include <string>
#include <vector>

#include "pd/data/loader.h"
#include "pd/ir/program.h"

namespace pd::tools {

struct Score {
  double accuracy = 0;
  double output_error = 0;  // sum |y - y_f32|^2 / sum |y_f32|^2 over the set
};

class Evaluator {
 public:
  Evaluator(const ir::Program& f32, std::string input, std::vector<data::Batch> batches);
  double f32_accuracy() const { return f32_accuracy_; }
  int64_t samples() const { return samples_; }
  // `label` names the run in the progress line.
  Score score(const ir::Program& p, const std::string& label) const;
  // The share of the f32 program's run time each of its ops takes (program order; median of 5 timed
  // runs of the first batch, the program run as it is).
  std::vector<double> f32_time_shares() const;

 private:
  const ir::Program& f32_;
  std::string input_;
  std::vector<data::Batch> batches_;
  std::vector<Tensor> f32_outputs_;
  double f32_accuracy_ = 0;
  int64_t samples_ = 0;
};

}  // namespace pd::tools
