// Gradient clipping by global L2 norm, in ops, so that it runs where the gradients are.
#include <cmath>

#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/core/tensor_inl.h"
#include "pd/train/optimizer.h"

namespace pd::train {

double clip_grad_norm(const std::vector<NamedParam>& params, double max_norm) {
  PD_CHECK(max_norm > 0 && std::isfinite(max_norm), ErrorCode::kInvalidArgument,
           "clip_grad_norm: max_norm must be finite and > 0, but received {}", max_norm);
  NoGradGuard no_grad;
  // Summed where the gradients are and read back once (on a GPU, one wait per step, not one per
  // parameter).
  Tensor total;
  for (const NamedParam& p : params) {
    Tensor g = p.value.grad();
    if (!g.defined()) continue;
    // Squares summed in f64, whatever the gradient's dtype: f32 sums of many squares lose digits.
    const Tensor g64 = g.dtype() == DType::f64 ? g : ops::cast(g, DType::f64);
    const Tensor squares = ops::sum(ops::mul(g64, g64));
    total = total.defined() ? ops::add(total, squares) : squares;
  }
  const double norm = total.defined() ? std::sqrt(total.item<double>()) : 0.0;
  // A non-finite norm is returned unscaled: scaling by 0 would turn inf into nan and hide the cause.
  if (!(norm > max_norm) || !std::isfinite(norm)) return norm;
  for (const NamedParam& p : params) {
    Tensor g = p.value.grad();
    if (!g.defined()) continue;
    const Tensor scale = Tensor::full_scalar(max_norm / norm, DType::f64, g.place());
    // A fresh tensor, not an in-place scale: an accumulated grad can be a broadcast view or shared with
    // another leaf, and scaling such storage in place would scale it twice or change unrelated tensors.
    p.value.set_grad(g.dtype() == DType::f64 ? ops::mul(g, scale) : ops::cast(ops::mul(ops::cast(g, DType::f64), scale), g.dtype()));
  }
  return norm;
}

}  // namespace pd::train
