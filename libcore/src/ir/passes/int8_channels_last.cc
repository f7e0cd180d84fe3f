// int8_channels_last: runs the int8 convolutions in NHWC, the layout oneDNN's int8 kernels compute in,
// and keeps the tensors between them NHWC, so that the data is reordered at the edges of an int8 region
// instead of twice per convolution (on the residual example that was half the int8 time).
//
//   1. Every quantized_conv2d becomes  transpose(to NHWC) -> quantized_conv2d{channels_last} ->
//      transpose(to NCHW); its residual input gets a transpose to NHWC too. The program is correct here.
//   2. Transposes then move and cancel, as onnxruntime's transpose optimizer does:
//      - cancel:  transpose(transpose(v, P), Q) with Q undoing P  ->  v
//      - sink:    E(transpose_nchw(a), ...) -> transpose_nchw(E(a, ...)), for an op E that does not care
//                 about the layout (per-tensor quantize/dequantize, activations, same-shape add / mul),
//                 when everything reading E's result transposes it back (so the pair then cancels)
//      - lift:    transpose_nhwc(E(v)) -> E(transpose_nhwc(v)) when v is already transposed to NHWC for
//                 another reader (a residual block's input feeds both a convolution and the residual
//                 sum): the two transposes of v become one
//      - merge:   two identical transposes of one value -> one
//      - pool:    max_pool2d(transpose_nchw(v)) on int8 data -> transpose_nchw(max_pool2d_nhwc(v)): the
//                 transpose moves past the pool, which leaves it a quarter of the data (LeNet)
//      - scale:   E(transpose_nchw(a), s) with s per channel ([N or 1, C, 1, 1]: a squeeze-and-excitation
//                 block's gate, EfficientNet's and MobileNetV3's) -> transpose_nchw(E(a, s as [N, 1, 1, C])):
//                 E then reads a contiguous NHWC tensor (on the transposed view a broadcast mul ran 8x
//                 slower), and the transpose after it sinks on to cancel
//      - gate:    quantize_linear(mul(gate [N or 1, 1, 1, C], a [N, H, W, C])) per tensor, the product read by
//                 the quantize alone (the scale rule's result, entering the block's int8 projection) ->
//                 gated_quantize(a, gate): one pass over the map instead of a product written and read back
//      - concat:  concat(transpose_nchw(a), transpose_nchw(b), ..., axis) -> transpose_nchw(concat(a, b,
//                 ..., the axis in NHWC)): one transpose after instead of one per input (SqueezeNet's
//                 fire modules join two convolutions' channels)
//      - shuffle: a channel shuffle (ShuffleNet's concat, reshape, transpose, reshape, and slices of its
//                 channels) of transposes to NCHW -> each read transpose_nchw(gather_channels(the NHWC
//                 values, the channels it reads)): one pass per read, where the NCHW ops cost a transposed
//                 concat and the shuffle's copy every unit; the next unit's quantize then sinks and cancels
//      - flatten: quantized_linear(flatten(transpose_nchw(v)), W) -> quantized_linear(flatten(v), W') with
//                 W's columns permuted from (c, h, w) order to (h, w, c): no transpose at all
//      - entry:   quantized_conv2d{channels_last}(transpose_nhwc(quantize_linear(x f32))) with the same
//                 scale and zero point -> quantized_conv2d{quantize_x}(x): the convolution quantizes its
//                 f32 NCHW input on the way in (one pass over the data and two ops fewer)
//   What is left are the transposes out of the region's last convolution to an f32 op, each a tiled copy.
#include <algorithm>
#include <set>

#include "channel_shuffle.h"
#include "op_api.h"
#include "passes.h"

