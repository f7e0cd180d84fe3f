// conv2d + add (a residual connection) -> fused_conv2d(..., residual): the convolution accumulates
// onto the residual through oneDNN's sum post-op, so the sum never makes its own pass over memory.
// conv_act_fuse, which runs next, then folds the block's closing relu into the same op.
//
// Preconditions: one operand of the add is the result of a conv2d (or of a fused_conv2d with neither
// activation nor residual yet), read only by this add and not a graph output; the other operand has
// exactly the add's type (no broadcasting, no promotion), float.
//
// When both operands qualify (a projection shortcut), the residual goes to a 3x3 stride-1 conv if there
// is one: conv_winograd makes that a winograd_conv2d, which adds the residual as it writes its NCHW
// output, where oneDNN's 1x1 conv would first reorder the residual into its own layout.
#include <utility>

#include "passes.h"

namespace pd::ir {
namespace {

bool unit_stride_3x3(const Program& p, int32_t op) {
  const Operation& o = p.ops()[op];
  const Shape& ws = p.value(input_of(p, op, 1)).type.shape;
  return ws.size() == 4 && ws[2] == 3 && ws[3] == 3 && attr_ints(o, "stride") == std::vector<int64_t>{1, 1};
}

bool plain_conv(const Program& p, int32_t op) {
  const Operation& o = p.ops()[op];
  if (o.type == "conv2d") return true;
  return o.type == "fused_conv2d" && attr_string(o, "activation") == "none" && input_of(p, op, 3) == kNoValue;
}

}  // namespace

int residual_conv_operand(const Program& p, int32_t i) {
  const Operation& add = p.ops()[i];
  if (add.type != "add" || add.inputs.size() != 2 || add.inputs[0].size() != 1 || add.inputs[1].size() != 1) return -1;
  const ValueType& out = p.value(add.results[0]).type;
  if (out.dtype != DType::f32 && out.dtype != DType::f64) return -1;
  int best = -1;
  std::pair<bool, int32_t> best_rank{false, -1};
  for (int k = 0; k < 2; ++k) {
    const ValueId v = add.inputs[k][0], other = add.inputs[1 - k][0];
    const Value& val = p.value(v);
    if (val.kind != ValueKind::OpResult || val.producer < 0 || !plain_conv(p, val.producer)) continue;
    if (v == other || val.type != out || p.value(other).type != out) continue;
    if (p.is_output(v) || p.users(v).size() != 1) continue;
    const std::pair<bool, int32_t> rank{unit_stride_3x3(p, val.producer), val.producer};  // 3x3 stride 1, else later
    if (rank > best_rank) best = k, best_rank = rank;
  }
  return best;
}

namespace passes {
namespace {

class ConvResidualFusion final : public Pass {
 public:
  std::string name() const override { return "conv_residual_fuse"; }
  bool lowering() const override { return true; }
  std::string doc() const override { return "conv2d + add(residual) -> fused_conv2d with a residual"; }
  std::vector<std::string> targets() const override { return {"add"}; }

  bool match(const Program& p, int32_t i) const override { return residual_conv_operand(p, i) >= 0; }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const int k = residual_conv_operand(p, i);
    const Operation add = p.ops()[i];
    const ValueId conv_out = add.inputs[k][0], residual = add.inputs[1 - k][0];
    const int32_t c = p.value(conv_out).producer;
    const Operation conv = p.ops()[c];
    std::vector<std::vector<ValueId>> inputs = conv.inputs;
    inputs.resize(tensor_slots("fused_conv2d"));
    inputs[3] = {residual};
    // At the add's place: the conv's inputs and the residual are all defined before it.
    const ValueId fused = p.insert_op(i, "fused_conv2d", inputs, conv.attrs)[0];
    p.replace_uses(add.results[0], fused);
    p.remove_ops({c, i + 1});
    ++stats.fused;
  }
};

}  // namespace

std::unique_ptr<Pass> conv_residual_fusion() { return std::make_unique<ConvResidualFusion>(); }

}  // namespace passes
}  // namespace pd::ir
