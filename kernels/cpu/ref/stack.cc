// stack (tensors of one shape joined along a new axis), its inverse unbind, and tile (numpy.tile).
#include <algorithm>

#include "kernels.h"

namespace pd::kernels::reference {
namespace {

// Elements before `axis` (outer) and from `axis` on (inner) of a row-major shape.
std::pair<int64_t, int64_t> split_at(const Shape& s, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) (d < axis ? outer : inner) *= s[d];
  return {outer, inner};
}

}  // namespace

template <typename T>
void stack(const KernelContext& ctx, const std::vector<Tensor>& xs, int64_t axis, Tensor& out) {
  const int64_t a = normalize_axis(axis, out.dim(), "stack");
  const auto [outer, inner] = split_at(xs[0].shape(), a);
  const int64_t n = static_cast<int64_t>(xs.size());
  T* od = out.data<T>();
  for (int64_t t = 0; t < n; ++t) {
    const T* xd = xs[t].data<T>();
    for (int64_t o = 0; o < outer; ++o) std::copy_n(xd + o * inner, inner, od + (o * n + t) * inner);
  }
}

template <typename T>
void unbind(const KernelContext& ctx, const Tensor& x, int64_t axis, std::vector<Tensor>& outs) {
  const int64_t a = normalize_axis(axis, x.dim(), "unbind");
  const int64_t n = x.shape()[a];
  const auto [outer, inner] = split_at(outs.empty() ? Shape{} : outs[0].shape(), a);
  const T* xd = x.data<T>();
  for (int64_t t = 0; t < n; ++t) {
    T* od = outs[t].data<T>();
    for (int64_t o = 0; o < outer; ++o) std::copy_n(xd + (o * n + t) * inner, inner, od + o * inner);
  }
}

// out has rank d = max(rank, len(repeats)); output index c reads x at c mod x's (1-padded) shape.
template <typename T>
void tile(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& repeats, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Shape& os = out.shape();
  const size_t d = os.size();
  Shape xs(d - static_cast<size_t>(x.dim()), 1);
  xs.insert(xs.end(), x.shape().begin(), x.shape().end());
  const Shape xst = contiguous_strides(xs);
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  std::vector<int64_t> c(d, 0);
  for (int64_t o = 0; o < n; ++o) {
    int64_t src = 0;
    for (size_t k = 0; k < d; ++k) src += (c[k] % xs[k]) * xst[k];
    od[o] = xd[src];
    for (size_t k = d; k-- > 0;) {
      if (++c[k] < os[k]) break;
      c[k] = 0;
    }
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(stack, reference, float, double, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(unbind, reference, float, double, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(tile, reference, float, double, int32_t, int64_t, bool)
