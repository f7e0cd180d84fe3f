// linear + add (a transformer block's skip connection: x + out_proj(attention), x + ffn(x)) ->
// fused_linear(..., residual): the linear's epilogue adds the residual (kernels/cpu/ref/small_linear.h)
// instead of a pass of its own. residual_fusion.h has the preconditions; besides, no input of the linear
// comes from a dequantize_linear, so that int8_lower and weight_only_lower still see a quantized model's
// linears.
#include "residual_fusion.h"

namespace pd::ir::passes {
namespace {

bool plain_linear(const Program& p, int32_t op) {
  const Operation& o = p.ops()[op];
  const bool plain = o.type == "linear" ||
                     (o.type == "fused_linear" && attr_string(o, "activation") == "none" && input_of(p, op, 3) == kNoValue);
  if (!plain) return false;
  for (const auto& slot : o.inputs)
    for (ValueId v : slot)
      if (p.value(v).producer >= 0 && p.ops()[p.value(v).producer].type == "dequantize_linear") return false;
  return true;
}

bool no_preference(const Program&, int32_t) { return false; }

int residual_linear_operand(const Program& p, int32_t i) { return residual_operand(p, i, plain_linear, no_preference); }

}  // namespace

std::unique_ptr<Pass> linear_residual_fusion() {
  return std::make_unique<ResidualFusion>("linear_residual_fuse", "linear", "fused_linear", 3, residual_linear_operand);
}

}  // namespace pd::ir::passes
