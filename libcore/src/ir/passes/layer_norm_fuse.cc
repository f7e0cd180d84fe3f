// Layer normalization written out op by op (ONNX before opset 17, as torch.onnx and pd-convert write it;
// Paddle's elementwise form) -> layer_norm, one pass over the rows instead of nine over the tensor:
//
//   m = mean(x, axes, keepdim); d = x - m; v = mean(d * d or pow(d, 2), axes, keepdim)
//   y = d / sqrt(v + eps) or d * rsqrt(v + eps);  [y * scale] [+ bias]
//
// Preconditions, cheapest first: every intermediate is read only inside the chain and is not a graph
// output; the axes of both means are the same trailing axes [k, rank) of x; eps and the exponent 2 are
// scalar constants; x is f32 / f64. The affine ops join only with params whose shape is the normalised
// shape (leading 1s allowed); without them the fused op gets a scale of ones and a bias of zeros.
#include <algorithm>
#include <optional>

#include "chain.h"
#include "passes.h"
#include "pd/pd.h"

namespace pd::ir::passes {
namespace {

struct LayerNormMatch {
  ValueId x = kNoValue, scale = kNoValue, bias = kNoValue;
  int64_t begin = 0;  // begin_norm_axis
  double eps = 0;
  std::vector<int32_t> chain;  // the ops that disappear; the last one's result becomes layer_norm's
};

// The first axis of a keepdim mean over the trailing axes [k, rank) of its input; nullopt otherwise.
std::optional<int64_t> trailing_mean(const Program& p, int32_t mean) {
  const Operation& op = p.ops()[mean];
  if (!attr_bool(op, "keepdim")) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(p.value(input_of(p, mean, 0)).type.shape.size());
  std::vector<int64_t> axes = attr_ints(op, "axis");
  if (axes.empty() || rank == 0) return std::nullopt;
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<int64_t>(axes.size() - i)) return std::nullopt;
  return axes.front();
}

// Whether v is a param of the normalised shape `norm` (leading 1s allowed).
bool fits_normalised(const Program& p, ValueId v, const Shape& norm) {
  if (!is_param(p, v)) return false;
  Shape s = p.value(v).type.shape;
  while (s.size() > norm.size() && s.front() == 1) s.erase(s.begin());
  return s == norm;
}

// v = d * d or pow(d, 2), read only by the variance's mean: returns d.
ValueId squared_operand(const Program& p, ValueId v, std::vector<int32_t>& chain) {
  if (const int32_t mul = chain_producer(p, v, "mul"); mul >= 0 && input_of(p, mul, 0) == input_of(p, mul, 1)) {
    chain.push_back(mul);
    return input_of(p, mul, 0);
  }
  if (const int32_t pw = chain_producer(p, v, "pow"); pw >= 0 && scalar_constant(p, input_of(p, pw, 1)) == 2.0) {
    chain.push_back(pw);
    return input_of(p, pw, 0);
  }
  return kNoValue;
}

std::optional<LayerNormMatch> find_layer_norm(const Program& p, int32_t norm) {
  LayerNormMatch m;
  const Operation& op = p.ops()[norm];
  // The normalising op: d / sqrt(v + eps), or d * rsqrt(v + eps) with the operands either way round.
  ValueId d = kNoValue, var_eps = kNoValue;
  for (int side = 0; side < (op.type == "mul" ? 2 : 1) && d == kNoValue; ++side) {
    const ValueId root = input_of(p, norm, 1 - side);
    const int32_t r = chain_producer(p, root, op.type == "div" ? "sqrt" : "rsqrt");
    if (r < 0) continue;
    d = input_of(p, norm, side), var_eps = input_of(p, r, 0);
    m.chain.push_back(r);
  }
  if (d == kNoValue) return std::nullopt;
  const int32_t add_eps = chain_producer(p, var_eps, "add");
  if (add_eps < 0) return std::nullopt;
  const std::optional<double> eps = scalar_constant(p, input_of(p, add_eps, 1));
  if (!eps || *eps < 0) return std::nullopt;
  m.eps = *eps;
  m.chain.push_back(add_eps);
  const int32_t var = chain_producer(p, input_of(p, add_eps, 0), "mean");
  if (var < 0) return std::nullopt;
  m.chain.push_back(var);
  if (squared_operand(p, input_of(p, var, 0), m.chain) != d) return std::nullopt;
  // d = x - mean(x): read by the square and the normalising op only.
  const Value& dv = p.value(d);
  if (dv.kind != ValueKind::OpResult || dv.producer < 0 || p.ops()[dv.producer].type != "sub" || p.is_output(d)) return std::nullopt;
  for (int32_t u : p.users(d))
    if (u != norm && std::find(m.chain.begin(), m.chain.end(), u) == m.chain.end()) return std::nullopt;
  const int32_t sub = dv.producer;
  m.x = input_of(p, sub, 0);
  const int32_t mean = chain_producer(p, input_of(p, sub, 1), "mean");
  if (mean < 0 || input_of(p, mean, 0) != m.x) return std::nullopt;
  const std::optional<int64_t> begin = trailing_mean(p, mean);
  if (!begin || trailing_mean(p, var) != begin) return std::nullopt;
  const ir::ValueType& xt = p.value(m.x).type;
  if ((xt.dtype != DType::f32 && xt.dtype != DType::f64) || p.value(p.ops()[norm].results[0]).type.shape != xt.shape)
    return std::nullopt;
  m.begin = *begin;
  m.chain.push_back(sub);
  m.chain.push_back(mean);
  m.chain.push_back(norm);

  // The affine part, when params of the normalised shape follow: y * scale, then + bias.
  const Shape norm_shape(xt.shape.begin() + m.begin, xt.shape.end());
  if (std::any_of(norm_shape.begin(), norm_shape.end(), [](int64_t e) { return e < 0; })) return std::nullopt;
  auto follower = [&](const char* type, ValueId& param) {
    const ValueId y = p.ops()[m.chain.back()].results[0];
    const std::vector<int32_t> users = p.users(y);
    if (p.is_output(y) || users.size() != 1 || p.ops()[users[0]].type != type) return;
    const int32_t next = users[0];
    const ValueId other = input_of(p, next, 0) == y ? input_of(p, next, 1) : input_of(p, next, 0);
    if (!fits_normalised(p, other, norm_shape) || p.value(other).type.dtype != xt.dtype) return;
    if (p.value(p.ops()[next].results[0]).type.shape != xt.shape) return;
    param = other;
    m.chain.push_back(next);
  };
  follower("mul", m.scale);
  follower("add", m.bias);
  return m;
}

// The param v reshaped to the normalised shape (a new param when its shape has leading 1s).
ValueId as_normalised(Program& p, ValueId v, const Shape& norm, const std::string& what) {
  if (p.value(v).type.shape == norm) return v;
  return p.add_param(p.unique_name(p.value(v).name + "." + what), ops::reshape(p.param(v), norm));
}

class LayerNormFusion final : public Pass {
 public:
  std::string name() const override { return "layer_norm_fuse"; }
  std::string doc() const override { return "mean -> sub -> square -> mean -> add eps -> sqrt -> div [-> mul scale] [-> add bias] -> layer_norm"; }
  std::vector<std::string> targets() const override { return {"div", "mul"}; }
  bool match(const Program& p, int32_t i) const override { return find_layer_norm(p, i).has_value(); }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const LayerNormMatch m = *find_layer_norm(p, i);
    const ir::ValueType xt = p.value(m.x).type;
    const Shape norm(xt.shape.begin() + m.begin, xt.shape.end());
    const ValueId scale = m.scale != kNoValue ? as_normalised(p, m.scale, norm, "scale")
                                              : p.add_param(p.unique_name("layer_norm.scale"), ops::full(norm, 1.0, xt.dtype));
    const ValueId bias = m.bias != kNoValue ? as_normalised(p, m.bias, norm, "bias")
                                            : p.add_param(p.unique_name("layer_norm.bias"), ops::full(norm, 0.0, xt.dtype));
    replace_chain(p, m.chain.back(), "layer_norm", {{m.x}, {scale}, {bias}}, {{"begin_norm_axis", m.begin}, {"epsilon", m.eps}},
                  m.chain, stats);
  }
};

}  // namespace

std::unique_ptr<Pass> layer_norm_fusion() { return std::make_unique<LayerNormFusion>(); }

}  // namespace pd::ir::passes
