// gelu_tanh: its ops.yaml formula (pd::scalar::gelu_tanh, generated) over the tensor; the oneDNN backend
// runs eltwise_gelu_tanh. Being an `activation: true` op, fused linears and convs apply it too.
#include "cpu/common/elementwise.h"
#include "elementwise_ops.h"
#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void gelu_tanh(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  cpu::unary_map<T>(x, out, [](T v) { return ::pd::scalar::gelu_tanh(v); });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(gelu_tanh, reference, float, double)
