// hardswish: its ops.yaml formula (pd::scalar::hardswish, generated) over the tensor. Being an
// `activation: true` op, fused convs and linears, fused_elementwise and model YAML layers take it too.
#include "cpu/common/elementwise.h"
#include "elementwise_ops.h"
#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void hardswish(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  cpu::unary_map<T>(x, out, [](T v) { return ::pd::scalar::hardswish(v); });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(hardswish, reference, float, double)
