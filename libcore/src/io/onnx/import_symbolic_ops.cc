// The converters of import_ops.cc's table that compute on shape computations with dynamic extents
// (SymbolicInts) where the exporter wrote arithmetic or comparisons on them, and are the elementwise ops
// otherwise.
#include <fmt/format.h>

#include <algorithm>

#include "import_converters.h"

namespace pd::io::onnx_import {

// Mul and Div on a shape computation with a dynamic extent, by known factors (Swin folds its windows into
// the batch and unfolds them: batch x 64, then / 64): the extent's symbol scaled, "batch*64", which
// reshape_target matches against the batch; known entries compute as ONNX's integers do. Anything else
// is the elementwise op.
namespace {

void symbolic_arith(NodeContext& c, bool divide) {
  const char* name = divide ? "Div" : "Mul";
  const char* op = divide ? "div" : "mul";
  if (!c.is_symbolic(0) && !c.is_symbolic(1)) return c.output(0, c.op(op, {{c.input(0)}, {c.input(1)}}));
  if (divide && c.is_symbolic(1)) c.unsupported("Div by a shape computation with dynamic extents");
  const size_t at = c.is_symbolic(0) ? 0 : 1;
  SymbolicInts a = c.ints(at, "the shape operand");
  const SymbolicInts b = c.ints(1 - at, "the factor");
  if (!b.known()) c.unsupported(fmt::format("{} of two shape computations with dynamic extents ({}, {})", name, a.str(), b.str()));
  if (b.values.size() != 1 && b.values.size() != a.values.size())
    c.fail(fmt::format("{} of shape computations {} and {}: lengths differ", name, a.str(), b.str()));
  for (size_t i = 0; i < a.values.size(); ++i) {
    const int64_t f = b.values[b.values.size() == 1 ? 0 : i];
    if (divide && f == 0) c.fail(fmt::format("Div of the shape computation {} by 0", a.str()));
    if (a.symbols[i].empty()) {
      a.values[i] = divide ? a.values[i] / f : a.values[i] * f;
      continue;
    }
    const auto [extent, k] = scaled(a.symbols[i]);
    if (divide && (f < 0 || k % f != 0))
      c.unsupported(fmt::format("Div of the dynamic extent {} by {}, which does not divide it", a.symbols[i], f));
    if (f <= 0) c.unsupported(fmt::format("{} of the dynamic extent {} by {}", name, a.symbols[i], f));
    a.symbols[i] = scaled_symbol(extent, divide ? k / f : k * f);
  }
  a.scalar = a.scalar && b.scalar;
  c.output_ints(0, a);
}

}  // namespace

void mul(NodeContext& c) { symbolic_arith(c, /*divide=*/false); }
void div(NodeContext& c) { symbolic_arith(c, /*divide=*/true); }

// torch.onnx writes expand(n, -1, -1) as Expand(x, Where(Equal(target, -1), 1s, target)) on the target
// [batch, -1, -1]: Equal and Where on a shape computation, computed here. A dynamic extent is never
// negative, so it equals no negative constant; compared with anything else it is unknown.
void equal(NodeContext& c) {
  if (!c.is_symbolic(0) && !c.is_symbolic(1)) return c.output(0, c.op("equal", {{c.input(0)}, {c.input(1)}}));
  const size_t at = c.is_symbolic(0) ? 0 : 1;
  const SymbolicInts a = c.ints(at, "the shape operand"), b = c.ints(1 - at, "the other operand");
  if (!b.known() || (b.values.size() != 1 && b.values.size() != a.values.size()))
    c.unsupported(fmt::format("Equal of the shape computations {} and {}", a.str(), b.str()));
  std::vector<uint8_t> eq;
  for (size_t i = 0; i < a.values.size(); ++i) {
    const int64_t v = b.values[b.values.size() == 1 ? 0 : i];
    if (!a.symbols[i].empty() && v >= 0)
      c.unsupported(fmt::format("Equal of the dynamic extent {} and {}: unknown until run time", a.symbols[i], v));
    eq.push_back(a.symbols[i].empty() && a.values[i] == v);
  }
  const Shape shape = a.scalar && b.scalar ? Shape{} : Shape{static_cast<int64_t>(eq.size())};
  Tensor t = Tensor::empty(shape, DType::boolean);
  std::copy(eq.begin(), eq.end(), static_cast<uint8_t*>(t.raw_data()));
  c.output(0, c.param(t, c.node().output(0)));
}

void where(NodeContext& c) {
  if (!c.is_symbolic(1) && !c.is_symbolic(2)) return c.output(0, c.op("where", {{c.input(0)}, {c.input(1)}, {c.input(2)}}));
  const Tensor cond = c.constant(0, "Where's condition on a shape computation");
  const SymbolicInts x = c.ints(1, "Where's first choice"), y = c.ints(2, "Where's second choice");
  const std::vector<uint8_t> pick = cond.to_vector<uint8_t>();
  const size_t n = std::max({pick.size(), x.values.size(), y.values.size()});
  const auto fits = [&](size_t m) { return m == 1 || m == n; };
  if (cond.dim() > 1 || !fits(pick.size()) || !fits(x.values.size()) || !fits(y.values.size()))
    c.unsupported(fmt::format("Where over shape computations {} and {} of other lengths", x.str(), y.str()));
  SymbolicInts out;
  for (size_t i = 0; i < n; ++i) {
    const SymbolicInts& from = pick[pick.size() == 1 ? 0 : i] ? x : y;
    const size_t j = from.values.size() == 1 ? 0 : i;
    out.values.push_back(from.values[j]);
    out.symbols.push_back(from.symbols[j]);
  }
  out.scalar = cond.dim() == 0 && x.scalar && y.scalar;
  c.output_ints(0, out);
}

}  // namespace pd::io::onnx_import
