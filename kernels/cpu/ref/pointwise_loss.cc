// Losses of elementwise pairs: mse_loss and binary_cross_entropy_with_logits (with its gradient).
// mean divides by the number of elements (0/0 = NaN for empty inputs, as PyTorch).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/common/elementwise.h"
#include "cpu/common/loss_reduction.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

using cpu::Reduction;

// Stores per-element losses (none) or their sum / mean into out.
template <typename T, typename F>
void reduce_losses(int64_t n, Reduction red, Tensor& out, F loss_at) {
  T* od = out.data<T>();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double l = loss_at(i);
    if (red == Reduction::kNone) od[i] = static_cast<T>(l);
    total += l;
  }
  if (red == Reduction::kSum) od[0] = static_cast<T>(total);
  if (red == Reduction::kMean) od[0] = static_cast<T>(total / static_cast<double>(n));
}

// softplus(-x) = log(1 + e^-x), without overflow for either sign.
double softplus_neg(double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(-x, 0.0); }

// pos_weight's entry for each element of x (1 without pos_weight; it broadcasts to x).
std::vector<int64_t> weight_index(const Tensor& x, const Tensor& pos_weight) {
  std::vector<int64_t> w(static_cast<size_t>(x.numel()), 0);
  if (pos_weight.defined())
    cpu::broadcast_for_each<1>({&pos_weight.shape()}, x.shape(), [&](int64_t o, int64_t j) { w[o] = j; });
  return w;
}

}  // namespace

template <typename T>
void mse_loss(const KernelContext& ctx, const Tensor& x, const Tensor& y, const std::string& reduction, Tensor& out) {
  const T* xd = x.data<T>();
  const T* yd = y.data<T>();
  reduce_losses<T>(x.numel(), cpu::parse_reduction(reduction, "mse_loss"), out, [&](int64_t i) {
    const double d = static_cast<double>(xd[i]) - static_cast<double>(yd[i]);
    return d * d;
  });
}

// l = (1 - y) x + (1 + (pos_weight - 1) y) softplus(-x); without pos_weight max(x, 0) - x y + log(1 + e^-|x|).
template <typename T>
void binary_cross_entropy_with_logits(const KernelContext& ctx, const Tensor& x, const Tensor& y, const Tensor& pos_weight,
                                      const std::string& reduction, Tensor& out) {
  const T* xd = x.data<T>();
  const T* yd = y.data<T>();
  const T* pwd = pos_weight.defined() ? pos_weight.data<T>() : nullptr;
  const std::vector<int64_t> w = weight_index(x, pos_weight);
  reduce_losses<T>(x.numel(), cpu::parse_reduction(reduction, "binary_cross_entropy_with_logits"), out, [&](int64_t i) {
    const double xv = xd[i], yv = yd[i], pw = pwd ? static_cast<double>(pwd[w[i]]) : 1.0;
    return (1 - yv) * xv + (1 + (pw - 1) * yv) * softplus_neg(xv);
  });
}

// d/dx = (1 - y) - (1 + (pw - 1) y) sigmoid(-x); d/dy = (pw - 1) softplus(-x) - x; d/dpw = y softplus(-x),
// summed over the elements each weight covers; all times the incoming gradient (/ N for mean).
template <typename T>
void bce_with_logits_grad(const KernelContext& ctx, const Tensor& x, const Tensor& y, const Tensor& grad,
                          const Tensor& pos_weight, const std::string& reduction, Tensor& dx, Tensor& dy, Tensor& dpos_weight) {
  const Reduction red = cpu::parse_reduction(reduction, "bce_with_logits_grad");
  const int64_t n = x.numel();
  const T* xd = x.data<T>();
  const T* yd = y.data<T>();
  const T* gd = grad.data<T>();
  const T* pwd = pos_weight.defined() ? pos_weight.data<T>() : nullptr;
  const std::vector<int64_t> w = weight_index(x, pos_weight);
  const double scale = red == Reduction::kMean ? 1.0 / static_cast<double>(n) : 1.0;
  std::vector<double> dpw(static_cast<size_t>(pwd ? pos_weight.numel() : 0), 0.0);
  T* dxd = dx.data<T>();
  T* dyd = dy.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    const double xv = xd[i], yv = yd[i], pw = pwd ? static_cast<double>(pwd[w[i]]) : 1.0;
    const double g = (red == Reduction::kNone ? static_cast<double>(gd[i]) : static_cast<double>(gd[0])) * scale;
    const double sp = softplus_neg(xv);
    const double sig_neg = xv >= 0 ? std::exp(-xv) / (1 + std::exp(-xv)) : 1 / (1 + std::exp(xv));
    dxd[i] = static_cast<T>(g * ((1 - yv) - (1 + (pw - 1) * yv) * sig_neg));
    dyd[i] = static_cast<T>(g * ((pw - 1) * sp - xv));
    if (pwd) dpw[w[i]] += g * yv * sp;
  }
  if (pwd) {
    T* dpd = dpos_weight.data<T>();
    for (size_t j = 0; j < dpw.size(); ++j) dpd[j] = static_cast<T>(dpw[j]);
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(mse_loss, reference, float, double)
PD_INSTANTIATE_KERNELS(binary_cross_entropy_with_logits, reference, float, double)
PD_INSTANTIATE_KERNELS(bce_with_logits_grad, reference, float, double)
