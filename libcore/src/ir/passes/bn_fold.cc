// Batch-norm folding: eval-mode batch_norm after a conv2d or a 2-D linear is an affine map per output
// channel, so it folds into the weight and bias:  s = scale / sqrt(var + eps),
// W' = W * s (per output channel), b' = (b - mean) * s + beta (b = 0 when the op had no bias).
// Preconditions: eval mode; bn's saved statistics unused; the conv/linear output feeds only this bn
// and is not a graph output; weight, bias and all bn inputs are params (new params are written, so a
// weight shared with another op stays intact).
#include "passes.h"
#include "pd/pd.h"

namespace pd::ir::passes {
namespace {

bool floating(const Program& p, ValueId v) {
  DType d = p.value(v).type.dtype;
  return d == DType::f32 || d == DType::f64;
}

class BatchNormFolding final : public Pass {
 public:
  std::string name() const override { return "bn_fold"; }
  std::string doc() const override { return "folds eval-mode batch_norm into the preceding conv2d / linear"; }
  std::vector<std::string> targets() const override { return {"batch_norm"}; }

  bool match(const Program& p, int32_t i) const override {
    const Operation& bn = p.ops()[i];
    if (attr_bool(bn, "training") || attr_bool(bn, "fuse_relu")) return false;  // a fused relu would need an op of its own
    for (size_t k = 1; k < bn.results.size(); ++k)
      if (p.is_output(bn.results[k]) || !p.users(bn.results[k]).empty()) return false;
    const ValueId x = input_of(p, i, 0);
    const int32_t c = p.value(x).producer;
    if (p.value(x).kind != ValueKind::OpResult || c < 0) return false;
    const Operation& base = p.ops()[c];
    if (base.type != "conv2d" && base.type != "linear") return false;
    if (base.type == "conv2d" && attr_bool(base, "channels_last")) return false;  // the scale would go on the last axis
    if (p.is_output(x) || p.users(x).size() != 1) return false;
    if (base.type == "linear" && p.value(x).type.shape.size() != 2) return false;  // bn's axis 1 must be the features
    const ValueId w = input_of(p, c, 1), b = input_of(p, c, 2);
    if (!is_param(p, w) || (b != kNoValue && !is_param(p, b)) || !floating(p, w)) return false;
    for (size_t k = 1; k <= 4; ++k)
      if (!is_param(p, input_of(p, i, k)) || p.value(input_of(p, i, k)).type.dtype != p.value(w).type.dtype) return false;
    return true;
  }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const Operation bn = p.ops()[i];
    const int32_t c = p.value(input_of(p, i, 0)).producer;
    const Operation base = p.ops()[c];
    const Tensor& w = p.param(input_of(p, c, 1));
    const DType dt = w.dtype();
    Tensor scale = p.param(input_of(p, i, 1)), beta = p.param(input_of(p, i, 2));
    Tensor mean = p.param(input_of(p, i, 3)), var = p.param(input_of(p, i, 4));
    Tensor new_w, new_b;
    {
      NoGradGuard no_grad;
      Tensor s = ops::div(scale, ops::sqrt(ops::add(var, Tensor::full_scalar(attr_float(bn, "epsilon"), dt))));
      Shape per_channel(w.shape().size(), 1);
      per_channel[0] = w.shape()[0];
      new_w = ops::mul(w, ops::reshape(s, per_channel)).clone();
      const ValueId b = input_of(p, c, 2);
      Tensor bias = b == kNoValue ? ops::zeros({w.shape()[0]}, dt) : p.param(b);
      new_b = ops::add(ops::mul(ops::sub(bias, mean), s), beta).clone();
    }
    const std::string wname = p.value(input_of(p, c, 1)).name;
    ValueId wv = p.add_param(p.unique_name(wname + ".bn_folded"), new_w);
    ValueId bv = p.add_param(p.unique_name(wname + ".bn_folded_bias"), new_b);
    const ValueId folded = p.insert_op(c, base.type, {base.inputs[0], {wv}, {bv}}, base.attrs)[0];
    p.replace_uses(bn.results[0], folded);
    p.remove_ops({c + 1, i + 1});  // the old op and the bn, both shifted by the insert
    ++stats.fused;
  }
};

}  // namespace

std::unique_ptr<Pass> batch_norm_folding() { return std::make_unique<BatchNormFolding>(); }

}  // namespace pd::ir::passes
