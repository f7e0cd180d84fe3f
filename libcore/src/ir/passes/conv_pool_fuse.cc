// conv2d / fused_conv2d (its activation included) followed by max_pool2d -> fused_conv2d_maxpool, whose
// direct kernel pools the convolution's output while it is still in registers: the conv output never
// goes to memory and the pooling makes no pass of its own. Runs after conv_act_fuse, so a conv -> relu
// -> pool chain is one op. In an int8 region (after int8_lower and int8_channels_last), quantized_conv2d
// -> max_pool2d_nhwc -> quantized_conv2d_maxpool likewise: its direct kernels pool the int32 sums, so
// three of four output pixels skip the epilogue (requantization included).
//
// Preconditions: the pool's input is the conv's result, read by nothing else and not a graph output;
// the conv has no residual (the fused op has no such input); and the fused kernel's direct path takes
// the conv (pd/kernels/direct_conv.h: f32, groups 1, unit stride and dilation, few taps and channels,
// weight shape known; pd/kernels/int8_direct_conv.h for int8: NHWC, 2 x 2 windows of stride 2, on
// AVX-512 VNNI, or AVX2 on weights within 7 bits) on a target with AVX2 and FMA. Elsewhere the fused op would run the same two kernels as
// before, so the graph is left alone.
#include <algorithm>

#include "passes.h"
#include "pd/core/cpu_features.h"
#include "pd/kernels/direct_conv.h"
#include "pd/kernels/int8_direct_conv.h"

namespace pd::ir::passes {
namespace {

bool fusable_conv(const Program& p, int32_t c) {
  const Operation& conv = p.ops()[c];
  if (conv.type != "conv2d" && !(conv.type == "fused_conv2d" && input_of(p, c, 3) == kNoValue)) return false;
  if (channels_last_op(conv)) return false;
  const ValueType& out = p.value(conv.results[0]).type;
  const Shape& ws = p.value(input_of(p, c, 1)).type.shape;
  if (ws.size() != 4 || std::any_of(ws.begin(), ws.end(), [](int64_t d) { return d < 0; })) return false;
  return direct_conv_fits(out.dtype, ws[1], ws[2], ws[3], ws[0], attr_ints(conv, "stride"), attr_ints(conv, "dilation"),
                          attr_int(conv, "groups"));
}

bool fusable_int8_conv(const Program& p, int32_t c, const Operation& pool) {
  const Operation& conv = p.ops()[c];
  if (conv.type != "quantized_conv2d" || !attr_bool(conv, "channels_last")) return false;
  for (size_t slot : {6, 7, 8})  // residual, residual_scale, residual_zero_point
    if (input_of(p, c, slot) != kNoValue) return false;
  const Shape& ws = p.value(input_of(p, c, 3)).type.shape;
  if (ws.size() != 4 || std::any_of(ws.begin(), ws.end(), [](int64_t d) { return d < 0; })) return false;
  return int8_direct_conv_pool_fits(ws[1], ws[3], ws[0], attr_ints(conv, "stride"), attr_ints(conv, "dilation"), attr_int(conv, "groups"),
                                    attr_string(conv, "activation"), attr_float(conv, "alpha"), attr_ints(pool, "kernel_size"),
                                    attr_ints(pool, "stride"), attr_ints(pool, "padding"), cpu_has_avx2_fma());
}

class ConvPoolFusion final : public Pass {
 public:
  std::string name() const override { return "conv_pool_fuse"; }
  bool lowering() const override { return true; }
  // The direct / Winograd kernels beat oneDNN only with their AVX2 + FMA code.
  bool supports(const Target& t) const override { return t.has_isa(CpuIsa::avx2); }
  std::string doc() const override {
    return "conv2d / fused_conv2d + max_pool2d -> fused_conv2d_maxpool; int8: quantized_conv2d + max_pool2d_nhwc -> quantized_conv2d_maxpool";
  }
  std::vector<std::string> targets() const override { return {"max_pool2d", "max_pool2d_nhwc"}; }

  // The match counts readers, so the transposes int8_channels_last left dead go first.
  void run(Program& p, PassStats& stats) const override {
    PassStats swept;
    dead_code_elimination()->run(p, swept);
    stats.removed += swept.removed;
    Pass::run(p, stats);
  }

  bool match(const Program& p, int32_t i) const override {
    const Operation& pool = p.ops()[i];
    const ValueId x = pool.inputs[0][0];
    const Value& v = p.value(x);
    if (v.kind != ValueKind::OpResult || v.producer < 0) return false;
    if (p.is_output(x) || p.users(x).size() != 1) return false;
    return pool.type == "max_pool2d" ? fusable_conv(p, v.producer) : fusable_int8_conv(p, v.producer, pool);
  }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const Operation pool = p.ops()[i];
    const int32_t c = p.value(pool.inputs[0][0]).producer;
    const Operation conv = p.ops()[c];
    const bool int8 = conv.type == "quantized_conv2d";
    const std::string fused_type = int8 ? "quantized_conv2d_maxpool" : "fused_conv2d_maxpool";
    AttrMap attrs = conv.attrs;  // stride padding dilation groups (activation alpha; out_dtype)
    attrs.erase("channels_last");  // quantized_conv2d_maxpool is NHWC only
    for (const auto& [key, value] : pool.attrs) attrs["pool_" + key] = value;
    // f32: x, weight, bias (fused_conv2d's empty residual slot dropped); int8: x, its scale and zero
    // point, weight, its scale, bias, then out_scale and out_zero_point (the residual's three dropped).
    std::vector<std::vector<ValueId>> from = conv.inputs;
    if (int8) from.resize(tensor_slots("quantized_conv2d"));
    std::vector<std::vector<ValueId>> inputs(from.begin(), from.begin() + std::min<size_t>(int8 ? 6 : 3, from.size()));
    if (int8) inputs.insert(inputs.end(), {from[9], from[10]});
    inputs.resize(tensor_slots(fused_type));
    // At the pool's place: the conv's inputs are all defined before it.
    const ValueId fused = p.insert_op(i, fused_type, inputs, attrs)[0];
    p.replace_uses(pool.results[0], fused);
    p.remove_ops({c, i + 1});
    ++stats.fused;
  }
};

}  // namespace

std::unique_ptr<Pass> conv_pool_fusion() { return std::make_unique<ConvPoolFusion>(); }

}  // namespace pd::ir::passes
