// Paddle converters of shapes, data movement and constants: reshape, transpose, flatten, (un)squeeze,
// concat, slice, split, assign, cast, fill_constant, and shape (with slices and casts of it). Named by the
// table in import_ops.cc.
#include <cstdlib>

#include "import_converters.h"
#include "op_api.h"

namespace pd::io::paddle_import {
namespace {

DType dtype_attr(OpContext& c, const char* name) {
  const std::string where = fmt::format("{}: attribute {}", c.where(), name);
  const AttrMap& a = c.op().attrs;
  auto it = a.find(name);
  if (it == a.end()) c.fail(fmt::format("attribute '{}' is missing", name));
  if (auto* s = std::get_if<std::string>(&it->second)) return dtype_of_pir_type(*s, where);
  return dtype_of_var_type(static_cast<int>(c.attr_int(name, 5)), where);
}

}  // namespace

// reshape: 0 copies the input's extent (a run-time batch stays -1), -1 is inferred; a shape with more than
// one extent unknown until run time is refused.
void reshape2(OpContext& c) {
  if (c.has("Shape") || c.has("ShapeTensor")) c.unsupported("a shape computed at run time (Shape/ShapeTensor inputs)");
  const ValueId x = c.in("X");
  const Shape& in = c.type(x).shape;
  Ints shape = c.attr_ints("shape");
  int64_t unknown = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) {
      if (d >= in.size()) c.fail(fmt::format("shape {}: 0 at axis {} copies an extent the input (rank {}) lacks", shape, d, in.size()));
      shape[d] = in[d];
    }
    unknown += shape[d] < 0;
  }
  if (unknown > 1) c.unsupported(fmt::format("reshape of {} to {}: more than one extent unknown until run time; give "
                                             "--input-shape NAME=DIMS", c.type(x).str(), shape));
  c.out("Out", c.op("reshape", {{x}}, {{"shape", shape}}));
}

void transpose2(OpContext& c) { c.out("Out", c.op("transpose", {{c.in("X")}}, {{"perm", c.attr_ints("axis")}})); }

void flatten_range(OpContext& c) {
  c.out("Out", c.op("flatten", {{c.in("X")}}, {{"start_axis", c.attr_int("start_axis", 1)}, {"stop_axis", c.attr_int("stop_axis", -1)}}));
}
void flatten2(OpContext& c) {  // [prod(dims < axis), prod(dims >= axis)]
  const ValueId x = c.in("X");
  const int64_t axis = c.attr_int("axis", 1);
  ValueId v = c.op("flatten", {{x}}, {{"start_axis", axis}, {"stop_axis", int64_t{-1}}});
  if (axis == 0) return c.out("Out", c.op("unsqueeze", {{v}}, {{"axis", Ints{0}}}));
  c.out("Out", c.op("flatten", {{v}}, {{"start_axis", int64_t{0}}, {"stop_axis", axis - 1}}));
}

// Paddle inserts the axes one after another (a negative axis counts in the rank reached so far); ours
// names positions in the result.
void unsqueeze2(OpContext& c) {
  if (c.has("AxesTensor") || c.has("AxesTensorList")) c.unsupported("axes computed at run time");
  const ValueId x = c.in("X");
  std::vector<bool> inserted(static_cast<size_t>(rank_of(c, x)), false);
  for (int64_t a : c.attr_ints("axes")) {
    const auto r = static_cast<int64_t>(inserted.size());
    const int64_t pos = a < 0 ? a + r + 1 : a;
    if (pos < 0 || pos > r) c.fail(fmt::format("axis {} is out of range for rank {}", a, r));
    inserted.insert(inserted.begin() + pos, true);
  }
  Ints axes;
  for (size_t d = 0; d < inserted.size(); ++d)
    if (inserted[d]) axes.push_back(static_cast<int64_t>(d));
  c.out("Out", c.op("unsqueeze", {{x}}, {{"axis", axes}}));
}

void squeeze2(OpContext& c) {
  const ValueId x = c.in("X");
  Ints axes;
  for (int64_t a : c.attr_ints("axes")) {
    const int64_t n = norm_axis(c, a, rank_of(c, x));
    if (c.type(x).shape[static_cast<size_t>(n)] == 1) axes.push_back(n);  // Paddle skips axes not of extent 1
  }
  if (axes.empty() && !c.attr_ints("axes").empty()) return c.out("Out", x);
  c.out("Out", c.op("squeeze", {{x}}, {{"axis", axes}}));
}

void concat(OpContext& c) {
  if (c.has("AxisTensor")) c.unsupported("an axis computed at run time");
  const std::vector<ValueId> xs = c.ins("X");
  if (xs.empty()) c.fail("no inputs");
  c.out("Out", c.op("concat", {xs}, {{"axis", norm_axis(c, c.attr_int("axis", 0), rank_of(c, xs[0]))}}));
}

// shape: the input's extents, known at import but for those known only at run time (ShapeValue).
void shape(OpContext& c) {
  const PaddleVar* declared = c.declared("Out");
  c.out_shape("Out", {c.type(c.in("Input")).shape, declared ? declared->dtype : DType::i32, false});
}

