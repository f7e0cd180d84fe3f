// Elementwise math: neg exp log sqrt rsqrt abs sign erf floor ceil round.
#include <cmath>
#include <type_traits>

#include "cpu/common/elementwise.h"
#include "cpu/common/wrapping.h"
#include "elementwise_ops.h"
#include "kernels.h"

namespace pd::kernels::reference {

using cpu::unary_map;

template <typename T>
void neg(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return cpu::wrapping_neg(v); });  // -INT_MIN is INT_MIN, as in NumPy
}

template <typename T>
void exp(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return std::exp(v); });
}

template <typename T>
void log(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return std::log(v); });
}

template <typename T>
void sqrt(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return std::sqrt(v); });
}

template <typename T>
void rsqrt(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return ::pd::scalar::rsqrt(v); });
}

template <typename T>
void abs(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) {
    if constexpr (std::is_floating_point_v<T>) {
      return std::fabs(v);  // also clears the sign of -0.0
    } else {
      return v < T(0) ? cpu::wrapping_neg(v) : v;  // abs(INT_MIN) is INT_MIN, as in NumPy
    }
  });
}

template <typename T>
void sign(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return v;  // NaN stays NaN
    }
    return static_cast<T>((v > T(0)) - (v < T(0)));
  });
}

template <typename T>
void erf(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return std::erf(v); });
}

template <typename T>
void floor(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return std::floor(v); });
}

template <typename T>
void ceil(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return std::ceil(v); });
}

// Halves go to the even neighbour (the default rounding mode), as torch.round and numpy.round.
template <typename T>
void round(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  unary_map<T>(x, out, [](T v) { return std::nearbyint(v); });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(neg, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(exp, reference, float, double)
PD_INSTANTIATE_KERNELS(log, reference, float, double)
PD_INSTANTIATE_KERNELS(sqrt, reference, float, double)
PD_INSTANTIATE_KERNELS(rsqrt, reference, float, double)
PD_INSTANTIATE_KERNELS(abs, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(sign, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(erf, reference, float, double)
PD_INSTANTIATE_KERNELS(floor, reference, float, double)
PD_INSTANTIATE_KERNELS(ceil, reference, float, double)
PD_INSTANTIATE_KERNELS(round, reference, float, double)
