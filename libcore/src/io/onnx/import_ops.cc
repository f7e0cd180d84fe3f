// THE ONNX import table: one converter per ONNX op type, onto ops of ops.yaml (docs/pd-convert.md lists
// the mapping). Converters see ONNX semantics through NodeContext (defaults, opset differences) and build
// with ctx.op(), which folds whatever is known at import time.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "import_context.h"
#include "import_converters.h"
#include "onnx_tensor.h"

namespace pd::io::onnx_import {
namespace {


// ---- elementwise ----------------------------------------------------------------------------------

template <const char* Op>
void unary(NodeContext& c) {
  c.output(0, c.op(Op, {{c.input(0)}}));
}

template <const char* Op>
void binary(NodeContext& c) {
  c.output(0, c.op(Op, {{c.input(0)}, {c.input(1)}}));
}

#define PD_NAME(n) constexpr char k_##n[] = #n
PD_NAME(add); PD_NAME(sub); PD_NAME(mul); PD_NAME(div); PD_NAME(pow); PD_NAME(equal); PD_NAME(greater);
PD_NAME(less); PD_NAME(relu); PD_NAME(sigmoid); PD_NAME(tanh); PD_NAME(exp); PD_NAME(log); PD_NAME(sqrt);
PD_NAME(neg); PD_NAME(abs); PD_NAME(erf); PD_NAME(sign); PD_NAME(softsign); PD_NAME(hardswish); PD_NAME(greater_equal);
PD_NAME(less_equal); PD_NAME(logical_and); PD_NAME(logical_or); PD_NAME(logical_xor); PD_NAME(maximum); PD_NAME(minimum);
#undef PD_NAME

void mod(NodeContext& c) {
  if (c.attr_int("fmod", 0)) c.unsupported("Mod with fmod=1 (C fmod, the dividend's sign) is not supported; fmod=0 is");
  c.output(0, c.op("remainder", {{c.input(0)}, {c.input(1)}}));
}

void reciprocal(NodeContext& c) {
  const ValueId x = c.input(0);
  const ValueId one = c.param(Tensor::full_scalar(1.0, c.type(x).dtype), "one");
  c.output(0, c.op("div", {{one}, {x}}));
}

// b == false for a bool b: its negation (ops.yaml has no logical not; equal folds at import where b is
// known, as in Swin's attention masks).
ValueId negated(NodeContext& c, ValueId b) { return c.op("equal", {{b}, {c.param(Tensor::full_scalar(0.0, DType::boolean), "false")}}); }

void logical_not(NodeContext& c) {
  const ValueId x = c.input(0);
  if (c.type(x).dtype != DType::boolean) c.fail(fmt::format("Not takes bool, got {}", dtype_name(c.type(x).dtype)));
  c.output(0, negated(c, x));
}

// IsNaN(x) is x != x, written as (x == x) == false.
void is_nan(NodeContext& c) {
  const ValueId x = c.input(0);
  if (!is_floating(c.type(x).dtype)) c.fail(fmt::format("IsNaN takes a floating-point tensor, got {}", dtype_name(c.type(x).dtype)));
  c.output(0, negated(c, c.op("equal", {{x}, {x}})));
}

// IsInf: x == +inf, x == -inf, or |x| == inf for both (the default).
void is_inf(NodeContext& c) {
  const ValueId x = c.input(0);
  const DType dt = c.type(x).dtype;
  if (!is_floating(dt)) c.fail(fmt::format("IsInf takes a floating-point tensor, got {}", dtype_name(dt)));
  const bool positive = c.attr_int("detect_positive", 1) != 0, negative = c.attr_int("detect_negative", 1) != 0;
  if (!positive && !negative) c.unsupported("IsInf with detect_positive=0 and detect_negative=0 (always false)");
  const double inf = std::numeric_limits<double>::infinity();
  const ValueId target = c.param(Tensor::full_scalar(positive ? inf : -inf, dt), positive ? "inf" : "minus_inf");
  c.output(0, c.op("equal", {{positive && negative ? c.op("abs", {{x}}) : x}, {target}}));
}

// Variadic Sum / Max / Min: a chain of add / maximum / minimum (NumPy broadcasting, as ONNX's).
template <const char* Op>
void variadic(NodeContext& c) {
  ValueId acc = c.input(0);
  for (int i = 1; i < c.node().input_size(); ++i) acc = c.op(Op, {{acc}, {c.input(i)}});
  c.output(0, acc);
}

void cum_sum(NodeContext& c) {
  const Tensor axis = c.constant(1, "CumSum's axis");
  if (axis.numel() != 1) c.fail(fmt::format("CumSum's axis must hold one value, got {}", axis.numel()));
  const ValueId x = c.input(0);
  c.output(0, c.op("cumsum", {{x}}, {{"axis", norm_axis(c, axis.to_vector<int64_t>()[0], rank_of(c, x))},
                                     {"exclusive", c.attr_int("exclusive", 0) != 0}, {"reverse", c.attr_int("reverse", 0) != 0}}));
}

void leaky_relu(NodeContext& c) {
  c.output(0, c.op("leaky_relu", {{c.input(0)}}, {{"alpha", c.attr_float("alpha", 0.01)}}));
}

void hardsigmoid(NodeContext& c) {
  c.output(0, c.op("hardsigmoid", {{c.input(0)}}, {{"alpha", c.attr_float("alpha", 0.2)}, {"beta", c.attr_float("beta", 0.5)}}));
}

void softplus(NodeContext& c) { c.output(0, c.op("softplus", {{c.input(0)}})); }

// Gelu (opset 20): the exact form by erf, or its tanh approximation.
void gelu(NodeContext& c) {
  const std::string approximate = c.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") c.fail(fmt::format("approximate '{}' (none or tanh)", approximate));
  c.output(0, c.op(approximate == "none" ? "gelu" : "gelu_tanh", {{c.input(0)}}));
}

void clip(NodeContext& c) {
  const double inf = std::numeric_limits<double>::infinity();
  const double lo = c.has_input(1) ? c.constant_scalar(1, "Clip's min") : -inf;
  const double hi = c.has_input(2) ? c.constant_scalar(2, "Clip's max") : inf;
  if (lo == 0 && hi == inf) return c.output(0, c.op("relu", {{c.input(0)}}));
  c.output(0, c.op("clip", {{c.input(0)}}, {{"min", lo}, {"max", hi}}));
}

void cast(NodeContext& c) {
  const DType to = onnx_util::dtype_of(static_cast<int32_t>(c.attr_int("to", 0)), c.where());
  if (c.is_symbolic(0) && is_integral(to)) return c.output_ints(0, c.ints(0, "input"));
  c.output(0, c.op("cast", {{c.input(0)}}, {{"dtype", to}}));
}

void identity(NodeContext& c) {
  if (c.is_symbolic(0)) return c.output_ints(0, c.ints(0, "input"));
  c.output(0, c.input(0));
}

void dropout(NodeContext& c) {
  if (c.output_used(1)) c.unsupported("Dropout's mask output is used; only inference (an identity) is supported");
  if (c.has_input(2) && c.constant_scalar(2, "Dropout's training_mode") != 0)
    c.unsupported("training_mode is true; only inference (an identity) is supported");
  c.output(0, c.input(0));
}

// ---- convolution and pooling ----------------------------------------------------------------------

// ONNX pads [h_begin, w_begin, h_end, w_end] (or auto_pad) -> the symmetric padding of our ops, with a pad
// op in front for whatever is asymmetric (filled with `fill`: 0 for conv, -inf for max pooling).
Ints spatial_padding(NodeContext& c, ValueId& x, const Ints& kernel, const Ints& strides, const Ints& dilations,
                     double fill, bool one_d = false) {
  Ints pads = c.attr_ints("pads", one_d ? Ints{0, 0} : Ints{0, 0, 0, 0});
  if (one_d && pads.size() == 2) pads = {0, pads[0], 0, pads[1]};  // lifted to [N, C, 1, L]: none along the unit axis
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "VALID") pads = {0, 0, 0, 0};
  else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const Shape& s = c.type(x).shape;
    for (int d = 0; d < 2; ++d) {
      const int64_t in = s[2 + d];
      if (in < 0) c.unsupported("auto_pad SAME needs known spatial extents; give --input-shape NAME=DIMS");
      const int64_t out = (in + strides[d] - 1) / strides[d];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in);
      const int64_t small = total / 2, big = total - small;
      pads[d] = auto_pad == "SAME_UPPER" ? small : big;
      pads[d + 2] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "NOTSET") {
    c.fail(fmt::format("auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", auto_pad));
  }
  if (pads.size() != 4) c.unsupported(fmt::format("pads {} (only 2-D spatial ops are supported)", fmt::join(pads, ", ")));
  const int64_t ph = std::min(pads[0], pads[2]), pw = std::min(pads[1], pads[3]);
  if (pads[0] != pads[2] || pads[1] != pads[3]) {
    // F.pad order: last axis first.
    x = c.op("pad", {{x}}, {{"pads", Ints{pads[1] - pw, pads[3] - pw, pads[0] - ph, pads[2] - ph}}, {"value", fill}});
  }
  return {ph, pw};
}