namespace {

// A slice of a shape (paddle.shape(x)[2:], paddle.shape(x)[0]).
void slice_shape(OpContext& c, const ShapeValue& s) {
  const Ints axes = c.attr_ints("axes"), starts = c.attr_ints("starts"), ends = c.attr_ints("ends");
  if (axes != Ints{0} || starts.size() != 1 || ends.size() != 1)
    c.fail(fmt::format("a slice of a shape takes axes [0] and one start and end, got axes {}, starts {}, ends {}", axes,
                       starts, ends));
  const auto n = static_cast<int64_t>(s.extents.size());
  const int64_t b = std::clamp<int64_t>(starts[0] < 0 ? starts[0] + n : starts[0], 0, n);
  const int64_t e = std::clamp<int64_t>(ends[0] < 0 ? ends[0] + n : ends[0], b, n);
  ShapeValue out{Ints(s.extents.begin() + b, s.extents.begin() + e), s.dtype, false};
  if (!c.attr_ints("decrease_axis").empty()) {
    if (out.extents.size() != 1) c.fail(fmt::format("decrease_axis on a slice of {} extents", out.extents.size()));
    out.scalar = true;
  }
  c.out_shape("Out", out);
}

}  // namespace

void slice(OpContext& c) {
  for (const char* s : {"StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList"})
    if (c.has(s)) c.unsupported(fmt::format("bounds computed at run time ({})", s));
  if (const ShapeValue* s = c.shape_value(c.in_name("Input"))) return slice_shape(c, *s);
  const ValueId x = c.in("Input");
  const int64_t rank = rank_of(c, x);
  Ints axes = c.attr_ints("axes"), starts = c.attr_ints("starts"), ends = c.attr_ints("ends");
  if (axes.size() != starts.size() || axes.size() != ends.size())
    c.fail(fmt::format("axes {}, starts {}, ends {} differ in length", axes, starts, ends));
  for (int64_t& a : axes) a = norm_axis(c, a, rank);
  ValueId out = c.op("slice", {{x}}, {{"axes", axes}, {"starts", starts}, {"ends", ends}});
  Ints decrease = c.attr_ints("decrease_axis");
  for (int64_t& a : decrease) a = norm_axis(c, a, rank, "decrease_axis");
  if (!decrease.empty() && static_cast<int64_t>(decrease.size()) == rank) {
    out = c.op("reshape", {{out}}, {{"shape", Ints{}}});  // every axis removed: a 0-D result
  } else if (!decrease.empty()) {
    out = c.op("squeeze", {{out}}, {{"axis", decrease}});
  }
  c.out("Out", out);
}

// Into `num` equal parts, or sections (one of them -1: the rest) along axis.
void split(OpContext& c) {
  if (c.has("AxisTensor") || c.has("SectionsTensorList")) c.unsupported("axis or sections computed at run time");
  const ValueId x = c.in("X");
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), rank_of(c, x));
  const int64_t extent = c.type(x).shape[static_cast<size_t>(axis)];
  if (extent < 0) c.unsupported("splitting an extent known only at run time");
  Ints sections = c.attr_ints("sections");
  const int64_t num = c.attr_int("num", 0);
  if (sections.empty()) {
    if (num <= 0 || extent % num) c.fail(fmt::format("cannot split extent {} into {} equal parts", extent, num));
    sections.assign(static_cast<size_t>(num), extent / num);
  }
  int64_t known = 0, unknown = 0;
  for (int64_t s : sections) s < 0 ? ++unknown : known += s;
  for (int64_t& s : sections)
    if (s < 0) s = extent - known;
  if (unknown > 1 || known > extent || (unknown == 0 && known != extent))
    c.fail(fmt::format("sections {} do not split extent {}", c.attr_ints("sections"), extent));
  c.outs("Out", c.ops("split", {{x}}, {{"sections", sections}, {"axis", axis}}));
}

void assign(OpContext& c) { c.out("Out", c.in("X")); }

void cast(OpContext& c) {
  const DType to = dtype_attr(c, "out_dtype");
  if (const ShapeValue* s = c.shape_value(c.in_name("X"))) return c.out_shape("Out", {s->extents, to, s->scalar});
  c.out("Out", c.op("cast", {{c.in("X")}}, {{"dtype", to}}));
}

void fill_constant(OpContext& c) {
  if (c.has("ShapeTensor") || c.has("ShapeTensorList") || c.has("ValueTensor")) c.unsupported("a shape or value computed at run time");
  const Ints shape = c.attr_ints("shape");
  for (int64_t e : shape)
    if (e < 0 || e > (int64_t{1} << 24)) c.fail(fmt::format("shape {}", shape));
  const std::string str = c.attr_string("str_value", "");
  const double v = str.empty() ? c.attr_float("value", 0.0) : std::strtod(str.c_str(), nullptr);
  c.out("Out", c.param(ops::full(shape, v, dtype_attr(c, "dtype")), "fill_constant"));
}

}  // namespace pd::io::paddle_import
