// sum_to: sums x down to a shape that broadcasts to x (the adjoint of expand). The summed axes are
// x's extra leading dims and the dims where the target has extent 1; the kept dims stay in order, so
// this is a plain reduction over those axes.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu/common/parallel.h"
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
  // accumulator row, which streams through memory instead of striding down columns. Fixed blocks of
  // rows go to the threads, each into its own partial row, and the partials are added in block order:
  // the result does not depend on the thread count.
  bool leading_only = true;
  for (size_t i = 0; i < axes.size(); ++i) leading_only &= axes[i] == static_cast<int64_t>(i);
  if (leading_only) {
    constexpr int64_t kRowBlock = 64;
    const int64_t n = out.numel(), rows = n == 0 ? 0 : x.numel() / n;
    const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
    std::vector<Acc> partial(static_cast<size_t>(blocks * n), Acc(0));
    cpu::parallel_for(blocks, kRowBlock * n, [&](int64_t b) {
      Acc* acc = partial.data() + b * n;
      for (int64_t r = b * kRowBlock; r < std::min(rows, (b + 1) * kRowBlock); ++r) {
        const T* row = xd + r * n;
        for (int64_t j = 0; j < n; ++j) acc[j] += static_cast<Acc>(row[j]);
      }
    });
    for (int64_t j = 0; j < n; ++j) {
      Acc total = blocks > 0 ? partial[static_cast<size_t>(j)] : Acc(0);
      for (int64_t b = 1; b < blocks; ++b) total += partial[static_cast<size_t>(b * n + j)];
      od[j] = static_cast<T>(total);
    }
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