// A 1-D convolution or pooling ([N, C, L]) runs as the 2-D op on [N, C, 1, L], as onnxruntime's and
// oneDNN's kernels do: the unit axis goes in front of L, each window attribute gets a 1 (or 0) for it,
// and the result loses it again.
ValueId unit_axis(NodeContext& c, ValueId v) { return c.op("unsqueeze", {{v}}, {{"axis", Ints{2}}}); }
ValueId without_unit_axis(NodeContext& c, ValueId v) { return c.op("squeeze", {{v}}, {{"axis", Ints{2}}}); }

// Window attribute `name` for 2 spatial axes: as given, or after `unit` for a 1-D op's unit axis.
Ints window_attr(NodeContext& c, const char* name, int64_t def, bool one_d, int64_t unit = 1) {
  const Ints v = c.attr_ints(name, one_d ? Ints{def} : Ints{def, def});
  if (v.size() != (one_d ? 1u : 2u))
    c.fail(fmt::format("{} [{}] must have {} entries, one a spatial axis", name, fmt::join(v, ", "), one_d ? 1 : 2));
  return one_d ? Ints{unit, v[0]} : v;
}

// Whether the op's input x ([N, C, L] or [N, C, H, W]) is 1-D, refusing other ranks.
bool one_d_input(NodeContext& c, ValueId x, const char* what) {
  const int64_t r = rank_of(c, x);
  if (r != 3 && r != 4) c.unsupported(fmt::format("a {}-D {} (1-D and 2-D are supported)", r - 2, what));
  return r == 3;
}

