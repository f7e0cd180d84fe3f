// Shape and dtype rules of the quantization ops (quantize_linear, dequantize_linear): per tensor or per
// channel along an axis, with u8 / i8 on the quantized side.
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

}  // namespace pd::infer
