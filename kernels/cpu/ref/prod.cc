// prod over a list of axes, and its gradient: each element's share is the product of the other
// elements of its group (prefix and suffix products), which stays right when the group holds zeros.
#include <type_traits>
#include <vector>

#include "cpu/common/reduce.h"
#include "cpu/common/wrapping.h"
#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void prod(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  const cpu::ReducePlan p = cpu::make_reduce_plan(x.shape(), axis, "prod");
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  for (int64_t o = 0; o < p.out_numel; ++o) {
    cpu::WideAcc<T> acc = 1;  // an empty group's product is 1
    p.for_each_in_group(o, [&](int64_t i) { acc *= static_cast<cpu::WideAcc<T>>(xd[i]); });
    od[o] = static_cast<T>(acc);
  }
}

// dx[i] = grad[group of i] * product of the group's other elements.
template <typename T>
void prod_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, const std::vector<int64_t>& axis, bool keepdim,
               Tensor& dx) {
  const cpu::ReducePlan p = cpu::make_reduce_plan(x.shape(), axis, "prod_grad");
  const T* xd = x.data<T>();
  const T* gd = grad.data<T>();
  T* dd = dx.data<T>();
  std::vector<int64_t> members;
  std::vector<double> prefix;
  for (int64_t o = 0; o < p.out_numel; ++o) {
    members.clear();
    p.for_each_in_group(o, [&](int64_t i) { members.push_back(i); });
    const size_t m = members.size();
    prefix.assign(m + 1, 1.0);  // prefix[k] = product of the first k members
    for (size_t k = 0; k < m; ++k) prefix[k + 1] = prefix[k] * static_cast<double>(xd[members[k]]);
    double suffix = 1.0;  // product of the members after k
    const double g = static_cast<double>(gd[o]);
    for (size_t k = m; k-- > 0;) {
      dd[members[k]] = static_cast<T>(g * prefix[k] * suffix);
      suffix *= static_cast<double>(xd[members[k]]);
    }
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(prod, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(prod_grad, reference, float, double)
