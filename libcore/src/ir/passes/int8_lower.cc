// The int8 lowering: folds the QDQ form pd-quant writes into int8 kernels.
//
//   dequantize_linear(q, s, z) ─┐
//   dequantize_linear(wq, ws, 0) ┼─> conv2d / fused_conv2d  ->  quantized_conv2d(q, s, z, wq, ws, ...)
//                                      linear / fused_linear ->  quantized_linear(...)
//
// Runs after conv_act_fuse / conv_residual_fuse, so the activation and residual travel along, and
// before the f32-only conv rewrites (conv_pool_fuse, conv_winograd), which would otherwise take the
// convolution. Then an int8 op whose only reader is a per-tensor quantize_linear writes that int8
// result itself (requantization in the epilogue), so consecutive int8 layers never go through f32; a
// residual that pd-quant quantized (dequantize_linear -> fused_conv2d's residual) is read in int8, so a
// residual block's convolution requantizes too. To
// get there, a quantize_linear moves up through max_pool2d, flatten, reshape and concat, which commute
// with it exactly (a per-tensor quantization is monotonic and elementwise): max_pool2d then pools int8
// values, and a concat joins int8 results requantized to its one scale.
//
// A convolution with fewer than 4 input channels per group stays f32 unless a direct int8 kernel takes
// it well (pd/kernels/int8_direct_conv.h: at least 16 output channels to fill its channel lanes, as the
// residual example's stem, or, on AVX-512 VNNI or AVX2, one input channel and at most 8 output channels, which
// it runs with output pixels as the lanes, as LeNet's first conv; int8_channels_last gives it the NHWC
// input it reads): VNNI sums 4 channels a lane, so oneDNN pads 1-3 channels to 4 and runs several times
// slower than the f32 direct kernel (LeNet's first layer: 179 us int8 against about 60 us f32 with its
// pool, batch 64). Its weight is dequantized now and its input's Q/DQ pair dropped, so the f32 fusions
// take it. A depthwise convolution (one input channel a group) is not such a case: oneDNN's int8
// depthwise kernel takes it as it is.
//
// Preconditions: the activation's scale and zero point are 0-D params (per tensor), the weight's
// dequantize reads i8 params with zero zero points along axis 0, and the target has oneDNN's int8
// kernels (elsewhere the reference int8 kernels would be slower than the f32 path, so the QDQ form
// stays and runs in f32).
#include <algorithm>

#include "op_api.h"
#include "passes.h"
#include "pd/core/cpu_features.h"
#include "pd/kernels/int8_direct_conv.h"
#include "quant_patterns.h"

namespace pd::ir::passes {
namespace {

// The dequantize_linear producing `v` reads a per-tensor quantized activation.
bool quantized_activation(const Program& p, ValueId v) {
  if (!is_dequantize(p, v)) return false;
  const int32_t d = p.value(v).producer;
  const ValueId s = input_of(p, d, 1), z = input_of(p, d, 2);
  return is_param(p, s) && is_param(p, z) && p.value(s).type.shape.empty();
}

bool is_conv(const std::string& t) { return t == "conv2d" || t == "fused_conv2d"; }

class Int8Lowering final : public Pass {
 public:
  std::string name() const override { return "int8_lower"; }
  bool lowering() const override { return true; }
  bool supports(const Target& t) const override { return t.has_backend(Backend::onednn); }
  std::string doc() const override {
    return "dequantize_linear -> conv2d / linear -> quantized_conv2d / quantized_linear; requantize into the next quantize_linear";
  }
  std::vector<std::string> targets() const override {
    return {"conv2d", "fused_conv2d", "linear", "fused_linear", "quantize_linear"};
  }

