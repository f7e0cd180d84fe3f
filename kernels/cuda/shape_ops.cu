// Copying shape kernels on CUDA: concat, split, stack, unbind, tile, pad, tril, triu and slice_grad, as
// the reference kernels in cpu/ref/shape_kernels.cc, stack.cc and triangular.cc. Every tensor is
// contiguous (the op API makes it so). Nothing here does arithmetic: elements move as raw bits
// (indexing.cuh), so one kernel serves every dtype of a size.
//
// concat / split / stack / unbind are one operation: a "wide" tensor [outer, wide_row] whose rows are
// the rows of several "parts" [outer, row_k] side by side; a launch copies up to kSegs parts, in units
// of up to 16 bytes. tile / pad / slice_grad map each output element to its source by coordinates;
// dims that need no work (extent 1, or untouched runs) are dropped or merged first.
#include <vector>

#include "cpu/common/along_axis.h"
#include "cuda/indexing.cuh"
#include "pd/kernels/slice_geometry.h"

namespace pd::kernels::cuda {
namespace {


// ---- concat / split / stack / unbind ----

constexpr int kSegs = 32;

// Part k holds columns [col0 + cum[k], col0 + cum[k + 1]) of each wide row (in units); no part is empty.
struct Segments {
  int count = 0;
  void* ptr[kSegs] = {};
  int64_t cum[kSegs + 1] = {};
};

template <typename U, bool ToParts>
__global__ void segments_kernel(U* __restrict__ wide, Segments s, int64_t wide_row, int64_t col0, int64_t n) {
  const int64_t width = s.cum[s.count];
  PD_GRID_STRIDE(i, n) {
    const int64_t o = i / width, c = i % width;
    int lo = 0, hi = s.count - 1;  // the last part with cum[k] <= c
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (s.cum[mid] <= c) lo = mid;
      else hi = mid - 1;
    }
    U* part = static_cast<U*>(s.ptr[lo]) + o * (s.cum[lo + 1] - s.cum[lo]) + (c - s.cum[lo]);
    U* w = wide + o * wide_row + col0 + c;
    if constexpr (ToParts) *part = *w;
    else *w = *part;
  }
}

struct Part {
  void* ptr;
  int64_t row;  // elements per outer index; 0: nothing to copy
};

// ToParts: wide -> parts (split, unbind); else parts -> wide (concat, stack). Parts sit side by side
// from column 0 in order. `es` is the element size in bytes.
template <bool ToParts>
void copy_parts(const KernelContext& ctx, void* wide, size_t es, int64_t outer, int64_t wide_row,
                const std::vector<Part>& parts, const char* op) {
  if (outer == 0 || wide_row == 0) return;
  cudaStream_t stream = stream_of(ctx);
  const int64_t bytes = static_cast<int64_t>(es);
  int64_t col = 0;
  size_t k = 0;
  while (k < parts.size()) {
    const int64_t col0 = col;
    std::vector<Part> batch;
    for (; k < parts.size() && batch.size() < static_cast<size_t>(kSegs); ++k) {
      if (parts[k].row > 0) batch.push_back(parts[k]);
      col += parts[k].row;
    }
    if (batch.empty()) continue;
    uint64_t all = address_bits(wide) | static_cast<uint64_t>(wide_row * bytes) | static_cast<uint64_t>(col0 * bytes);
    for (const Part& p : batch) all |= address_bits(p.ptr) | static_cast<uint64_t>(p.row * bytes);
    const int unit = widest_unit(all);
    const int64_t per = unit / bytes;  // elements per unit (unit >= es: every address and count is a multiple of es)
    visit_unit(unit, [&]<typename U>() {
      Segments s;
      s.count = static_cast<int>(batch.size());
      for (int j = 0; j < s.count; ++j) {
        s.ptr[j] = batch[j].ptr;
        s.cum[j + 1] = s.cum[j] + batch[j].row / per;
      }
      const int64_t n = outer * s.cum[s.count];
      segments_kernel<U, ToParts>
          <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<U*>(wide), s, wide_row / per, col0 / per, n);
      check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
    });
  }
}