namespace pd::ir::passes {
namespace {

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1}, kToNchw = {0, 3, 1, 2};

bool is_transpose(const Operation& op) { return op.type == "transpose"; }

// The op producing v when it is a transpose with `perm`; -1 otherwise.
int32_t transpose_producing(const Program& p, ValueId v, const std::vector<int64_t>& perm) {
  if (v == kNoValue) return -1;
  const Value& val = p.value(v);
  if (val.kind != ValueKind::OpResult || val.producer < 0) return -1;
  const Operation& op = p.ops()[val.producer];
  return is_transpose(op) && attr_ints(op, "perm") == perm ? val.producer : -1;
}

// Ops that compute each element from the elements at the same position only, whatever the layout.
bool unary_elementwise(const Program& p, const Operation& op) {
  static const std::set<std::string> kUnary = {"relu", "relu6", "leaky_relu", "clip", "sigmoid", "tanh",
                                               "gelu", "silu", "hardswish", "hardsigmoid"};
  if (kUnary.count(op.type)) return true;
  // A per-tensor (0-D scale) quantization; per-channel ones name an axis.
  return (op.type == "quantize_linear" || op.type == "dequantize_linear") && p.value(op.inputs[1][0]).type.shape.empty();
}

bool binary_elementwise(const Operation& op) {
  return op.type == "add" || op.type == "sub" || op.type == "mul" || op.type == "maximum" || op.type == "minimum";
}

// The input slots of a layout-agnostic op that carry the 4-D activation (the others are 0-D params);
// empty when the op is not layout-agnostic.
std::vector<size_t> activation_slots(const Program& p, const Operation& op) {
  if (unary_elementwise(p, op)) return {0};
  if (binary_elementwise(op) && op.inputs.size() == 2 && op.inputs[0].size() == 1 && op.inputs[1].size() == 1 &&
      p.value(op.inputs[0][0]).type.shape == p.value(op.inputs[1][0]).type.shape)
    return {0, 1};
  return {};
}

// Every reader of v is a transpose with `perm`, and v is not a graph output.
bool only_read_transposed(const Program& p, ValueId v, const std::vector<int64_t>& perm) {
  const std::vector<int32_t> readers = p.users(v);
  return !readers.empty() && !p.is_output(v) && std::all_of(readers.begin(), readers.end(), [&](int32_t r) {
    return is_transpose(p.ops()[r]) && attr_ints(p.ops()[r], "perm") == perm;
  });
}

class Int8ChannelsLast final : public Pass {
 public:
  std::string name() const override { return "int8_channels_last"; }
  bool lowering() const override { return true; }
  bool supports(const Target& t) const override { return t.has_backend(Backend::onednn); }
  std::string doc() const override {
    return "quantized_conv2d in NHWC, with the transposes between int8 ops cancelled (moved through per-tensor "
           "quantize / dequantize, activations and same-shape elementwise ops) and the region's entry quantize read by "
           "the first convolution";
  }
  std::vector<std::string> targets() const override {
    return {"quantized_conv2d", "transpose", "max_pool2d", "flatten", "concat", "add", "sub", "mul", "maximum", "minimum"};
  }

  // The rules count readers, so the ops int8_lower left dead (the dequantize_linears it folded) go first.
  void run(Program& p, PassStats& stats) const override {
    PassStats swept;
    dead_code_elimination()->run(p, swept);
    stats.removed += swept.removed;
    Pass::run(p, stats);
    // The gate rule wants a product with one reader, once the transposes the rules above moved past
    // it are swept.
    swept = {};
    dead_code_elimination()->run(p, swept);
    stats.removed += swept.removed;
    for (int32_t i = 0; i < static_cast<int32_t>(p.ops().size()); ++i)
      if (const Operation& op = p.ops()[i]; op.type == "quantize_linear")
        if (const int slot = gate_slot(p, op); slot >= 0) {
          gated_quantize(p, i, slot, stats);
          ++stats.rewrites;
        }
    p.compact();
  }

