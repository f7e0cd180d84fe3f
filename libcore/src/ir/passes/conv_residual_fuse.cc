// conv2d + add (a residual connection) -> fused_conv2d(..., residual): the convolution accumulates
// onto the residual through oneDNN's sum post-op (residual_fusion.h has the preconditions); conv_act_fuse,
// which runs next, then folds the block's closing relu into the same op.
//
// When both operands qualify (a projection shortcut), the residual goes to a 3x3 stride-1 conv if there
// is one: conv_winograd makes that a winograd_conv2d, which adds the residual as it writes its NCHW
// output, where oneDNN's 1x1 conv would first reorder the residual into its own layout.
#include "residual_fusion.h"

namespace pd::ir {
namespace {

bool unit_stride_3x3(const Program& p, int32_t op) {
  const Operation& o = p.ops()[op];
  const Shape& ws = p.value(input_of(p, op, 1)).type.shape;
  return ws.size() == 4 && ws[2] == 3 && ws[3] == 3 && attr_ints(o, "stride") == std::vector<int64_t>{1, 1};
}

bool plain_conv(const Program& p, int32_t op) {
  const Operation& o = p.ops()[op];
  if (o.type == "conv2d") return !channels_last_op(o);
  return o.type == "fused_conv2d" && attr_string(o, "activation") == "none" && input_of(p, op, 3) == kNoValue;
}

}  // namespace

int residual_conv_operand(const Program& p, int32_t i) { return passes::residual_operand(p, i, plain_conv, unit_stride_3x3); }

namespace passes {

std::unique_ptr<Pass> conv_residual_fusion() {
  return std::make_unique<ResidualFusion>("conv_residual_fuse", "conv2d", "fused_conv2d", 3, residual_conv_operand);
}

}  // namespace passes
}  // namespace pd::ir
