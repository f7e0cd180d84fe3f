// sgd_step, momentum_step, adam_step: one pass over the parameter, updating it and its optimizer state
// in place (each *_out is its input), with the reference formulas (cpu/ref/optimizer.cc) in T (in f32
// for f16 / bf16 parameters and state: pure low-precision training, without f32 master weights).
#include <cmath>
#include <type_traits>

#include "cuda/cuda_common.cuh"

namespace pd::kernels::cuda {
namespace {

// D: the stored type; A: the arithmetic type (f32 for f16 / bf16, as the reference computes them in f32).
template <typename D, typename A>
__global__ void sgd_kernel(D* __restrict__ p, const D* __restrict__ g, A lr, A wd, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    const A pi = load_as<A>(p[i]);
    p[i] = store_as<D>(pi - lr * (load_as<A>(g[i]) + wd * pi));
  }
}

template <typename D, typename A>
__global__ void momentum_kernel(D* __restrict__ p, D* __restrict__ m, const D* __restrict__ g, A lr, A mu, A wd,
                                bool nesterov, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    const A pi = load_as<A>(p[i]);
    const A gi = load_as<A>(g[i]) + wd * pi;
    const A mi = mu * load_as<A>(m[i]) + gi;
    m[i] = store_as<D>(mi);
    p[i] = store_as<D>(pi - lr * (nesterov ? gi + mu * mi : mi));
  }
}

struct AdamParams {
  double b1, b2, eps, wd, step_size, bc2_sqrt, decay;
  bool decoupled;
};

template <typename A>
__device__ __forceinline__ A sqrt_of(A v) {
  if constexpr (std::is_same_v<A, float>) return sqrtf(v);
  else return ::sqrt(v);
}

template <typename D, typename A>
__global__ void adam_kernel(D* __restrict__ p, D* __restrict__ m, D* __restrict__ v, const D* __restrict__ g,
                            AdamParams a, int64_t n) {
  const A b1 = static_cast<A>(a.b1), b2 = static_cast<A>(a.b2), e = static_cast<A>(a.eps), wd = static_cast<A>(a.wd);
  const A step_size = static_cast<A>(a.step_size), bc2_sqrt = static_cast<A>(a.bc2_sqrt), decay = static_cast<A>(a.decay);
  PD_GRID_STRIDE(i, n) {
    A gi = load_as<A>(g[i]);
    A pi = load_as<A>(p[i]);
    if (a.decoupled) pi *= decay;
    else gi += wd * pi;
    const A mi = b1 * load_as<A>(m[i]) + (A(1) - b1) * gi;
    const A vi = b2 * load_as<A>(v[i]) + (A(1) - b2) * gi * gi;
    m[i] = store_as<D>(mi);
    v[i] = store_as<D>(vi);
    p[i] = store_as<D>(pi - step_size * mi / (sqrt_of(vi) / bc2_sqrt + e));
  }
}

}  // namespace

template <typename T>
void sgd_step(const KernelContext& ctx, const Tensor& param, const Tensor& grad, double lr, double weight_decay,
              Tensor& param_out) {
  const int64_t n = param.numel();
  if (n == 0) return;
  using A = acc_t<T>;
  sgd_kernel<dev_t<T>, A><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(param_out), dptr<T>(grad), static_cast<A>(lr),
                                                                           static_cast<A>(weight_decay), n);
  PD_CUDA_CHECK_LAUNCH("sgd_step");
}

template <typename T>
void momentum_step(const KernelContext& ctx, const Tensor& param, const Tensor& grad, const Tensor& velocity, double lr,
                   double momentum, bool nesterov, double weight_decay, Tensor& param_out, Tensor& velocity_out) {
  const int64_t n = param.numel();
  if (n == 0) return;
  using A = acc_t<T>;
  momentum_kernel<dev_t<T>, A><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
      dptr<T>(param_out), dptr<T>(velocity_out), dptr<T>(grad), static_cast<A>(lr), static_cast<A>(momentum),
      static_cast<A>(weight_decay), nesterov, n);
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
  adam_kernel<dev_t<T>, acc_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(param_out), dptr<T>(m_out),
                                                                                  dptr<T>(v_out), dptr<T>(grad), a, n);
  PD_CUDA_CHECK_LAUNCH("adam_step");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(sgd_step, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(momentum_step, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(adam_step, cuda, float, double, ::pd::float16, ::pd::bfloat16)
