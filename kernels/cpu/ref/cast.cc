// cast: T is the input element type; the output type comes from out.dtype().
#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void cast(const KernelContext& ctx, const Tensor& x, DType dtype, Tensor& out) {
  const T* xd = x.data<T>();
  const int64_t n = x.numel();
  visit_dtype(out.dtype(), [&]<typename O>() {
    O* od = out.data<O>();
    for (int64_t i = 0; i < n; ++i) od[i] = convert<O>(xd[i]);
  });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(cast, reference, float, double, ::pd::float16, ::pd::bfloat16, int8_t, uint8_t, int32_t,
                       int64_t, bool)
