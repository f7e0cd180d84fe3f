// pd-convert --verify: run the converted program and the source in its own runtime (onnxruntime or paddle
// through python3, our executor for our own models) on the same inputs and compare every output.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "pd/core/tensor.h"
#include "pd/ir/program.h"

namespace pd::converter {

struct OutputDiff {
  std::string name;
  double max_abs = 0, max_rel = 0;
  double largest = 0;  // the reference's largest finite |value|
  int64_t argmax_agree = -1, rows = 0;  // for 2-D float outputs (classifier logits); -1 otherwise
  bool shape_ok = true;
  bool ok = true;  // every element within atol + rtol * max(|reference|, kScaleFloor * largest)
  std::string note;
};

// The relative tolerance's smallest base, as a fraction of the output's largest magnitude.
inline constexpr double kScaleFloor = 0.01;

// The source model in its own runtime, run through `python`: onnxruntime for ONNX, paddle.inference for
// PaddlePaddle programs (2.x .pdmodel or 3.x .json with their .pdiparams).
struct SourceRuntime {
  enum Kind { Onnxruntime, Paddle } kind = Onnxruntime;
  std::string python, model_path, params_path;
};

// Outputs of the source model in its runtime, in the model's output order with their names. Returns false
// (and says why in `why`) when python or the runtime is not available; throws pd::Error when the runtime
// runs and fails.
bool run_source_runtime(const SourceRuntime& rt, const std::map<std::string, Tensor>& inputs,
                        std::vector<std::pair<std::string, Tensor>>* outputs, std::string* why);

// Per output of `ours` (by name, in program order): the largest |a - b| and |a - b| / (|b| + 1e-6) against
// `reference`, the reference's largest magnitude, whether every element is within tolerance, and how many
// row argmaxes agree.
std::vector<OutputDiff> compare_outputs(const ir::Program& p, const std::vector<Tensor>& ours,
                                        const std::vector<std::pair<std::string, Tensor>>& reference, double atol,
                                        double rtol);

}  // namespace pd::converter
