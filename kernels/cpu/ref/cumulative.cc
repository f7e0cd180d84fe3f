// cumsum along one axis: inclusive or exclusive, forward or reversed.
#include <type_traits>

#include "cpu/common/along_axis.h"
#include "cpu/common/wrapping.h"
#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void cumsum(const KernelContext& ctx, const Tensor& x, int64_t axis, bool exclusive, bool reverse, Tensor& out) {
  // Floats accumulate in double, integers in 64 bits that wrap (stored back with the dtype's wrap-around).
  using Acc = cpu::WideAcc<T>;
  const cpu::AlongAxis g = cpu::along_axis(x.shape(), axis, "cumsum");
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i) {
      Acc acc = 0;
      for (int64_t step = 0; step < g.n; ++step) {
        const int64_t p = g.at(o, reverse ? g.n - 1 - step : step, i);
        const Acc v = static_cast<Acc>(xd[p]);
        if (!exclusive) acc += v;
        od[p] = static_cast<T>(acc);
        if (exclusive) acc += v;
      }
    }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(cumsum, reference, float, double, int32_t, int64_t)
