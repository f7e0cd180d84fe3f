// mul(x, sigmoid(x)) -> silu(x) and mul(x, hardsigmoid(x; 1/6, 0.5)) -> hardswish(x): ONNX had no SiLU
// (and no HardSwish before opset 14), so exporters write EfficientNet's and MobileNetV3's activations
// as the product, which elementwise_fuse then ran as a scalar fused_elementwise after each convolution
// (torchvision's EfficientNet-B0 from ONNX: two thirds of its run, 5.4x onnxruntime's time). As silu
// and hardswish they are activations the conv / linear fusions take. Either operand order; the sigmoid
// stays for its other readers, if any. Float types (the activations' kernels).
#include <cmath>

#include "passes.h"

namespace pd::ir::passes {
namespace {

// PyTorch's and Paddle's hardsigmoid slope, as exporters write it in float.
constexpr double kHardSwishSlope = 1.0 / 6.0;

class SwishFusion final : public Pass {
 public:
  std::string name() const override { return "swish_fuse"; }
  std::string doc() const override {
    return "mul(x, sigmoid(x)) -> silu(x), mul(x, hardsigmoid(x; 1/6, 0.5)) -> hardswish(x): the activations ONNX exporters "
           "write as products";
  }
  std::vector<std::string> targets() const override { return {"mul"}; }
  bool match(const Program& p, int32_t i) const override { return !swish_of(p, i).type.empty(); }
  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const auto [type, x, gate] = swish_of(p, i);
    const ValueId mul = p.ops()[i].results[0];
    const ValueId out = p.insert_op(i, type, {{x}}, {})[0];
    p.replace_uses(mul, out);
    // The gate goes too when the product was its only reader, so that the conv fusions see x read once.
    const int32_t gate_op = p.value(gate).producer;
    const bool gate_dead = p.users(gate).size() == 1 && !p.is_output(gate);
    p.remove_ops(gate_dead ? std::vector<int32_t>{gate_op, i + 1} : std::vector<int32_t>{i + 1});
    ++stats.fused;
  }

 private:
  struct Swish {
    std::string type;  // empty when op i is no such product
    ValueId x = kNoValue, gate = kNoValue;
  };
  // The activation op i computes, its input and the gate's value.
  static Swish swish_of(const Program& p, int32_t i) {
    const ValueId a = input_of(p, i, 0), b = input_of(p, i, 1);
    const DType dt = p.value(a).type.dtype;
    if (dt != DType::f32 && dt != DType::f64) return {};
    for (const auto& [gate, x] : {std::pair{a, b}, std::pair{b, a}}) {
      const Value& g = p.value(gate);
      if (g.kind != ValueKind::OpResult) continue;
      const Operation& op = p.ops()[g.producer];
      if (op.inputs.empty() || op.inputs[0].empty() || op.inputs[0][0] != x) continue;
      if (op.type == "sigmoid") return {"silu", x, gate};
      if (op.type == "hardsigmoid" && std::abs(attr_float(op, "alpha") - kHardSwishSlope) < 1e-6 && attr_float(op, "beta") == 0.5)
        return {"hardswish", x, gate};
    }
    return {};
  }
};

}  // namespace

std::unique_ptr<Pass> swish_fusion() { return std::make_unique<SwishFusion>(); }

}  // namespace pd::ir::passes
