// sgd_step, momentum_step, adam_step: one pass over the parameter, updating it and its optimizer state
// in place (each *_out is its input), with the reference formulas (cpu/ref/optimizer.cc) in T.
#include <cmath>
#include <type_traits>

#include "cuda/cuda_common.cuh"

namespace pd::kernels::cuda {
namespace {

template <typename T>
__global__ void sgd_kernel(T* __restrict__ p, const T* __restrict__ g, T lr, T wd, int64_t n) {
  PD_GRID_STRIDE(i, n) { p[i] -= lr * (g[i] + wd * p[i]); }
}

template <typename T>
__global__ void momentum_kernel(T* __restrict__ p, T* __restrict__ m, const T* __restrict__ g, T lr, T mu, T wd,
                                bool nesterov, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    const T gi = g[i] + wd * p[i];
    const T mi = mu * m[i] + gi;
    m[i] = mi;
    p[i] -= lr * (nesterov ? gi + mu * mi : mi);
  }
}

struct AdamParams {
  double b1, b2, eps, wd, step_size, bc2_sqrt, decay;
  bool decoupled;
};

template <typename T>
__device__ __forceinline__ T sqrt_of(T v) {
  if constexpr (std::is_same_v<T, float>) return sqrtf(v);
  else return ::sqrt(v);
}

template <typename T>
__global__ void adam_kernel(T* __restrict__ p, T* __restrict__ m, T* __restrict__ v, const T* __restrict__ g,
                            AdamParams a, int64_t n) {
  const T b1 = static_cast<T>(a.b1), b2 = static_cast<T>(a.b2), e = static_cast<T>(a.eps), wd = static_cast<T>(a.wd);
  const T step_size = static_cast<T>(a.step_size), bc2_sqrt = static_cast<T>(a.bc2_sqrt), decay = static_cast<T>(a.decay);
  PD_GRID_STRIDE(i, n) {
    T gi = g[i];
    T pi = p[i];
    if (a.decoupled) pi *= decay;
    else gi += wd * pi;
    const T mi = b1 * m[i] + (T(1) - b1) * gi;
    const T vi = b2 * v[i] + (T(1) - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - step_size * mi / (sqrt_of(vi) / bc2_sqrt + e);
  }
}

}  // namespace

template <typename T>
void sgd_step(const KernelContext& ctx, const Tensor& param, const Tensor& grad, double lr, double weight_decay,
              Tensor& param_out) {
  const int64_t n = param.numel();
  if (n == 0) return;
  sgd_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(param_out), dptr<T>(grad), static_cast<T>(lr),
                                                                 static_cast<T>(weight_decay), n);
  PD_CUDA_CHECK_LAUNCH("sgd_step");
}

template <typename T>
void momentum_step(const KernelContext& ctx, const Tensor& param, const Tensor& grad, const Tensor& velocity, double lr,
                   double momentum, bool nesterov, double weight_decay, Tensor& param_out, Tensor& velocity_out) {
  const int64_t n = param.numel();
  if (n == 0) return;
  momentum_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
      dptr<T>(param_out), dptr<T>(velocity_out), dptr<T>(grad), static_cast<T>(lr), static_cast<T>(momentum),
      static_cast<T>(weight_decay), nesterov, n);
  PD_CUDA_CHECK_LAUNCH("momentum_step");
}

template <typename T>
void adam_step(const KernelContext& ctx, const Tensor& param, const Tensor& grad, const Tensor& m_in, const Tensor& v_in,
               double lr, int64_t step, double beta1, double beta2, double eps, double weight_decay, bool decoupled,
               Tensor& param_out, Tensor& m_out, Tensor& v_out) {
  const int64_t n = param.numel();
  if (n == 0) return;
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  AdamParams a;
  a.b1 = beta1;
  a.b2 = beta2;
  a.eps = eps;
  a.wd = weight_decay;
  a.step_size = lr / bc1;
  a.bc2_sqrt = std::sqrt(bc2);
  a.decay = 1.0 - lr * weight_decay;
  a.decoupled = decoupled;
  adam_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(param_out), dptr<T>(m_out), dptr<T>(v_out),
                                                                 dptr<T>(grad), a, n);
  PD_CUDA_CHECK_LAUNCH("adam_step");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(sgd_step, cuda, float, double)
PD_INSTANTIATE_KERNELS(momentum_step, cuda, float, double)
PD_INSTANTIATE_KERNELS(adam_step, cuda, float, double)
