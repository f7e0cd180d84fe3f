// The shape, constant and data-movement converters of the ONNX import table (import_ops.cc): what
// ONNX computes on shapes is computed here at import time, with dynamic extents carried as symbols.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "import_converters.h"

namespace pd::io::onnx_import {
namespace {

// Resolves an ONNX Reshape target against the input's dynamic extents: a 0 copies the input extent
// (unless allowzero), extents named by the same symbol cancel out, and what remains unknown must be one
// extent, which becomes our -1.
Ints reshape_target(NodeContext& c, ValueId x, SymbolicInts t, bool allowzero) {
  const Shape& in = c.type(x).shape;
  const std::vector<std::string> in_syms = c.dim_symbols(x);
  for (size_t i = 0; i < t.values.size(); ++i)
    if (t.symbols[i].empty() && t.values[i] == 0 && !allowzero) {
      if (i >= in.size()) c.fail(fmt::format("shape {} copies extent {} of a rank-{} input", t.str(), i, in.size()));
      t.values[i] = in[i] < 0 ? 0 : in[i];
      t.symbols[i] = in_syms[i];
    }
  std::vector<std::string> left(in_syms);  // the input's symbols not matched by the target
  std::erase(left, "");
  // An extent times a known factor ("batch*64", symbolic_mul) matches its extent's other multiples:
  // Swin folds its windows into the batch and back. With one dynamic entry the reshape's -1 is exact.
  const auto base = [](const std::string& sym) { return scaled(sym).first; };
  int64_t in_known = 1;
  for (int64_t d : in) in_known *= d < 0 ? 1 : d;
  int64_t out_known = 1;
  std::vector<size_t> unknown, inferred;
  std::string unmatched;  // a target symbol none of the input's extents has
  for (size_t i = 0; i < t.values.size(); ++i) {
    if (!t.symbols[i].empty()) {
      auto it = std::find(left.begin(), left.end(), t.symbols[i]);
      if (it == left.end())
        it = std::find_if(left.begin(), left.end(), [&](const std::string& l) { return base(l) == base(t.symbols[i]); });
      if (it != left.end()) left.erase(it);
      else unmatched = t.symbols[i];
      unknown.push_back(i);
    } else if (t.values[i] == -1) {
      inferred.push_back(i);
    } else if (__builtin_mul_overflow(out_known, t.values[i], &out_known)) {
      c.fail(fmt::format("shape {} has more elements than a tensor can hold", t.str()));
    }
  }
  // One dynamic entry and no -1 is exact whatever its name (the -1 we write takes the rest of the
  // elements): the exporter's shape inference leaves many results' extents unnamed (a linear's, in Swin).
  if (!unmatched.empty() && (unknown.size() != 1 || !inferred.empty()))
    c.unsupported(fmt::format("shape {}: extent '{}' is not one of the input's; give --input-shape NAME=DIMS", t.str(), unmatched));
  Ints out = t.values;
  for (size_t i : unknown) out[i] = -1;
  if (inferred.size() > 1) c.fail(fmt::format("shape {} has more than one -1", t.str()));
  if (!inferred.empty() && !unknown.empty()) {
    // -1 next to dynamic extents: computable when every input symbol is accounted for.
    if (!left.empty() || out_known == 0 || in_known % out_known)
      c.unsupported(fmt::format("shape {} of an input {} cannot be resolved without its dynamic extents; give "
                                "--input-shape NAME=DIMS", t.str(), shape_str(in)));
    out[inferred[0]] = in_known / out_known;
  }
  if (unknown.size() > 1)
    c.unsupported(fmt::format("shape {} keeps {} dynamic extents, and reshape takes one; give --input-shape NAME=DIMS",
                              t.str(), unknown.size()));
  return out;
}

Ints axes_arg(NodeContext& c, const char* what) {
  if (c.opset() >= 13) return c.has_input(1) ? c.constant_ints(1, what) : Ints{};
  return c.attr_ints("axes", {});
}

}  // namespace
void shape(NodeContext& c) {
  // The shape of a shape computation is its length, known (ViT's expand target, [batch, -1, -1]).
  const bool of_ints = c.is_symbolic(0);
  const ValueId x = of_ints ? ir::kNoValue : c.input(0);
  const SymbolicInts v = of_ints ? c.ints(0, "Shape's input") : SymbolicInts{};
  const Shape s = of_ints ? (v.scalar ? Shape{} : Shape{static_cast<int64_t>(v.values.size())}) : c.type(x).shape;
  const std::vector<std::string> syms = of_ints ? std::vector<std::string>(s.size()) : c.dim_symbols(x);
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", r);
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  SymbolicInts out;
  for (int64_t d = start; d < end; ++d) {
    out.values.push_back(s[d] < 0 ? 0 : s[d]);
    out.symbols.push_back(syms[d]);
  }
  c.output_ints(0, out);
}

void size(NodeContext& c) {
  const Shape& s = c.input_type(0).shape;
  if (std::any_of(s.begin(), s.end(), [](int64_t d) { return d < 0; }))
    c.unsupported("Size of a value with dynamic extents; give --input-shape NAME=DIMS");
  c.output(0, c.param(Tensor::scalar<int64_t>(shape_numel(s)), "size"));
}

void constant(NodeContext& c) {
  Tensor t;
  if (c.has_attr("value")) t = c.attr_tensor("value");
  else if (c.has_attr("value_float")) t = Tensor::scalar<float>(static_cast<float>(c.attr_float("value_float", 0)));
  else if (c.has_attr("value_int")) t = Tensor::scalar<int64_t>(c.attr_int("value_int", 0));
  else if (c.has_attr("value_ints")) {
    const Ints v = c.attr_ints("value_ints");
    t = Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
  } else {
    c.unsupported("only value, value_float, value_int and value_ints Constants are supported");
  }
  c.output(0, c.param(t, c.node().output(0)));
}

void constant_of_shape(NodeContext& c) {
  const Ints shape = c.constant_ints(0, "ConstantOfShape's shape");
  check_shape_limits(shape, c.where() + ": ConstantOfShape's shape");
  double value = 0;
  DType dtype = DType::f32;
  if (c.has_attr("value")) {
    const Tensor v = c.attr_tensor("value");
    if (v.numel() != 1) c.fail(fmt::format("ConstantOfShape's value must hold one element, but holds {}", v.numel()));
    dtype = v.dtype();
    value = v.to_vector<double>().at(0);
  }
  c.output(0, c.op("full", {}, {{"shape", shape}, {"value", value}, {"dtype", dtype}}));
}

void range(NodeContext& c) {
  const Tensor start = c.constant(0, "Range's start");
  c.output(0, c.op("arange", {}, {{"start", c.constant_scalar(0, "Range's start")}, {"end", c.constant_scalar(1, "Range's limit")},
                                  {"step", c.constant_scalar(2, "Range's delta")}, {"dtype", start.dtype()}}));
}

void reshape(NodeContext& c) {
  if (c.is_symbolic(0)) {  // a shape computation reshaped to 1-D or 0-D (ViT's expand target [batch, -1, -1])
    SymbolicInts v = c.ints(0, "Reshape's input");
    const Ints target = c.constant_ints(1, "Reshape's shape of a shape computation");
    const int64_t n = static_cast<int64_t>(v.values.size());
    if (!(target.empty() && n == 1) && !(target.size() == 1 && (target[0] == -1 || target[0] == n)))
      c.unsupported(fmt::format("Reshape of the shape computation {} to [{}] (only to 1-D, or 0-D from one entry)", v.str(),
                                fmt::join(target, ", ")));
    v.scalar = target.empty();
    return c.output_ints(0, v);
  }
  const ValueId x = c.input(0);
  const SymbolicInts t = c.ints(1, "Reshape's shape");
  const Ints target = reshape_target(c, x, t, c.attr_int("allowzero", 0) != 0);
  const ValueId y = c.op("reshape", {{x}}, {{"shape", target}});
  // The one dynamic extent keeps the symbol the target named it by (ShuffleNet's channel shuffle
  // reshapes to [batch, ...] twice, around a transpose).
  std::vector<std::string> syms(target.size());
  for (size_t i = 0; i < target.size(); ++i)
    if (target[i] == -1 && i < t.symbols.size()) syms[i] = t.symbols[i];
  if (std::count_if(syms.begin(), syms.end(), [](const std::string& s) { return !s.empty(); }) == 1) c.set_dim_symbols(y, syms);
  c.output(0, y);
}

void flatten(NodeContext& c) {
  const ValueId x = c.input(0);
  const int64_t r = rank_of(c, x);
  int64_t axis = c.attr_int("axis", 1);
  axis = axis < 0 ? axis + r : axis;
  if (axis < 0 || axis > r) c.fail(fmt::format("axis {} is out of range for rank {}", axis, r));
  ValueId y = x;
  if (axis == 0) y = c.op("unsqueeze", {{c.op("flatten", {{x}}, {{"start_axis", int64_t{0}}, {"stop_axis", int64_t{-1}}})}},
                          {{"axis", Ints{0}}});
  else if (axis == r) y = c.op("unsqueeze", {{c.op("flatten", {{x}}, {{"start_axis", int64_t{0}}, {"stop_axis", int64_t{-1}}})}},
                               {{"axis", Ints{1}}});
  else {
    if (axis < r - 1) y = c.op("flatten", {{y}}, {{"start_axis", axis}, {"stop_axis", int64_t{-1}}});
    if (axis > 1) y = c.op("flatten", {{y}}, {{"start_axis", int64_t{0}}, {"stop_axis", axis - 1}});
  }
  c.output(0, y);
}

void transpose(NodeContext& c) {
  const ValueId x = c.input(0);
  Ints perm = c.attr_ints("perm");
  if (perm.empty())
    for (int64_t d = rank_of(c, x) - 1; d >= 0; --d) perm.push_back(d);
  const ValueId y = c.op("transpose", {{x}}, {{"perm", perm}});
  const std::vector<std::string> in = c.dim_symbols(x);
  std::vector<std::string> out;
  for (int64_t d : perm) out.push_back(d >= 0 && d < static_cast<int64_t>(in.size()) ? in[d] : "");
  c.set_dim_symbols(y, out);
  c.output(0, y);
}

void unsqueeze(NodeContext& c) {
  const Ints axes = axes_arg(c, "Unsqueeze's axes");
  if (c.is_symbolic(0)) {
    SymbolicInts s = c.ints(0, "input");
    if (!s.scalar || axes != Ints{0}) c.unsupported("Unsqueeze of a shape computation other than scalar -> [1]");
    s.scalar = false;
    return c.output_ints(0, s);
  }
  c.output(0, c.op("unsqueeze", {{c.input(0)}}, {{"axis", axes}}));
}

void squeeze(NodeContext& c) {
  const Ints axes = axes_arg(c, "Squeeze's axes");
  if (c.is_symbolic(0)) {
    SymbolicInts s = c.ints(0, "input");
    if (s.scalar || s.values.size() != 1) c.unsupported("Squeeze of a shape computation other than [1] -> scalar");
    s.scalar = true;
    return c.output_ints(0, s);
  }
  c.output(0, c.op("squeeze", {{c.input(0)}}, {{"axis", axes}}));
}

void concat(NodeContext& c) {
  bool shapes = false;
  for (int i = 0; i < c.node().input_size(); ++i) shapes = shapes || c.is_symbolic(i);
  if (shapes) {  // concatenating shape pieces (torch's view(x.size(0), -1))
    SymbolicInts out;
    for (int i = 0; i < c.node().input_size(); ++i) {
      const SymbolicInts s = c.ints(i, "Concat input");
      out.values.insert(out.values.end(), s.values.begin(), s.values.end());
      out.symbols.insert(out.symbols.end(), s.symbols.begin(), s.symbols.end());
    }
    return c.output_ints(0, out);
  }
  std::vector<ValueId> xs;
  for (int i = 0; i < c.node().input_size(); ++i) xs.push_back(c.input(i));
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), rank_of(c, xs[0]));
  c.output(0, c.op("concat", {xs}, {{"axis", axis}}));
}

