// A linear without bias followed by the addition of a bias param -> linear with that bias (ONNX's
// MatMul + Add, which importers read as a bias-free linear and an add). The bias joins the GEMM's
// epilogue instead of a second pass over the output.
// Preconditions: the linear has no bias; its result is read only by the add and is not a graph output;
// the other operand is a param of shape [out_features] (leading 1s allowed) and the linear's dtype, so
// the sum keeps the linear's shape.
#include "chain.h"
#include "passes.h"
#include "pd/pd.h"

namespace pd::ir::passes {
namespace {

struct BiasMatch {
  int32_t linear = -1;
  ValueId bias = kNoValue;
};

std::optional<BiasMatch> find_bias(const Program& p, int32_t add) {
  for (int side = 0; side < 2; ++side) {
    const int32_t linear = chain_producer(p, input_of(p, add, side), "linear");
    if (linear < 0 || input_of(p, linear, 2) != kNoValue) continue;
    const ValueId b = input_of(p, add, 1 - side);
    if (!is_param(p, b)) continue;
    const ir::ValueType& y = p.value(input_of(p, add, side)).type;
    Shape s = p.value(b).type.shape;
    while (s.size() > 1 && s.front() == 1) s.erase(s.begin());
    if (y.shape.empty() || s != Shape{y.shape.back()} || p.value(b).type.dtype != y.dtype) continue;
    if (p.value(p.ops()[add].results[0]).type != y) continue;
    return BiasMatch{linear, b};
  }
  return std::nullopt;
}

class LinearBiasFusion final : public Pass {
 public:
  std::string name() const override { return "linear_bias_fuse"; }
  std::string doc() const override { return "linear (no bias) -> add bias param -> linear with bias"; }
  std::vector<std::string> targets() const override { return {"add"}; }
  bool match(const Program& p, int32_t i) const override { return find_bias(p, i).has_value(); }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const BiasMatch m = *find_bias(p, i);
    ValueId bias = m.bias;
    const Shape& bs = p.value(bias).type.shape;
    if (bs.size() != 1) bias = p.add_param(p.unique_name(p.value(bias).name + ".bias"), ops::reshape(p.param(bias), {bs.back()}));
    const ValueId out = p.ops()[i].results[0];
    // Inserted where the add was: the linear's inputs and the bias are defined before it.
    const ValueId fused = p.insert_op(i, "linear", {{input_of(p, m.linear, 0)}, {input_of(p, m.linear, 1)}, {bias}},
                                      p.ops()[m.linear].attrs)[0];
    p.replace_uses(out, fused);
    p.remove_ops({m.linear, i + 1});
    stats.fused += 1;
  }
};

}  // namespace

std::unique_ptr<Pass> linear_bias_fusion() { return std::make_unique<LinearBiasFusion>(); }

}  // namespace pd::ir::passes