  bool match(const Program& p, int32_t i) const override {
    const Operation& op = p.ops()[i];
    if (op.type == "quantized_conv2d") return !attr_bool(op, "channels_last") || entry_quantize(p, i) >= 0;
    if (op.type == "max_pool2d") return pools_transposed_int8(p, op);
    if (op.type == "flatten") return flattens_into_linears(p, op);
    if (op.type == "concat") return joins_transposed(p, op);  // the shuffle rule, or the concat rule
    if (binary_elementwise(op)) return channel_operand(p, op) >= 0;
    return cancels(p, i) || duplicate_of(p, i) >= 0 || sink_target(p, i) >= 0 || lifts(p, i);
  }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const Operation& op = p.ops()[i];
    if (op.type == "quantized_conv2d")
      return attr_bool(op, "channels_last") ? quantize_on_entry(p, i, stats) : to_channels_last(p, i, stats);
    if (op.type == "max_pool2d") return pool_channels_last(p, i, stats);
    if (op.type == "flatten") return flatten_channels_last(p, i, stats);
    if (op.type == "concat") return shuffle_source(p, i) ? shuffle_channels_last(p, i, stats) : concat_channels_last(p, i, stats);
    if (const int slot = channel_operand(p, op); slot >= 0) return scale_channels_last(p, i, slot, stats);
    if (cancels(p, i)) {
      p.replace_uses(op.results[0], p.ops()[p.value(op.inputs[0][0]).producer].inputs[0][0]);
      p.remove_ops({i});
      ++stats.removed;
    } else if (const int32_t first = duplicate_of(p, i); first >= 0) {
      p.replace_uses(op.results[0], p.ops()[first].results[0]);
      p.remove_ops({i});
      ++stats.removed;
    } else if (const int32_t e = sink_target(p, i); e >= 0) {
      sink(p, e, stats);
    } else {
      lift(p, p.value(op.inputs[0][0]).producer, stats);
    }
  }

 private:
  // transpose(transpose(v, P), Q) where Q undoes P.
  static bool cancels(const Program& p, int32_t i) {
    const Operation& op = p.ops()[i];
    const Value& in = p.value(op.inputs[0][0]);
    if (in.kind != ValueKind::OpResult || in.producer < 0 || !is_transpose(p.ops()[in.producer])) return false;
    const std::vector<int64_t> first = attr_ints(p.ops()[in.producer], "perm"), second = attr_ints(op, "perm");
    for (size_t k = 0; k < second.size(); ++k)
      if (first[static_cast<size_t>(second[k])] != static_cast<int64_t>(k)) return false;
    return true;
  }

  // An earlier transpose of the same value with the same perm.
  static int32_t duplicate_of(const Program& p, int32_t i) {
    const Operation& op = p.ops()[i];
    for (int32_t r : p.users(op.inputs[0][0]))
      if (r < i && is_transpose(p.ops()[r]) && attr_ints(p.ops()[r], "perm") == attr_ints(op, "perm")) return r;
    return -1;
  }

  // For transpose_nchw op i: a reader E it can sink through (every activation input of E comes out of
  // a transpose_nchw, and everything reading E's result transposes it back to NHWC). -1 if none.
  static int32_t sink_target(const Program& p, int32_t i) {
    const Operation& t = p.ops()[i];
    if (attr_ints(t, "perm") != kToNchw) return -1;
    for (int32_t e : p.users(t.results[0])) {
      const Operation& op = p.ops()[e];

      const std::vector<size_t> slots = activation_slots(p, op);
      if (slots.empty() || op.results.size() != 1 || !only_read_transposed(p, op.results[0], kToNhwc)) continue;
      if (std::all_of(slots.begin(), slots.end(),
                      [&](size_t s) { return transpose_producing(p, op.inputs[s][0], kToNchw) >= 0; }))
        return e;
    }
    return -1;
  }

  // E(transpose_nchw(a), ...) -> transpose_nchw(E(a, ...)) at E's place.
  static void sink(Program& p, int32_t e, PassStats& stats) {
    const Operation op = p.ops()[e];
    std::vector<std::vector<ValueId>> inputs = op.inputs;
    for (size_t s : activation_slots(p, op)) inputs[s] = p.ops()[p.value(op.inputs[s][0]).producer].inputs[0];
    const ValueId nhwc = p.insert_op(e, op.type, inputs, op.attrs)[0];
    const ValueId nchw = p.insert_op(e + 1, "transpose", {{nhwc}}, {{"perm", AttrValue(kToNchw)}})[0];
    p.replace_uses(op.results[0], nchw);
    p.remove_ops({e + 2});
    ++stats.fused;
  }