// ---- coordinate-mapped copies ----

constexpr int kMaxDims = 12;

void check_dims(size_t nd, const char* op) {
  PD_CHECK(nd <= static_cast<size_t>(kMaxDims), ErrorCode::kNotImplemented,
           "{}: {} dimensions that cannot be merged on CUDA (at most {})", op, nd, kMaxDims);
}

// tile: out coordinate c reads x at c mod x's extent, per dim.
struct TileGeom {
  int nd = 0;
  int64_t oshape[kMaxDims] = {}, xshape[kMaxDims] = {}, xstride[kMaxDims] = {};
};

template <typename U>
__global__ void tile_kernel(const U* __restrict__ x, U* __restrict__ out, TileGeom g, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    int64_t rem = i, src = 0;
    for (int d = g.nd - 1; d >= 0; --d) {
      const int64_t c = rem % g.oshape[d];
      rem /= g.oshape[d];
      src += (c % g.xshape[d]) * g.xstride[d];
    }
    out[i] = x[src];
  }
}

// pad: out coordinate c reads x at c - lo when that is inside x, else is the fill value.
struct PadGeom {
  int nd = 0;
  int64_t oshape[kMaxDims] = {}, xshape[kMaxDims] = {}, lo[kMaxDims] = {};
};

template <typename U>
__global__ void pad_kernel(const U* __restrict__ x, U* __restrict__ out, PadGeom g, U fill, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    int64_t rem = i, src = 0, stride = 1;
    bool inside = true;
    for (int d = g.nd - 1; d >= 0; --d) {
      const int64_t s = rem % g.oshape[d] - g.lo[d];
      rem /= g.oshape[d];
      inside = inside && s >= 0 && s < g.xshape[d];
      src += s * stride;
      stride *= g.xshape[d];
    }
    out[i] = inside ? x[src] : fill;
  }
}

// slice_grad: dx coordinate c is slice element k = (c - first) / step when that divides evenly and
// 0 <= k < box; everything else is 0.
struct SliceGeom {
  int nd = 0;
  int64_t in[kMaxDims] = {}, first[kMaxDims] = {}, step[kMaxDims] = {}, box[kMaxDims] = {};
};

template <typename U>
__global__ void slice_grad_kernel(const U* __restrict__ grad, U* __restrict__ dx, SliceGeom g, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    int64_t rem = i, src = 0, stride = 1;
    bool inside = true;
    for (int d = g.nd - 1; d >= 0; --d) {
      const int64_t off = rem % g.in[d] - g.first[d];
      rem /= g.in[d];
      const int64_t k = off / g.step[d];
      inside = inside && off % g.step[d] == 0 && k >= 0 && k < g.box[d];
      src += k * stride;
      stride *= g.box[d];
    }
    dx[i] = inside ? grad[src] : U(0);
  }
}

template <typename U, bool Lower>
__global__ void triangle_kernel(const U* __restrict__ x, U* __restrict__ out, int64_t M, int64_t N, int64_t diagonal,
                                int64_t n) {
  PD_GRID_STRIDE(p, n) {
    const int64_t j = p % N, i = (p / N) % M;
    const bool keep = Lower ? j - i <= diagonal : j - i >= diagonal;
    out[p] = keep ? x[p] : U(0);
  }
}

template <typename T, bool Lower>
void triangle(const KernelContext& ctx, const Tensor& x, int64_t diagonal, Tensor& out, const char* op) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t M = x.shape()[x.dim() - 2], N = x.shape()[x.dim() - 1];
  using U = bits_t<T>;
  triangle_kernel<U, Lower><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
      static_cast<const U*>(x.raw_data()), static_cast<U*>(out.raw_data()), M, N, diagonal, n);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
}

}  // namespace

