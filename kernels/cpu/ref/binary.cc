// Elementwise arithmetic with NumPy broadcasting: add sub mul div pow remainder maximum minimum.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>

#include "cpu/common/elementwise.h"
#include "cpu/common/wrapping.h"
#include "elementwise_ops.h"
#include "kernels.h"

namespace pd::kernels::reference {

using cpu::binary_map;
using cpu::wrapping;

template <typename T>
void add(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) { return wrapping(a, b, std::plus<>()); });
}

template <typename T>
void sub(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) { return wrapping(a, b, std::minus<>()); });
}

template <typename T>
void mul(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) { return wrapping(a, b, std::multiplies<>()); });
}

// Integers divide truncating toward zero, as C and ONNX's Div do (a network's shape arithmetic, which
// pd-convert folds at import: ShuffleNet's channels / groups); a zero divisor is an error, not a trap.
template <typename T>
void div(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  if constexpr (std::is_integral_v<T>) {
    // Checked before the loop: an exception cannot leave its vectorised (omp simd) body.
    const T* yd = y.data<T>();
    const int64_t zero = std::find(yd, yd + y.numel(), T(0)) - yd;
    PD_CHECK(zero == y.numel(), ErrorCode::kInvalidArgument, "div: integer division by zero (y {} is 0 at flat index {})",
             shape_str(y.shape()), zero);
    binary_map<T>(x, y, out, [](T a, T b) -> T {
      // x / -1 is -x, wrapping on the lowest value (x86's idiv traps on INT_MIN / -1).
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return wrapping(T(0), a, std::minus<>());
      return static_cast<T>(a / b);
    });
  } else {
    binary_map<T>(x, y, out, [](T a, T b) { return static_cast<T>(a / b); });
  }
}

// Its ops.yaml formula, as fused_elementwise computes it (squares and cubes as products).
template <typename T>
void pow(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) { return ::pd::scalar::pow(a, b); });
}

// Floored modulo (the result takes y's sign); x mod 0 is NaN for floats and 0 for integers, never a trap.
template <typename T>
void remainder(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) -> T {
    if constexpr (std::is_floating_point_v<T>) {
      if (b == T(0)) return std::numeric_limits<T>::quiet_NaN();
      const T r = std::fmod(a, b);
      return r != T(0) && ((r < T(0)) != (b < T(0))) ? r + b : r;
    } else {
      if (b == T(0)) return T(0);
      // x mod -1 is 0; computing it would trap on the lowest value (x86's idiv overflows on INT_MIN / -1).
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return T(0);
      const T r = static_cast<T>(a % b);
      return r != T(0) && ((r < T(0)) != (b < T(0))) ? static_cast<T>(r + b) : r;
    }
  });
}

// NaN propagates (the formulas in ops.yaml), as torch.maximum / torch.minimum.
template <typename T>
void maximum(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) { return ::pd::scalar::maximum(a, b); });
}

template <typename T>
void minimum(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) { return ::pd::scalar::minimum(a, b); });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(add, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(sub, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(mul, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(div, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(pow, reference, float, double)
PD_INSTANTIATE_KERNELS(remainder, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(maximum, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(minimum, reference, float, double, int32_t, int64_t)