  // For transpose_nhwc op i reading E(v): E is unary and layout-agnostic, everything reading E's
  // result transposes it to NHWC, and v already has an NHWC transpose for another reader.
  static bool lifts(const Program& p, int32_t i) {
    const Operation& t = p.ops()[i];
    if (attr_ints(t, "perm") != kToNhwc) return false;
    const Value& in = p.value(t.inputs[0][0]);
    if (in.kind != ValueKind::OpResult || in.producer < 0) return false;
    const Operation& op = p.ops()[in.producer];
    if (!unary_elementwise(p, op) || !only_read_transposed(p, op.results[0], kToNhwc)) return false;
    const std::vector<int32_t> siblings = p.users(op.inputs[0][0]);
    return std::any_of(siblings.begin(), siblings.end(), [&](int32_t r) {
      return is_transpose(p.ops()[r]) && attr_ints(p.ops()[r], "perm") == kToNhwc;
    });
  }

  // E(v) read only as transpose_nhwc(E(v)) -> E(transpose_nhwc(v)); the new transpose of v then merges
  // with its sibling.
  static void lift(Program& p, int32_t e, PassStats& stats) {
    const Operation op = p.ops()[e];
    const ValueId v_nhwc = p.insert_op(e, "transpose", {op.inputs[0]}, {{"perm", AttrValue(kToNhwc)}})[0];
    std::vector<std::vector<ValueId>> inputs = op.inputs;
    inputs[0] = {v_nhwc};
    const ValueId y = p.insert_op(e + 1, op.type, inputs, op.attrs)[0];
    std::vector<int32_t> readers = p.users(op.results[0]);
    for (int32_t r : readers) p.replace_uses(p.ops()[r].results[0], y);
    readers.push_back(e + 2);
    p.remove_ops(readers);
    ++stats.fused;
  }

  // max_pool2d of an int8 tensor that comes out of a transpose to NCHW.
  static bool pools_transposed_int8(const Program& p, const Operation& op) {
    const DType dt = p.value(op.inputs[0][0]).type.dtype;
    return (dt == DType::u8 || dt == DType::i8) && transpose_producing(p, op.inputs[0][0], kToNchw) >= 0;
  }

  // max_pool2d(transpose_nchw(v)) -> transpose_nchw(max_pool2d_nhwc(v)) at the pool's place.
  static void pool_channels_last(Program& p, int32_t i, PassStats& stats) {
    const Operation op = p.ops()[i];
    const std::vector<ValueId> v = p.ops()[p.value(op.inputs[0][0]).producer].inputs[0];
    const ValueId nhwc = p.insert_op(i, "max_pool2d_nhwc", {v}, op.attrs)[0];
    const ValueId nchw = p.insert_op(i + 1, "transpose", {{nhwc}}, {{"perm", AttrValue(kToNchw)}})[0];
    p.replace_uses(op.results[0], nchw);
    p.remove_ops({i + 2});
    ++stats.fused;
  }

  // For a binary elementwise op whose one operand comes out of a transpose to NCHW ([N, C, H, W]) and
  // whose other is per channel ([N or 1, C, 1, 1]): the per-channel operand's slot; -1 otherwise.
  static int channel_operand(const Program& p, const Operation& op) {
    if (!binary_elementwise(op) || op.inputs.size() != 2 || op.inputs[0].size() != 1 || op.inputs[1].size() != 1) return -1;
    for (int slot : {0, 1}) {
      const ValueId a = op.inputs[static_cast<size_t>(1 - slot)][0], s = op.inputs[static_cast<size_t>(slot)][0];
      const Shape& as = p.value(a).type.shape;
      const Shape& ss = p.value(s).type.shape;
      if (transpose_producing(p, a, kToNchw) < 0 || as.size() != 4 || ss.size() != 4) continue;
      if ((ss[0] == as[0] || ss[0] == 1) && ss[1] == as[1] && ss[1] >= 0 && ss[2] == 1 && ss[3] == 1) return slot;
    }
    return -1;
  }