void conv(NodeContext& c) {
  ValueId x = c.input(0), w = c.input(1);
  const bool one_d = one_d_input(c, x, "convolution");
  if (rank_of(c, w) != rank_of(c, x)) c.fail(fmt::format("the weight is {}-D for a {}-D input", rank_of(c, w), rank_of(c, x)));
  if (one_d) x = unit_axis(c, x), w = unit_axis(c, w);
  const Shape& ws = c.type(w).shape;
  const Ints strides = window_attr(c, "strides", 1, one_d), dilations = window_attr(c, "dilations", 1, one_d);
  const Ints padding = spatial_padding(c, x, {ws[2], ws[3]}, strides, dilations, 0.0, one_d);
  std::vector<ValueId> bias;
  if (c.has_input(2)) bias.push_back(c.input(2));
  const ValueId y = c.op("conv2d", {{x}, {w}, bias},
                         {{"stride", strides}, {"padding", padding}, {"dilation", dilations}, {"groups", c.attr_int("group", 1)}});
  c.output(0, one_d ? without_unit_axis(c, y) : y);
}

// ConvTranspose's pads [h_begin, w_begin, h_end, w_end]: as given, or derived from output_shape or
// auto_pad SAME_* as onnxruntime does (total = the full extent - the asked one; SAME_UPPER puts the odd
// one at the end, SAME_LOWER and output_shape alone at the beginning).
Ints transpose_pads(NodeContext& c, ValueId x, const Shape& ws, const Ints& strides, const Ints& dilations,
                    const Ints& output_padding, bool one_d) {
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    c.fail(fmt::format("auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", auto_pad));
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!c.has_attr("output_shape") && !same) {
    Ints pads = auto_pad == "VALID" ? Ints{} : c.attr_ints("pads");
    if (pads.empty()) pads.assign(one_d ? 2 : 4, 0);
    if (pads.size() != (one_d ? 2u : 4u)) c.fail(fmt::format("pads [{}] for a {}-D ConvTranspose", fmt::join(pads, ", "), one_d ? 1 : 2));
    if (one_d) pads = {0, pads[0], 0, pads[1]};
    return pads;
  }
  const Shape& xs = c.type(x).shape;
  Ints wanted(2, 1);  // the output's spatial extents
  if (c.has_attr("output_shape")) {
    const Ints os = c.attr_ints("output_shape");
    const size_t spatial = one_d ? 1 : 2;
    if (os.size() != spatial && os.size() != spatial + 2)
      c.fail(fmt::format("output_shape [{}] must give the {} spatial extents (or all {})", fmt::join(os, ", "), spatial, spatial + 2));
    for (size_t d = 0; d < spatial; ++d) wanted[2 - spatial + d] = os[os.size() - spatial + d];
  }
  Ints pads(4, 0);
  for (int d = 0; d < 2; ++d) {
    const int64_t in = xs[2 + d];
    if (in < 0) c.unsupported("ConvTranspose's output_shape or auto_pad SAME needs known spatial extents; give --input-shape NAME=DIMS");
    if (!c.has_attr("output_shape")) wanted[d] = in * strides[d];
    const int64_t full = (in - 1) * strides[d] + output_padding[d] + (ws[2 + d] - 1) * dilations[d] + 1;
    const int64_t total = full - wanted[d];
    if (total < 0)
      c.unsupported(fmt::format("ConvTranspose's output_shape extent {} is past the full extent {} of the transposed convolution "
                                "(no input reaches the rest; give output_padding instead)", wanted[d], full));
    const int64_t small = total / 2, big = total - small;
    pads[d] = auto_pad == "SAME_UPPER" ? small : big;
    pads[d + 2] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return pads;
}

