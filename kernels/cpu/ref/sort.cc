// sort, argsort and topk along one axis. Sorting is stable (equal values keep their order) and NaN
// counts as larger than every number: last when ascending, first when descending (as PyTorch).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "cpu/common/along_axis.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

// Calls f(o, i, order) for every line along the axis, order being the line's positions sorted.
template <typename T, typename F>
void for_each_sorted_line(const Tensor& x, int64_t axis, bool descending, const char* op, F f) {
  const cpu::AlongAxis g = cpu::along_axis(x.shape(), axis, op);
  const T* xd = x.data<T>();
  std::vector<T> line(static_cast<size_t>(g.n));
  std::vector<int64_t> order(static_cast<size_t>(g.n));
  auto before = [&](int64_t a, int64_t b) {
    const T va = line[a], vb = line[b];
    if (descending) return !is_nan(vb) && (is_nan(va) || va > vb);
    return !is_nan(va) && (is_nan(vb) || va < vb);
  };
  if (x.numel() == 0) return;
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i) {
      for (int64_t k = 0; k < g.n; ++k) line[k] = xd[g.at(o, k, i)];
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), before);
      f(o, i, line, order);
    }
}

// The first `count` of each sorted line into values (optional) and indices, laid out [outer, count, inner].
template <typename T>
void write_sorted(const Tensor& x, int64_t axis, bool descending, int64_t count, Tensor* values, Tensor& indices,
                  const char* op) {
  const cpu::AlongAxis g = cpu::along_axis(x.shape(), axis, op);
  T* vd = values ? values->data<T>() : nullptr;
  int64_t* id = indices.data<int64_t>();
  for_each_sorted_line<T>(x, axis, descending, op,
                          [&](int64_t o, int64_t i, const std::vector<T>& line, const std::vector<int64_t>& order) {
                            for (int64_t k = 0; k < count; ++k) {
                              const int64_t p = (o * count + k) * g.inner + i;
                              id[p] = order[k];
                              if (vd) vd[p] = line[order[k]];
                            }
                          });
}

}  // namespace

template <typename T>
void sort(const KernelContext& ctx, const Tensor& x, int64_t axis, bool descending, Tensor& values, Tensor& indices) {
  write_sorted<T>(x, axis, descending, cpu::along_axis(x.shape(), axis, "sort").n, &values, indices, "sort");
}

template <typename T>
void argsort(const KernelContext& ctx, const Tensor& x, int64_t axis, bool descending, Tensor& indices) {
  write_sorted<T>(x, axis, descending, cpu::along_axis(x.shape(), axis, "argsort").n, nullptr, indices, "argsort");
}

// The k largest (or smallest) along axis, always in sorted order (sorted = false allows any order).
template <typename T>
void topk(const KernelContext& ctx, const Tensor& x, int64_t k, int64_t axis, bool largest, bool sorted, Tensor& values,
          Tensor& indices) {
  write_sorted<T>(x, axis, largest, k, &values, indices, "topk");
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(sort, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(argsort, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(topk, reference, float, double, int32_t, int64_t)