  bool match(const Program& p, int32_t i) const override {
    const Operation& op = p.ops()[i];
    if (op.type == "quantize_linear") return requantizable(p, i) || commutes_up(p, i);
    return quantized_activation(p, input_of(p, i, 0)) && quantized_weight(p, input_of(p, i, 1));
  }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    if (p.ops()[i].type == "quantize_linear")
      return requantizable(p, i) ? requantize(p, i, stats) : move_up(p, i, stats);
    if (too_few_channels(p, i)) return keep_f32(p, i, stats);
    const Operation op = p.ops()[i];
    const Operation& dx = p.ops()[p.value(input_of(p, i, 0)).producer];
    const Operation& dw = p.ops()[p.value(input_of(p, i, 1)).producer];
    const bool conv = is_conv(op.type);
    std::vector<std::vector<ValueId>> inputs = {dx.inputs[0], dx.inputs[1], dx.inputs[2], dw.inputs[0], dw.inputs[1]};
    inputs.push_back(op.inputs.size() > 2 ? op.inputs[2] : std::vector<ValueId>{});  // bias
    if (conv) {
      // The residual: f32, or the int8 value behind its per-tensor dequantize (pd-quant quantizes the
      // residual operand of an add) with its scale and zero point.
      const ValueId r = op.inputs.size() > 3 && !op.inputs[3].empty() ? op.inputs[3][0] : kNoValue;
      if (quantized_activation(p, r)) {
        const Operation& dr = p.ops()[p.value(r).producer];
        inputs.insert(inputs.end(), {dr.inputs[0], dr.inputs[1], dr.inputs[2]});
      } else {
        inputs.push_back(r == kNoValue ? std::vector<ValueId>{} : std::vector<ValueId>{r});
      }
    }
    inputs.resize(tensor_slots(conv ? "quantized_conv2d" : "quantized_linear"));  // out_scale, out_zero_point
    const ValueId y = p.insert_op(i, conv ? "quantized_conv2d" : "quantized_linear", inputs, op.attrs)[0];
    p.replace_uses(op.results[0], y);
    p.remove_ops({i + 1});
    ++stats.fused;
  }

 private:
  static bool too_few_channels(const Program& p, int32_t i) {
    const Operation& op = p.ops()[i];
    const Shape& w = p.value(input_of(p, i, 1)).type.shape;
    if (!is_conv(op.type) || w.size() != 4 || w[1] >= 4) return false;
    // Depthwise (one input channel a group, as many groups as outputs): oneDNN's int8 depthwise kernel
    // takes it without padding channels, so a MobileNet block stays int8 from end to end.
    const int64_t groups = attr_int(op, "groups");
    if (w[1] == 1 && groups > 1 && groups == w[0]) return false;
    const std::string act = op.type == "fused_conv2d" ? attr_string(op, "activation") : "none";
    const bool residual = op.inputs.size() > 3 && !op.inputs[3].empty();
    // Pixel lanes are AVX-512 VNNI and AVX2 code (the AVX2 kernel on the 7-bit weights the oneDNN
    // backend gives CPUs without VNNI). Lowering runs at load time, on the machine that will run the program.
    return !int8_direct_conv_fits(w[1], w[3], w[0], attr_ints(op, "stride"), attr_ints(op, "dilation"), attr_int(op, "groups"), act,
                                  residual, cpu_has_avx2_fma());
  }

  // The op reads the f32 activation (before its quantize, when there is one) and a dequantized weight.
  static void keep_f32(Program& p, int32_t i, PassStats& stats) {
    const ValueId xq = p.ops()[p.value(input_of(p, i, 0)).producer].inputs[0][0];
    const Value& q = p.value(xq);
    const bool quantized_here = q.kind == ValueKind::OpResult && q.producer >= 0 && p.ops()[q.producer].type == "quantize_linear";
    const Operation& dw = p.ops()[p.value(input_of(p, i, 1)).producer];
    const Tensor w = ops::dequantize_linear(p.param(dw.inputs[0][0]), p.param(dw.inputs[1][0]), p.param(dw.inputs[2][0]),
                                            attr_int(dw, "axis"));
    const std::string name = p.value(dw.inputs[0][0]).name + ".dequantized";
    const ValueId x = quantized_here ? p.ops()[q.producer].inputs[0][0] : input_of(p, i, 0);
    const ValueId wf = p.add_param(p.unique_name(name), w);
    p.set_input(i, 0, x);
    p.set_input(i, 1, wf);
    ++stats.folded;
  }

  // quantize_linear (per tensor) of an f32 int8-op result that nothing else reads.
  static bool requantizable(const Program& p, int32_t i) {
    const ValueId y = input_of(p, i, 0), s = input_of(p, i, 1), z = input_of(p, i, 2);
    const Value& v = p.value(y);
    if (v.kind != ValueKind::OpResult || v.producer < 0 || p.is_output(y) || p.users(y).size() != 1) return false;
    const Operation& producer = p.ops()[v.producer];
    if (producer.type != "quantized_conv2d" && producer.type != "quantized_linear") return false;
    // An f32 residual is added in f32: only an int8 one (with its scale) leaves the result requantizable.
    const size_t residual_slot = 6, residual_scale_slot = 7;
    if (producer.type == "quantized_conv2d" && input_of(p, v.producer, residual_slot) != kNoValue &&
        input_of(p, v.producer, residual_scale_slot) == kNoValue)
      return false;
    return v.type.dtype == DType::f32 && is_param(p, s) && is_param(p, z) && p.value(s).type.shape.empty();
  }

