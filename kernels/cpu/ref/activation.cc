// Activations and their fused backward kernels.
#include <cmath>
#include <type_traits>

#include "cpu/common/elementwise.h"
#include "elementwise_ops.h"
#include "kernels.h"

namespace pd::kernels::reference {

using cpu::binary_map;
using cpu::unary_map;


template <typename T>
void tanh(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return std::tanh(v); });
}

template <typename T>
void sigmoid(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return ::pd::scalar::sigmoid(v); });
}

template <typename T>
void relu(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return ::pd::scalar::relu(v); });
}

template <typename T>
void gelu(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return ::pd::scalar::gelu(v); });
}

template <typename T>
void silu(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return ::pd::scalar::silu(v); });
}

template <typename T>
void leaky_relu(const KernelContext& ctx, const Tensor& x, double alpha, Tensor& out) {
  const T a = static_cast<T>(alpha);
  unary_map<T>(x, out, [=](T v) { return ::pd::scalar::leaky_relu(v, a); });
}

template <typename T>
void softplus(const KernelContext& ctx, const Tensor& x, double beta, double threshold, Tensor& out) {
  const T b = static_cast<T>(beta), th = static_cast<T>(threshold);
  unary_map<T>(x, out, [=](T v) { return ::pd::scalar::softplus(v, b, th); });
}

template <typename T>
void clip(const KernelContext& ctx, const Tensor& x, double min, double max, Tensor& out) {
  // min <= max is checked by the op's shape rule (clip_range), for every backend.
  // Compare in double so that a fractional bound on an integer tensor still acts as a bound (integers
  // then clip to ceil(min) / floor(max)); NaN passes through.
  const bool integral = !std::is_floating_point_v<T>;
  const T lo = convert<T>(integral ? std::ceil(min) : min), hi = convert<T>(integral ? std::floor(max) : max);
  if constexpr (std::is_floating_point_v<T>) {
    // In T, which vectorises (in double, MobileNet's clips took 1.6 ns a value): no value of T lies
    // strictly between a bound and its nearest T, so the comparisons give the same outputs.
    unary_map<T>(x, out, [=](T v) { return v < lo ? lo : (v > hi ? hi : v); });
  } else {
    unary_map<T>(x, out, [=](T v) {
      const double d = static_cast<double>(v);
      return d < min ? lo : (d > max ? hi : v);
    });
  }
}

template <typename T>
void sigmoid_grad(const KernelContext& ctx, const Tensor& out, const Tensor& grad, Tensor& dx) {
  binary_map<T>(out, grad, dx, [](T o, T g) { return static_cast<T>(g * o * (T(1) - o)); });
}

template <typename T>
void tanh_grad(const KernelContext& ctx, const Tensor& out, const Tensor& grad, Tensor& dx) {
  binary_map<T>(out, grad, dx, [](T o, T g) { return static_cast<T>(g * (T(1) - o * o)); });
}

template <typename T>
void relu_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, Tensor& dx) {
  binary_map<T>(x, grad, dx, [](T v, T g) { return v > T(0) ? g : T(0); });
}

// gelu's derivative: Phi(x) + x * phi(x), with Phi the normal CDF and phi its density.
template <typename T>
void gelu_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, Tensor& dx) {
  binary_map<T>(x, grad, dx, [](T v, T g) {
    const T cdf = T(0.5) * (T(1) + std::erf(v * T(0.70710678118654752440)));
    const T pdf = T(0.39894228040143267794) * std::exp(T(-0.5) * v * v);
    return static_cast<T>(g * (cdf + v * pdf));
  });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(tanh, reference, float, double)
PD_INSTANTIATE_KERNELS(sigmoid, reference, float, double)
PD_INSTANTIATE_KERNELS(relu, reference, float, double)
PD_INSTANTIATE_KERNELS(gelu, reference, float, double)
PD_INSTANTIATE_KERNELS(silu, reference, float, double)
PD_INSTANTIATE_KERNELS(leaky_relu, reference, float, double)
PD_INSTANTIATE_KERNELS(softplus, reference, float, double)
PD_INSTANTIATE_KERNELS(clip, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(sigmoid_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(tanh_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(relu_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(gelu_grad, reference, float, double)
