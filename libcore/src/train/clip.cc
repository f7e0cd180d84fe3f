// Gradient clipping by global L2 norm.
#include <cmath>

#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/core/tensor_inl.h"
#include "pd/train/optimizer.h"

namespace pd::train {
namespace {

template <typename T>
double sum_squares(const Tensor& g) {
  const T* d = g.data<T>();
  double s = 0;
  for (int64_t i = 0, n = g.numel(); i < n; ++i) s += static_cast<double>(d[i]) * static_cast<double>(d[i]);
  return s;
}

}  // namespace

double clip_grad_norm(const std::vector<NamedParam>& params, double max_norm) {
  PD_CHECK(max_norm > 0 && std::isfinite(max_norm), ErrorCode::kInvalidArgument,
           "clip_grad_norm: max_norm must be finite and > 0, but received {}", max_norm);
  NoGradGuard no_grad;
  double total = 0;
  for (const NamedParam& p : params) {
    Tensor g = p.value.grad();
    if (!g.defined()) continue;
    PD_CHECK(g.place().is_cpu(), ErrorCode::kInvalidArgument,
             "clip_grad_norm: gradient of parameter '{}' is on {}, expected cpu", p.name, g.place().str());
    g = g.contiguous();
    if (g.dtype() == DType::f32) total += sum_squares<float>(g);
    else if (g.dtype() == DType::f64) total += sum_squares<double>(g);
    else total += sum_squares<double>(ops::cast(g, DType::f64).contiguous());
  }
  const double norm = std::sqrt(total);
  // A non-finite norm is returned unscaled: scaling by 0 would turn inf into nan and hide the cause.
  if (!(norm > max_norm) || !std::isfinite(norm)) return norm;
  const double scale = max_norm / norm;
  for (const NamedParam& p : params) {
    Tensor g = p.value.grad();
    if (!g.defined()) continue;
    // Write into a fresh copy: an accumulated grad can be a broadcast view or shared with another leaf,
    // and scaling such storage in place would scale it twice or change unrelated tensors.
    Tensor c = g.clone();
    if (c.dtype() == DType::f32) {
      float* d = c.data<float>();
      for (int64_t i = 0, n = c.numel(); i < n; ++i) d[i] = static_cast<float>(d[i] * scale);
    } else if (c.dtype() == DType::f64) {
      double* d = c.data<double>();
      for (int64_t i = 0, n = c.numel(); i < n; ++i) d[i] *= scale;
    } else {
      c = ops::mul(c, Tensor::full_scalar(scale, c.dtype()));
    }
    p.value.set_grad(c);
  }
  return norm;
}

}  // namespace pd::train
