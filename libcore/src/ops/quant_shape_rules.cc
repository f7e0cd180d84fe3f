// Shape and dtype rules of the quantization ops: quantize_linear / dequantize_linear (per tensor or per
// channel along an axis, u8 / i8 on the quantized side) and the int8 kernels quantized_conv2d /
// quantized_linear, max_pool2d_nhwc, and weight_only_linear.
#include "pd/ops/shape_rules.h"

#include "pd/core/error.h"

namespace pd::infer {
namespace {

void check_quant_channels(const char* op, In x, In scale, In zero_point, int64_t axis) {
  PD_CHECK(scale.t.dim() <= 1, ErrorCode::kShape, "{}: argument '{}' must be 0-D (per tensor) or 1-D (per channel), but received {}",
           op, scale.name, shape_str(scale.t.shape()));
  PD_CHECK(zero_point.t.shape() == scale.t.shape(), ErrorCode::kShape,
           "{}: argument '{}' must have the shape of '{}' {}, but received {}", op, zero_point.name, scale.name,
           shape_str(scale.t.shape()), shape_str(zero_point.t.shape()));
  if (scale.t.dim() == 0) return;
  const int64_t a = normalize_axis(axis, x.t.dim(), op);
  const int64_t extent = x.t.shape()[a];
  PD_CHECK(extent == -1 || extent == scale.t.shape()[0], ErrorCode::kShape,
           "{}: per-channel argument '{}' has {} values, but '{}' {} has {} along axis {}", op, scale.name,
           scale.t.shape()[0], x.name, shape_str(x.t.shape()), extent, a);
}

bool int8_dtype(DType d) { return d == DType::u8 || d == DType::i8; }

void check_dtype_is(const char* op, In t, DType want, const char* why) {
  PD_CHECK(t.t.dtype() == want, ErrorCode::kDType, "{}: argument '{}' must be {}{}, but received {}", op, t.name,
           dtype_name(want), why, dtype_name(t.t.dtype()));
}

void check_scalar(const char* op, In t) {
  PD_CHECK(t.t.dim() == 0, ErrorCode::kShape, "{}: argument '{}' must be 0-D (one value per tensor), but received {}", op,
           t.name, shape_str(t.t.shape()));
}

// A symmetric i8 weight with per-output (axis 0) or per-tensor f32 scales, and an f32 bias.
void check_int8_weight(const char* op, In weight, In weight_scale, In bias) {
  check_dtype_is(op, weight, DType::i8, " (symmetric int8 weights)");
  check_dtype_is(op, weight_scale, DType::f32, "");
  PD_CHECK(weight_scale.t.dim() == 0 || (weight_scale.t.dim() == 1 && weight.t.dim() > 0 &&
                                         (weight.t.shape()[0] == -1 || weight_scale.t.shape()[0] == weight.t.shape()[0])),
           ErrorCode::kShape, "{}: argument '{}' must be 0-D or hold one scale per output channel ([{}]), but received {}",
           op, weight_scale.name, weight.t.dim() > 0 ? weight.t.shape()[0] : 0, shape_str(weight_scale.t.shape()));
  if (bias.t.defined()) check_dtype_is(op, bias, DType::f32, "");
}

// The int8 operands every quantized op shares: x with its 0-D parameters, the i8 weight with per-output
// (axis 0) or per-tensor scales, an f32 bias, and the requantized output's parameters.
// quantize_x: x is f32, to be quantized into x_zero_point's dtype.
void check_int8_operands(const char* op, In x, In x_scale, In x_zero_point, In weight, In weight_scale, In bias,
                         In out_scale, In out_zero_point, DType out_dtype, bool quantize_x = false) {
  if (quantize_x) {
    check_dtype_is(op, x, DType::f32, " (quantize_x: the input it quantizes)");
    PD_CHECK(int8_dtype(x_zero_point.t.dtype()), ErrorCode::kDType,
             "{}: argument '{}' must be u8 or i8 (the dtype x is quantized into), but received {}", op, x_zero_point.name,
             dtype_name(x_zero_point.t.dtype()));
  } else {
    PD_CHECK(int8_dtype(x.t.dtype()), ErrorCode::kDType, "{}: argument '{}' must be u8 or i8, but received {}", op, x.name,
             dtype_name(x.t.dtype()));
    check_dtype_is(op, x_zero_point, x.t.dtype(), " (the dtype of 'x')");
  }
  check_dtype_is(op, x_scale, DType::f32, "");
  check_scalar(op, x_scale);
  check_scalar(op, x_zero_point);
  check_int8_weight(op, weight, weight_scale, bias);
  if (out_dtype == DType::f32) return;
  PD_CHECK(int8_dtype(out_dtype), ErrorCode::kDType, "{}: argument 'out_dtype' must be f32, u8 or i8, but received {}", op,
           dtype_name(out_dtype));
  PD_CHECK(out_scale.t.defined() && out_zero_point.t.defined(), ErrorCode::kInvalidArgument,
           "{}: out_dtype {} needs '{}' and '{}' to requantize the result", op, dtype_name(out_dtype), out_scale.name,
           out_zero_point.name);
  check_dtype_is(op, out_scale, DType::f32, "");
  check_scalar(op, out_scale);
  check_dtype_is(op, out_zero_point, out_dtype, " (the out_dtype)");
  check_scalar(op, out_zero_point);
}

}  // namespace

Shape quant_params(const char* op, In x, In scale, In zero_point, int64_t axis, DType dtype) {
  PD_CHECK(int8_dtype(dtype), ErrorCode::kDType, "{}: argument 'dtype' must be u8 or i8, but received {}", op, dtype_name(dtype));
  PD_CHECK(zero_point.t.dtype() == dtype, ErrorCode::kDType, "{}: argument '{}' must be {} (the output dtype), but received {}",
           op, zero_point.name, dtype_name(dtype), dtype_name(zero_point.t.dtype()));
  check_quant_channels(op, x, scale, zero_point, axis);
  return x.t.shape();
}

Shape quant_params(const char* op, In x, In scale, In zero_point, int64_t axis) {
  PD_CHECK(int8_dtype(x.t.dtype()), ErrorCode::kDType, "{}: argument '{}' must be u8 or i8, but received {}", op, x.name,
           dtype_name(x.t.dtype()));
  PD_CHECK(zero_point.t.dtype() == x.t.dtype(), ErrorCode::kDType,
           "{}: argument '{}' must be {} (the dtype of '{}'), but received {}", op, zero_point.name, dtype_name(x.t.dtype()),
           x.name, dtype_name(zero_point.t.dtype()));
  PD_CHECK(scale.t.dtype() == DType::f32, ErrorCode::kDType, "{}: argument '{}' must be f32, but received {}", op, scale.name,
           dtype_name(scale.t.dtype()));
  check_quant_channels(op, x, scale, zero_point, axis);
  return x.t.shape();
}

Shape gated_quantize(const char* op, In x, In gate, In scale, In zero_point, DType dtype) {
  const Shape& s = x.t.shape();
  const Shape& g = gate.t.shape();
  PD_CHECK(s.size() == 4, ErrorCode::kShape, "{}: argument '{}' must be 4-D [N, H, W, C] (NHWC), but received {}", op, x.name,
           shape_str(s));
  PD_CHECK(g.size() == 4 && g[1] == 1 && g[2] == 1 && g[3] == s[3], ErrorCode::kShape,
           "{}: argument '{}' must be [N or 1, 1, 1, C] with C = {} (a factor per image and channel of '{}' {}), but received {}",
           op, gate.name, s[3], x.name, shape_str(s), shape_str(g));
  PD_CHECK(g[0] == s[0] || g[0] == 1, ErrorCode::kShape, "{}: argument '{}' {} has {} images, but '{}' {} has {}", op, gate.name,
           shape_str(g), g[0], x.name, shape_str(s), s[0]);
  PD_CHECK(gate.t.dtype() == x.t.dtype(), ErrorCode::kDType, "{}: argument '{}' must be {} (the dtype of '{}'), but received {}",
           op, gate.name, dtype_name(x.t.dtype()), x.name, dtype_name(gate.t.dtype()));
  PD_CHECK(scale.t.dim() == 0, ErrorCode::kShape, "{}: argument '{}' must be 0-D: it quantizes per tensor, but received {}", op,
           scale.name, shape_str(scale.t.shape()));
  return quant_params(op, x, scale, zero_point, 1, dtype);
}

Shape quantized_conv2d(const char* op, In x, In x_scale, In x_zero_point, In weight, In weight_scale, In bias, In residual,
                       In residual_scale, In residual_zero_point, In out_scale, In out_zero_point,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                       const std::vector<int64_t>& dilation, int64_t groups, bool channels_last, DType out_dtype,
                       bool quantize_x) {
  check_int8_operands(op, x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale, out_zero_point, out_dtype, quantize_x);
  PD_CHECK(!quantize_x || channels_last, ErrorCode::kInvalidArgument,
           "{}: quantize_x reads the f32 [N, C, H, W] input into the NHWC int8 layout, so channels_last must be set", op);
  const bool int8_residual = residual.t.defined() && int8_dtype(residual.t.dtype());
  if (int8_residual) {
    PD_CHECK(residual_scale.t.defined() && residual_zero_point.t.defined(), ErrorCode::kInvalidArgument,
             "{}: the {} argument '{}' needs '{}' and '{}' to be read", op, dtype_name(residual.t.dtype()), residual.name,
             residual_scale.name, residual_zero_point.name);
    check_dtype_is(op, residual_scale, DType::f32, "");
    check_scalar(op, residual_scale);
    check_dtype_is(op, residual_zero_point, residual.t.dtype(), " (the dtype of the residual)");
    check_scalar(op, residual_zero_point);
  } else {
    PD_CHECK(!residual_scale.t.defined() && !residual_zero_point.t.defined(), ErrorCode::kInvalidArgument,
             "{}: '{}' and '{}' belong to a u8 or i8 residual, but the residual is {}", op, residual_scale.name,
             residual_zero_point.name, residual.t.defined() ? dtype_name(residual.t.dtype()) : "absent");
  }
  if (residual.t.defined() && !int8_residual) {
    PD_CHECK(out_dtype == DType::f32, ErrorCode::kInvalidArgument,
             "{}: the f32 argument '{}' is added to the f32 result, so out_dtype must be f32 (or the residual u8 / i8), "
             "but received {}", op, residual.name, dtype_name(out_dtype));
    check_dtype_is(op, residual, DType::f32, " or u8 / i8 with 'residual_scale'");
  }
  const bool nhwc_x = channels_last && !quantize_x;
  PD_CHECK(x.t.dim() == 4, ErrorCode::kShape, "{}: argument '{}' must be 4-D {}, but received shape {}", op, x.name,
           nhwc_x ? "[N, H, W, C]" : "[N, C, H, W]", shape_str(x.t.shape()));
  const Shape& xs = x.t.shape();
  const Shape nchw = nhwc_x ? Shape{xs[0], xs[3], xs[1], xs[2]} : xs;
  Shape out = conv2d_nchw(op, x.name, nchw, weight, bias, stride, padding, dilation, groups);
  if (channels_last) out = {out[0], out[2], out[3], out[1]};
  if (residual.t.defined())
    PD_CHECK(residual.t.shape() == out, ErrorCode::kShape,
             "{}: argument '{}' must have the convolution's output shape {}, but received {}", op, residual.name,
             shape_str(out), shape_str(residual.t.shape()));
  return out;
}

namespace {

// pool2d's rule on an [N, H, W, C] shape.
Shape pool2d_nhwc_shape(const char* op, const char* x_name, const Shape& xs, const std::vector<int64_t>& kernel_size,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode, bool pool_prefix) {
  PD_CHECK(xs.size() == 4, ErrorCode::kShape,
           "{}: argument '{}' must be 4-D [N, H, W, C] (or 5-D channel blocks [N, G, H, W, L]), but received shape {}", op, x_name,
           shape_str(xs));
  const Shape o = pool2d_shape(op, x_name, {xs[0], xs[3], xs[1], xs[2]}, kernel_size, stride, padding, ceil_mode, pool_prefix);
  return {o[0], o[2], o[3], o[1]};
}

}  // namespace

// max_pool2d_nhwc (the int8 regions' pool, and f32 channel blocks): pool2d's rule with the channels last,
// on [N, H, W, C] or on blocks [N, G, H, W, L].
Shape pool2d_nhwc(const char* op, In x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, bool ceil_mode) {
  const Shape& xs = x.t.shape();
  if (xs.size() == 5) {
    const Shape o = pool2d_nhwc_shape(op, x.name, {xs[0], xs[2], xs[3], xs[4]}, kernel_size, stride, padding, ceil_mode, false);
    return {xs[0], xs[1], o[1], o[2], o[3]};
  }
  return pool2d_nhwc_shape(op, x.name, xs, kernel_size, stride, padding, ceil_mode, /*pool_prefix=*/false);
}

Shape quantized_conv2d_pool2d(const char* op, In x, In x_scale, In x_zero_point, In weight, In weight_scale, In bias,
                              In out_scale, In out_zero_point, const std::vector<int64_t>& stride,
                              const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                              DType out_dtype, const std::vector<int64_t>& pool_kernel_size,
                              const std::vector<int64_t>& pool_stride, const std::vector<int64_t>& pool_padding,
                              bool pool_ceil_mode, bool quantize_x) {
  const Tensor none;
  const Shape conv = quantized_conv2d(op, x, x_scale, x_zero_point, weight, weight_scale, bias, In{"residual", none},
                                      In{"residual_scale", none}, In{"residual_zero_point", none}, out_scale, out_zero_point,
                                      stride, padding, dilation, groups, /*channels_last=*/true, out_dtype, quantize_x);
  return pool2d_nhwc_shape(op, "convolution output", conv, pool_kernel_size, pool_stride, pool_padding, pool_ceil_mode,
                           /*pool_prefix=*/true);
}

Shape quantized_linear(const char* op, In x, In x_scale, In x_zero_point, In weight, In weight_scale, In bias, In out_scale,
                       In out_zero_point, DType out_dtype) {
  check_int8_operands(op, x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale, out_zero_point, out_dtype);
  return linear(op, x, weight, bias);
}

Shape weight_only_linear(const char* op, In x, In weight, In weight_scale, In bias) {
  check_dtype_is(op, x, DType::f32, "");
  check_int8_weight(op, weight, weight_scale, bias);
  return linear(op, x, weight, bias);
}

}  // namespace pd::infer