// ConvTranspose as conv2d_transpose with the smaller of each axis's two pads; the rest of an asymmetric
// pad is sliced off its result (torch writes symmetric pads; other exporters write output_shape, SAME_*
// or asymmetric pads, which crop one side more).
void conv_transpose(NodeContext& c) {
  ValueId x = c.input(0), w = c.input(1);
  const bool one_d = one_d_input(c, x, "ConvTranspose");
  if (rank_of(c, w) != rank_of(c, x)) c.fail(fmt::format("the weight is {}-D for a {}-D input", rank_of(c, w), rank_of(c, x)));
  if (one_d) x = unit_axis(c, x), w = unit_axis(c, w);
  const Ints strides = window_attr(c, "strides", 1, one_d), dilations = window_attr(c, "dilations", 1, one_d);
  const Ints output_padding = window_attr(c, "output_padding", 0, one_d, 0);
  const Ints pads = transpose_pads(c, x, c.type(w).shape, strides, dilations, output_padding, one_d);
  for (int64_t p : pads)
    if (p < 0) c.fail(fmt::format("pads [{}] must not be negative", fmt::join(pads, ", ")));
  const Ints padding{std::min(pads[0], pads[2]), std::min(pads[1], pads[3])};
  std::vector<ValueId> bias;
  if (c.has_input(2)) bias.push_back(c.input(2));
  ValueId y = c.op("conv2d_transpose", {{x}, {w}, bias},
                   {{"stride", strides}, {"padding", padding}, {"output_padding", output_padding},
                    {"dilation", dilations}, {"groups", c.attr_int("group", 1)}});
  Ints axes, starts, ends;
  for (int d = 0; d < 2; ++d) {
    if (pads[d] == pads[d + 2]) continue;
    axes.push_back(2 + d);
    starts.push_back(pads[d] - padding[d]);
    const int64_t end_cut = pads[d + 2] - padding[d];  // counted from the end: the extent may be dynamic
    ends.push_back(end_cut > 0 ? -end_cut : std::numeric_limits<int64_t>::max());
  }
  if (!axes.empty()) y = c.op("slice", {{y}}, {{"axes", axes}, {"starts", starts}, {"ends", ends}});
  c.output(0, one_d ? without_unit_axis(c, y) : y);
}

void max_pool(NodeContext& c) {
  if (c.output_used(1)) c.unsupported("MaxPool's Indices output is not supported");
  ValueId x = c.input(0);
  const bool one_d = one_d_input(c, x, "MaxPool");
  if (one_d) x = unit_axis(c, x);
  if (!c.has_attr("kernel_shape")) c.fail("kernel_shape is required");
  const Ints kernel = window_attr(c, "kernel_shape", 1, one_d);
  const Ints dilations = window_attr(c, "dilations", 1, one_d);
  if (dilations != Ints{1, 1}) c.unsupported("MaxPool with dilations is not supported");
  const Ints strides = window_attr(c, "strides", 1, one_d);
  const Ints padding = spatial_padding(c, x, kernel, strides, dilations, -std::numeric_limits<double>::infinity(), one_d);
  const ValueId y = c.op("max_pool2d", {{x}}, {{"kernel_size", kernel}, {"stride", strides}, {"padding", padding},
                                               {"ceil_mode", c.attr_int("ceil_mode", 0) != 0}});
  c.output(0, one_d ? without_unit_axis(c, y) : y);
}

