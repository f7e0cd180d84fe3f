// Elementwise arithmetic with NumPy broadcasting: add sub mul div pow.
#include <cmath>

#include "cpu/common/elementwise.h"
#include "kernels.h"

namespace pd::kernels::reference {

using cpu::binary_map;

template <typename T>
void add(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) { return static_cast<T>(a + b); });
}

template <typename T>
void sub(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) { return static_cast<T>(a - b); });
}

template <typename T>
void mul(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) { return static_cast<T>(a * b); });
}

template <typename T>
void div(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) { return static_cast<T>(a / b); });
}

template <typename T>
void pow(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T>(x, y, out, [](T a, T b) { return static_cast<T>(std::pow(a, b)); });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(add, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(sub, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(mul, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(div, reference, float, double)
PD_INSTANTIATE_KERNELS(pow, reference, float, double)
