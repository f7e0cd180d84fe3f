// Indexing along one axis: gather (numpy.take), index_select, their gradient gather_grad,
// take_along_axis (torch.gather) and its adjoint scatter_add, and one_hot.
#include <algorithm>
#include <functional>

#include "cpu/common/along_axis.h"
#include "cpu/common/wrapping.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

using cpu::AlongAxis;

// x viewed as [outer, n, inner]; the m indices replace the middle axis: out is [outer, m, inner].
template <typename T>
void take_rows(const Tensor& x, const Tensor& index, int64_t axis, Tensor& out, const char* op) {
  const int64_t a = normalize_axis(axis, x.dim(), op);
  const AlongAxis g = cpu::along_axis(x.shape(), a, op);
  const std::vector<int64_t> idx = cpu::read_indices(index, g.n, a, op);
  const int64_t m = static_cast<int64_t>(idx.size());
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t j = 0; j < m; ++j) std::copy_n(xd + g.at(o, idx[j], 0), g.inner, od + (o * m + j) * g.inner);
}

}  // namespace

template <typename T>
void gather(const KernelContext& ctx, const Tensor& x, const Tensor& index, int64_t axis, Tensor& out) {
  take_rows<T>(x, index, axis, out, "gather");
}

template <typename T>
void index_select(const KernelContext& ctx, const Tensor& x, const Tensor& index, int64_t axis, Tensor& out) {
  take_rows<T>(x, index, axis, out, "index_select");
}

// The adjoint of take_rows: each row of grad is added to the row of dx it was taken from.
template <typename T>
void gather_grad(const KernelContext& ctx, const Tensor& index, const Tensor& grad, const std::vector<int64_t>& input_shape,
                 int64_t axis, Tensor& dx) {
  const int64_t a = normalize_axis(axis, dx.dim(), "gather_grad");
  const AlongAxis g = cpu::along_axis(dx.shape(), a, "gather_grad");
  const std::vector<int64_t> idx = cpu::read_indices(index, g.n, a, "gather_grad");
  const int64_t m = static_cast<int64_t>(idx.size());
  const T* gd = grad.data<T>();
  T* dd = dx.data<T>();
  std::fill_n(dd, dx.numel(), T(0));
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t j = 0; j < m; ++j) {
      const T* src = gd + (o * m + j) * g.inner;
      T* dst = dd + g.at(o, idx[j], 0);
      for (int64_t i = 0; i < g.inner; ++i) dst[i] += src[i];
    }
}

// index is [outer, k, inner] against x's [outer, n, inner]: out[o, j, i] = x[o, index[o, j, i], i].
template <typename T>
void take_along_axis(const KernelContext& ctx, const Tensor& x, const Tensor& index, int64_t axis, Tensor& out) {
  const AlongAxis g = cpu::along_axis(x.shape(), axis, "take_along_axis");
  const AlongAxis gi = cpu::along_axis(index.shape(), axis, "take_along_axis");
  const int64_t a = x.dim() == 0 ? 0 : normalize_axis(axis, x.dim(), "take_along_axis");
  const std::vector<int64_t> idx = cpu::read_indices(index, g.n, a, "take_along_axis");
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  for (int64_t o = 0; o < gi.outer; ++o)
    for (int64_t j = 0; j < gi.n; ++j)
      for (int64_t i = 0; i < gi.inner; ++i) {
        const int64_t p = gi.at(o, j, i);
        od[p] = xd[g.at(o, idx[p], i)];
      }
}

// out = x; out[o, index[o, j, i], i] += src[o, j, i] (repeated indices accumulate).
template <typename T>
void scatter_add(const KernelContext& ctx, const Tensor& x, const Tensor& index, const Tensor& src, int64_t axis, Tensor& out) {
  const AlongAxis g = cpu::along_axis(x.shape(), axis, "scatter_add");
  const AlongAxis gi = cpu::along_axis(index.shape(), axis, "scatter_add");
  const int64_t a = x.dim() == 0 ? 0 : normalize_axis(axis, x.dim(), "scatter_add");
  const std::vector<int64_t> idx = cpu::read_indices(index, g.n, a, "scatter_add");
  const T* sd = src.data<T>();
  T* od = out.data<T>();
  std::copy_n(x.data<T>(), x.numel(), od);
  for (int64_t o = 0; o < gi.outer; ++o)
    for (int64_t j = 0; j < gi.n; ++j)
      for (int64_t i = 0; i < gi.inner; ++i) {
        const int64_t p = gi.at(o, j, i);
        T& slot = od[g.at(o, idx[p], i)];
        slot = cpu::wrapping(slot, sd[p], std::plus<>());
      }
}

// T is the output dtype; x holds integer classes in [0, num_classes).
template <typename T>
void one_hot(const KernelContext& ctx, const Tensor& x, int64_t num_classes, DType dtype, Tensor& out) {
  const std::vector<int64_t> cls = x.to_vector<int64_t>();
  T* od = out.data<T>();
  std::fill_n(od, out.numel(), T(0));
  for (size_t k = 0; k < cls.size(); ++k) {
    PD_CHECK(cls[k] >= 0 && cls[k] < num_classes, ErrorCode::kOutOfRange,
             "one_hot: class {} (at index {} of 'x') is out of range [0, {}) for num_classes {}", cls[k], k, num_classes,
             num_classes);
    od[static_cast<int64_t>(k) * num_classes + cls[k]] = T(1);
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(gather, reference, float, double, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(index_select, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(gather_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(take_along_axis, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(scatter_add, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(one_hot, reference, float, double, int32_t, int64_t)
