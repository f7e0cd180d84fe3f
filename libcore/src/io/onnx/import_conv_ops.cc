// The convolution and pooling converters of the ONNX import table (import_ops.cc): Conv, ConvTranspose,
// MaxPool, AveragePool and the global pools, 1-D forms lifted to [N, C, 1, L], ONNX pads and auto_pad
// turned into our symmetric padding plus a pad op.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

#include "import_converters.h"

namespace pd::io::onnx_import {
namespace {

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

}  // namespace

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

}  // namespace pd::io::onnx_import