  // E(transpose_nchw(a), s) -> transpose_nchw(E(a, reshape(s, [N, 1, 1, C]))), the operands in their slots.
  static void scale_channels_last(Program& p, int32_t i, int slot, PassStats& stats) {
    const Operation op = p.ops()[i];
    const ValueId a = op.inputs[static_cast<size_t>(1 - slot)][0], s = op.inputs[static_cast<size_t>(slot)][0];
    const Shape& ss = p.value(s).type.shape;
    std::vector<std::vector<ValueId>> inputs = op.inputs;
    inputs[static_cast<size_t>(1 - slot)] = p.ops()[p.value(a).producer].inputs[0];
    inputs[static_cast<size_t>(slot)] = p.insert_op(i, "reshape", {{s}}, {{"shape", AttrValue(std::vector<int64_t>{ss[0], 1, 1, ss[1]})}});
    const ValueId nhwc = p.insert_op(i + 1, op.type, inputs, op.attrs)[0];
    const ValueId nchw = p.insert_op(i + 2, "transpose", {{nhwc}}, {{"perm", AttrValue(kToNchw)}})[0];
    p.replace_uses(op.results[0], nchw);
    p.remove_ops({i + 3});
    ++stats.fused;
  }

  // For a per-tensor quantize_linear of mul(gate, a) with gate [N or 1, 1, 1, C] and a [N, H, W, C], the
  // product read by nothing else: the mul's slot holding the gate; -1 otherwise.
  static int gate_slot(const Program& p, const Operation& q) {
    if (!p.value(q.inputs[1][0]).type.shape.empty()) return -1;
    const Value& x = p.value(q.inputs[0][0]);
    if (x.kind != ValueKind::OpResult || x.producer < 0 || x.type.dtype != DType::f32) return -1;
    const Operation& mul = p.ops()[x.producer];
    if (mul.type != "mul" || mul.inputs.size() != 2 || p.users(q.inputs[0][0]).size() != 1 || p.is_output(q.inputs[0][0])) return -1;
    for (int slot : {0, 1}) {
      const Value& g = p.value(mul.inputs[static_cast<size_t>(slot)][0]);
      const Value& a = p.value(mul.inputs[static_cast<size_t>(1 - slot)][0]);
      const Shape &gs = g.type.shape, &as = a.type.shape;
      if (g.type.dtype != DType::f32 || a.type.dtype != DType::f32 || gs.size() != 4 || as != x.type.shape) continue;
      if ((gs[0] == as[0] || gs[0] == 1) && gs[1] == 1 && gs[2] == 1 && gs[3] == as[3] && as[3] >= 0) return slot;
    }
    return -1;
  }

  // quantize_linear(mul(gate, a)) -> gated_quantize(a, gate) at the quantize's place (dce takes the mul).
  static void gated_quantize(Program& p, int32_t i, int slot, PassStats& stats) {
    const Operation q = p.ops()[i];
    const Operation& mul = p.ops()[p.value(q.inputs[0][0]).producer];
    const ValueId gate = mul.inputs[static_cast<size_t>(slot)][0], a = mul.inputs[static_cast<size_t>(1 - slot)][0];
    const ValueId out = p.insert_op(i, "gated_quantize", {{a}, {gate}, q.inputs[1], q.inputs[2]}, {{"dtype", q.attrs.at("dtype")}})[0];
    p.replace_uses(q.results[0], out);
    p.remove_ops({i + 1});
    ++stats.fused;
  }

  // A concat of 4-D values that each come out of a transpose to NCHW.
  static bool joins_transposed(const Program& p, const Operation& op) {
    const std::vector<ValueId>& xs = op.inputs[0];
    return !xs.empty() && p.value(op.results[0]).type.shape.size() == 4 &&
           std::all_of(xs.begin(), xs.end(), [&](ValueId x) { return transpose_producing(p, x, kToNchw) >= 0; });
  }

