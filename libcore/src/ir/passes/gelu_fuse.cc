// GELU written out op by op (the erf form torch.onnx and pd-convert write before ONNX opset 20) -> gelu:
//
//   x * 0.5 * (1 + erf(x / sqrt(2)))   in any grouping of the products, with x / sqrt(2) written as a
//                                      division or as a product with 1 / sqrt(2)
//
// Matched at the outermost mul: its tree of muls (each intermediate read only inside it) must hold x
// once, scalar constants whose product is 0.5, and one `1 + erf(x * c)` (or `erf(...) + 1`) with
// c = 1 / sqrt(2) on the same x. Constants are compared within 1e-6 relative, as exporters round them.
#include <cmath>
#include <optional>

#include "chain.h"
#include "passes.h"

namespace pd::ir::passes {
namespace {

constexpr double kRsqrt2 = 0.70710678118654752440;

bool near(double a, double b) { return std::abs(a - b) <= 1e-6 * std::abs(b); }

struct GeluMatch {
  ValueId x = kNoValue;
  std::vector<int32_t> chain;  // the ops that disappear, the outermost mul last
};

// v = 1 + erf(x * c) or erf(x / c') + 1 (intermediates read only here): returns x, or kNoValue.
ValueId erf_term(const Program& p, ValueId v, std::vector<int32_t>& chain) {
  const int32_t add = chain_producer(p, v, "add");
  if (add < 0) return kNoValue;
  for (int side = 0; side < 2; ++side) {
    if (scalar_constant(p, input_of(p, add, 1 - side)) != 1.0) continue;
    const int32_t erf = chain_producer(p, input_of(p, add, side), "erf");
    if (erf < 0) continue;
    const ValueId arg = input_of(p, erf, 0);
    int32_t scale = chain_producer(p, arg, "mul");
    const bool div = scale < 0;
    if (div) scale = chain_producer(p, arg, "div");
    if (scale < 0) continue;
    for (int xs = 0; xs < (div ? 1 : 2); ++xs) {
      const std::optional<double> c = scalar_constant(p, input_of(p, scale, 1 - xs));
      if (!c || !near(div ? 1.0 / *c : *c, kRsqrt2)) continue;
      chain.insert(chain.end(), {scale, erf, add});
      return input_of(p, scale, xs);
    }
  }
  return kNoValue;
}

std::optional<GeluMatch> find_gelu(const Program& p, int32_t outer) {
  GeluMatch m;
  double constant = 1.0;
  ValueId erf_x = kNoValue;
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
    if (erf_x == kNoValue) {
      std::vector<int32_t> erf_chain;
      if (const ValueId x = erf_term(p, v, erf_chain); x != kNoValue) {
        erf_x = x;
        m.chain.insert(m.chain.end(), erf_chain.begin(), erf_chain.end());
        continue;
      }
    }
    if (m.x != kNoValue && m.x != v) return std::nullopt;
    m.x = v;
    ++x_leaves;
  }
  if (x_leaves != 1 || erf_x != m.x || !near(constant, 0.5)) return std::nullopt;
  const ir::ValueType& xt = p.value(m.x).type;
  if ((xt.dtype != DType::f32 && xt.dtype != DType::f64) || p.value(p.ops()[outer].results[0]).type != xt) return std::nullopt;
  m.chain.push_back(outer);
  return m;
}

class GeluFusion final : public Pass {
 public:
  std::string name() const override { return "gelu_fuse"; }
  std::string doc() const override { return "x * 0.5 * (1 + erf(x / sqrt 2)) -> gelu"; }
  std::vector<std::string> targets() const override { return {"mul"}; }
  bool match(const Program& p, int32_t i) const override { return find_gelu(p, i).has_value(); }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const GeluMatch m = *find_gelu(p, i);
    replace_chain(p, i, "gelu", {{m.x}}, {}, m.chain, stats);
  }
};

}  // namespace

std::unique_ptr<Pass> gelu_fusion() { return std::make_unique<GeluFusion>(); }

}  // namespace pd::ir::passes
