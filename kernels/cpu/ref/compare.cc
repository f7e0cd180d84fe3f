// Comparisons and logical ops (bool output, T = input dtype), where (T = dtype of x and y) and masked_fill, with broadcasting.
#include "cpu/common/elementwise.h"
#include "kernels.h"

namespace pd::kernels::reference {

using cpu::binary_map;

template <typename T>
void equal(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T, bool>(x, y, out, [](T a, T b) { return a == b; });
}

template <typename T>
void greater(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T, bool>(x, y, out, [](T a, T b) { return a > b; });
}

template <typename T>
void less(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T, bool>(x, y, out, [](T a, T b) { return a < b; });
}

template <typename T>
void greater_equal(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T, bool>(x, y, out, [](T a, T b) { return a >= b; });
}

template <typename T>
void less_equal(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T, bool>(x, y, out, [](T a, T b) { return a <= b; });
}

template <typename T>
void logical_and(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T, bool>(x, y, out, [](T a, T b) { return a && b; });
}

template <typename T>
void logical_or(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T, bool>(x, y, out, [](T a, T b) { return a || b; });
}

template <typename T>
void logical_xor(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  binary_map<T, bool>(x, y, out, [](T a, T b) { return a != b; });
}

template <typename T>
void where(const KernelContext& ctx, const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) {
  const bool* cd = cond.data<bool>();
  const T* xd = x.data<T>();
  const T* yd = y.data<T>();
  T* od = out.data<T>();
  cpu::broadcast_for_each<3>({&cond.shape(), &x.shape(), &y.shape()}, out.shape(),
                             [&](int64_t o, int64_t c, int64_t i, int64_t j) { od[o] = cd[c] ? xd[i] : yd[j]; });
}

template <typename T>
void masked_fill(const KernelContext& ctx, const Tensor& x, const Tensor& mask, double value, Tensor& out) {
  const T* xd = x.data<T>();
  const bool* md = mask.data<bool>();
  const T v = convert<T>(value);
  T* od = out.data<T>();
  cpu::broadcast_for_each<2>({&x.shape(), &mask.shape()}, out.shape(),
                             [&](int64_t o, int64_t i, int64_t m) { od[o] = md[m] ? v : xd[i]; });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(equal, reference, float, double, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(greater, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(less, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(greater_equal, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(less_equal, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(logical_and, reference, bool)
PD_INSTANTIATE_KERNELS(logical_or, reference, bool)
PD_INSTANTIATE_KERNELS(logical_xor, reference, bool)
PD_INSTANTIATE_KERNELS(where, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(masked_fill, reference, float, double, int32_t, int64_t)