void split(NodeContext& c) {
  const ValueId x = c.input(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), rank_of(c, x));
  Ints sections = c.opset() >= 13 ? (c.has_input(1) ? c.constant_ints(1, "Split's split") : Ints{}) : c.attr_ints("split", {});
  if (sections.empty() && c.has_attr("num_outputs")) {  // opset 18: parts of ceil(extent / n), the last smaller
    const int64_t n = c.attr_int("num_outputs", 0), extent = c.type(x).shape[axis];
    if (n < 1 || n != static_cast<int64_t>(c.num_outputs()))
      c.fail(fmt::format("num_outputs {} but the node has {} outputs", n, c.num_outputs()));
    if (extent < 0) c.unsupported("a Split of a dynamic extent by num_outputs; give --input-shape NAME=DIMS");
    const int64_t part = (extent + n - 1) / n;
    if (part * (n - 1) >= extent) c.fail(fmt::format("cannot split extent {} into {} parts of {}", extent, n, part));
    sections.assign(n - 1, part);
    sections.push_back(extent - part * (n - 1));
  }
  if (sections.empty()) {
    const int64_t n = static_cast<int64_t>(c.num_outputs()), extent = c.type(x).shape[axis];
    if (extent < 0) c.unsupported("an equal Split of a dynamic extent; give --input-shape NAME=DIMS");
    if (extent % n) c.fail(fmt::format("cannot split extent {} into {} equal parts", extent, n));
    sections.assign(n, extent / n);
  }
  const std::vector<ValueId> outs = c.ops("split", {{x}}, {{"sections", sections}, {"axis", axis}});
  for (size_t i = 0; i < outs.size(); ++i) c.output(i, outs[i]);
}