void average_pool(NodeContext& c) {
  ValueId x = c.input(0);
  const bool one_d = one_d_input(c, x, "AveragePool");
  if (one_d) x = unit_axis(c, x);
  if (!c.has_attr("kernel_shape")) c.fail("kernel_shape is required");
  const Ints kernel = window_attr(c, "kernel_shape", 1, one_d);
  if (window_attr(c, "dilations", 1, one_d) != Ints{1, 1}) c.unsupported("AveragePool with dilations is not supported");
  const Ints strides = window_attr(c, "strides", 1, one_d);
  const bool include_pad = c.attr_int("count_include_pad", 0) != 0;
  const ValueId before = x;
  const Ints padding = spatial_padding(c, x, kernel, strides, {1, 1}, 0.0, one_d);
  if (x != before && !include_pad)
    c.unsupported("asymmetric pads with count_include_pad=0 (the padded zeros would be counted)");
  const ValueId y = c.op("avg_pool2d", {{x}}, {{"kernel_size", kernel}, {"stride", strides}, {"padding", padding},
                                               {"ceil_mode", c.attr_int("ceil_mode", 0) != 0}, {"exclusive", !include_pad}});
  c.output(0, one_d ? without_unit_axis(c, y) : y);
}

void global_average_pool(NodeContext& c) {
  const ValueId x = c.input(0);
  if (one_d_input(c, x, "GlobalAveragePool")) return c.output(0, c.op("mean", {{x}}, {{"axis", Ints{2}}, {"keepdim", true}}));
  c.output(0, c.op("adaptive_avg_pool2d", {{x}}, {{"output_size", Ints{1, 1}}}));
}

void global_max_pool(NodeContext& c) {
  const ValueId x = c.input(0);
  c.output(0, c.op("max", {{x}}, {{"axis", one_d_input(c, x, "GlobalMaxPool") ? Ints{2} : Ints{2, 3}}, {"keepdim", true}}));
}

void batch_norm(NodeContext& c) {
  for (size_t i = 1; i < c.num_outputs(); ++i)
    if (c.output_used(i)) c.unsupported("training-mode BatchNormalization (running statistics outputs) is not supported");
  if (c.attr_int("training_mode", 0) != 0) c.unsupported("training_mode=1 is not supported");
  c.output(0, c.ops("batch_norm", {{c.input(0)}, {c.input(1)}, {c.input(2)}, {c.input(3)}, {c.input(4)}},
                    {{"epsilon", c.attr_float("epsilon", 1e-5)}, {"momentum", c.attr_float("momentum", 0.9)},
                     {"training", false}})[0]);
}

void layer_norm(NodeContext& c) {
  for (size_t i = 1; i < c.num_outputs(); ++i)
    if (c.output_used(i)) c.unsupported("LayerNormalization's Mean/InvStdDev outputs are not supported");
  const ValueId x = c.input(0), scale = c.input(1);
  const ValueId bias = c.has_input(2) ? c.input(2) : c.param(Tensor::full_scalar(0.0, c.type(scale).dtype), "zero");
  const int64_t axis = norm_axis(c, c.attr_int("axis", -1), rank_of(c, x));
  ValueId b = bias;
  if (c.type(b).shape != c.type(scale).shape) b = c.op("expand", {{b}}, {{"shape", c.type(scale).shape}});
  c.output(0, c.ops("layer_norm", {{x}, {scale}, {b}}, {{"begin_norm_axis", axis}, {"epsilon", c.attr_float("epsilon", 1e-5)}})[0]);
}

// ---- matrix products -------------------------------------------------------------------------------

