// sum_to: sums x down to a shape that broadcasts to x (the adjoint of expand). The summed axes are
// x's extra leading dims and the dims where the target has extent 1; the kept dims stay in order, so
// this is a plain reduction over those axes.
#include <type_traits>
#include <vector>

#include "cpu/common/reduce.h"
#include "cpu/common/wrapping.h"
#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void sum_to(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& shape, Tensor& out) {
  const Shape& xs = x.shape();
  const Shape& target = out.shape();
  const int64_t nd = x.dim(), lead = nd - out.dim();
  PD_CHECK(lead >= 0, ErrorCode::kShape, "sum_to: argument 'shape' {} must broadcast to x's shape {}, but has more dims",
           shape_str(target), shape_str(xs));
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < nd; ++d) {
    if (d < lead) {
      axes.push_back(d);
      continue;
    }
    const int64_t t = target[d - lead];
    PD_CHECK(t == xs[d] || t == 1, ErrorCode::kShape,
             "sum_to: argument 'shape' {} must broadcast to x's shape {}, but dim {} has extent {}", shape_str(target),
             shape_str(xs), d - lead, t);
    if (t != xs[d]) axes.push_back(d);
  }
  T* od = out.data<T>();
  if (axes.empty()) {  // nothing to sum (an empty list would mean "all axes" to the plan)
    const T* xd = x.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) od[i] = xd[i];
    return;
  }
  using Acc = cpu::WideAcc<T>;  // integers wrap
  const T* xd = x.data<T>();
  // The common case (bias gradients, broadcast adds) sums leading axes only: add whole rows into an
  // accumulator row, which streams through memory instead of striding down columns. Each output still
  // adds its inputs in the same order, so the result is the same as the general path.
  bool leading_only = true;
  for (size_t i = 0; i < axes.size(); ++i) leading_only &= axes[i] == static_cast<int64_t>(i);
  if (leading_only) {
    const int64_t n = out.numel(), rows = n == 0 ? 0 : x.numel() / n;
    std::vector<Acc> acc(static_cast<size_t>(n), Acc(0));
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = xd + r * n;
      for (int64_t j = 0; j < n; ++j) acc[j] += static_cast<Acc>(row[j]);
    }
    for (int64_t j = 0; j < n; ++j) od[j] = static_cast<T>(acc[j]);
    return;
  }
  const cpu::ReducePlan p = cpu::make_reduce_plan(xs, axes, "sum_to");
  for (int64_t o = 0; o < p.out_numel; ++o) {
    Acc acc = 0;
    p.for_each_in_group(o, [&](int64_t i) { acc += static_cast<Acc>(xd[i]); });
    od[o] = static_cast<T>(acc);
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(sum_to, reference, float, double, int32_t, int64_t)
