// Shape rules of the normalisations: batch_norm (channels on axis 1) and layer_norm (the axes from
// begin_norm_axis on), their statistics and gradients.
#include "pd/ops/shape_rules.h"

namespace pd::infer {

Shape channel(const char* op, In x, bool channels_last) {
  PD_CHECK(x.t.dim() >= 2, ErrorCode::kShape, "{}: argument '{}' must be at least 2-D ({}), but received {}", op, x.name,
           channels_last ? "[N, ..., C] with channels_last" : "[N, C, ...]", shape_str(x.t.shape()));
  return {channels_last ? x.t.shape().back() : x.t.shape()[1]};
}

Shape batch_norm(const char* op, In x, In scale, In bias, In running_mean, In running_var, bool channels_last) {
  Shape c = channel(op, x, channels_last);
  for (In p : {scale, bias, running_mean, running_var})
    PD_CHECK(p.t.shape() == c, ErrorCode::kShape, "{}: argument '{}' must have shape {} (the channels of '{}' {}), but received {}",
             op, p.name, shape_str(c), x.name, shape_str(x.t.shape()), shape_str(p.t.shape()));
  return x.t.shape();
}

namespace {
// scale's shape against x's channels.
void check_channels(const char* op, In x, In scale, bool channels_last) {
  const Shape c = channel(op, x, channels_last);
  PD_CHECK(scale.t.shape() == c, ErrorCode::kShape, "{}: argument '{}' must have shape {} (the channels of '{}' {}), but received {}",
           op, scale.name, shape_str(c), x.name, shape_str(x.t.shape()), shape_str(scale.t.shape()));
}
}  // namespace

Shape batch_norm_add(const char* op, In x, In residual, In scale, In bias, In running_mean, In running_var, bool channels_last) {
  same_shapes(op, x, residual);
  return batch_norm(op, x, scale, bias, running_mean, running_var, channels_last);
}

Shape batch_norm_add_relu_grad(const char* op, In x, In out, In grad, In scale, bool channels_last) {
  check_channels(op, x, scale, channels_last);
  return same_shapes(op, x, out, grad);
}

Shape batch_norm_grad(const char* op, In x, In grad, In scale, In bias, bool fuse_relu, bool channels_last) {
  check_channels(op, x, scale, channels_last);
  if (fuse_relu) {
    PD_CHECK(bias.t.defined(), ErrorCode::kInvalidArgument,
             "{}: with fuse_relu, argument '{}' is required (the relu mask is recomputed from it)", op, bias.name);
    PD_CHECK(bias.t.shape() == scale.t.shape(), ErrorCode::kShape, "{}: argument '{}' must have the shape of '{}' {}, but received {}",
             op, bias.name, scale.name, shape_str(scale.t.shape()), shape_str(bias.t.shape()));
  }
  return same_shapes(op, x, grad);
}

Shape layer_norm(const char* op, In x, In scale, In bias, int64_t begin_norm_axis) {
  int64_t b = normalize_axis(begin_norm_axis, x.t.dim(), op);
  Shape normalized(x.t.shape().begin() + b, x.t.shape().end());
  for (In p : {scale, bias})
    PD_CHECK(p.t.shape() == normalized, ErrorCode::kShape,
             "{}: argument '{}' must have shape {} (the axes of '{}' {} from begin_norm_axis {}), but received {}", op, p.name,
             shape_str(normalized), x.name, shape_str(x.t.shape()), begin_norm_axis, shape_str(p.t.shape()));
  return x.t.shape();
}

Shape norm_stats(const char* op, In x, int64_t begin_norm_axis) {
  int64_t b = normalize_axis(begin_norm_axis, x.t.dim(), op);
  return Shape(x.t.shape().begin(), x.t.shape().begin() + b);
}

}  // namespace pd::infer