void gemm(NodeContext& c) {
  ValueId a = c.input(0), b = c.input(1);
  const double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  if (c.attr_int("transA", 0)) a = c.op("transpose", {{a}}, {{"perm", Ints{1, 0}}});
  // linear's weight is [out, in]: a transB=1 Gemm (torch's nn.Linear) maps as it is, a transB=0 one
  // with a constant B has it transposed now.
  const bool trans_b = c.attr_int("transB", 0) != 0;
  if (!trans_b && c.is_constant(1)) b = c.op("transpose", {{b}}, {{"perm", Ints{1, 0}}});
  std::vector<ValueId> bias;
  ValueId add_after = ir::kNoValue;
  if (c.has_input(2)) {
    ValueId cv = c.input(2);
    if (beta != 1.0) cv = c.op("mul", {{cv}, {c.param(Tensor::full_scalar(beta, c.type(cv).dtype), "beta")}});
    if (alpha == 1.0 && c.type(cv).shape.size() == 1) bias.push_back(cv);
    else add_after = cv;
  }
  ValueId y = trans_b || c.is_constant(1) ? c.op("linear", {{a}, {b}, bias}) : c.op("matmul", {{a}, {b}});
  if (alpha != 1.0) y = c.op("mul", {{y}, {c.param(Tensor::full_scalar(alpha, c.type(y).dtype), "alpha")}});
  if (add_after != ir::kNoValue) y = c.op("add", {{y}, {add_after}});
  c.output(0, y);
}

// MatMul by a transposed constant matrix is linear with that matrix as its [out, in] weight (how torch
// writes nn.Linear on 3-D inputs without constant folding, and how we export linear): the param keeps its
// name, and linear's kernels run.
void matmul(NodeContext& c) {
  const onnx::NodeProto* t = c.producer(1);
  if (t && t->op_type() == "Transpose" && c.is_constant(1) && c.type(c.input(1)).shape.size() == 2) {
    bool swaps = true;  // the default perm of a 2-D Transpose, or [1, 0] spelled out
    for (const auto& a : t->attribute())
      if (a.name() == "perm") swaps = a.ints_size() == 2 && a.ints(0) == 1 && a.ints(1) == 0;
    if (swaps) return c.output(0, c.op("linear", {{c.input(0)}, {c.value(t->input(0))}, {}}));
  }
  // By a constant [K, N] matrix (torch's nn.Linear inside nn.MultiheadAttention and torchvision's ViT MLP,
  // exported with the weight already transposed): linear with the matrix transposed once, here, so that
  // the bias, the activation and the residual after it fuse into the GEMM as for any linear.
  if (c.is_constant(1) && c.type(c.input(1)).shape.size() == 2 && rank_of(c, c.input(0)) >= 2)
    return c.output(0, c.op("linear", {{c.input(0)}, {c.op("transpose", {{c.input(1)}}, {{"perm", Ints{1, 0}}})}, {}}));
  c.output(0, c.op("matmul", {{c.input(0)}, {c.input(1)}}));
}

// ---- normalisation and reductions ------------------------------------------------------------------

template <const char* Op>
void softmax_like(NodeContext& c) {
  const ValueId x = c.input(0);
  const int64_t rank = rank_of(c, x);
  const int64_t axis = norm_axis(c, c.attr_int("axis", c.opset() >= 13 ? -1 : 1), rank);
  // Before opset 13 the op normalised the 2-D view [prod(d < axis), prod(d >= axis)]: the same only for the
  // last axis.
  if (c.opset() < 13 && axis != rank - 1)
    c.unsupported(fmt::format("opset {} {} over the flattened axes {}..{} (re-export at opset 13+)", c.opset(),
                              c.node().op_type(), axis, rank - 1));
  c.output(0, c.op(Op, {{x}}, {{"axis", axis}}));
}
constexpr char k_softmax[] = "softmax";
constexpr char k_log_softmax[] = "log_softmax";

Ints reduce_axes(NodeContext& c, bool axes_as_input) {
  if (axes_as_input) return c.has_input(1) ? c.constant_ints(1, "axes") : Ints{};
  return c.attr_ints("axes", {});
}

// ReduceSum took its axes as an input from opset 13, the other reductions from opset 18.
template <const char* Op, int AxesInputSince>
void reduce(NodeContext& c) {
  const ValueId x = c.input(0);
  Ints axes = reduce_axes(c, c.opset() >= AxesInputSince);
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0)) return c.output(0, x);
  for (int64_t& a : axes) a = norm_axis(c, a, rank_of(c, x));
  c.output(0, c.op(Op, {{x}}, {{"axis", axes}, {"keepdim", c.attr_int("keepdims", 1) != 0}}));
}
constexpr char k_mean[] = "mean";
constexpr char k_sum[] = "sum";
constexpr char k_max[] = "max";
constexpr char k_min[] = "min";

