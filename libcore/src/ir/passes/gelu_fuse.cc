// GELU written out op by op (as torch.onnx and pd-convert write it before ONNX opset 20) -> gelu, or its
// tanh approximation -> gelu_tanh:
//
//   x * 0.5 * (1 + erf(x / sqrt(2)))                                 -> gelu, with x / sqrt(2) a division
//                                                                       or a product with 1 / sqrt(2)
//   x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))        -> gelu_tanh (torch's approximate='tanh',
//                                                                       HF transformers' gelu_new), x^3 as
//                                                                       pow(x, 3) or x * (x * x)
//
// in any grouping of the outer products and any order of the operands. Matched at the outermost mul: its
// tree of muls (each intermediate read only inside it) must hold x once, scalar constants whose product is
// 0.5, and one `1 + erf(...)` or `1 + tanh(...)` on the same x. Constants are compared within 1e-6
// relative, as exporters round them.
#include <cmath>
#include <optional>

#include "chain.h"
#include "passes.h"

namespace pd::ir::passes {
namespace {

constexpr double kRsqrt2 = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588, kCubeCoefficient = 0.044715;

bool near(double a, double b) { return std::abs(a - b) <= 1e-6 * std::abs(b); }

struct GeluMatch {
  ValueId x = kNoValue;
  const char* op = "gelu";  // or gelu_tanh
  std::vector<int32_t> chain;  // the ops that disappear, the outermost mul last
};

// v = 1 + fn(...) or fn(...) + 1 with fn of `type` (intermediates read only here): fn's op index (the add's
// in `add`), or -1.
int32_t one_plus(const Program& p, ValueId v, const char* type, int32_t& add) {
  add = chain_producer(p, v, "add");
  if (add < 0) return -1;
  for (int side = 0; side < 2; ++side) {
    if (scalar_constant(p, input_of(p, add, 1 - side)) != 1.0) continue;
    if (const int32_t fn = chain_producer(p, input_of(p, add, side), type); fn >= 0) return fn;
  }
  return -1;
}

// v = 1 + erf(x * c) or erf(x / c') + 1 (intermediates read only here): returns x, or kNoValue.
ValueId erf_term(const Program& p, ValueId v, std::vector<int32_t>& chain) {
  int32_t add = -1;
  const int32_t erf = one_plus(p, v, "erf", add);
  if (erf < 0) return kNoValue;
  const ValueId arg = input_of(p, erf, 0);
  int32_t scale = chain_producer(p, arg, "mul");
  const bool div = scale < 0;
  if (div) scale = chain_producer(p, arg, "div");
  if (scale < 0) return kNoValue;
  for (int xs = 0; xs < (div ? 1 : 2); ++xs) {
    const std::optional<double> c = scalar_constant(p, input_of(p, scale, 1 - xs));
    if (!c || !near(div ? 1.0 / *c : *c, kRsqrt2)) continue;
    chain.insert(chain.end(), {scale, erf, add});
    return input_of(p, scale, xs);
  }
  return kNoValue;
}

// The op of `type` producing v (read only here) with a scalar constant near `c` as one operand: returns the
// other operand, or kNoValue.
ValueId times_constant(const Program& p, ValueId v, const char* type, double c, std::vector<int32_t>& chain) {
  const int32_t op = chain_producer(p, v, type);
  if (op < 0) return kNoValue;
  for (int side = 0; side < 2; ++side) {
    const std::optional<double> k = scalar_constant(p, input_of(p, op, 1 - side));
    if (k && near(*k, c)) {
      chain.push_back(op);
      return input_of(p, op, side);
    }
  }
  return kNoValue;
}

// v = x^3 as pow(x, 3), x * (x * x) or (x * x) * x (intermediates read only here): returns x, or kNoValue.
ValueId cube_of(const Program& p, ValueId v, std::vector<int32_t>& chain) {
  if (const int32_t pow = chain_producer(p, v, "pow"); pow >= 0) {
    if (scalar_constant(p, input_of(p, pow, 1)) != 3.0) return kNoValue;
    chain.push_back(pow);
    return input_of(p, pow, 0);
  }
  const int32_t outer = chain_producer(p, v, "mul");
  if (outer < 0) return kNoValue;
  for (int side = 0; side < 2; ++side) {
    const int32_t square = chain_producer(p, input_of(p, outer, side), "mul");
    const ValueId x = input_of(p, outer, 1 - side);
    if (square >= 0 && input_of(p, square, 0) == x && input_of(p, square, 1) == x) {
      chain.insert(chain.end(), {square, outer});
      return x;
    }
  }
  return kNoValue;
}

// v = 1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)), the sums and products in either order: returns x.
ValueId tanh_term(const Program& p, ValueId v, std::vector<int32_t>& chain) {
  int32_t add = -1;
  const int32_t tanh = one_plus(p, v, "tanh", add);
  if (tanh < 0) return kNoValue;
  std::vector<int32_t> found;
  const ValueId sum = times_constant(p, input_of(p, tanh, 0), "mul", kSqrt2OverPi, found);
  const int32_t inner = sum == kNoValue ? -1 : chain_producer(p, sum, "add");
  if (inner < 0) return kNoValue;
  found.push_back(inner);
  for (int xs = 0; xs < 2; ++xs) {
    std::vector<int32_t> cube_chain = found;
    const ValueId x = input_of(p, inner, xs);
    const ValueId cubed = times_constant(p, input_of(p, inner, 1 - xs), "mul", kCubeCoefficient, cube_chain);
    if (cubed == kNoValue || cube_of(p, cubed, cube_chain) != x) continue;
    chain.insert(chain.end(), cube_chain.begin(), cube_chain.end());
    chain.insert(chain.end(), {tanh, add});
    return x;
  }
  return kNoValue;
}

std::optional<GeluMatch> find_gelu(const Program& p, int32_t outer) {
  GeluMatch m;
  double constant = 1.0;
  ValueId term_x = kNoValue;
  int x_leaves = 0;
  // Walks the tree of muls under `outer`, sorting its leaves into x, constants and the erf term.
  std::vector<ValueId> stack{input_of(p, outer, 0), input_of(p, outer, 1)};
  while (!stack.empty()) {
    const ValueId v = stack.back();
    stack.pop_back();
    if (const int32_t inner = chain_producer(p, v, "mul"); inner >= 0 && m.chain.size() < 8) {
      m.chain.push_back(inner);
      stack.push_back(input_of(p, inner, 0));
      stack.push_back(input_of(p, inner, 1));
      continue;
    }
    if (const std::optional<double> c = scalar_constant(p, v)) {
      constant *= *c;
      continue;
    }
    if (term_x == kNoValue) {
      std::vector<int32_t> erf_chain;
      ValueId x = erf_term(p, v, erf_chain);
      if (x == kNoValue && (x = tanh_term(p, v, erf_chain)) != kNoValue) m.op = "gelu_tanh";
      if (x != kNoValue) {
        term_x = x;
        m.chain.insert(m.chain.end(), erf_chain.begin(), erf_chain.end());
        continue;
      }
    }
    if (m.x != kNoValue && m.x != v) return std::nullopt;
    m.x = v;
    ++x_leaves;
  }
  if (x_leaves != 1 || term_x != m.x || !near(constant, 0.5)) return std::nullopt;
  const ir::ValueType& xt = p.value(m.x).type;
  if ((xt.dtype != DType::f32 && xt.dtype != DType::f64) || p.value(p.ops()[outer].results[0]).type != xt) return std::nullopt;
  m.chain.push_back(outer);
  return m;
}

class GeluFusion final : public Pass {
 public:
  std::string name() const override { return "gelu_fuse"; }
  std::string doc() const override {
    return "x * 0.5 * (1 + erf(x / sqrt 2)) -> gelu; x * 0.5 * (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) -> gelu_tanh";
  }
  std::vector<std::string> targets() const override { return {"mul"}; }
  bool match(const Program& p, int32_t i) const override { return find_gelu(p, i).has_value(); }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const GeluMatch m = *find_gelu(p, i);
    replace_chain(p, i, m.op, {{m.x}}, {}, m.chain, stats);
  }
};

}  // namespace

std::unique_ptr<Pass> gelu_fusion() { return std::make_unique<GeluFusion>(); }

}  // namespace pd::ir::passes
