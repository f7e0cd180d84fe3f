// Shape rules of the fused ops that add a skip connection: fused_linear and fused_conv2d are their base
// op's rule plus a residual of exactly the output's shape.
#include "pd/ops/shape_rules.h"

#include "pd/core/error.h"

namespace pd::infer {
namespace {

// The skip connection a fused op adds to its output: exactly the output's shape, no broadcasting.
void check_residual(const char* op, In residual, const Shape& out) {
  if (residual.t.defined())
    PD_CHECK(residual.t.shape() == out, ErrorCode::kShape, "{}: argument '{}' must have the output's shape {}, but received {}",
             op, residual.name, shape_str(out), shape_str(residual.t.shape()));
}

}  // namespace

Shape fused_linear(const char* op, In x, In weight, In bias, In residual) {
  Shape out = linear(op, x, weight, bias);
  check_residual(op, residual, out);
  return out;
}

Shape fused_conv2d(const char* op, In x, In weight, In bias, In residual, const std::vector<int64_t>& stride,
                   const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups) {
  Shape out = conv2d(op, x, weight, bias, stride, padding, dilation, groups);
  check_residual(op, residual, out);
  return out;
}

}  // namespace pd::infer