  // concat(transpose_nchw(a), ..., axis) -> transpose_nchw(concat(a, ..., the axis's place in NHWC)).
  static void concat_channels_last(Program& p, int32_t i, PassStats& stats) {
    const Operation op = p.ops()[i];
    std::vector<ValueId> xs;
    for (ValueId x : op.inputs[0]) xs.push_back(p.ops()[p.value(x).producer].inputs[0][0]);
    const int64_t axis = attr_int(op, "axis"), nchw_axis = axis < 0 ? axis + 4 : axis;
    AttrMap attrs = op.attrs;
    attrs["axis"] = AttrValue(kToNchw[static_cast<size_t>(nchw_axis)]);  // NCHW's axis k is NHWC's kToNchw[k]
    const ValueId nhwc = p.insert_op(i, "concat", {xs}, attrs)[0];
    const ValueId nchw = p.insert_op(i + 1, "transpose", {{nhwc}}, {{"perm", AttrValue(kToNchw)}})[0];
    p.replace_uses(op.results[0], nchw);
    p.remove_ops({i + 2});
    ++stats.fused;
  }

  // The reads of concat op i's channel shuffle become transpose_nchw(gather_channels(the concat's NHWC
  // inputs)): every slice of the shuffle, and its last reshape where something else reads it too. The
  // shuffle's ops are then swept.
  static void shuffle_channels_last(Program& p, int32_t i, PassStats& stats) {
    const ValueId concat = p.ops()[i].results[0];
    std::vector<ValueId> xs;
    for (ValueId x : p.ops()[i].inputs[0]) xs.push_back(p.ops()[p.value(x).producer].inputs[0][0]);
    std::vector<std::pair<int32_t, std::vector<int64_t>>> reads;  // op, the concat's channels it reads
    for (int32_t r = i + 1; r < static_cast<int32_t>(p.ops().size()); ++r) {
      const std::optional<ChannelShuffle> s = channel_shuffle_read(p, r);
      if (!s || s->concat != concat) continue;
      if (!read_only_by_slices(p, r)) reads.emplace_back(r, s->index);
    }
    for (auto it = reads.rbegin(); it != reads.rend(); ++it) {  // from the last, so that earlier indices hold
      const int32_t r = it->first;
      const ValueId nhwc = p.insert_op(r, "gather_channels", {xs}, {{"index", AttrValue(it->second)}})[0];
      const ValueId nchw = p.insert_op(r + 1, "transpose", {{nhwc}}, {{"perm", AttrValue(kToNchw)}})[0];
      p.replace_uses(p.ops()[r + 2].results[0], nchw);
      p.remove_ops({r + 2});
      ++stats.fused;
    }
    PassStats swept;
    dead_code_elimination()->run(p, swept);
    stats.removed += swept.removed;
  }

  // flatten(transpose_nchw(v)) from axis 1 on, read only as the x of quantized_linears with constant
  // weights.
  static bool flattens_into_linears(const Program& p, const Operation& op) {
    if (transpose_producing(p, op.inputs[0][0], kToNchw) < 0 || attr_int(op, "start_axis") != 1) return false;
    const int64_t stop = attr_int(op, "stop_axis");
    if (stop != -1 && stop != 3) return false;
    const std::vector<int32_t> readers = p.users(op.results[0]);
    return !readers.empty() && !p.is_output(op.results[0]) && std::all_of(readers.begin(), readers.end(), [&](int32_t r) {
      const Operation& l = p.ops()[r];
      return l.type == "quantized_linear" && l.inputs[0][0] == op.results[0] &&
             p.value(l.inputs[3][0]).kind == ValueKind::Param;
    });
  }

  // Each quantized_linear reads flatten(v) instead, with its weight's columns in v's (h, w, c) order.
  static void flatten_channels_last(Program& p, int32_t i, PassStats& stats) {
    const Operation op = p.ops()[i];
    const std::vector<ValueId> v = p.ops()[p.value(op.inputs[0][0]).producer].inputs[0];
    const Shape nhwc = p.value(v[0]).type.shape;
    const ValueId flat = p.insert_op(i, "flatten", {v}, op.attrs)[0];
    for (int32_t r : p.users(op.results[0])) {
      const ValueId wv = p.ops()[r].inputs[3][0];
      const Tensor& w = p.param(wv);
      const int64_t O = w.shape()[0];
      const Tensor permuted =
          ops::reshape(ops::transpose(ops::reshape(w, {O, nhwc[3], nhwc[1], nhwc[2]}), {0, 2, 3, 1}).contiguous(), {O, -1});
      p.set_input(r, 3, p.add_param(p.unique_name(p.value(wv).name + ".nhwc"), permuted));
    }
    p.replace_uses(op.results[0], flat);
    p.remove_ops({i + 1});
    ++stats.fused;
  }