void arg_max(NodeContext& c) {
  if (c.attr_int("select_last_index", 0)) c.unsupported("select_last_index=1 is not supported");
  const ValueId x = c.input(0);
  c.output(0, c.op("argmax", {{x}}, {{"axis", norm_axis(c, c.attr_int("axis", 0), rank_of(c, x))},
                                     {"keepdim", c.attr_int("keepdims", 1) != 0}}));
}

// ---- the table ------------------------------------------------------------------------------------

const std::map<std::string, Converter>& table() {
  static const std::map<std::string, Converter> t = {
      {"Abs", unary<k_abs>},
      {"Add", binary<k_add>},
      {"And", binary<k_logical_and>},
      {"ArgMax", arg_max},
      {"AveragePool", average_pool},
      {"BatchNormalization", batch_norm},
      {"Cast", cast},
      {"Clip", clip},
      {"Concat", concat},
      {"Constant", constant},
      {"ConstantOfShape", constant_of_shape},
      {"Conv", conv},
      {"ConvTranspose", conv_transpose},
      {"CumSum", cum_sum},
      {"Div", div},
      {"Dropout", dropout},
      {"Equal", equal},
      {"Erf", unary<k_erf>},
      {"Exp", unary<k_exp>},
      {"Expand", expand},
      {"Flatten", flatten},
      {"Gather", gather},
      {"GatherElements", gather_elements},
      {"GatherND", gather_nd},
      {"Gelu", gelu},
      {"Gemm", gemm},
      {"GlobalAveragePool", global_average_pool},
      {"GlobalMaxPool", global_max_pool},
      {"Greater", binary<k_greater>},
      {"GreaterOrEqual", binary<k_greater_equal>},
      {"HardSigmoid", hardsigmoid},
      {"HardSwish", unary<k_hardswish>},
      {"Identity", identity},
      {"IsInf", is_inf},
      {"IsNaN", is_nan},
      {"LayerNormalization", layer_norm},
      {"LeakyRelu", leaky_relu},
      {"Less", binary<k_less>},
      {"LessOrEqual", binary<k_less_equal>},
      {"Log", unary<k_log>},
      {"LogSoftmax", softmax_like<k_log_softmax>},
      {"MatMul", matmul},
      {"Max", variadic<k_maximum>},
      {"MaxPool", max_pool},
      {"Min", variadic<k_minimum>},
      {"Mod", mod},
      {"Mul", mul},
      {"Neg", unary<k_neg>},
      {"Not", logical_not},
      {"Or", binary<k_logical_or>},
      {"Pad", pad},
      {"Pow", binary<k_pow>},
      {"Range", range},
      {"Reciprocal", reciprocal},
      {"ReduceMax", reduce<k_max, 18>},
      {"ReduceMean", reduce<k_mean, 18>},
      {"ReduceMin", reduce<k_min, 18>},
      {"ReduceSum", reduce<k_sum, 13>},
      {"Relu", unary<k_relu>},
      {"Reshape", reshape},
      {"Resize", resize},
      {"ScatterND", scatter_nd},
      {"Shape", shape},
      {"Sigmoid", unary<k_sigmoid>},
      {"Sign", unary<k_sign>},
      {"Size", size},
      {"Slice", slice},
      {"Softmax", softmax_like<k_softmax>},
      {"Softplus", softplus},
      {"Softsign", unary<k_softsign>},
      {"Split", split},
      {"Sqrt", unary<k_sqrt>},
      {"Squeeze", squeeze},
      {"Sub", binary<k_sub>},
      {"Sum", variadic<k_add>},
      {"Tanh", unary<k_tanh>},
      {"Transpose", transpose},
      {"Unsqueeze", unsqueeze},
      {"Upsample", upsample},
      {"Where", where},
      {"Xor", binary<k_logical_xor>},
  };
  return t;
}

}  // namespace

const Converter* find_converter(const std::string& onnx_type) {
  auto it = table().find(onnx_type);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> supported_onnx_ops() {
  std::vector<std::string> out;
  for (const auto& [name, fn] : table()) out.push_back(name);
  return out;
}

}  // namespace pd::io::onnx_import
