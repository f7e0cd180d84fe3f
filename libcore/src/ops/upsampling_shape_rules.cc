// Shape rules of the decoder ops: interpolate (and its gradient) and conv2d_transpose.
#include <fmt/ranges.h>

#include <cmath>

#include "shape_checks.h"

namespace pd::infer {

// interpolate's attributes (also interpolate_grad's): the modes ONNX Resize and torch share, and scales
// as the factors a model asked for ([] or one positive factor an axis).
namespace {
void check_interpolate(const char* op, const std::vector<double>& scales, const std::string& mode, const std::string& coord,
                       const std::string& round, double cubic_coeff_a) {
  PD_CHECK(mode == "nearest" || mode == "bilinear" || mode == "bicubic", ErrorCode::kInvalidArgument,
           "{}: argument 'mode' must be nearest, bilinear or bicubic, but received '{}'", op, mode);
  PD_CHECK(std::isfinite(cubic_coeff_a), ErrorCode::kInvalidArgument, "{}: argument 'cubic_coeff_a' must be finite, but received {}", op,
           cubic_coeff_a);
  PD_CHECK(coord == "half_pixel" || coord == "pytorch_half_pixel" || coord == "align_corners" || coord == "asymmetric",
           ErrorCode::kInvalidArgument,
           "{}: argument 'coordinate_mode' must be half_pixel, pytorch_half_pixel, align_corners or asymmetric, but received '{}'", op,
           coord);
  PD_CHECK(round == "floor" || round == "ceil" || round == "round_prefer_floor" || round == "round_prefer_ceil",
           ErrorCode::kInvalidArgument,
           "{}: argument 'nearest_mode' must be floor, ceil, round_prefer_floor or round_prefer_ceil, but received '{}'", op, round);
  PD_CHECK(scales.empty() || (scales.size() == 2 && scales[0] > 0 && scales[1] > 0 && std::isfinite(scales[0]) && std::isfinite(scales[1])),
           ErrorCode::kInvalidArgument, "{}: argument 'scales' must be empty or 2 positive factors (H, W), but received {}", op, scales);
}
}  // namespace

Shape interpolate(const char* op, In x, const std::vector<int64_t>& size, const std::vector<double>& scales, const std::string& mode,
                  const std::string& coordinate_mode, const std::string& nearest_mode, double cubic_coeff_a) {
  check_rank(op, x, 4, "[N, C, H, W]");
  check_pair(op, "size", size, 1);
  check_interpolate(op, scales, mode, coordinate_mode, nearest_mode, cubic_coeff_a);
  const Shape& s = x.t.shape();
  PD_CHECK(s[0] * s[1] == 0 || (s[2] > 0 && s[3] > 0), ErrorCode::kShape, "{}: argument '{}' has an empty spatial axis: {}", op, x.name,
           shape_str(s));
  return {s[0], s[1], size[0], size[1]};
}

Shape interpolate_grad(const char* op, In grad, const std::vector<int64_t>& input_shape, const std::vector<double>& scales,
                       const std::string& mode, const std::string& coordinate_mode, const std::string& nearest_mode,
                       double cubic_coeff_a) {
  check_rank(op, grad, 4, "[N, C, oH, oW]");
  check_interpolate(op, scales, mode, coordinate_mode, nearest_mode, cubic_coeff_a);
  const Shape& g = grad.t.shape();
  PD_CHECK(input_shape.size() == 4 && input_shape[0] == g[0] && input_shape[1] == g[1] && input_shape[2] > 0 && input_shape[3] > 0,
           ErrorCode::kShape, "{}: argument 'input_shape' {} does not match '{}' {}", op, shape_str(input_shape), grad.name, shape_str(g));
  return input_shape;
}

Shape conv2d_transpose(const char* op, In x, In weight, In bias, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                       const std::vector<int64_t>& output_padding, const std::vector<int64_t>& dilation, int64_t groups) {
  check_rank(op, x, 4, "[N, C, H, W]");
  check_rank(op, weight, 4, "[C_in, C_out / groups, kH, kW]");
  check_pair(op, "stride", stride, 1);
  check_pair(op, "padding", padding, 0);
  check_pair(op, "dilation", dilation, 1);
  check_pair(op, "output_padding", output_padding, 0);
  PD_CHECK(groups >= 1, ErrorCode::kInvalidArgument, "{}: argument 'groups' must be at least 1, but received {}", op, groups);
  const Shape &xs = x.t.shape(), &ws = weight.t.shape();
  PD_CHECK(xs[1] == ws[0] && ws[0] % groups == 0, ErrorCode::kShape,
           "{}: {} input channels (argument '{}' {}) do not match argument '{}' {} (its first extent, C_in, a multiple of {} groups)", op,
           xs[1], x.name, shape_str(xs), weight.name, shape_str(ws), groups);
  Shape out{xs[0], ws[1] * groups, 0, 0};
  for (int d = 0; d < 2; ++d) {
    PD_CHECK(output_padding[d] < stride[d], ErrorCode::kInvalidArgument,
             "{}: argument 'output_padding' {} must be below the stride {} on each axis", op, shape_str(output_padding), shape_str(stride));
    PD_CHECK(xs[2 + d] <= kMaxWindowAttr && ws[2 + d] <= kMaxWindowAttr, ErrorCode::kShape,  // so that the arithmetic fits int64
             "{}: spatial extents above 2^31 ('{}' {}, '{}' {})", op, x.name, shape_str(xs), weight.name, shape_str(ws));
    out[2 + d] = (xs[2 + d] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (ws[2 + d] - 1) + output_padding[d] + 1;
    PD_CHECK(out[2 + d] >= 1 && xs[2 + d] >= 1, ErrorCode::kShape, "{}: the result of '{}' {} with weight {} and padding {} would be empty",
             op, x.name, shape_str(xs), shape_str(ws), shape_str(padding));
  }
  if (bias.t.defined())
    PD_CHECK(bias.t.dim() == 1 && bias.t.shape()[0] == out[1], ErrorCode::kShape,
             "{}: argument '{}' must have shape [{}] (the output channels), but received {}", op, bias.name, out[1], shape_str(bias.t.shape()));
  return out;
}

}  // namespace pd::infer
