// Shape rules of the losses: cross_entropy, mse_loss, binary_cross_entropy_with_logits, nll_loss and
// their gradients. reduction "none" keeps the per-element shape; mean and sum give 0-D.
#include <fmt/ranges.h>

#include "pd/ops/shape_rules.h"

namespace pd::infer {
namespace {

void check_reduction(const char* op, const std::string& reduction) {
  PD_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", ErrorCode::kInvalidArgument,
           "{}: argument 'reduction' must be mean, sum or none, but received '{}'", op, reduction);
}

}  // namespace

Shape pointwise_loss(const char* op, In x, In y, const std::string& reduction) {
  check_reduction(op, reduction);
  same_shapes(op, x, y);
  return reduction == "none" ? x.t.shape() : Shape{};
}

Shape bce_with_logits(const char* op, In x, In y, In pos_weight, const std::string& reduction) {
  Shape out = pointwise_loss(op, x, y, reduction);
  if (pos_weight.t.defined()) {
    // pos_weight broadcasts to x (one weight per class along the last axis, typically).
    const Shape& ps = pos_weight.t.shape();
    const Shape& xs = x.t.shape();
    bool ok = ps.size() <= xs.size();
    for (size_t i = 0; ok && i < ps.size(); ++i) ok = ps[i] == 1 || ps[i] == xs[xs.size() - ps.size() + i];
    PD_CHECK(ok, ErrorCode::kShape, "{}: argument '{}' of shape {} must broadcast to '{}' {}", op, pos_weight.name,
             shape_str(ps), x.name, shape_str(xs));
  }
  return out;
}

Shape bce_with_logits_grad(const char* op, In x, In y, In pos_weight, In grad, const std::string& reduction) {
  const Shape expect = bce_with_logits(op, x, y, pos_weight, reduction);
  PD_CHECK(grad.t.shape() == expect, ErrorCode::kShape, "{}: argument '{}' must have shape {}, but received {}", op, grad.name,
           shape_str(expect), shape_str(grad.t.shape()));
  return x.t.shape();
}

Shape optional_same_as(const char*, In t) { return t.t.defined() ? t.t.shape() : Shape{0}; }

Shape nll_loss(const char* op, In x, In label, const std::string& reduction) {
  check_reduction(op, reduction);
  PD_CHECK(x.t.dim() >= 1, ErrorCode::kShape, "{}: argument '{}' must be [C], [N, C] or [N, C, d...], but received a 0-D tensor",
           op, x.name);
  // Classes are axis 1 of [N, C, d...], axis 0 of a single [C] sample.
  Shape expect = x.t.shape();
  expect.erase(expect.begin() + (x.t.dim() == 1 ? 0 : 1));
  PD_CHECK(label.t.shape() == expect, ErrorCode::kShape,
           "{}: argument '{}' must have shape {} ('{}' {} without the class axis), but received {}", op, label.name,
           shape_str(expect), x.name, shape_str(x.t.shape()), shape_str(label.t.shape()));
  return reduction == "none" ? expect : Shape{};
}

Shape nll_loss_grad(const char* op, In x, In label, In grad, const std::string& reduction) {
  const Shape expect = nll_loss(op, x, label, reduction);
  PD_CHECK(grad.t.shape() == expect, ErrorCode::kShape, "{}: argument '{}' must have shape {}, but received {}", op, grad.name,
           shape_str(expect), shape_str(grad.t.shape()));
  return x.t.shape();
}

Shape loss(const char* op, In logits, In label, int64_t axis, const std::string& reduction) {
  PD_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", ErrorCode::kInvalidArgument,
           "{}: argument 'reduction' must be mean, sum or none, but received '{}'", op, reduction);
  PD_CHECK(logits.t.dim() >= 1, ErrorCode::kShape, "{}: argument '{}' must be at least 1-D, but received a 0-D tensor", op,
           logits.name);
  int64_t a = normalize_axis(axis, logits.t.dim(), op);
  Shape expect = logits.t.shape();
  expect.erase(expect.begin() + a);
  PD_CHECK(label.t.shape() == expect, ErrorCode::kShape,
           "{}: argument '{}' must have shape {} ('{}' {} without the class axis {}), but received {}", op, label.name,
           shape_str(expect), logits.name, shape_str(logits.t.shape()), a, shape_str(label.t.shape()));
  return reduction == "none" ? expect : Shape{};
}

Shape loss_grad(const char* op, In logits, In label, In grad, int64_t axis, const std::string& reduction) {
  Shape expect = loss(op, logits, label, axis, reduction);
  PD_CHECK(grad.t.shape() == expect, ErrorCode::kShape, "{}: argument '{}' must have shape {}, but received {}", op, grad.name,
           shape_str(expect), shape_str(grad.t.shape()));
  return logits.t.shape();
}

}  // namespace pd::infer
