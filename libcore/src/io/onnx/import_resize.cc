// ONNX Resize (opsets 10-23) and Upsample (7-9) as the interpolate op: nearest, (bi)linear and cubic resizing of
// the two spatial axes of an NCHW tensor, with the output extents and scales known at import time (a
// constant, or the shape computation torch writes for F.interpolate(size=...)).
#include <cmath>

#include "import_converters.h"

namespace pd::io::onnx_import {
namespace {

struct Resized {
  Ints size;                   // [oH, oW]
  std::vector<double> scales;  // [] where the sizes were given
};

constexpr size_t kNoInput = ~size_t{0};

// Resize's `axes` (opset 18): the axes its scales or sizes are given for, in order; the others keep their
// extent. Empty for all four.
Ints resized_axes(NodeContext& c) {
  Ints axes = c.attr_ints("axes", {});
  std::vector<bool> seen(4, false);
  for (int64_t& a : axes) {
    a = norm_axis(c, a, 4);
    if (seen[static_cast<size_t>(a)]) c.fail(fmt::format("axis {} appears twice in axes", a));
    seen[static_cast<size_t>(a)] = true;
  }
  return axes;
}

// `given` (one entry per axis of `axes`) over all four axes, `fill` per axis elsewhere.
template <typename T>
std::vector<T> on_all_axes(NodeContext& c, const Ints& axes, const std::vector<T>& given, std::vector<T> fill) {
  if (axes.empty()) return given;
  if (given.size() != axes.size()) c.fail(fmt::format("{} scales or sizes for {} axes", given.size(), axes.size()));
  for (size_t i = 0; i < axes.size(); ++i) fill[static_cast<size_t>(axes[i])] = given[i];
  return fill;
}

// The spatial output extents and scales from Resize's `scales` or `sizes` input (Upsample: scales only).
Resized resized(NodeContext& c, ValueId x, size_t scales_input, size_t sizes_input, const Ints& axes = {}) {
  const Shape& s = c.type(x).shape;
  if (s.size() != 4) c.unsupported(fmt::format("resizing a {}-D tensor (only 4-D NCHW is supported)", s.size()));
  if (s[2] < 0 || s[3] < 0) c.unsupported("resizing needs known spatial extents; give --input-shape NAME=DIMS");
  const bool by_sizes = sizes_input != kNoInput && c.has_input(sizes_input) &&
                        !(c.is_constant(sizes_input) && c.constant(sizes_input, "Resize's sizes").numel() == 0);
  if (by_sizes) {
    SymbolicInts sizes = c.ints(sizes_input, "Resize's sizes");
    sizes.values = on_all_axes(c, axes, sizes.values, Ints(s.begin(), s.end()));
    sizes.symbols = on_all_axes(c, axes, sizes.symbols, std::vector<std::string>(4));
    if (sizes.values.size() != 4) c.fail(fmt::format("sizes {} must have 4 entries for a 4-D input", sizes.str()));
    if (!sizes.symbols[2].empty() || !sizes.symbols[3].empty())
      c.unsupported(fmt::format("sizes {} with a dynamic spatial extent", sizes.str()));
    for (int d = 0; d < 2; ++d)
      if (sizes.symbols[d].empty() && s[d] >= 0 && sizes.values[d] != s[d])
        c.unsupported(fmt::format("sizes {} resize the batch or channel axis of {}", sizes.str(), shape_str(s)));
    if (sizes.values[2] < 1 || sizes.values[3] < 1) c.fail(fmt::format("sizes {} make the output empty", sizes.str()));
    const std::string policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch") c.unsupported(fmt::format("keep_aspect_ratio_policy '{}' (only 'stretch')", policy));
    return {{sizes.values[2], sizes.values[3]}, {}};
  }
  if (!c.has_input(scales_input)) c.fail("neither scales nor sizes is given");
  const std::vector<double> v =
      on_all_axes(c, axes, c.constant(scales_input, "Resize's scales").to_vector<double>(), std::vector<double>(4, 1.0));
  if (v.size() != 4) c.fail(fmt::format("scales has {} entries; a 4-D input takes 4", v.size()));
  if (v[0] != 1.0 || v[1] != 1.0) c.unsupported(fmt::format("scales [{}, {}, ...] resize the batch or channel axis", v[0], v[1]));
  Resized r{{}, {v[2], v[3]}};
  for (int d = 0; d < 2; ++d) {
    if (!(v[2 + d] > 0) || !std::isfinite(v[2 + d])) c.fail(fmt::format("scale {} of axis {} is not a positive number", v[2 + d], 2 + d));
    // The output extent as the spec writes it: floor(in * scale), in f32 as onnxruntime computes it.
    const float extent = std::floor(static_cast<float>(s[2 + d]) * static_cast<float>(v[2 + d]));
    if (!(extent >= 1.0f && extent <= 2147483648.0f))
      c.fail(fmt::format("scale {} makes axis {} of {} {}", v[2 + d], 2 + d, shape_str(s), extent < 1.0f ? "empty" : "larger than 2^31"));
    r.size.push_back(static_cast<int64_t>(extent));
  }
  return r;
}

ValueId interpolate(NodeContext& c, ValueId x, const Resized& r, const std::string& mode, const std::string& coord,
                    const std::string& rounding) {
  AttrMap attrs{{"size", r.size}, {"scales", r.scales}, {"mode", mode}, {"coordinate_mode", coord}, {"nearest_mode", rounding}};
  if (mode == "bicubic") {
    // exclude_outside=1 renormalises the weights of taps past the edge; ours repeat the edge value (0).
    if (c.attr_int("exclude_outside", 0) != 0) c.unsupported("cubic Resize with exclude_outside=1");
    attrs["cubic_coeff_a"] = static_cast<double>(c.attr_float("cubic_coeff_a", -0.75));
  }
  return c.op("interpolate", {{x}}, attrs);
}

std::string interpolation_mode(NodeContext& c) {
  const std::string mode = c.attr_string("mode", "nearest");
  if (mode == "nearest") return "nearest";
  if (mode == "linear" || mode == "bilinear") return "bilinear";
  if (mode == "cubic" && c.node().op_type() == "Resize") return "bicubic";
  c.unsupported(fmt::format("mode '{}' (nearest, linear{} are supported)", mode, c.node().op_type() == "Resize" ? " and cubic" : ""));
}

}  // namespace

void resize(NodeContext& c) {
  const ValueId x = c.input(0);
  const std::string mode = interpolation_mode(c);
  if (c.opset() < 11)  // opset 10's Resize is Upsample's arithmetic: asymmetric coordinates, indices by truncation
    return c.output(0, interpolate(c, x, resized(c, x, 1, kNoInput), mode, "asymmetric", "floor"));
  if (c.attr_int("antialias", 0) != 0) c.unsupported("antialias=1");
  const std::string coord = c.attr_string("coordinate_transformation_mode", "half_pixel");
  if (coord != "half_pixel" && coord != "pytorch_half_pixel" && coord != "align_corners" && coord != "asymmetric")
    c.unsupported(fmt::format("coordinate_transformation_mode '{}' (half_pixel, pytorch_half_pixel, align_corners and asymmetric "
                              "are supported)", coord));
  const std::string rounding = mode == "nearest" ? c.attr_string("nearest_mode", "round_prefer_floor") : "floor";
  if (rounding != "floor" && rounding != "ceil" && rounding != "round_prefer_floor" && rounding != "round_prefer_ceil")
    c.fail(fmt::format("nearest_mode '{}' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil", rounding));
  c.output(0, interpolate(c, x, resized(c, x, 2, 3, resized_axes(c)), mode, coord, rounding));
}

void upsample(NodeContext& c) {
  if (c.opset() < 9) c.unsupported("Upsample before opset 9 (scales as an attribute); export at opset 11 or later");
  const ValueId x = c.input(0);
  const Resized r = resized(c, x, 1, kNoInput);
  for (double s : r.scales)
    if (s < 1.0) c.unsupported(fmt::format("Upsample by {} (a downsample)", s));
  c.output(0, interpolate(c, x, r, interpolation_mode(c), "asymmetric", "floor"));
}

}  // namespace pd::io::onnx_import