void slice(NodeContext& c) {
  const Ints starts = c.constant_ints(1, "Slice's starts"), ends = c.constant_ints(2, "Slice's ends");
  Ints axes = c.has_input(3) ? c.constant_ints(3, "Slice's axes") : Ints{};
  Ints steps = c.has_input(4) ? c.constant_ints(4, "Slice's steps") : Ints{};
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (c.is_symbolic(0)) {  // a piece of a shape
    const SymbolicInts s = c.ints(0, "input");
    const int64_t n = static_cast<int64_t>(s.values.size());
    if (axes != Ints{0} || (!steps.empty() && steps != Ints{1})) c.unsupported("a strided Slice of a shape computation");
    const int64_t b = std::clamp<int64_t>(starts[0] < 0 ? starts[0] + n : starts[0], 0, n);
    const int64_t e = std::clamp<int64_t>(ends[0] < 0 ? ends[0] + n : ends[0], 0, n);
    SymbolicInts out;
    for (int64_t i = b; i < e; ++i) {
      out.values.push_back(s.values[i]);
      out.symbols.push_back(s.symbols[i]);
    }
    return c.output_ints(0, out);
  }
  AttrMap attrs{{"axes", axes}, {"starts", starts}, {"ends", ends}};
  if (!steps.empty()) attrs["steps"] = steps;
  c.output(0, c.op("slice", {{c.input(0)}}, attrs));
}

