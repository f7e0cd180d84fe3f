// THE table of PaddlePaddle ops (ProgramDesc names; PIR names are translated by pir_op_names.cc): each
// converter builds ops of ops.yaml. docs/pd-convert.md lists the mapping.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "import_converters.h"
#include "op_api.h"

namespace pd::io::paddle_import {
namespace {

// Paddle's paddings ([h, w] or [top, bottom, left, right]) and padding_algorithm -> the symmetric padding of
// our ops, with a pad op in front for whatever is asymmetric (filled with `fill`). SAME resets dilation to
// 1, as Paddle does.
Ints spatial_padding(OpContext& c, ValueId& x, const Ints& kernel, const Ints& strides, Ints* dilations, double fill) {
  Ints p = c.attr_ints("paddings", {0, 0});
  const std::string algo = c.attr_string("padding_algorithm", "EXPLICIT");
  if (p.size() == 2) p = {p[0], p[0], p[1], p[1]};
  if (p.size() != 4) c.fail(fmt::format("paddings {} (expected 2 or 4 values)", p));
  if (algo == "VALID") {
    p = {0, 0, 0, 0};
  } else if (algo == "SAME") {
    const Shape& s = c.type(x).shape;
    for (int d = 0; d < 2; ++d) {
      if (s[2 + d] < 0) c.unsupported("padding_algorithm SAME needs known spatial extents; give --input-shape NAME=DIMS");
      const int64_t out = (s[2 + d] + strides[d] - 1) / strides[d];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + kernel[d] - s[2 + d]);
      p[2 * d] = total / 2;
      p[2 * d + 1] = total - total / 2;
    }
    if (dilations) *dilations = {1, 1};
  } else if (algo != "EXPLICIT") {
    c.fail(fmt::format("padding_algorithm '{}' is not one of EXPLICIT, SAME, VALID", algo));
  }
  const int64_t ph = std::min(p[0], p[1]), pw = std::min(p[2], p[3]);
  if (p[0] != p[1] || p[2] != p[3])  // pad's order: last axis first
    x = c.op("pad", {{x}}, {{"pads", Ints{p[2] - pw, p[3] - pw, p[0] - ph, p[1] - ph}}, {"value", fill}});
  return {ph, pw};
}

void conv2d(OpContext& c) {
  require_nchw(c);
  ValueId x = c.in("Input");
  const ValueId w = c.in("Filter");
  const Shape& ws = c.type(w).shape;
  if (ws.size() != 4) c.unsupported(fmt::format("filter of rank {} (only 2-D convolution)", ws.size()));
  const Ints strides = pair_attr(c, "strides", {1, 1});
  Ints dilations = pair_attr(c, "dilations", {1, 1});
  const Ints padding = spatial_padding(c, x, {ws[2], ws[3]}, strides, &dilations, 0.0);
  std::vector<ValueId> bias;
  if (c.has("Bias")) bias.push_back(c.in("Bias"));
  c.out("Output", c.op("conv2d", {{x}, {w}, bias},
                       {{"stride", strides}, {"padding", padding}, {"dilation", dilations}, {"groups", c.attr_int("groups", 1)}}));
}

void pool2d(OpContext& c) {
  require_nchw(c);
  ValueId x = c.in("X");
  const Shape& s = c.type(x).shape;
  if (s.size() != 4) c.unsupported(fmt::format("input of rank {} (only 2-D pooling over NCHW)", s.size()));
  const std::string kind = c.attr_string("pooling_type", "max");
  if (kind != "max" && kind != "avg") c.fail(fmt::format("pooling_type '{}' is neither max nor avg", kind));
  Ints kernel = pair_attr(c, "ksize", {1, 1});
  const bool global = c.attr_bool("global_pooling", false) || (c.attr_bool("adaptive", false) && kernel == Ints{1, 1});
  if (global) {
    if (kind == "avg") return c.out("Out", c.op("adaptive_avg_pool2d", {{x}}, {{"output_size", Ints{1, 1}}}));
    return c.out("Out", c.op("max", {{x}}, {{"axis", Ints{2, 3}}, {"keepdim", true}}));
  }
  if (c.attr_bool("adaptive", false)) {
    if (kind == "avg") return c.out("Out", c.op("adaptive_avg_pool2d", {{x}}, {{"output_size", kernel}}));
    c.unsupported("adaptive max pooling to a size other than 1x1");
  }
  const Ints strides = pair_attr(c, "strides", {1, 1});
  const ValueId before = x;
  const double fill = kind == "max" ? -std::numeric_limits<double>::infinity() : 0.0;
  const Ints padding = spatial_padding(c, x, kernel, strides, nullptr, fill);
  const bool exclusive = c.attr_bool("exclusive", true);
  if (kind == "avg" && x != before && exclusive) c.unsupported("asymmetric paddings with exclusive average pooling");
  AttrMap attrs{{"kernel_size", kernel}, {"stride", strides}, {"padding", padding}, {"ceil_mode", c.attr_bool("ceil_mode", false)}};
  if (kind == "avg") attrs["exclusive"] = exclusive;
  c.out("Out", c.op(kind == "max" ? "max_pool2d" : "avg_pool2d", {{x}}, attrs));
}

void batch_norm(OpContext& c) {
  require_nchw(c);
  c.out("Y", c.op("batch_norm", {{c.in("X")}, {c.in("Scale")}, {c.in("Bias")}, {c.in("Mean")}, {c.in("Variance")}},
                  {{"epsilon", c.attr_float("epsilon", 1e-5)}, {"training", false}}));
}

void layer_norm(OpContext& c) {
  const ValueId x = c.in("X");
  const Shape& s = c.type(x).shape;
  const int64_t begin = norm_axis(c, c.attr_int("begin_norm_axis", 1), rank_of(c, x), "begin_norm_axis");
  Shape norm(s.begin() + begin, s.end());
  int64_t n = 1;
  for (int64_t e : norm) n = e < 0 || n < 0 ? -1 : n * e;
  if (n < 0) c.unsupported("normalised extents unknown until run time");
  // Paddle keeps scale and bias flat ([prod of normalised extents]); ours have the normalised shape.
  auto affine = [&](const char* slot, double def) {
    if (!c.has(slot)) return c.param(ops::full(norm, def, c.type(x).dtype), std::string("layer_norm.") + slot);
    if (const Tensor* t = c.constant(c.in_name(slot))) return c.param(ops::reshape(*t, norm).contiguous(), c.in_name(slot));
    return c.op("reshape", {{c.in(slot)}}, {{"shape", norm}});
  };
  c.out("Y", c.op("layer_norm", {{x}, {affine("Scale", 1.0)}, {affine("Bias", 0.0)}},
                  {{"begin_norm_axis", begin}, {"epsilon", c.attr_float("epsilon", 1e-5)}}));
}

// Legacy broadcasting: with axis >= 0, y's dims line up with x's starting at `axis` (conv bias [C] at
// axis 1). Returns y reshaped for NumPy broadcasting.
ValueId align_operand(OpContext& c, ValueId x, ValueId y) {
  const int64_t axis = c.attr_int("axis", -1);
  const int64_t rx = rank_of(c, x), ry = rank_of(c, y);
  if (axis < 0 || ry >= rx || axis + ry == rx) return y;
  if (axis + ry > rx) c.fail(fmt::format("axis {} with operands of rank {} and {}", axis, rx, ry));
  Shape shape = c.type(y).shape;
  shape.resize(static_cast<size_t>(rx - axis), 1);
  return c.op("reshape", {{y}}, {{"shape", shape}});
}

// conv2d / linear without bias, read by this add alone, plus a constant per-channel vector: the bias
// is taken into the op (what Paddle's own fuse passes do at load time).
bool fuse_bias(OpContext& c, ValueId x, ValueId y) {
  ir::Program& p = c.program();
  const ir::Value& xv = p.value(x);
  if (xv.kind != ir::ValueKind::OpResult || p.value(y).kind != ir::ValueKind::Param) return false;
  if (c.readers(c.in_name("X")) != 1) return false;
  const ir::Operation op = p.ops()[static_cast<size_t>(xv.producer)];  // a copy: ops() grows below
  const bool conv = op.type == "conv2d";
  if ((!conv && op.type != "linear") || !op.inputs[2].empty()) return false;
  const Shape& ys = p.value(y).type.shape;
  const Shape& os = xv.type.shape;
  const int64_t channel_axis = conv ? 1 : static_cast<int64_t>(os.size()) - 1;
  const int64_t channels = os[static_cast<size_t>(channel_axis)];
  // y must broadcast as [channels] along channel_axis: trailing 1s after it, nothing but 1s before.
  const auto offset = static_cast<int64_t>(os.size()) - static_cast<int64_t>(ys.size());
  for (int64_t d = 0; d < static_cast<int64_t>(ys.size()); ++d) {
    const int64_t od = d + offset;
    const int64_t want = od == channel_axis ? channels : 1;
    if (ys[static_cast<size_t>(d)] != want && !(od < channel_axis && ys[static_cast<size_t>(d)] == 1)) return false;
    if (od == channel_axis && channels < 0) return false;
  }
  if (offset > channel_axis) return false;
  const std::string origin = c.origin(c.in_name("Y"));
  const ValueId bias = c.param(ops::reshape(p.param(y), {channels}).contiguous(),
                               origin.empty() ? c.in_name("X") + ".bias" : origin);
  std::vector<std::vector<ValueId>> inputs = op.inputs;
  inputs[2] = {bias};
  c.out("Out", c.op(op.type, inputs, op.attrs));
  c.count_fused();
  return true;
}

template <const char* Op>
void elementwise(OpContext& c) {
  const ValueId x = c.in("X");
  const ValueId y = align_operand(c, x, c.in("Y"));
  if (std::string(Op) == "add" && fuse_bias(c, x, y)) return;
  c.out("Out", c.op(Op, {{x}, {y}}));
}
constexpr char kAdd[] = "add", kSub[] = "sub", kMul[] = "mul", kDiv[] = "div", kPow[] = "pow";

// matmul by a constant 2-D matrix is linear (weights transposed once, here, into our [out, in] layout).
void matmul_like(OpContext& c, bool tx, bool ty, double alpha) {
  const ValueId x = c.in("X");
  const Tensor* w = c.constant(c.in_name("Y"));
  ValueId out;
  if (rank_of(c, x) < 2 || (w ? w->shape().size() : c.type(c.in("Y")).shape.size()) < 2)
    c.unsupported("1-D operands (matmul of vectors is not supported yet)");
  if (w && w->shape().size() == 2 && !tx) {
    const std::string& name = c.in_name("Y");
    const Tensor weight = ty ? *w : ops::transpose(*w, {1, 0}).contiguous();
    out = c.op("linear", {{x}, {c.param(weight, name)}, {}});
  } else {
    out = c.op("matmul", {{x}, {c.in("Y")}}, {{"transpose_x", tx}, {"transpose_y", ty}});
  }
  if (alpha != 1.0) out = c.op("mul", {{out}, {c.scalar(alpha, c.type(out).dtype)}});
  c.out("Out", out);
}
void matmul_v2(OpContext& c) { matmul_like(c, c.attr_bool("trans_x", false), c.attr_bool("trans_y", false), 1.0); }
void matmul_v1(OpContext& c) {
  matmul_like(c, c.attr_bool("transpose_X", false), c.attr_bool("transpose_Y", false), c.attr_float("alpha", 1.0));
}

// The old fc form: X flattened to 2-D at x_num_col_dims, times Y [K, N].
void mul_fc(OpContext& c) {
  ValueId x = c.in("X");
  const int64_t cols = c.attr_int("x_num_col_dims", 1);
  if (c.attr_int("y_num_col_dims", 1) != 1) c.unsupported("y_num_col_dims other than 1");
  if (rank_of(c, x) != cols + 1) x = c.op("flatten", {{x}}, {{"start_axis", cols}, {"stop_axis", int64_t{-1}}});
  const Tensor* w = c.constant(c.in_name("Y"));
  if (!w || w->shape().size() != 2) c.unsupported("mul by a non-constant or non-2-D Y");
  c.out("Out", c.op("linear", {{x}, {c.param(ops::transpose(*w, {1, 0}).contiguous(), c.in_name("Y"))}, {}}));
}

void scale(OpContext& c) {
  if (c.has("ScaleTensor")) c.unsupported("a scale computed at run time (ScaleTensor)");
  ValueId x = c.in("X");
  const double s = c.attr_float("scale", 1.0), b = c.attr_float("bias", 0.0);
  const DType dt = c.type(x).dtype;
  const bool after = c.attr_bool("bias_after_scale", true);
  if (!after && b != 0.0) x = c.op("add", {{x}, {c.scalar(b, dt)}});
  if (s != 1.0) x = c.op("mul", {{x}, {c.scalar(s, dt)}});
  if (after && b != 0.0) x = c.op("add", {{x}, {c.scalar(b, dt)}});
  c.out("Out", x);
}

void dropout(OpContext& c) {
  ValueId x = c.in("X");
  if (!c.attr_bool("is_test", true)) c.unsupported("dropout in training mode (is_test false) in an inference program");
  const std::string mode = c.attr_string("dropout_implementation", "downgrade_in_infer");
  if (mode == "downgrade_in_infer") {  // training kept values unscaled, so inference scales by 1 - p
    const double p = c.attr_float("dropout_prob", 0.5);
    if (p != 0.0) x = c.op("mul", {{x}, {c.scalar(1.0 - p, c.type(x).dtype)}});
  } else if (mode != "upscale_in_train") {
    c.fail(fmt::format("dropout_implementation '{}' is neither upscale_in_train nor downgrade_in_infer", mode));
  }
  c.out("Out", x);
}

template <const char* Op>
void unary(OpContext& c) {
  c.out("Out", c.op(Op, {{c.in("X")}}));
}
constexpr char kRelu[] = "relu", kSigmoid[] = "sigmoid", kTanh[] = "tanh", kExp[] = "exp", kSqrt[] = "sqrt",
               kAbs[] = "abs", kRsqrt[] = "rsqrt", kSilu[] = "silu", kErf[] = "erf", kLog[] = "log";

void gelu(OpContext& c) {
  const ValueId x = c.in("X");
  if (!c.attr_bool("approximate", false)) return c.out("Out", c.op("gelu", {{x}}));
  // tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  const DType dt = c.type(x).dtype;
  const ValueId x3 = c.op("mul", {{c.op("mul", {{x}, {x}})}, {x}});
  const ValueId inner = c.op("mul", {{c.op("add", {{x}, {c.op("mul", {{x3}, {c.scalar(0.044715, dt)}})}})},
                                     {c.scalar(0.7978845608028654, dt)}});
  const ValueId t = c.op("add", {{c.op("tanh", {{inner}})}, {c.scalar(1.0, dt)}});
  c.out("Out", c.op("mul", {{c.op("mul", {{x}, {t}})}, {c.scalar(0.5, dt)}}));
}

void hard_swish(OpContext& c) {
  if (c.attr_float("threshold", 6.0) != 6.0 || c.attr_float("scale", 6.0) != 6.0 || c.attr_float("offset", 3.0) != 3.0)
    c.unsupported("hard_swish with threshold/scale/offset other than 6/6/3");
  c.out("Out", c.op("hardswish", {{c.in("X")}}));
}
void hard_sigmoid(OpContext& c) {
  c.out("Out", c.op("hardsigmoid", {{c.in("X")}}, {{"alpha", c.attr_float("slope", 0.2)}, {"beta", c.attr_float("offset", 0.5)}}));
}
void relu6(OpContext& c) { c.out("Out", c.op("clip", {{c.in("X")}}, {{"min", 0.0}, {"max", c.attr_float("threshold", 6.0)}})); }
void clip(OpContext& c) {
  if (c.has("Min") || c.has("Max")) c.unsupported("clip bounds computed at run time");
  c.out("Out", c.op("clip", {{c.in("X")}}, {{"min", c.attr_float("min", 0.0)}, {"max", c.attr_float("max", 0.0)}}));
}
void leaky_relu(OpContext& c) { c.out("Out", c.op("leaky_relu", {{c.in("X")}}, {{"alpha", c.attr_float("alpha", 0.02)}})); }
void swish(OpContext& c) {
  if (c.attr_float("beta", 1.0) != 1.0) c.unsupported("swish with beta other than 1");
  c.out("Out", c.op("silu", {{c.in("X")}}));
}

template <const char* Op>
void softmax_like(OpContext& c) {
  c.out("Out", c.op(Op, {{c.in("X")}}, {{"axis", c.attr_int("axis", -1)}}));
}
constexpr char kSoftmax[] = "softmax", kLogSoftmax[] = "log_softmax";

void lookup_table_v2(OpContext& c) {
  c.out("Out", c.op("embedding", {{c.in("Ids")}, {c.in("W")}}, {{"padding_idx", c.attr_int("padding_idx", -1)}}));
}

template <const char* Op>
void reduce(OpContext& c) {
  const ValueId x = c.in("X");
  Ints axes = c.attr_bool("reduce_all", false) ? Ints{} : c.attr_ints("dim");
  for (int64_t& a : axes) a = norm_axis(c, a, rank_of(c, x));
  c.out("Out", c.op(Op, {{x}}, {{"axis", axes}, {"keepdim", c.attr_bool("keep_dim", false)}}));
}
constexpr char kMean[] = "mean", kSum[] = "sum", kMax[] = "max", kMin[] = "min";

struct Entry {
  const char* type;
  Converter fn;
};

// Sorted by name (binary search).
constexpr Entry kTable[] = {
    {"abs", unary<kAbs>},
    {"assign", assign},
    {"batch_norm", batch_norm},
    {"bicubic_interp_v2", interp_v2},
    {"bilinear_interp_v2", interp_v2},
    {"cast", cast},
    {"clip", clip},
    {"concat", concat},
    {"conv2d", conv2d},
    {"conv2d_transpose", conv2d_transpose},
    {"depthwise_conv2d", conv2d},
    {"dropout", dropout},
    {"elementwise_add", elementwise<kAdd>},
    {"elementwise_div", elementwise<kDiv>},
    {"elementwise_mul", elementwise<kMul>},
    {"elementwise_pow", elementwise<kPow>},
    {"elementwise_sub", elementwise<kSub>},
    {"erf", unary<kErf>},
    {"exp", unary<kExp>},
    {"fill_constant", fill_constant},
    {"flatten2", flatten2},
    {"flatten_contiguous_range", flatten_range},
    {"gelu", gelu},
    {"hard_sigmoid", hard_sigmoid},
    {"hard_swish", hard_swish},
    {"layer_norm", layer_norm},
    {"leaky_relu", leaky_relu},
    {"log", unary<kLog>},
    {"log_softmax", softmax_like<kLogSoftmax>},
    {"lookup_table_v2", lookup_table_v2},
    {"matmul", matmul_v1},
    {"matmul_v2", matmul_v2},
    {"mul", mul_fc},
    {"nearest_interp_v2", interp_v2},
    {"pool2d", pool2d},
    {"reduce_max", reduce<kMax>},
    {"reduce_mean", reduce<kMean>},
    {"reduce_min", reduce<kMin>},
    {"reduce_sum", reduce<kSum>},
    {"relu", unary<kRelu>},
    {"relu6", relu6},
    {"reshape2", reshape2},
    {"rsqrt", unary<kRsqrt>},
    {"scale", scale},
    {"shape", shape},
    {"sigmoid", unary<kSigmoid>},
    {"silu", unary<kSilu>},
    {"slice", slice},
    {"softmax", softmax_like<kSoftmax>},
    {"split", split},
    {"sqrt", unary<kSqrt>},
    {"squeeze2", squeeze2},
    {"swish", swish},
    {"tanh", unary<kTanh>},
    {"transpose2", transpose2},
    {"unsqueeze2", unsqueeze2},
};

}  // namespace

const Converter* find_converter(const std::string& type) {
  static const bool sorted = std::is_sorted(std::begin(kTable), std::end(kTable), [](const Entry& a, const Entry& b) {
    return std::string(a.type) < b.type;
  });
  PD_CHECK(sorted, ErrorCode::kInternal, "the Paddle converter table is not sorted by op type");
  auto it = std::lower_bound(std::begin(kTable), std::end(kTable), type,
                             [](const Entry& e, const std::string& t) { return e.type < t; });
  return it != std::end(kTable) && it->type == type ? &it->fn : nullptr;
}

std::vector<std::string> supported_paddle_ops() {
  std::vector<std::string> out;
  for (const Entry& e : kTable) out.push_back(e.type);
  return out;
}

}  // namespace pd::io::paddle_import
