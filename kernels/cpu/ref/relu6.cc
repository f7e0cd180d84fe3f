#include "cpu/common/elementwise.h"
#include "elementwise_ops.h"
#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void relu6(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  cpu::unary_map<T>(x, out, [](T v) { return ::pd::scalar::relu6(v); });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(relu6, reference, float, double)
