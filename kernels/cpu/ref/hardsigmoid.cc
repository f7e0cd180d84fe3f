// hardsigmoid: its ops.yaml formula (pd::scalar::hardsigmoid, generated) over the tensor.
#include "cpu/common/elementwise.h"
#include "elementwise_ops.h"
#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void hardsigmoid(const KernelContext& ctx, const Tensor& x, double alpha, double beta, Tensor& out) {
  const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
  cpu::unary_map<T>(x, out, [=](T v) { return ::pd::scalar::hardsigmoid(v, a, b); });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(hardsigmoid, reference, float, double)
