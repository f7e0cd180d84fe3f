// THE ONNX export table: one exporter per op of ops.yaml that portable programs hold, each writing
// standard ONNX nodes (docs/pd-convert.md lists the mapping). Ops that only lowered programs hold (fused
// and int8 kernels) and training ops are absent, so exporting them is refused by name.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>

#include "export_context.h"
#include "onnx_tensor.h"

namespace pd::io::onnx_export {
namespace {

using Ints = std::vector<int64_t>;

template <const char* Type>
void same(ExportContext& c) {  // one-to-one, tensor inputs in order, no attributes
  std::vector<std::string> in;
  for (size_t i = 0; i < c.op().inputs.size(); ++i) in.push_back(c.in(i));
  c.node(Type, in, {c.out()});
}

#define PD_ONNX(n) constexpr char k##n[] = #n
PD_ONNX(Add); PD_ONNX(Sub); PD_ONNX(Mul); PD_ONNX(Div); PD_ONNX(Pow); PD_ONNX(Neg); PD_ONNX(Exp); PD_ONNX(Log);
PD_ONNX(Sqrt); PD_ONNX(Abs); PD_ONNX(Sign); PD_ONNX(Erf); PD_ONNX(Tanh); PD_ONNX(Sigmoid); PD_ONNX(Relu);
PD_ONNX(Softsign); PD_ONNX(Equal); PD_ONNX(Greater); PD_ONNX(Less); PD_ONNX(Where);
#undef PD_ONNX

void rsqrt(ExportContext& c) {
  c.decomposed();
  const std::string s = c.tmp("sqrt");
  c.node("Sqrt", {c.in(0)}, {s});
  c.node("Reciprocal", {s}, {c.out()});
}

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), the form torch.onnx writes before opset 20's Gelu.
void gelu(ExportContext& c) {
  c.decomposed();
  const DType t = c.in_type(0).dtype;
  const std::string scaled = c.tmp("scaled"), e = c.tmp("erf"), one_plus = c.tmp("one_plus"), half_x = c.tmp("half_x");
  c.node("Mul", {c.in(0), c.scalar(0.70710678118654752440, t, "rsqrt2")}, {scaled});
  c.node("Erf", {scaled}, {e});
  c.node("Add", {e, c.scalar(1.0, t, "one")}, {one_plus});
  c.node("Mul", {c.in(0), c.scalar(0.5, t, "half")}, {half_x});
  c.node("Mul", {half_x, one_plus}, {c.out()});
}

void silu(ExportContext& c) {
  c.decomposed();
  const std::string s = c.tmp("sigmoid");
  c.node("Sigmoid", {c.in(0)}, {s});
  c.node("Mul", {c.in(0), s}, {c.out()});
}

void leaky_relu(ExportContext& c) { set_attr(c.node("LeakyRelu", {c.in(0)}, {c.out()}), "alpha", c.attr_float("alpha")); }

void softplus(ExportContext& c) {
  if (c.attr_float("beta") != 1.0) c.refuse("softplus with beta != 1 (ONNX Softplus has no beta)");
  c.node("Softplus", {c.in(0)}, {c.out()});
}

void clip(ExportContext& c) {
  const DType t = c.in_type(0).dtype;
  c.node("Clip", {c.in(0), c.scalar(c.attr_float("min"), t, "min"), c.scalar(c.attr_float("max"), t, "max")}, {c.out()});
}

void hardsigmoid(ExportContext& c) {
  auto* n = c.node("HardSigmoid", {c.in(0)}, {c.out()});
  set_attr(n, "alpha", c.attr_float("alpha"));
  set_attr(n, "beta", c.attr_float("beta"));
}

void hardswish(ExportContext& c) {
  if (c.opset() >= 14) return void(c.node("HardSwish", {c.in(0)}, {c.out()}));
  c.decomposed();
  const std::string g = c.tmp("gate");
  auto* n = c.node("HardSigmoid", {c.in(0)}, {g});
  set_attr(n, "alpha", 1.0 / 6.0);
  set_attr(n, "beta", 0.5);
  c.node("Mul", {c.in(0), g}, {c.out()});
}

void cast(ExportContext& c) {
  const auto* a = &c.op().attrs.at("dtype");
  set_attr(c.node("Cast", {c.in(0)}, {c.out()}), "to", int64_t{onnx_util::onnx_type_of(std::get<DType>(*a))});
}

// Conv or ConvTranspose with the attributes both take (our symmetric padding written for both ends).
onnx::NodeProto* convolution(ExportContext& c, const char* type) {
  std::vector<std::string> in{c.in(0), c.in(1)};
  if (!c.in(2).empty()) in.push_back(c.in(2));
  auto* n = c.node(type, in, {c.out()});
  const Ints pad = c.attr_ints("padding"), w = c.in_type(1).shape;
  set_attr(n, "kernel_shape", Ints{w[2], w[3]});
  set_attr(n, "strides", c.attr_ints("stride"));
  set_attr(n, "pads", Ints{pad[0], pad[1], pad[0], pad[1]});
  set_attr(n, "dilations", c.attr_ints("dilation"));
  set_attr(n, "group", c.attr_int("groups"));
  return n;
}

void conv2d(ExportContext& c) {
  if (c.attr_bool("channels_last")) c.refuse("channels_last conv2d (ONNX's Conv is NCHW; export the NCHW model)");
  convolution(c, "Conv");
}

void conv2d_transpose(ExportContext& c) { set_attr(convolution(c, "ConvTranspose"), "output_padding", c.attr_ints("output_padding")); }

void pool(ExportContext& c, const char* type) {
  auto* n = c.node(type, {c.in(0)}, {c.out()});
  const Ints k = c.attr_ints("kernel_size"), pad = c.attr_ints("padding");
  Ints stride = c.attr_ints("stride");
  if (stride.empty()) stride = k;
  set_attr(n, "kernel_shape", k);
  set_attr(n, "strides", stride);
  set_attr(n, "pads", Ints{pad[0], pad[1], pad[0], pad[1]});
  set_attr(n, "ceil_mode", int64_t{c.attr_bool("ceil_mode")});
  if (std::string(type) == "AveragePool") set_attr(n, "count_include_pad", int64_t{!c.attr_bool("exclusive")});
}
void max_pool2d(ExportContext& c) { pool(c, "MaxPool"); }
void avg_pool2d(ExportContext& c) { pool(c, "AveragePool"); }

void adaptive_avg_pool2d(ExportContext& c) {
  const Ints out = c.attr_ints("output_size");
  if (out == Ints{1, 1}) return void(c.node("GlobalAveragePool", {c.in(0)}, {c.out()}));
  const Shape& s = c.in_type(0).shape;
  if (s[2] < 0 || s[3] < 0 || s[2] % out[0] || s[3] % out[1])
    c.refuse("adaptive pooling to a size that does not divide the (known) input size");
  auto* n = c.node("AveragePool", {c.in(0)}, {c.out()});
  set_attr(n, "kernel_shape", Ints{s[2] / out[0], s[3] / out[1]});
  set_attr(n, "strides", Ints{s[2] / out[0], s[3] / out[1]});
}

// interpolate as Resize: by its scales where they give its size (floor(in * scale), as the ONNX spec
// sizes the output), else by sizes (the batch and channels from Shape where the batch is dynamic).
void interpolate(ExportContext& c) {
  std::string mode = c.attr_string("mode"), rounding = c.attr_string("nearest_mode");
  const Ints size = c.attr_ints("size");
  const std::vector<double> scales = c.attr_floats("scales");
  const Shape& s = c.in_type(0).shape;
  std::string scales_in, sizes_in;
  if (!scales.empty()) {
    for (int d = 0; d < 2; ++d)
      if (s[2 + d] < 0 || static_cast<int64_t>(std::floor(static_cast<float>(s[2 + d]) * static_cast<float>(scales[d]))) != size[d])
        c.refuse("an interpolate whose scales do not give its size as floor(extent * scale)");
    scales_in = c.constant(Tensor::from_vector<float>({1.0f, 1.0f, static_cast<float>(scales[0]), static_cast<float>(scales[1])}, {4}), "scales");
  } else if (s[0] >= 0 && s[1] >= 0) {
    sizes_in = c.ints({s[0], s[1], size[0], size[1]}, "sizes");
  } else {
    const std::string shape = c.tmp("shape"), lead = c.tmp("batch_channels");
    c.node("Shape", {c.in(0)}, {shape});
    c.node("Slice", {shape, c.ints({0}, "start"), c.ints({2}, "end")}, {lead});
    sizes_in = c.tmp("sizes");
    set_attr(c.node("Concat", {lead, c.ints(size, "size")}, {sizes_in}), "axis", int64_t{0});
  }
  const std::string roi = c.constant(Tensor::from_vector<float>({}, {0}), "roi");
  const std::string empty = c.constant(Tensor::from_vector<float>({}, {0}), "no_scales");
  auto* n = sizes_in.empty() ? c.node("Resize", {c.in(0), roi, scales_in}, {c.out()}) : c.node("Resize", {c.in(0), roi, empty, sizes_in}, {c.out()});
  set_attr(n, "mode", mode == "bilinear" ? std::string("linear") : (mode == "bicubic" ? std::string("cubic") : mode));
  set_attr(n, "coordinate_transformation_mode", c.attr_string("coordinate_mode"));
  if (mode == "nearest") set_attr(n, "nearest_mode", rounding);
  if (mode == "bicubic") set_attr(n, "cubic_coeff_a", c.attr_float("cubic_coeff_a"));
}

void batch_norm(ExportContext& c) {
  if (c.attr_bool("training")) c.refuse("training-mode batch_norm (export the inference model)");
  if (c.attr_bool("channels_last")) c.refuse("channels_last batch_norm (ONNX's BatchNormalization is NCHW)");
  const bool relu = c.attr_bool("fuse_relu");
  const std::string normalised = relu ? c.tmp("normalised") : c.out();
  auto* n = c.node("BatchNormalization", {c.in(0), c.in(1), c.in(2), c.in(3), c.in(4)}, {normalised});
  set_attr(n, "epsilon", c.attr_float("epsilon"));
  set_attr(n, "momentum", c.attr_float("momentum"));
  if (relu) c.node("Relu", {normalised}, {c.out()});
}

// LayerNormalization is opset 17; before it, the mean/variance arithmetic torch.onnx writes.
void layer_norm(ExportContext& c) {
  const int64_t rank = static_cast<int64_t>(c.in_type(0).shape.size());
  int64_t axis = c.attr_int("begin_norm_axis");
  axis = axis < 0 ? axis + rank : axis;
  if (c.opset() >= 17) {
    auto* n = c.node("LayerNormalization", {c.in(0), c.in(1), c.in(2)}, {c.out()});
    set_attr(n, "axis", axis);
    set_attr(n, "epsilon", c.attr_float("epsilon"));
    return;
  }
  c.decomposed();
  Ints axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  const DType t = c.in_type(0).dtype;
  const std::string mean = c.tmp("mean"), centred = c.tmp("centred"), sq = c.tmp("square"), var = c.tmp("var"),
                    var_eps = c.tmp("var_eps"), sd = c.tmp("std"), normed = c.tmp("normed"), scaled = c.tmp("scaled");
  set_attr(c.node("ReduceMean", {c.in(0)}, {mean}), "axes", axes);
  c.node("Sub", {c.in(0), mean}, {centred});
  c.node("Mul", {centred, centred}, {sq});
  set_attr(c.node("ReduceMean", {sq}, {var}), "axes", axes);
  c.node("Add", {var, c.scalar(c.attr_float("epsilon"), t, "epsilon")}, {var_eps});
  c.node("Sqrt", {var_eps}, {sd});
  c.node("Div", {centred, sd}, {normed});
  c.node("Mul", {normed, c.in(1)}, {scaled});
  c.node("Add", {scaled, c.in(2)}, {c.out()});
}

void softmax_like(ExportContext& c, const char* type) {
  const int64_t rank = static_cast<int64_t>(c.in_type(0).shape.size());
  int64_t axis = c.attr_int("axis");
  axis = axis < 0 ? axis + rank : axis;
  if (c.opset() < 13 && axis != rank - 1) c.refuse("a softmax over a non-last axis needs opset 13 or later");
  set_attr(c.node(type, {c.in(0)}, {c.out()}), "axis", axis);
}
void softmax(ExportContext& c) { softmax_like(c, "Softmax"); }
void log_softmax(ExportContext& c) { softmax_like(c, "LogSoftmax"); }

void dropout(ExportContext& c) {
  if (c.attr_bool("training")) c.refuse("training-mode dropout (export the inference model)");
  c.node("Identity", {c.in(0)}, {c.out()});
}

void linear(ExportContext& c) {
  if (c.in_type(0).shape.size() == 2) {  // torch's nn.Linear form
    std::vector<std::string> in{c.in(0), c.in(1)};
    if (!c.in(2).empty()) in.push_back(c.in(2));
    set_attr(c.node("Gemm", in, {c.out()}), "transB", int64_t{1});
    return;
  }
  // Transpose + MatMul, which the importer reads back as linear on the same param.
  const std::string wt = c.tmp("weight_t"), prod = c.in(2).empty() ? c.out() : c.tmp("matmul");
  set_attr(c.node("Transpose", {c.in(1)}, {wt}), "perm", Ints{1, 0});
  c.node("MatMul", {c.in(0), wt}, {prod});
  if (!c.in(2).empty()) c.node("Add", {prod, c.in(2)}, {c.out()});
}

std::string transposed_last2(ExportContext& c, size_t slot) {
  const int64_t rank = static_cast<int64_t>(c.in_type(slot).shape.size());
  Ints perm;
  for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
  std::swap(perm[rank - 1], perm[rank - 2]);
  const std::string t = c.tmp("transposed");
  set_attr(c.node("Transpose", {c.in(slot)}, {t}), "perm", perm);
  return t;
}

void matmul(ExportContext& c) {
  const std::string a = c.attr_bool("transpose_x") ? transposed_last2(c, 0) : c.in(0);
  const std::string b = c.attr_bool("transpose_y") ? transposed_last2(c, 1) : c.in(1);
  c.node("MatMul", {a, b}, {c.out()});
}

void embedding(ExportContext& c) { c.node("Gather", {c.in(1), c.in(0)}, {c.out()}); }

// Our reductions take axes [] for all of them; ONNX takes no axes for all.
void reduce(ExportContext& c, const char* type, bool axes_input) {
  const Ints axes = c.attr_ints("axis");
  std::vector<std::string> in{c.in(0)};
  if (axes_input && !axes.empty()) in.push_back(c.ints(axes, "axes"));
  auto* n = c.node(type, in, {c.out()});
  if (!axes_input && !axes.empty()) set_attr(n, "axes", axes);
  set_attr(n, "keepdims", int64_t{c.attr_bool("keepdim")});
}
void sum(ExportContext& c) { reduce(c, "ReduceSum", c.opset() >= 13); }
void mean(ExportContext& c) { reduce(c, "ReduceMean", false); }
void max(ExportContext& c) { reduce(c, "ReduceMax", false); }
void min(ExportContext& c) { reduce(c, "ReduceMin", false); }
void logsumexp(ExportContext& c) { reduce(c, "ReduceLogSumExp", false); }

void argmax(ExportContext& c) {
  auto* n = c.node("ArgMax", {c.in(0)}, {c.out()});
  set_attr(n, "axis", c.attr_int("axis"));
  set_attr(n, "keepdims", int64_t{c.attr_bool("keepdim")});
}

void reshape(ExportContext& c) { c.node("Reshape", {c.in(0), c.ints(c.attr_ints("shape"), "shape")}, {c.out()}); }

void transpose(ExportContext& c) { set_attr(c.node("Transpose", {c.in(0)}, {c.out()}), "perm", c.attr_ints("perm")); }

// flatten(start, stop): ONNX Flatten when it yields the same 2-D shape, else a Reshape to the result's
// shape (at most one extent unknown).
void flatten(ExportContext& c) {
  const Shape& in = c.in_type(0).shape;
  const Shape& out = c.out_type().shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t start = c.attr_int("start_axis"), stop = c.attr_int("stop_axis");
  start = start < 0 ? start + rank : start;
  stop = stop < 0 ? stop + rank : stop;
  if (start == 1 && stop == rank - 1) return set_attr(c.node("Flatten", {c.in(0)}, {c.out()}), "axis", int64_t{1});
  if (std::count(out.begin(), out.end(), -1) > 1) c.refuse("a flatten with more than one dynamic extent in its result");
  c.node("Reshape", {c.in(0), c.ints(Ints(out.begin(), out.end()), "shape")}, {c.out()});
}

void axes_op(ExportContext& c, const char* type) {
  const Ints axes = c.attr_ints("axis");
  if (c.opset() >= 13) {
    std::vector<std::string> in{c.in(0)};
    if (!axes.empty()) in.push_back(c.ints(axes, "axes"));
    c.node(type, in, {c.out()});
    return;
  }
  auto* n = c.node(type, {c.in(0)}, {c.out()});
  if (!axes.empty()) set_attr(n, "axes", axes);
}
void squeeze(ExportContext& c) { axes_op(c, "Squeeze"); }
void unsqueeze(ExportContext& c) { axes_op(c, "Unsqueeze"); }

void expand(ExportContext& c) {
  Ints shape = c.attr_ints("shape");
  for (int64_t& d : shape) d = d < 0 ? 1 : d;  // ONNX broadcasting keeps an extent against 1
  c.node("Expand", {c.in(0), c.ints(shape, "shape")}, {c.out()});
}

void slice(ExportContext& c) {
  std::vector<std::string> in{c.in(0), c.ints(c.attr_ints("starts"), "starts"), c.ints(c.attr_ints("ends"), "ends"),
                              c.ints(c.attr_ints("axes"), "axes")};
  const Ints steps = c.attr_ints("steps");
  if (!steps.empty()) in.push_back(c.ints(steps, "steps"));
  c.node("Slice", in, {c.out()});
}

void concat(ExportContext& c) { set_attr(c.node("Concat", c.list(0), {c.out()}), "axis", c.attr_int("axis")); }

void split(ExportContext& c) {
  std::vector<std::string> outs;
  for (size_t i = 0; i < c.op().results.size(); ++i) outs.push_back(c.out(i));
  const Ints sections = c.attr_ints("sections");
  onnx::NodeProto* n = c.opset() >= 13 ? c.node("Split", {c.in(0), c.ints(sections, "split")}, outs)
                                       : c.node("Split", {c.in(0)}, outs);
  if (c.opset() < 13) set_attr(n, "split", sections);
  set_attr(n, "axis", c.attr_int("axis"));
}

void pad(ExportContext& c) {
  const Ints ours = c.attr_ints("pads");  // F.pad order, last axis first
  const size_t rank = c.in_type(0).shape.size();
  Ints pads(2 * rank, 0);
  for (size_t k = 0; 2 * k < ours.size(); ++k) {
    const size_t axis = rank - 1 - k;
    pads[axis] = ours[2 * k];
    pads[axis + rank] = ours[2 * k + 1];
  }
  c.node("Pad", {c.in(0), c.ints(pads, "pads"), c.scalar(c.attr_float("value"), c.in_type(0).dtype, "value")}, {c.out()});
}

void quantize(ExportContext& c) {
  set_attr(c.node("QuantizeLinear", {c.in(0), c.in(1), c.in(2)}, {c.out()}), "axis", c.attr_int("axis"));
}
void dequantize(ExportContext& c) {
  set_attr(c.node("DequantizeLinear", {c.in(0), c.in(1), c.in(2)}, {c.out()}), "axis", c.attr_int("axis"));
}

const std::map<std::string, Exporter>& table() {
  static const std::map<std::string, Exporter> t = {
      {"abs", same<kAbs>},
      {"adaptive_avg_pool2d", adaptive_avg_pool2d},
      {"conv2d_transpose", conv2d_transpose},
      {"interpolate", interpolate},
      {"add", same<kAdd>},
      {"argmax", argmax},
      {"avg_pool2d", avg_pool2d},
      {"batch_norm", batch_norm},
      {"cast", cast},
      {"clip", clip},
      {"concat", concat},
      {"conv2d", conv2d},
      {"dequantize_linear", dequantize},
      {"div", same<kDiv>},
      {"dropout", dropout},
      {"embedding", embedding},
      {"equal", same<kEqual>},
      {"erf", same<kErf>},
      {"exp", same<kExp>},
      {"expand", expand},
      {"flatten", flatten},
      {"gelu", gelu},
      {"greater", same<kGreater>},
      {"hardsigmoid", hardsigmoid},
      {"hardswish", hardswish},
      {"layer_norm", layer_norm},
      {"leaky_relu", leaky_relu},
      {"less", same<kLess>},
      {"linear", linear},
      {"log", same<kLog>},
      {"log_softmax", log_softmax},
      {"logsumexp", logsumexp},
      {"matmul", matmul},
      {"max", max},
      {"max_pool2d", max_pool2d},
      {"mean", mean},
      {"min", min},
      {"mul", same<kMul>},
      {"neg", same<kNeg>},
      {"pad", pad},
      {"pow", same<kPow>},
      {"quantize_linear", quantize},
      {"relu", same<kRelu>},
      {"reshape", reshape},
      {"scaled_dot_product_attention", scaled_dot_product_attention},
      {"rsqrt", rsqrt},
      {"sigmoid", same<kSigmoid>},
      {"sign", same<kSign>},
      {"silu", silu},
      {"slice", slice},
      {"softmax", softmax},
      {"softplus", softplus},
      {"softsign", same<kSoftsign>},
      {"split", split},
      {"sqrt", same<kSqrt>},
      {"squeeze", squeeze},
      {"sub", same<kSub>},
      {"sum", sum},
      {"tanh", same<kTanh>},
      {"transpose", transpose},
      {"unsqueeze", unsqueeze},
      {"where", same<kWhere>},
  };
  return t;
}

}  // namespace

const Exporter* find_exporter(const std::string& op) {
  auto it = table().find(op);
  return it == table().end() ? nullptr : &it->second;
}

}  // namespace pd::io::onnx_export