  // The op producing `y` (read by nothing else) commutes with a per-tensor quantization: quantizing its
  // result is the op on its quantized input(s). A concat's inputs are quantized one by one (SqueezeNet's
  // fire modules join two int8 convolutions' results).
  static bool order_preserving(const Program& p, ValueId y) {
    const Value& v = p.value(y);
    if (v.kind != ValueKind::OpResult || v.producer < 0 || p.is_output(y) || p.users(y).size() != 1) return false;
    const std::string& t = p.ops()[v.producer].type;
    return t == "max_pool2d" || t == "flatten" || t == "reshape" || t == "concat";
  }

  // Following such ops up from `y` reaches int8 ops' f32 results (every input of a concat), which could
  // be requantized instead.
  static bool leads_to_int8(const Program& p, ValueId y) {
    while (order_preserving(p, y)) {
      const Operation& op = p.ops()[p.value(y).producer];
      if (op.type == "concat")
        return std::all_of(op.inputs[0].begin(), op.inputs[0].end(), [&](ValueId x) { return leads_to_int8(p, x); });
      y = op.inputs[0][0];
    }
    const Value& v = p.value(y);
    if (v.kind != ValueKind::OpResult || v.producer < 0 || v.type.dtype != DType::f32) return false;
    const std::string& t = p.ops()[v.producer].type;
    return t == "quantized_conv2d" || t == "quantized_linear";
  }

  // A per-tensor quantize_linear that can move up to an int8 op's result (anything else would quantize
  // a larger f32 tensor for nothing).
  static bool commutes_up(const Program& p, int32_t i) {
    const ValueId y = input_of(p, i, 0), s = input_of(p, i, 1), z = input_of(p, i, 2);
    return order_preserving(p, y) && leads_to_int8(p, y) && is_param(p, s) && is_param(p, z) && p.value(s).type.shape.empty();
  }

  // quantize(op(x)) -> op(quantize(x)), at the quantize's place (x and the params are defined before it);
  // concat(xs) -> concat(quantize(x) for each x).
  static void move_up(Program& p, int32_t i, PassStats& stats) {
    const Operation q = p.ops()[i];
    const int32_t k = p.value(q.inputs[0][0]).producer;
    const Operation op = p.ops()[k];
    std::vector<ValueId> quantized;
    for (ValueId x : op.inputs[0]) {
      std::vector<std::vector<ValueId>> q_inputs = q.inputs;
      q_inputs[0] = {x};
      quantized.push_back(p.insert_op(i + static_cast<int32_t>(quantized.size()), "quantize_linear", q_inputs, q.attrs)[0]);
    }
    const int32_t at = i + static_cast<int32_t>(quantized.size());
    std::vector<std::vector<ValueId>> op_inputs = op.inputs;
    op_inputs[0] = quantized;
    const ValueId out = p.insert_op(at, op.type, op_inputs, op.attrs)[0];
    p.replace_uses(q.results[0], out);
    p.remove_ops({k, at + 1});
    ++stats.fused;
  }

  static void requantize(Program& p, int32_t i, PassStats& stats) {
    const Operation q = p.ops()[i];
    const int32_t k = p.value(q.inputs[0][0]).producer;
    const Operation producer = p.ops()[k];
    std::vector<std::vector<ValueId>> inputs = producer.inputs;
    const size_t n = inputs.size();
    inputs[n - 2] = q.inputs[1];
    inputs[n - 1] = q.inputs[2];
    AttrMap attrs = producer.attrs;
    attrs["out_dtype"] = AttrValue(p.value(q.results[0]).type.dtype);
    // At the quantize's place: every input (the producer's and the quantize's params) is defined before it.
    const ValueId out = p.insert_op(i, producer.type, inputs, attrs)[0];
    p.replace_uses(q.results[0], out);
    p.remove_ops({k, i + 1});
    ++stats.fused;
  }
};

}  // namespace

std::unique_ptr<Pass> int8_lowering() { return std::make_unique<Int8Lowering>(); }

}  // namespace pd::ir::passes
