// softsign(x) = x / (1 + |x|): the worked example of docs/adding-an-op.md.
#include <cmath>

#include "cpu/common/elementwise.h"
#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void softsign(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  cpu::unary_map<T>(x, out, [](T v) { return v / (T(1) + std::abs(v)); });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(softsign, reference, float, double)
