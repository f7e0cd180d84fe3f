// sgd_step, momentum_step, adam_step: one pass over the parameter, updating it and its optimizer state in
// place (each *_out is its input). The loops are the update rules written out once per element, so the
// compiler vectorises them; no temporaries are allocated.
#include <cmath>

#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void sgd_step(const KernelContext& ctx, const Tensor& param, const Tensor& grad, double lr, double weight_decay,
              Tensor& param_out) {
  T* p = param_out.data<T>();
  const T* g = grad.data<T>();
  const T l = static_cast<T>(lr), wd = static_cast<T>(weight_decay);
  for (int64_t i = 0, n = param.numel(); i < n; ++i) p[i] -= l * (g[i] + wd * p[i]);
}

template <typename T>
void momentum_step(const KernelContext& ctx, const Tensor& param, const Tensor& grad, const Tensor& velocity, double lr,
                   double momentum, bool nesterov, double weight_decay, Tensor& param_out, Tensor& velocity_out) {
  T* p = param_out.data<T>();
  T* m = velocity_out.data<T>();
  const T* g = grad.data<T>();
  const T l = static_cast<T>(lr), wd = static_cast<T>(weight_decay), mu = static_cast<T>(momentum);
  for (int64_t i = 0, n = param.numel(); i < n; ++i) {
    const T gi = g[i] + wd * p[i];
    m[i] = mu * m[i] + gi;
    p[i] -= l * (nesterov ? gi + mu * m[i] : m[i]);
  }
}

template <typename T>
void adam_step(const KernelContext& ctx, const Tensor& param, const Tensor& grad, const Tensor& m_in, const Tensor& v_in,
               double lr, int64_t step, double beta1, double beta2, double eps, double weight_decay, bool decoupled,
               Tensor& param_out, Tensor& m_out, Tensor& v_out) {
  T* p = param_out.data<T>();
  T* m = m_out.data<T>();
  T* v = v_out.data<T>();
  const T* g = grad.data<T>();
  const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2), e = static_cast<T>(eps), wd = static_cast<T>(weight_decay);
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const T step_size = static_cast<T>(lr / bc1), bc2_sqrt = static_cast<T>(std::sqrt(bc2));
  const T decay = static_cast<T>(1.0 - lr * weight_decay);
  for (int64_t i = 0, n = param.numel(); i < n; ++i) {
    T gi = g[i];
    if (decoupled) p[i] *= decay;
    else gi += wd * p[i];
    m[i] = b1 * m[i] + (T(1) - b1) * gi;
    v[i] = b2 * v[i] + (T(1) - b2) * gi * gi;
    p[i] -= step_size * m[i] / (std::sqrt(v[i]) / bc2_sqrt + e);
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(sgd_step, reference, float, double)
PD_INSTANTIATE_KERNELS(momentum_step, reference, float, double)
PD_INSTANTIATE_KERNELS(adam_step, reference, float, double)