void expand(NodeContext& c) {
  const ValueId x = c.input(0);
  const SymbolicInts t = c.ints(1, "Expand's shape");
  const Shape in = c.type(x).shape;  // a copy: adding ops moves the program's values
  const std::vector<std::string> in_syms = c.dim_symbols(x);
  const size_t r = std::max(in.size(), t.values.size());
  Ints out(r);
  struct Carried {  // an output axis x broadcasts along to a graph input's dynamic extent
    size_t axis;
    ValueId input;
    int64_t input_axis;
  };
  std::vector<Carried> carried;
  std::vector<std::string> out_syms(r);
  for (size_t i = 0; i < r; ++i) {  // bidirectional broadcasting, aligned at the last axis
    const ptrdiff_t xi = static_cast<ptrdiff_t>(i) - static_cast<ptrdiff_t>(r - in.size());
    const ptrdiff_t ti = static_cast<ptrdiff_t>(i) - static_cast<ptrdiff_t>(r - t.values.size());
    if (ti < 0) {  // the target is shorter: x keeps its extent
      out[i] = -1;
      continue;
    }
    if (!t.symbols[ti].empty()) {
      out_syms[i] = t.symbols[ti];
      if (xi >= 0 && in_syms[xi] == t.symbols[ti]) {
        out[i] = -1;
        continue;
      }
      int64_t input_axis = 0;
      const ValueId input = c.input_with_extent(t.symbols[ti], input_axis);
      if (input == ir::kNoValue || (xi >= 0 && in[xi] != 1))
        c.unsupported(fmt::format("Expand to {} with a dynamic extent the input does not have; give --input-shape "
                                  "NAME=DIMS", t.str()));
      out[i] = xi >= 0 ? -1 : 1;  // the 1 it has; the graph input's extent comes below
      carried.push_back({i, input, input_axis});
      continue;
    }
    const int64_t td = t.values[ti];
    out[i] = td != 1 ? td : (xi >= 0 ? -1 : 1);  // a 1 keeps x's extent
  }
  ValueId y = c.op("expand", {{x}}, {{"shape", out}});
  // Along a graph input's extent: where(k, y, y) with k a bool of shape [1, .., extent, .., 1] from that
  // input (its other axes sliced to 1) broadcasts y to it, whatever the input's values (NaN included).
  for (const Carried& k : carried) {
    ValueId along = k.input;
    const int64_t rank = rank_of(c, along);
    for (int64_t d = 0; d < rank; ++d)
      if (d != k.input_axis) along = c.op("slice", {{along}}, {{"axes", Ints{d}}, {"starts", Ints{0}}, {"ends", Ints{1}}});
    Ints shape(r, 1);
    shape[k.axis] = -1;
    along = c.op("reshape", {{along}}, {{"shape", shape}});
    const ValueId cond = c.op("equal", {{along}, {along}});
    y = c.op("where", {{cond}, {y}, {y}});
  }
  if (!carried.empty()) {
    for (size_t i = 0; i < r; ++i) {
      const ptrdiff_t xi = static_cast<ptrdiff_t>(i) - static_cast<ptrdiff_t>(r - in.size());
      if (out_syms[i].empty() && xi >= 0) out_syms[i] = in_syms[xi];
    }
    c.set_dim_symbols(y, out_syms);
  }
  c.output(0, y);
}

