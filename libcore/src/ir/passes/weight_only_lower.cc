// The weight-only int8 lowering: a linear whose weight is a dequantized i8 param, and whose activation
// stays f32, runs as weight_only_linear, which widens the weight inside the kernel (pd-quant
// --weight-only writes this form).
//
//   dequantize_linear(wq, ws, 0, axis 0) -> linear / fused_linear(x, ., bias)  ->  weight_only_linear(x, wq, ws, bias)
//   dequantize_linear(wq, ws, 0, axis 1) -> matmul(x, .)                       ->  weight_only_linear(x, wq^T, ws)
//
// A matmul's [K, N] weight is stored transposed once, here, into linear's [N, K] layout. Runs after
// int8_lower, which takes the linears whose activation is quantized too. The kernel is portable, so
// every target runs this pass.
#include "op_api.h"
#include "passes.h"
#include "quant_patterns.h"

namespace pd::ir::passes {
namespace {

class WeightOnlyLowering final : public Pass {
 public:
  std::string name() const override { return "weight_only_lower"; }
  bool lowering() const override { return true; }
  std::string doc() const override {
    return "dequantize_linear(i8 weight) -> linear / fused_linear / matmul with an f32 activation -> weight_only_linear";
  }
  std::vector<std::string> targets() const override { return {"linear", "fused_linear", "matmul"}; }

  bool match(const Program& p, int32_t i) const override {
    const Operation& op = p.ops()[i];
    const ValueId x = input_of(p, i, 0), w = input_of(p, i, 1);
    if (p.value(x).type.dtype != DType::f32) return false;
    if (op.type != "matmul") return quantized_weight(p, w, 0);
    // matmul(x, w): x at least 2-D and not transposed, w a 2-D weight per output column (or transposed).
    if (attr_bool(op, "transpose_x") || p.value(x).type.shape.size() < 2 || p.value(w).type.shape.size() != 2) return false;
    return quantized_weight(p, w, attr_bool(op, "transpose_y") ? 0 : 1);
  }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const Operation op = p.ops()[i];
    const Operation dw = p.ops()[p.value(input_of(p, i, 1)).producer];
    ValueId wq = dw.inputs[0][0];
    if (op.type == "matmul" && !attr_bool(op, "transpose_y")) {
      const std::string name = p.value(wq).name + ".transposed";
      wq = p.add_param(p.unique_name(name), ops::transpose(p.param(wq), {1, 0}).contiguous());
    }
    std::vector<std::vector<ValueId>> inputs = {op.inputs[0], {wq}, dw.inputs[1]};
    inputs.push_back(op.type != "matmul" && op.inputs.size() > 2 ? op.inputs[2] : std::vector<ValueId>{});  // bias
    const AttrMap attrs = op.type == "fused_linear" ? op.attrs : AttrMap{};
    const ValueId y = p.insert_op(i, "weight_only_linear", inputs, attrs)[0];
    p.replace_uses(op.results[0], y);
    p.remove_ops({i + 1});
    ++stats.fused;
  }
};

}  // namespace

std::unique_ptr<Pass> weight_only_lowering() { return std::make_unique<WeightOnlyLowering>(); }

}  // namespace pd::ir::passes
