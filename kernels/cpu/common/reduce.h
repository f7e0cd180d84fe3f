// Reduction geometry for CPU kernels: groups the elements of a contiguous input by the output element
// they reduce into. The input is viewed as (kept dims, reduced dims); kept dims keep their order, so
// output element o (row-major over kept dims) is the same with or without keepdim.
//
//   ReducePlan p = make_reduce_plan(x.shape(), axis);
//   for (int64_t o = 0; o < p.out_numel; ++o)
//     p.for_each_in_group(o, [&](int64_t i) { acc += xd[i]; });
#pragma once
#include <cstdint>
#include <vector>

#include "pd/core/shape.h"

namespace pd::kernels::cpu {

struct ReducePlan {
  // Merged runs of adjacent dims (adjacent dims of a contiguous tensor always merge): extents and
  // input strides of the kept part and of the reduced part, outermost first.
  std::vector<int64_t> kept_shape, kept_strides, red_shape, red_strides;
  int64_t out_numel = 1;   // product of kept extents
  int64_t group_size = 1;  // product of reduced extents (0 when a reduced dim is empty)

  // Input offset of the first element reduced into output element `o`.
  int64_t group_base(int64_t o) const {
    int64_t base = 0;
    for (int64_t d = static_cast<int64_t>(kept_shape.size()) - 1; d >= 0; --d) {
      base += (o % kept_shape[d]) * kept_strides[d];
      o /= kept_shape[d];
    }
    return base;
  }

  // Calls f(input_index) for each element of group `o`, in row-major order of the reduced dims
  // (so for a single reduced axis the k-th call is position k along that axis).
  template <typename F>
  void for_each_in_group(int64_t o, F&& f) const {
    for_each_run_in_group(o, [&](int64_t off, int64_t length, int64_t stride) {
      for (int64_t k = 0; k < length; ++k) f(off + k * stride);
    });
  }

  // The same elements as runs along the innermost reduced dim: f(first_index, length, stride), so a
  // kernel can treat a contiguous run (stride 1) as one vectorisable loop.
  template <typename F>
  void for_each_run_in_group(int64_t o, F&& f) const {
    if (group_size == 0) return;
    const int64_t base = group_base(o);
    const int64_t nd = static_cast<int64_t>(red_shape.size());
    if (nd == 0) {
      f(base, 1, 1);
      return;
    }
    // The innermost reduced run is one call; outer reduced runs go by odometer.
    const int64_t inner = red_shape[nd - 1], inner_stride = red_strides[nd - 1];
    std::vector<int64_t> counter(static_cast<size_t>(nd), 0);
    int64_t off = base;
    for (;;) {
      f(off, inner, inner_stride);
      int64_t d = nd - 2;
      for (; d >= 0; --d) {
        if (++counter[d] < red_shape[d]) {
          off += red_strides[d];
          break;
        }
        off -= red_strides[d] * (red_shape[d] - 1);
        counter[d] = 0;
      }
      if (d < 0) return;
    }
  }
};

// `axes` may be negative; an empty list (or a 0-D input) reduces every axis. Duplicates and
// out-of-range axes were rejected by shape inference; `op` names the op if one still slips through.
inline ReducePlan make_reduce_plan(const Shape& shape, const std::vector<int64_t>& axes, const char* op = "reduce") {
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(static_cast<size_t>(nd), axes.empty());
  if (nd > 0) {
    for (int64_t a : axes) reduced[normalize_axis(a, nd, op)] = true;
  }
  ReducePlan p;
  const Shape strides = contiguous_strides(shape);
  int last = -1;  // 0 = kept run open, 1 = reduced run open
  for (int64_t d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;  // extent 1 changes nothing
    const int r = reduced[d] ? 1 : 0;
    auto& ext = r ? p.red_shape : p.kept_shape;
    auto& str = r ? p.red_strides : p.kept_strides;
    if (last == r) {  // merge into the run: the outer dim's stride is extent * inner stride
      ext.back() *= shape[d];
      str.back() = strides[d];
    } else {
      ext.push_back(shape[d]);
      str.push_back(strides[d]);
    }
    last = r;
    (r ? p.group_size : p.out_numel) *= shape[d];
  }
  return p;
}

}  // namespace pd::kernels::cpu
