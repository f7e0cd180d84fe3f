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

// ---- batch and layer normalisation ----------------------------------------------------------------
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
