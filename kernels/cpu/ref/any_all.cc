// any and all over a list of axes: an element counts as true when it is nonzero (NaN is nonzero).
// An empty group gives false for any and true for all.
#include "cpu/common/reduce.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

template <typename T>
void logical_reduce(const Tensor& x, const std::vector<int64_t>& axis, Tensor& out, bool want_all, const char* op) {
  const cpu::ReducePlan p = cpu::make_reduce_plan(x.shape(), axis, op);
  const T* xd = x.data<T>();
  bool* od = out.data<bool>();
  for (int64_t o = 0; o < p.out_numel; ++o) {
    bool acc = want_all;
    p.for_each_in_group(o, [&](int64_t i) {
      const bool v = xd[i] != T(0);
      acc = want_all ? acc && v : acc || v;
    });
    od[o] = acc;
  }
}

}  // namespace

template <typename T>
void any(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  logical_reduce<T>(x, axis, out, false, "any");
}

template <typename T>
void all(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  logical_reduce<T>(x, axis, out, true, "all");
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(any, reference, float, double, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(all, reference, float, double, int32_t, int64_t, bool)