  // For an NHWC quantized_conv2d i without quantize_x: the per-tensor quantize_linear of an f32 4-D value
  // (not itself a transpose's result) that, transposed to NHWC, is i's x, with i's scale and zero point,
  // and read by nothing else. -1 if there is none.
  static int32_t entry_quantize(const Program& p, int32_t i) {
    const Operation& conv = p.ops()[i];
    if (attr_bool(conv, "quantize_x")) return -1;
    const ValueId xt = conv.inputs[0][0];
    const int32_t t = transpose_producing(p, xt, kToNhwc);
    if (t < 0 || p.is_output(xt) || p.users(xt).size() != 1) return -1;
    const ValueId q = p.ops()[t].inputs[0][0];
    const Value& qv = p.value(q);
    if (qv.kind != ValueKind::OpResult || qv.producer < 0 || p.is_output(q) || p.users(q).size() != 1) return -1;
    const Operation& quant = p.ops()[qv.producer];
    if (quant.type != "quantize_linear" || !unary_elementwise(p, quant)) return -1;
    if (quant.inputs[1] != conv.inputs[1] || quant.inputs[2] != conv.inputs[2]) return -1;
    const ValueId x = quant.inputs[0][0];
    const ValueType& xtype = p.value(x).type;
    if (xtype.dtype != DType::f32 || xtype.shape.size() != 4 || transpose_producing(p, x, kToNchw) >= 0) return -1;
    return qv.producer;
  }

  // quantized_conv2d{channels_last}(transpose_nhwc(quantize_linear(x))) -> quantized_conv2d{quantize_x}(x).
  static void quantize_on_entry(Program& p, int32_t i, PassStats& stats) {
    const Operation op = p.ops()[i];
    const int32_t q = entry_quantize(p, i), t = p.value(op.inputs[0][0]).producer;
    std::vector<std::vector<ValueId>> inputs = op.inputs;
    inputs[0] = p.ops()[q].inputs[0];
    AttrMap attrs = op.attrs;
    attrs["quantize_x"] = AttrValue(true);
    const ValueId y = p.insert_op(i, op.type, inputs, attrs)[0];
    p.replace_uses(op.results[0], y);
    p.remove_ops({q, t, i + 1});
    stats.removed += 2;
    ++stats.fused;
  }

  // transpose(to NHWC) -> quantized_conv2d{channels_last} -> transpose(to NCHW); the residual too.
  static void to_channels_last(Program& p, int32_t i, PassStats& stats) {
    const Operation op = p.ops()[i];
    std::vector<std::vector<ValueId>> inputs = op.inputs;
    const size_t residual_slot = 6;
    int32_t at = i;
    for (size_t s : {size_t{0}, residual_slot})
      if (s < inputs.size() && !inputs[s].empty())
        inputs[s] = p.insert_op(at++, "transpose", {inputs[s]}, {{"perm", AttrValue(kToNhwc)}});
    AttrMap attrs = op.attrs;
    attrs["channels_last"] = AttrValue(true);
    const ValueId y = p.insert_op(at, op.type, inputs, attrs)[0];
    const ValueId back = p.insert_op(at + 1, "transpose", {{y}}, {{"perm", AttrValue(kToNchw)}})[0];
    p.replace_uses(op.results[0], back);
    p.remove_ops({at + 2});
    ++stats.fused;
  }
};

}  // namespace

std::unique_ptr<Pass> int8_channels_last() { return std::make_unique<Int8ChannelsLast>(); }

}  // namespace pd::ir::passes
