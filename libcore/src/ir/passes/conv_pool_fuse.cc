// conv2d / fused_conv2d (its activation included) followed by max_pool2d -> fused_conv2d_maxpool, whose
// direct kernel pools the convolution's output while it is still in registers: the conv output never
// goes to memory and the pooling makes no pass of its own. Runs after conv_act_fuse, so a conv -> relu
// -> pool chain is one op.
//
// Preconditions: the pool's input is the conv's result, read by nothing else and not a graph output;
// the conv has no residual (the fused op has no such input); and the fused kernel's direct path takes
// the conv (pd/kernels/direct_conv.h: f32, groups 1, unit stride and dilation, few taps and channels,
// weight shape known) on a target with AVX2 and FMA. Elsewhere the fused op would run the same two
// kernels as before, so the graph is left alone.
#include <algorithm>

#include "passes.h"
#include "pd/kernels/direct_conv.h"

namespace pd::ir::passes {
namespace {

bool fusable_conv(const Program& p, int32_t c) {
  const Operation& conv = p.ops()[c];
  if (conv.type != "conv2d" && !(conv.type == "fused_conv2d" && input_of(p, c, 3) == kNoValue)) return false;
  const ValueType& out = p.value(conv.results[0]).type;
  const Shape& ws = p.value(input_of(p, c, 1)).type.shape;
  if (ws.size() != 4 || std::any_of(ws.begin(), ws.end(), [](int64_t d) { return d < 0; })) return false;
  return direct_conv_fits(out.dtype, ws[1], ws[2], ws[3], ws[0], attr_ints(conv, "stride"), attr_ints(conv, "dilation"),
                          attr_int(conv, "groups"));
}

class ConvPoolFusion final : public Pass {
 public:
  std::string name() const override { return "conv_pool_fuse"; }
  bool lowering() const override { return true; }
  // The direct / Winograd kernels beat oneDNN only with their AVX2 + FMA code.
  bool supports(const Target& t) const override { return t.has_isa(CpuIsa::avx2); }
  std::string doc() const override { return "conv2d / fused_conv2d + max_pool2d -> fused_conv2d_maxpool"; }
  std::vector<std::string> targets() const override { return {"max_pool2d"}; }

  bool match(const Program& p, int32_t i) const override {
    const ValueId x = p.ops()[i].inputs[0][0];
    const Value& v = p.value(x);
    if (v.kind != ValueKind::OpResult || v.producer < 0) return false;
    if (p.is_output(x) || p.users(x).size() != 1) return false;
    return fusable_conv(p, v.producer);
  }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const Operation pool = p.ops()[i];
    const int32_t c = p.value(pool.inputs[0][0]).producer;
    const Operation conv = p.ops()[c];
    AttrMap attrs = conv.attrs;  // stride padding dilation groups (activation alpha)
    for (const auto& [key, value] : pool.attrs) attrs["pool_" + key] = value;
    // x, weight, bias; fused_conv2d's empty residual slot is dropped.
    std::vector<std::vector<ValueId>> inputs(conv.inputs.begin(), conv.inputs.begin() + std::min<size_t>(3, conv.inputs.size()));
    inputs.resize(tensor_slots("fused_conv2d_maxpool"));
    // At the pool's place: the conv's inputs are all defined before it.
    const ValueId fused = p.insert_op(i, "fused_conv2d_maxpool", inputs, attrs)[0];
    p.replace_uses(pool.results[0], fused);
    p.remove_ops({c, i + 1});
    ++stats.fused;
  }
};

}  // namespace

std::unique_ptr<Pass> conv_pool_fusion() { return std::make_unique<ConvPoolFusion>(); }

}  // namespace pd::ir::passes