// Pad's [begins..., ends...] over every axis; from opset 18 its `axes` input names the axes the pads are for.
static Ints full_rank_pads(NodeContext& c, const Ints& pads, size_t r) {
  if (!c.has_input(3)) {
    if (pads.size() != 2 * r) c.fail(fmt::format("{} pads for rank {}", pads.size(), r));
    return pads;
  }
  const Ints axes = c.constant_ints(3, "Pad's axes");
  if (pads.size() != 2 * axes.size()) c.fail(fmt::format("{} pads for {} axes", pads.size(), axes.size()));
  Ints full(2 * r, 0);
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<size_t>(norm_axis(c, axes[i], static_cast<int64_t>(r)));
    if (seen[a]) c.fail(fmt::format("axis {} appears twice in Pad's axes", axes[i]));
    seen[a] = true;
    full[a] = pads[i];
    full[a + r] = pads[i + axes.size()];
  }
  return full;
}

void pad(NodeContext& c) {
  const std::string mode = c.attr_string("mode", "constant");
  if (mode != "constant") c.unsupported(fmt::format("Pad mode '{}' (only constant)", mode));
  const ValueId x = c.input(0);
  const size_t r = static_cast<size_t>(rank_of(c, x));
  const Ints pads = full_rank_pads(c, c.constant_ints(1, "Pad's pads"), r);
  const double value = c.has_input(2) ? c.constant_scalar(2, "Pad's constant_value") : 0.0;
  Ints ours;  // F.pad order: last axis first, [begin, end]
  for (size_t d = r; d-- > 0;) {
    ours.push_back(pads[d]);
    ours.push_back(pads[d + r]);
  }
  const ValueId y = c.op("pad", {{x}}, {{"pads", ours}, {"value", value}});
  // Unpadded dynamic extents keep their symbols (a batch through Swin's window padding, where the
  // exporter's shape inference left the result's extents unnamed), so that a later Reshape to them resolves.
  const std::vector<std::string> in = c.dim_symbols(x);
  bool kept = true;
  for (size_t d = 0; d < r; ++d) kept = kept && (in[d].empty() || (pads[d] == 0 && pads[d + r] == 0));
  if (kept) c.set_dim_symbols(y, in);
  c.output(0, y);
}

}  // namespace pd::io::onnx_import
