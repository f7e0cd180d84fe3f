// Creation kernels: full zeros ones arange. T is the output element type.
#include "kernels.h"

namespace pd::kernels::reference {

namespace {
template <typename T>
void fill(Tensor& out, T value) {
  T* od = out.data<T>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) od[i] = value;
}
}  // namespace

template <typename T>
void full(const KernelContext& ctx, const std::vector<int64_t>& shape, double value, DType dtype, Tensor& out) {
  fill<T>(out, convert<T>(value));
}

template <typename T>
void zeros(const KernelContext& ctx, const std::vector<int64_t>& shape, DType dtype, Tensor& out) {
  fill<T>(out, convert<T>(0.0));
}

template <typename T>
void ones(const KernelContext& ctx, const std::vector<int64_t>& shape, DType dtype, Tensor& out) {
  fill<T>(out, convert<T>(1.0));
}

template <typename T>
void arange(const KernelContext& ctx, double start, double end, double step, DType dtype, Tensor& out) {
  PD_CHECK(step != 0.0, ErrorCode::kInvalidArgument, "arange: argument 'step' must be nonzero, but received {}",
           step);
  // start + i * step rather than repeated addition: no accumulated rounding error.
  T* od = out.data<T>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) od[i] = convert<T>(start + static_cast<double>(i) * step);
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(full, reference, float, double, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(zeros, reference, float, double, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(ones, reference, float, double, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(arange, reference, float, double, int32_t, int64_t)
