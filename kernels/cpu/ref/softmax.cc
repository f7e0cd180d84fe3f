// Reference softmax and log_softmax along one axis, stabilised by subtracting the max.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels.h"

namespace pd::kernels::reference {
namespace {

// Runs fn(in_slice, out_slice, C, step) on every 1-D slice along `axis` (step = stride of the axis).
template <typename T, typename Fn>
void for_each_slice(const Tensor& x, int64_t axis, Tensor& out, const char* what, Fn&& fn) {
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  const int64_t a = normalize_axis(axis, x.dim(), what);
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < a; ++i) outer *= s[i];
  for (int64_t i = a + 1; i < x.dim(); ++i) inner *= s[i];
  const int64_t C = s[a];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) fn(xd + o * C * inner + i, od + o * C * inner + i, C, inner);
}

// max and log(sum(exp(x - max))) of one slice; an all -inf slice keeps max = -inf.
template <typename T>
void slice_stats(const T* in, int64_t C, int64_t step, T& mx, T& lse) {
  mx = -std::numeric_limits<T>::infinity();
  for (int64_t c = 0; c < C; ++c) mx = std::max(mx, in[c * step]);
  T sum = 0;
  for (int64_t c = 0; c < C; ++c) sum += std::exp(in[c * step] - mx);
  lse = std::log(sum);
}

}  // namespace

template <typename T>
void softmax(const KernelContext& ctx, const Tensor& x, int64_t axis, Tensor& out) {
  if (x.dim() == 0) {  // a single element is its own distribution
    out.data<T>()[0] = T(1);
    return;
  }
  for_each_slice<T>(x, axis, out, "softmax: argument 'axis'", [](const T* in, T* o, int64_t C, int64_t step) {
    T mx, lse;
    slice_stats(in, C, step, mx, lse);
    for (int64_t c = 0; c < C; ++c) o[c * step] = std::exp(in[c * step] - mx - lse);
  });
}

template <typename T>
void log_softmax(const KernelContext& ctx, const Tensor& x, int64_t axis, Tensor& out) {
  if (x.dim() == 0) {
    out.data<T>()[0] = T(0);
    return;
  }
  for_each_slice<T>(x, axis, out, "log_softmax: argument 'axis'", [](const T* in, T* o, int64_t C, int64_t step) {
    T mx, lse;
    slice_stats(in, C, step, mx, lse);
    for (int64_t c = 0; c < C; ++c) o[c * step] = in[c * step] - mx - lse;
  });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(softmax, reference, float, double)
PD_INSTANTIATE_KERNELS(log_softmax, reference, float, double)