template <typename T>
void concat(const KernelContext& ctx, const std::vector<Tensor>& xs, int64_t axis, Tensor& out) {
  const int64_t ax = normalize_axis(axis, out.dim(), "concat: argument 'axis'");
  std::vector<Part> parts;
  for (const Tensor& x : xs) parts.push_back({x.raw_data(), cpu::extent_product(x.shape(), ax, x.dim())});
  copy_parts<false>(ctx, out.raw_data(), sizeof(T), cpu::extent_product(out.shape(), 0, ax),
                    cpu::extent_product(out.shape(), ax, out.dim()), parts, "concat kernel launch");
}

template <typename T>
void split(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& sections, int64_t axis,
           std::vector<Tensor>& outs) {
  const int64_t ax = normalize_axis(axis, x.dim(), "split: argument 'axis'");
  std::vector<Part> parts;
  for (const Tensor& y : outs) parts.push_back({y.raw_data(), cpu::extent_product(y.shape(), ax, y.dim())});
  copy_parts<true>(ctx, x.raw_data(), sizeof(T), cpu::extent_product(x.shape(), 0, ax), cpu::extent_product(x.shape(), ax, x.dim()),
                   parts, "split kernel launch");
}

// stack: out is [outer, n * inner] with input t at columns [t * inner, (t + 1) * inner).
template <typename T>
void stack(const KernelContext& ctx, const std::vector<Tensor>& xs, int64_t axis, Tensor& out) {
  const int64_t a = normalize_axis(axis, out.dim(), "stack");
  if (xs.empty()) return;
  const Shape& s = xs[0].shape();
  const int64_t outer = cpu::extent_product(s, 0, a), inner = cpu::extent_product(s, a, static_cast<int64_t>(s.size()));
  std::vector<Part> parts;
  for (const Tensor& x : xs) parts.push_back({x.raw_data(), inner});
  copy_parts<false>(ctx, out.raw_data(), sizeof(T), outer, static_cast<int64_t>(xs.size()) * inner, parts,
                    "stack kernel launch");
}

template <typename T>
void unbind(const KernelContext& ctx, const Tensor& x, int64_t axis, std::vector<Tensor>& outs) {
  const int64_t a = normalize_axis(axis, x.dim(), "unbind");
  const int64_t n = x.shape()[a];
  if (outs.empty()) return;
  const Shape& s = outs[0].shape();
  const int64_t outer = cpu::extent_product(s, 0, a), inner = cpu::extent_product(s, a, static_cast<int64_t>(s.size()));
  std::vector<Part> parts;
  for (int64_t t = 0; t < n; ++t) parts.push_back({outs[t].raw_data(), inner});
  copy_parts<true>(ctx, x.raw_data(), sizeof(T), outer, n * inner, parts, "unbind kernel launch");
}

template <typename T>
void tile(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& repeats, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Shape& os = out.shape();
  Shape xs(os.size() - static_cast<size_t>(x.dim()), 1);
  xs.insert(xs.end(), x.shape().begin(), x.shape().end());
  const Shape xst = contiguous_strides(xs);
  // Drop out dims of extent 1; merge a dim into the previous one when both are copied whole and
  // adjacent in x, or both are pure repeats of extent 1 in x.
  std::vector<int64_t> mo, mx, ms;
  for (size_t k = 0; k < os.size(); ++k) {
    if (os[k] == 1) continue;
    if (!mo.empty()) {
      const size_t p = mo.size() - 1;
      const bool whole = mo[p] == mx[p] && os[k] == xs[k] && ms[p] == xst[k] * xs[k];
      const bool repeats_only = mx[p] == 1 && xs[k] == 1;
      if (whole || repeats_only) {
        mo[p] *= os[k];
        mx[p] *= xs[k];
        ms[p] = xst[k];
        continue;
      }
    }
    mo.push_back(os[k]);
    mx.push_back(xs[k]);
    ms.push_back(xst[k]);
  }
  check_dims(mo.size(), "tile");
  TileGeom g;
  g.nd = static_cast<int>(mo.size());
  for (int d = 0; d < g.nd; ++d) {
    g.oshape[d] = mo[d];
    g.xshape[d] = mx[d];
    g.xstride[d] = ms[d];
  }
  using U = bits_t<T>;
  tile_kernel<U><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(static_cast<const U*>(x.raw_data()),
                                                                  static_cast<U*>(out.raw_data()), g, n);
  PD_CUDA_CHECK_LAUNCH("tile");
}

