// Constant folding: an op whose inputs are all params (or that has no inputs) is run once now and its
// results become new params. Random ops are left alone (folding would freeze one draw), as are ops
// that update their inputs in place, and dequantize_linear: a quantized weight stays int8 with its
// dequantize in front (the QDQ form), which the int8 lowering turns into an int8 kernel.
#include "passes.h"
#include "pd/autograd/autograd.h"
#include "pd/ops/op_schema.h"

namespace pd::ir::passes {
namespace {

class ConstantFolding final : public Pass {
 public:
  std::string name() const override { return "constant_fold"; }
  std::string doc() const override { return "computes ops whose inputs are all params and stores the results as params"; }
  bool match(const Program& p, int32_t i) const override { return foldable(p, i); }
  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    fold_op(p, i);
    ++stats.folded;
  }
};

}  // namespace

}  // namespace pd::ir::passes

namespace pd::ir {
namespace {

// Folding computes a result now and stores it in the model file. One larger than this (256 MiB of
// f32) stays an op, computed when the program runs: a few bytes of ONNX can ask ConstantOfShape for
// petabytes, which an import must not try to allocate.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 26;

bool too_large_to_fold(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return false;  // unknown until run time: decided by running it
    if (d > 0 && n > kMaxFoldedElements / d) return true;
    n *= d;
  }
  return n > kMaxFoldedElements;
}

}  // namespace

bool foldable(const Program& p, int32_t i) {
  const Operation& op = p.ops()[i];
  if (op_schema(op.type).random || (op.type == "batch_norm" && attr_bool(op, "training"))) return false;
  if (op.type == "dequantize_linear") return false;
  for (ValueId r : op.results)
    if (too_large_to_fold(p.value(r).type.shape)) return false;
  for (const auto& slot : op.inputs)
    for (ValueId v : slot)
      if (!is_param(p, v)) return false;
  return true;
}

std::vector<ValueId> fold_op(Program& p, int32_t i) {
  const Operation op = p.ops()[i];
  BoxedInputs in;
  for (const auto& slot : op.inputs) {
    in.emplace_back();
    for (ValueId v : slot) in.back().push_back(p.param(v));
  }
  std::vector<Tensor> outs;
  {
    NoGradGuard no_grad;
    outs = op_schema(op.type).call(in, op.attrs);
  }
  std::vector<ValueId> params;
  for (size_t k = 0; k < op.results.size(); ++k) {
    const Value& r = p.value(op.results[k]);
    // A clone: the result may be a view into an input param that later passes replace.
    ValueId c = p.add_param(p.unique_name("folded." + op.type + "." + r.name), outs[k].clone());
    p.replace_uses(op.results[k], c);
    params.push_back(c);
  }
  p.remove_ops({i});
  return params;
}

}  // namespace pd::ir

namespace pd::ir::passes {

std::unique_ptr<Pass> constant_folding() { return std::make_unique<ConstantFolding>(); }

}  // namespace pd::ir::passes
