// amax_mask: the share of the max/min gradient each input element receives. Elements equal to their
// group's reduced value split it evenly (1 / ties); all others get 0.
#include "cpu/common/reduce.h"
#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void amax_mask(const KernelContext& ctx, const Tensor& x, const Tensor& out, const std::vector<int64_t>& axis, bool keepdim, Tensor& mask) {
  const cpu::ReducePlan p = cpu::make_reduce_plan(x.shape(), axis, "amax_mask");
  // `out` is the reduced tensor, with or without keepdim: only its element count is fixed.
  PD_CHECK(out.numel() == p.out_numel, ErrorCode::kShape,
           "amax_mask: argument 'out' must have {} elements (x {} reduced over the axes), but received shape {}",
           p.out_numel, shape_str(x.shape()), shape_str(out.shape()));
  const T* xd = x.data<T>();
  const T* od = out.data<T>();
  T* md = mask.data<T>();
  for (int64_t o = 0; o < p.out_numel; ++o) {
    const T target = od[o];
    int64_t ties = 0;
    p.for_each_in_group(o, [&](int64_t i) { ties += xd[i] == target ? 1 : 0; });
    // ties == 0 only when nothing matches (e.g. a NaN max); then every share is 0.
    const T share = ties > 0 ? static_cast<T>(T(1) / static_cast<T>(ties)) : T(0);
    p.for_each_in_group(o, [&](int64_t i) { md[i] = xd[i] == target ? share : T(0); });
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(amax_mask, reference, float, double, int32_t, int64_t)