template <typename T>
void pad(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& pads, double value, Tensor& out) {
  const int64_t nd = x.dim();  // pads: (lo, hi) pairs for at most nd axes, checked by the shape rule
  const int64_t n = out.numel();
  if (n == 0) return;
  // Drop dims of extent 1 on both sides with no shift; merge runs of unpadded dims.
  std::vector<int64_t> mo, mx, ml;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t k = nd - 1 - d;  // pads are listed from the last dim backwards
    const int64_t lo = 2 * k < static_cast<int64_t>(pads.size()) ? pads[2 * k] : 0;
    const int64_t o = out.shape()[d], xe = x.shape()[d];
    const bool untouched = lo == 0 && o == xe;
    if (untouched && o == 1) continue;
    if (untouched && !mo.empty() && ml.back() == 0 && mo.back() == mx.back()) {
      mo.back() *= o;
      mx.back() *= xe;
      continue;
    }
    mo.push_back(o);
    mx.push_back(xe);
    ml.push_back(lo);
  }
  check_dims(mo.size(), "pad");
  PadGeom g;
  g.nd = static_cast<int>(mo.size());
  for (int d = 0; d < g.nd; ++d) {
    g.oshape[d] = mo[d];
    g.xshape[d] = mx[d];
    g.lo[d] = ml[d];
  }
  using U = bits_t<T>;
  const U fill = to_bits(convert<T>(value));
  pad_kernel<U><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(static_cast<const U*>(x.raw_data()),
                                                                 static_cast<U*>(out.raw_data()), g, fill, n);
  PD_CUDA_CHECK_LAUNCH("pad");
}

template <typename T>
void slice_grad(const KernelContext& ctx, const Tensor& grad, const std::vector<int64_t>& input_shape,
                const std::vector<int64_t>& axes, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                const std::vector<int64_t>& steps, Tensor& dx) {
  const Shape& in = dx.shape();
  const int64_t nd = dx.dim();
  const SliceBox sb = slice_box(in, grad.shape(), axes, starts, ends, steps);
  const Shape &first = sb.first, &box = sb.box, &step = sb.step;
  const int64_t n = dx.numel();
  if (n == 0) return;
  // Drop dims of extent 1 taken whole; merge runs of dims taken whole.
  SliceGeom g;
  for (int64_t d = 0; d < nd; ++d) {
    const bool whole = first[d] == 0 && step[d] == 1 && box[d] == in[d];
    if (whole && in[d] == 1) continue;
    if (whole && g.nd > 0) {
      const int p = g.nd - 1;
      if (g.first[p] == 0 && g.step[p] == 1 && g.box[p] == g.in[p]) {
        g.in[p] *= in[d];
        g.box[p] *= box[d];
        continue;
      }
    }
    check_dims(static_cast<size_t>(g.nd) + 1, "slice_grad");
    g.in[g.nd] = in[d];
    g.first[g.nd] = first[d];
    g.step[g.nd] = step[d];
    g.box[g.nd] = box[d];
    ++g.nd;
  }
  using U = bits_t<T>;
  slice_grad_kernel<U><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(static_cast<const U*>(grad.raw_data()),
                                                                        static_cast<U*>(dx.raw_data()), g, n);
  PD_CUDA_CHECK_LAUNCH("slice_grad");
}

template <typename T>
void tril(const KernelContext& ctx, const Tensor& x, int64_t diagonal, Tensor& out) {
  triangle<T, true>(ctx, x, diagonal, out, "tril kernel launch");
}

template <typename T>
void triu(const KernelContext& ctx, const Tensor& x, int64_t diagonal, Tensor& out) {
  triangle<T, false>(ctx, x, diagonal, out, "triu kernel launch");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(concat, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(split, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(stack, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(unbind, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(tile, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(pad, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(slice_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(tril, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(triu, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
