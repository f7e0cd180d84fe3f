// The scalar formulas of the floating-point elementwise ops, shared by their reference kernels and by
// fused_elementwise, so that a fused chain computes exactly what the ops it replaced computed.
#pragma once
#include <cmath>

namespace pd::kernels::cpu::scalar {

// Stable on both sides: never evaluates exp of a large positive number.
template <typename T>
inline T sigmoid(T v) {
  if (v >= T(0)) return T(1) / (T(1) + std::exp(-v));
  const T e = std::exp(v);
  return e / (T(1) + e);
}

// NaN propagates, as in PyTorch.
template <typename T>
inline T relu(T v) {
  return std::isnan(v) || v > T(0) ? v : T(0);
}

// Exact form 0.5 x (1 + erf(x / sqrt(2))).
template <typename T>
inline T gelu(T v) {
  const T inv_sqrt2 = static_cast<T>(0.70710678118654752440);
  return static_cast<T>(T(0.5) * v * (T(1) + std::erf(v * inv_sqrt2)));
}

template <typename T>
inline T silu(T v) {
  return static_cast<T>(v * sigmoid(v));
}

template <typename T>
inline T leaky_relu(T v, T alpha) {
  return v > T(0) ? v : static_cast<T>(alpha * v);
}

// Above the threshold the result equals x to working precision; log1p(exp) would overflow.
template <typename T>
inline T softplus(T v, T beta, T threshold) {
  return v * beta > threshold ? v : static_cast<T>(std::log1p(std::exp(beta * v)) / beta);
}

template <typename T>
inline T softsign(T v) {
  return static_cast<T>(v / (T(1) + std::fabs(v)));
}

template <typename T>
inline T rsqrt(T v) {
  return static_cast<T>(T(1) / std::sqrt(v));
}

// NaN stays NaN.
template <typename T>
inline T sign(T v) {
  if (std::isnan(v)) return v;
  return static_cast<T>((v > T(0)) - (v < T(0)));
}

// Floating-point clip with bounds already ordered; NaN passes through.
template <typename T>
inline T clip(T v, T lo, T hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

}  // namespace pd::kernels::cpu::scalar
