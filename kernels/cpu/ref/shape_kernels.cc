// Copying shape kernels: concat, split, pad, slice_grad. All tensors are contiguous, so each is a
// set of row-major block copies.
#include <algorithm>
#include <vector>

#include "cpu/common/along_axis.h"
#include "cpu/common/parallel.h"
#include "pd/kernels/slice_geometry.h"
#include "kernels.h"

namespace pd::kernels::reference {

namespace {

// Calls f(src_offset, dst_offset) for every element of a box of extents `box` whose corner sits at
// `src_start` in a tensor with strides `src_strides` and at `dst_start` in one with `dst_strides`
// (steps scale the source index per dim; 1 for a plain box). The last dim runs as an inner loop, with
// a unit-stride form the compiler vectorises; an odometer steps the outer dims once per row.
template <typename F>
void for_each_in_box(const Shape& box, const Shape& src_strides, const Shape& src_start, const Shape& src_step,
                     const Shape& dst_strides, const Shape& dst_start, F&& f) {
  const int64_t nd = static_cast<int64_t>(box.size());
  if (shape_numel(box) == 0) return;
  int64_t src = 0, dst = 0;
  for (int64_t d = 0; d < nd; ++d) {
    src += src_start[d] * src_strides[d];
    dst += dst_start[d] * dst_strides[d];
  }
  const int64_t inner = nd > 0 ? box[nd - 1] : 1;
  const int64_t src_inner = nd > 0 ? src_step[nd - 1] * src_strides[nd - 1] : 0;
  const int64_t dst_inner = nd > 0 ? dst_strides[nd - 1] : 0;
  std::vector<int64_t> counter(static_cast<size_t>(nd), 0);
  for (;;) {
    if (src_inner == 1 && dst_inner == 1) {
      for (int64_t i = 0; i < inner; ++i) f(src + i, dst + i);
    } else {
      for (int64_t i = 0; i < inner; ++i) f(src + i * src_inner, dst + i * dst_inner);
    }
    int64_t d = nd - 2;
    for (; d >= 0; --d) {
      if (++counter[d] < box[d]) {
        src += src_step[d] * src_strides[d];
        dst += dst_strides[d];
        break;
      }
      src -= src_step[d] * src_strides[d] * (box[d] - 1);
      dst -= dst_strides[d] * (box[d] - 1);
      counter[d] = 0;
    }
    if (d < 0) return;
  }
}
}  // namespace

// concat's copies in parts of this many bytes across the threads, when the output has at least
// kParallelConcatBytes: one thread copied SqueezeNet's [8, 128, 54, 54] concat at 43 GB/s of the
// memory's 63 (2 threads).
constexpr int64_t kConcatPartBytes = 64 << 10;
constexpr int64_t kParallelConcatBytes = 1 << 20;

template <typename T>
void concat(const KernelContext& ctx, const std::vector<Tensor>& xs, int64_t axis, Tensor& out) {
  const int64_t ax = normalize_axis(axis, out.dim(), "concat: argument 'axis'");
  const int64_t outer = cpu::extent_product(out.shape(), 0, ax);
  const int64_t out_row = cpu::extent_product(out.shape(), ax, out.dim());  // elements per outer index in out
  T* od = out.data<T>();
  if (out.numel() == 0) return;
  // Each input's rows (one an outer index) in parts of at most `part` elements; items run through the
  // inputs in order, each input's parts row by row.
  const int64_t part = out.numel() * int64_t(sizeof(T)) >= kParallelConcatBytes ? kConcatPartBytes / int64_t(sizeof(T)) : out_row;
  // Per input: its row length, its column in an out row, its parts a row and its first item.
  const size_t n = xs.size();
  std::vector<int64_t> row(n), col(n, 0), parts(n), first_item(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    row[i] = cpu::extent_product(xs[i].shape(), ax, xs[i].dim());
    if (i > 0) col[i] = col[i - 1] + row[i - 1];
    parts[i] = (row[i] + part - 1) / part;
    first_item[i + 1] = first_item[i] + outer * parts[i];
  }
  cpu::parallel_for(first_item.back(), part, [&](int64_t item) {
    const size_t i = std::upper_bound(first_item.begin(), first_item.end(), item) - first_item.begin() - 1;
    const int64_t o = (item - first_item[i]) / parts[i], p0 = (item - first_item[i]) % parts[i] * part;
    std::copy_n(xs[i].data<T>() + o * row[i] + p0, std::min(part, row[i] - p0), od + o * out_row + col[i] + p0);
  });
}

template <typename T>
void split(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& sections, int64_t axis, std::vector<Tensor>& outs) {
  const int64_t ax = normalize_axis(axis, x.dim(), "split: argument 'axis'");
  const int64_t outer = cpu::extent_product(x.shape(), 0, ax);
  const int64_t x_row = cpu::extent_product(x.shape(), ax, x.dim());
  const T* xd = x.data<T>();
  int64_t col = 0;
  for (Tensor& y : outs) {
    const int64_t row = cpu::extent_product(y.shape(), ax, y.dim());
    if (row > 0 && outer > 0) {
      T* yd = y.data<T>();
      for (int64_t o = 0; o < outer; ++o) std::copy_n(xd + o * x_row + col, row, yd + o * row);
    }
    col += row;
  }
}

template <typename T>
void pad(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& pads, double value, Tensor& out) {
  const int64_t nd = x.dim();
  PD_CHECK(pads.size() % 2 == 0 && static_cast<int64_t>(pads.size()) <= 2 * nd, ErrorCode::kInvalidArgument,
           "pad: argument 'pads' must have an even length of at most 2 * {} (x's dims), but received {} values", nd,
           pads.size());
  T* od = out.data<T>();
  const T fill = convert<T>(value);
  std::fill_n(od, out.numel(), fill);
  // Overlap per dim: x index i lands at out index i + lo; keep the i with 0 <= i + lo < out extent.
  Shape box(nd), src_start(nd), dst_start(nd), unit_steps(nd, 1);
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t k = nd - 1 - d;  // pads are listed from the last dim backwards
    const int64_t lo = 2 * k < static_cast<int64_t>(pads.size()) ? pads[2 * k] : 0;
    const int64_t first = std::max<int64_t>(0, -lo);
    const int64_t last = std::min(x.shape()[d], out.shape()[d] - lo);  // exclusive
    box[d] = std::max<int64_t>(0, last - first);
    src_start[d] = first;
    dst_start[d] = first + lo;
  }
  if (shape_numel(box) == 0) return;
  const T* xd = x.data<T>();
  for_each_in_box(box, contiguous_strides(x.shape()), src_start, unit_steps, contiguous_strides(out.shape()), dst_start,
                  [&](int64_t s, int64_t t) { od[t] = xd[s]; });
}

template <typename T>
void slice_grad(const KernelContext& ctx, const Tensor& grad, const std::vector<int64_t>& input_shape, const std::vector<int64_t>& axes,
                const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                const std::vector<int64_t>& steps, Tensor& dx) {
  const Shape& in = dx.shape();
  const cpu::SliceBox b = cpu::slice_box(in, grad.shape(), axes, starts, ends, steps);
  const Shape origin(in.size(), 0);
  T* dd = dx.data<T>();
  for (int64_t i = 0; i < dx.numel(); ++i) dd[i] = T(0);
  const T* gd = grad.data<T>();
  // Walk grad in order (dst) and dx along the strided box (src).
  for_each_in_box(b.box, contiguous_strides(in), b.first, b.step, contiguous_strides(b.box), origin,
                  [&](int64_t s, int64_t g) { dd[s] = gd[g]; });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(concat, reference, float, double, int32_t, int64_t, bool, uint8_t, int8_t)
PD_INSTANTIATE_KERNELS(split, reference, float, double, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(pad, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(slice_grad, reference, float, double, int32_t, int64_t)
