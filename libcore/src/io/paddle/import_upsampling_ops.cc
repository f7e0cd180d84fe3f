// A decoder's upsampling ops: nearest_interp_v2 / bilinear_interp_v2 / bicubic_interp_v2 as
// interpolate, and conv2d_transpose. Paddle's coordinate rules (phi's interpolate kernels) in ONNX
// Resize's terms: bilinear with align_corners is align_corners, with align_mode 0 half_pixel, with
// align_mode 1 asymmetric; bicubic is align_corners or half_pixel (align_mode does not apply; its
// kernel's a is -0.75); nearest rounds half up with align_corners, else truncates asymmetric
// coordinates. The ratio is 1 / scale where a scale is given (the output then int(in * scale)), else
// in / out. Sizes may come from inputs known at import time (OutSize, SizeTensor, Scale), as
// F.interpolate(x, paddle.shape(y)[2:]) writes them.
#include <cmath>

#include "import_converters.h"

namespace pd::io::paddle_import {

namespace {

// The values of input variable `var`, known at import time (a constant, or a shape computed in the
// program: paddle.shape(y)[2:]).
std::vector<double> known_values(OpContext& c, const std::string& var, const char* slot) {
  if (const Tensor* t = c.constant(var)) return t->to_vector<double>();
  if (const ShapeValue* s = c.shape_value(var))
    c.unsupported(fmt::format("the output size from input '{}' ('{}': the shape {}) holds extents known only at run "
                              "time; give --input-shape NAME=DIMS to fix them", slot, var, s->extents));
  c.unsupported(fmt::format("the output size from input '{}' ('{}') is computed at run time", slot, var));
}

// One output extent read from a tensor: a whole number from 1 to 2^31 (a cast of anything else is undefined).
int64_t extent_of(OpContext& c, double v, const char* slot) {
  if (!(v >= 1 && v <= 2147483648.0) || v != std::floor(v))
    c.fail(fmt::format("input '{}' gives the output extent {} (a whole number from 1 to 2^31 expected)", slot, v));
  return static_cast<int64_t>(v);
}

// The output size from the inputs, which take precedence over the attributes as in phi's kernels:
// SizeTensor (one-value tensors) over everything, OutSize over scale; the Scale input replaces the
// attribute. Empty where the inputs do not say.
Ints size_from_inputs(OpContext& c) {
  Ints size;
  if (c.has("SizeTensor")) {
    for (const std::string& var : c.op().inputs.at("SizeTensor")) {
      const std::vector<double> v = known_values(c, var, "SizeTensor");
      if (v.size() != 1) c.fail(fmt::format("SizeTensor '{}' holds {} values (one each)", var, v.size()));
      size.push_back(extent_of(c, v[0], "SizeTensor"));
    }
  } else if (c.has("OutSize")) {
    for (double v : known_values(c, c.in_name("OutSize"), "OutSize")) size.push_back(extent_of(c, v, "OutSize"));
  }
  if (!size.empty() && size.size() != 2) c.fail(fmt::format("output size {} (2 extents for a 4-D input)", size));
  return size;
}

}  // namespace

void interp_v2(OpContext& c) {
  require_nchw(c);
  const ValueId x = c.in("X");
  const Shape& s = c.type(x).shape;
  if (s.size() != 4) c.unsupported(fmt::format("input of rank {} (only 4-D NCHW resizing)", s.size()));
  const std::string method = c.attr_string("interp_method", "nearest");
  if (method != "nearest" && method != "bilinear" && method != "bicubic") c.unsupported(fmt::format("interp_method '{}'", method));
  const bool align_corners = c.attr_bool("align_corners", false);
  const Ints given = size_from_inputs(c);
  std::vector<double> scales = c.has("SizeTensor") ? std::vector<double>{}
                               : c.has("Scale")    ? known_values(c, c.in_name("Scale"), "Scale")
                                                   : c.attr_floats("scale");
  if (scales.size() == 1) scales.push_back(scales[0]);
  Ints size{c.attr_int("out_h", -1), c.attr_int("out_w", -1)};
  if (scales.size() == 2 && scales[0] > 0 && scales[1] > 0) {
    if (s[2] < 0 || s[3] < 0) c.unsupported("resizing by a scale needs known spatial extents; give --input-shape NAME=DIMS");
    for (int d = 0; d < 2; ++d) {
      const float extent = static_cast<float>(s[2 + d]) * static_cast<float>(scales[d]);
      if (!(extent <= 2147483648.0f)) c.fail(fmt::format("scale {} makes axis {} larger than 2^31", scales[d], 2 + d));
      size[d] = static_cast<int64_t>(extent);
    }
  } else {
    scales.clear();
  }
  if (!given.empty() && !scales.empty())  // phi's coordinates would follow the scale, its extents the size
    c.unsupported("an output size from OutSize together with a scale");
  if (!given.empty()) size = given;
  if (size[0] < 1 || size[1] < 1) c.fail(fmt::format("output size [{}, {}] (out_h, out_w or scale) is not positive", size[0], size[1]));
  std::string coord = "asymmetric", rounding = "floor";
  if (align_corners) coord = "align_corners", rounding = "round_prefer_ceil";
  else if (method == "bicubic" || (method == "bilinear" && c.attr_int("align_mode", 1) == 0)) coord = "half_pixel";
  c.out("Out", c.op("interpolate", {{x}},
                    {{"size", size}, {"scales", scales}, {"mode", method}, {"coordinate_mode", coord}, {"nearest_mode", rounding}}));
}

void conv2d_transpose(OpContext& c) {
  require_nchw(c);
  const ValueId x = c.in("Input"), w = c.in("Filter");
  const Shape &xs = c.type(x).shape, &ws = c.type(w).shape;
  if (ws.size() != 4 || xs.size() != 4) c.unsupported(fmt::format("filter of rank {} (only 2-D transposed convolution)", ws.size()));
  const Ints strides = pair_attr(c, "strides", {1, 1}), dilations = pair_attr(c, "dilations", {1, 1});
  const std::string algo = c.attr_string("padding_algorithm", "EXPLICIT");
  if (algo == "SAME") c.unsupported("conv2d_transpose with padding_algorithm SAME");
  Ints p = algo == "VALID" ? Ints{0, 0} : c.attr_ints("paddings", {0, 0});
  if (p.size() == 4) {
    if (p[0] != p[1] || p[2] != p[3]) c.unsupported(fmt::format("conv2d_transpose with asymmetric paddings {}", p));
    p = {p[0], p[2]};
  }
  if (p.size() != 2) c.fail(fmt::format("paddings {} (expected 2 or 4 values)", p));
  Ints out_pad = c.attr_ints("output_padding", {});
  if (out_pad.empty()) out_pad = {0, 0};
  if (out_pad.size() != 2) c.fail(fmt::format("output_padding {} (expected 2 values)", out_pad));
  // output_size (the extents asked for) becomes the output_padding that gives them.
  if (const Ints size = c.attr_ints("output_size", {}); !size.empty()) {
    if (size.size() != 2) c.fail(fmt::format("output_size {} (expected 2 values)", size));
    for (int d = 0; d < 2; ++d) {
      if (xs[2 + d] < 0) c.unsupported("conv2d_transpose's output_size needs known spatial extents");
      out_pad[d] = size[d] - ((xs[2 + d] - 1) * strides[d] - 2 * p[d] + dilations[d] * (ws[2 + d] - 1) + 1);
    }
  }
  c.out("Output", c.op("conv2d_transpose", {{x}, {w}, {}},
                       {{"stride", strides}, {"padding", p}, {"output_padding", out_pad}, {"dilation", dilations},
                        {"groups", c.attr_int("groups", 1)}}));
}

}  // namespace pd::io::paddle_import
