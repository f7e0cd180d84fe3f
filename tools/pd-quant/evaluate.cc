#include "pd-quant/evaluate.h"

#include <algorithm>

#include "common/progress.h"
#include "op_api.h"
#include "pd/exec/executor.h"
#include "pd/exec/plan.h"

namespace pd::tools {
namespace {

int64_t correct(const Tensor& logits, const Tensor& labels) {
  return ops::sum(ops::cast(ops::equal(ops::argmax(logits, -1), labels), DType::i64)).item<int64_t>();
}

}  // namespace

Evaluator::Evaluator(const ir::Program& f32, std::string input, std::vector<data::Batch> batches)
    : f32_(f32), input_(std::move(input)), batches_(std::move(batches)) {
  exec::ExecPlan plan = exec::compile(f32_, Target::host());
  exec::Executor exec(plan);
  Progress progress("pd-quant: evaluating f32", static_cast<int64_t>(batches_.size()));
  int64_t right = 0;
  for (const auto& b : batches_) {
    f32_outputs_.push_back(exec.run({{input_, b.x}})[0]);
    right += correct(f32_outputs_.back(), b.y);
    samples_ += b.y.numel();
    progress.step();
  }
  f32_accuracy_ = samples_ ? static_cast<double>(right) / static_cast<double>(samples_) : 0.0;
}

Score Evaluator::score(const ir::Program& p, const std::string& label) const {
  exec::ExecPlan plan = exec::compile(p, Target::host());
  exec::Executor exec(plan);
  Progress progress("pd-quant: evaluating " + label, static_cast<int64_t>(batches_.size()));
  int64_t right = 0;
  double err = 0, norm = 0;
  for (size_t i = 0; i < batches_.size(); ++i) {
    const Tensor y = exec.run({{input_, batches_[i].x}})[0];
    right += correct(y, batches_[i].y);
    const Tensor d = ops::sub(y, f32_outputs_[i]);
    err += ops::sum(ops::mul(d, d)).item<float>();
    norm += ops::sum(ops::mul(f32_outputs_[i], f32_outputs_[i])).item<float>();
    progress.step();
  }
  return {samples_ ? static_cast<double>(right) / static_cast<double>(samples_) : 0.0, norm > 0 ? err / norm : 0.0};
}

std::vector<double> Evaluator::f32_time_shares() const {
  std::vector<double> shares(f32_.ops().size(), 0.0);
  if (batches_.empty()) return shares;
  exec::Executor exec(f32_, {.time_ops = true});
  std::vector<std::vector<int64_t>> runs;
  for (int r = 0; r < 6; ++r) {
    exec.run({{input_, batches_[0].x}});
    if (r > 0) runs.push_back(exec.stats().op_ns);  // the first run packs weights
  }
  double total = 0;
  for (size_t k = 0; k < shares.size(); ++k) {
    std::vector<int64_t> t;
    for (const auto& run : runs) t.push_back(run[k]);
    std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
    shares[k] = static_cast<double>(t[t.size() / 2]);
    total += shares[k];
  }
  if (total > 0)
    for (double& s : shares) s /= total;
  return shares;
}

}  // namespace pd::tools
