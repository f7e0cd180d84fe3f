// Q/DQ insertion. Each activation value is quantized once, however many quantizable ops read it; only
// those ops read the dequantized copy, so other readers keep the f32 value. The exception is the
// residual operand of an add that conv_residual_fuse folds into a quantized convolution: it is quantized
// too (onnxruntime's quantize_static quantizes both inputs of an Add), so that the int8 convolution reads
// its residual in int8 and requantizes its own result; the block then never leaves int8.
#include "pd/quant/qdq.h"

#include <algorithm>

#include "op_api.h"
#include "pd/exec/executor.h"
#include "pd/ir/pass.h"

namespace pd::quant {
namespace {

// Whether `e` names op `op` (see QdqOptions::exclude). Passes rename weights by appending (bn_fold's
// "b1_conv1.weight.bn_folded"), so a dotted prefix of the weight's name names it too: the layer name
// of the model YAML and the weight's name before the passes both work.
bool names_op(const ir::Program& p, const ir::Operation& op, const std::string& e) {
  if (e == op.type || e == p.value(op.results[0]).name) return true;
  const std::string& w = p.value(op.inputs[1][0]).name;
  return w == e || (w.size() > e.size() && w.compare(0, e.size(), e) == 0 && w[e.size()] == '.');
}

bool excluded(const ir::Program& p, const ir::Operation& op, const std::vector<std::string>& exclude) {
  return std::any_of(exclude.begin(), exclude.end(), [&](const std::string& e) { return names_op(p, op, e); });
}

bool quantizable(const ir::Program& p, const ir::Operation& op, const std::vector<std::string>& exclude) {
  if (op.type != "conv2d" && op.type != "linear") return false;
  if (op.type == "conv2d" && ir::attr_bool(op, "channels_last")) return false;  // the QDQ form's activations are NCHW
  if (excluded(p, op, exclude)) return false;
  const ir::ValueId w = op.inputs[1][0];
  return p.value(w).kind == ir::ValueKind::Param && p.value(w).type.dtype == DType::f32 &&
         p.value(op.inputs[0][0]).type.dtype == DType::f32;
}

// The residual operand of add op `i` when the add will fold into a quantizable convolution, else kNoValue.
ir::ValueId quantizable_residual(const ir::Program& p, int32_t i, const std::vector<std::string>& exclude) {
  const ir::Operation& add = p.ops()[i];
  if (add.type != "add") return ir::kNoValue;
  const int k = ir::residual_conv_operand(p, i);
  if (k < 0 || !quantizable(p, p.ops()[p.value(add.inputs[k][0]).producer], exclude)) return ir::kNoValue;
  const ir::ValueId r = add.inputs[1 - k][0];
  return p.value(r).type.dtype == DType::f32 ? r : ir::kNoValue;
}

Tensor zero_points(DType dtype, int64_t n, int32_t value) {
  Tensor z = ops::full(n < 0 ? Shape{} : Shape{n}, value, DType::i32);
  return ops::cast(z, dtype);
}

// Replaces weight param `w` of the op at position `at` by s8 values (o.weight_bits, or 8 for a layer
// o.full_bits names), scales and zero points (symmetric, per slice along `axis`, or one scale per
// tensor) and inserts their dequantize_linear there; returns its value.
ir::ValueId insert_weight_dequantize(ir::Program& p, int32_t at, ir::ValueId w, int64_t axis, const QdqOptions& o) {
  const Tensor wt = p.param(w);  // a handle: set_param and add_param leave the tensor alive
  const int bits = excluded(p, p.ops()[at], o.full_bits) ? 8 : o.weight_bits;
  std::vector<float> scales = weight_scales(wt, axis, (1 << (bits - 1)) - 1);
  if (!o.per_channel) scales.assign(scales.size(), *std::max_element(scales.begin(), scales.end()));
  const auto channels = static_cast<int64_t>(scales.size());
  const Tensor scale_t = Tensor::from_vector<float>(scales, {channels}), zp_t = zero_points(DType::i8, channels, 0);
  const std::string wname = p.value(w).name;
  const ir::ValueId wq = p.add_param(p.unique_name(wname + ".q"), ops::quantize_linear(wt, scale_t, zp_t, axis, DType::i8));
  const ir::ValueId ws = p.add_param(p.unique_name(wname + ".scale"), scale_t);
  const ir::ValueId wz = p.add_param(p.unique_name(wname + ".zero_point"), zp_t);
  return p.insert_op(at, "dequantize_linear", {{wq}, {ws}, {wz}}, {{"axis", axis}})[0];
}

// For --weight-only: the weight's output-channel axis when `op` is a linear, or a matmul by a 2-D
// param, whose weight is an f32 param `exclude` does not name; -1 otherwise.
int64_t weight_only_axis(const ir::Program& p, const ir::Operation& op, const std::vector<std::string>& exclude) {
  if (op.type != "linear" && op.type != "matmul") return -1;
  const ir::ValueId w = op.inputs[1][0];
  const ir::Value& wv = p.value(w);
  if (wv.kind != ir::ValueKind::Param || wv.type.dtype != DType::f32 || wv.type.shape.size() != 2) return -1;
  if (excluded(p, op, exclude)) return -1;
  if (op.type == "linear") return 0;
  if (ir::attr_bool(op, "transpose_x")) return -1;
  return ir::attr_bool(op, "transpose_y") ? 0 : 1;
}

}  // namespace

std::vector<std::string> quantizable_inputs(const ir::Program& p, const std::vector<std::string>& exclude) {
  std::vector<std::string> out;
  const auto add = [&](ir::ValueId v) {
    const std::string& name = p.value(v).name;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (int32_t i = 0; i < static_cast<int32_t>(p.ops().size()); ++i) {
    if (quantizable(p, p.ops()[i], exclude)) add(p.ops()[i].inputs[0][0]);
    if (const ir::ValueId r = quantizable_residual(p, i, exclude); r != ir::kNoValue) add(r);
  }
  return out;
}

std::vector<std::string> quantizable_layers(const ir::Program& p, const std::vector<std::string>& exclude, bool weight_only) {
  std::vector<std::string> out;
  for (const ir::Operation& op : p.ops())
    if (weight_only ? weight_only_axis(p, op, exclude) >= 0 : quantizable(p, op, exclude)) {
      const std::string& w = p.value(op.inputs[1][0]).name;
      if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
    }
  return out;
}

std::vector<std::string> unmatched_excludes(const ir::Program& p, const std::vector<std::string>& exclude, bool weight_only) {
  std::vector<std::string> out;
  for (const std::string& e : exclude) {
    const bool named = std::any_of(p.ops().begin(), p.ops().end(), [&](const ir::Operation& op) {
      const bool candidate = weight_only ? op.type == "linear" || op.type == "matmul" : op.type == "conv2d" || op.type == "linear";
      return candidate && op.inputs.size() > 1 && !op.inputs[1].empty() && names_op(p, op, e);
    });
    if (!named) out.push_back(e);
  }
  return out;
}

std::map<std::string, Observer> calibrate(const ir::Program& p, const std::vector<std::map<std::string, Tensor>>& batches,
                                          const std::vector<std::string>& exclude, const std::function<void()>& on_batch) {
  std::map<std::string, Observer> observers;
  const std::vector<std::string> names = quantizable_inputs(p, exclude);
  exec::Executor exec(p, {.inference = true, .reuse_memory = false});
  for (const auto& batch : batches) {
    exec.run(batch);
    for (const std::string& n : names) observers[n].observe(exec.all_values().at(n));
    if (on_batch) on_batch();
  }
  return observers;
}

int64_t insert_qdq(ir::Program& p, const std::map<std::string, Observer>& observers, const QdqOptions& o) {
  PD_CHECK(o.activations == DType::u8 || o.activations == DType::i8, ErrorCode::kDType,
           "insert_qdq: activations must be u8 or i8, but received {}", dtype_name(o.activations));
  std::map<ir::ValueId, ir::ValueId> dequantized;  // activation -> its Q/DQ copy
  // The Q/DQ copy of activation x for op i: one pair per value, inserted before its first quantized
  // reader (i then moves past the pair).
  const auto dequantize = [&](ir::ValueId x, int32_t& i) {
    auto it = dequantized.find(x);
    if (it != dequantized.end()) return it->second;
    const std::string name = p.value(x).name;  // a copy: adding params moves the values
    auto obs = observers.find(name);
    PD_CHECK(obs != observers.end() && obs->second.count() > 0, ErrorCode::kInvalidArgument,
             "insert_qdq: no calibration values were observed for '{}'", name);
    const QParams q = qparams_for(obs->second.range(o.method, o.percentile), o.activations);
    const ir::ValueId s = p.add_param(p.unique_name(name + ".scale"), Tensor::scalar<float>(q.scale));
    const ir::ValueId z = p.add_param(p.unique_name(name + ".zero_point"), zero_points(o.activations, -1, q.zero_point));
    const ir::ValueId qv = p.insert_op(i, "quantize_linear", {{x}, {s}, {z}}, {{"dtype", o.activations}})[0];
    const ir::ValueId dq = p.insert_op(i + 1, "dequantize_linear", {{qv}, {s}, {z}}, {})[0];
    i += 2;
    return dequantized.emplace(x, dq).first->second;
  };
  // The residual operands, found before any conv reads a dequantized weight (by the add's result).
  std::map<ir::ValueId, ir::ValueId> residual_of;
  for (int32_t i = 0; i < static_cast<int32_t>(p.ops().size()); ++i)
    if (const ir::ValueId r = quantizable_residual(p, i, o.exclude); r != ir::kNoValue) residual_of[p.ops()[i].results[0]] = r;
  int64_t count = 0;
  for (int32_t i = 0; i < static_cast<int32_t>(p.ops().size()); ++i) {
    if (auto r = residual_of.find(p.ops()[i].results.empty() ? ir::kNoValue : p.ops()[i].results[0]); r != residual_of.end()) {
      const int slot = p.ops()[i].inputs[0][0] == r->second ? 0 : 1;
      const ir::ValueId rdq = dequantize(r->second, i);
      p.set_input(i, slot, rdq);
      continue;
    }
    if (!quantizable(p, p.ops()[i], o.exclude)) continue;
    const ir::ValueId x = p.ops()[i].inputs[0][0], w = p.ops()[i].inputs[1][0];
    const ir::ValueId xdq = dequantize(x, i);
    // The weight: s8, symmetric, per output channel (axis 0 of conv2d's and linear's weights).
    const ir::ValueId wdq = insert_weight_dequantize(p, i, w, 0, o);
    ++i;
    p.set_input(i, 0, xdq);
    p.set_input(i, 1, wdq);
    ++count;
  }
  p.compact();  // the f32 weights nothing reads any more
  ir::verify(p);
  return count;
}

int64_t insert_weight_only(ir::Program& p, const QdqOptions& o) {
  int64_t count = 0;
  for (int32_t i = 0; i < static_cast<int32_t>(p.ops().size()); ++i) {
    const int64_t axis = weight_only_axis(p, p.ops()[i], o.exclude);
    if (axis < 0) continue;
    const ir::ValueId wdq = insert_weight_dequantize(p, i, p.ops()[i].inputs[1][0], axis, o);
    ++i;
    p.set_input(i, 1, wdq);
    ++count;
  }
  p.compact();  // the f32 weights nothing reads any more
  ir::verify(p);
  return count;
}

}  // namespace pd::quant
