// Indexing on CUDA: gather, index_select, take_along_axis, one_hot, masked_fill and embedding, as the
// reference kernels in cpu/ref/index.cc, compare.cc and embedding.cc. Every tensor is contiguous (the
// op API makes it so). The indices are range-checked on the device before anything is written, and a
// bad one raises the reference's pd::Error (indexing.cuh: one stream synchronisation per call). The
// copies move raw bits (one kernel per element size); gather, index_select and embedding move whole
// rows in units of up to 16 bytes where the row length and pointers allow.
#include "cpu/common/along_axis.h"
#include "cuda/elementwise.cuh"
#include "cuda/indexing.cuh"

namespace pd::kernels::cuda {
namespace {

// out [outer, m, inner] from x [outer, n, inner]: out[o, j, :] = x[o, index[j], :] (inner in units).
template <typename U, typename I>
__global__ void take_rows_kernel(const U* __restrict__ x, const I* __restrict__ idx, U* __restrict__ out, int64_t m,
                                 int64_t n, int64_t inner, int64_t total) {
  PD_GRID_STRIDE(p, total) {
    const int64_t i = p % inner, r = p / inner, j = r % m, o = r / m;
    out[p] = x[(o * n + wrap_index(idx[j], n)) * inner + i];
  }
}

// The indices must have been checked. `es` is the element size in bytes.
template <typename I>
void launch_take_rows(const KernelContext& ctx, const void* x, const I* idx, void* out, size_t es, int64_t outer,
                      int64_t m, int64_t n, int64_t inner, const char* op) {
  if (outer * m * inner == 0) return;
  const int64_t bytes = static_cast<int64_t>(es);
  const int unit = widest_unit(address_bits(x) | address_bits(out) | static_cast<uint64_t>(inner * bytes));
  visit_unit(unit, [&]<typename U>() {
    const int64_t row = inner * bytes / unit, total = outer * m * row;
    take_rows_kernel<U, I><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(static_cast<const U*>(x), idx,
                                                                                 static_cast<U*>(out), m, n, row, total);
    check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
  });
}

// gather and index_select: the reference's take_rows.
template <typename T>
void take_rows(const KernelContext& ctx, const Tensor& x, const Tensor& index, int64_t axis, Tensor& out,
               const char* op) {
  const int64_t a = normalize_axis(axis, x.dim(), op);
  const cpu::AlongAxis g = cpu::along_axis(x.shape(), a, op);
  visit_index(index, op, "index", [&]<typename I>() {
    check_axis_indices<I>(ctx, index, g.n, a, op);
    launch_take_rows<I>(ctx, x.raw_data(), reinterpret_cast<const I*>(index.raw_data()), out.raw_data(), sizeof(T),
                        g.outer, index.numel(), g.n, g.inner, op);
  });
}

// index [outer, k, inner] against x [outer, xn, inner]: out[o, j, i] = x[o, index[o, j, i], i].
template <typename U, typename I>
__global__ void take_along_kernel(const U* __restrict__ x, const I* __restrict__ idx, U* __restrict__ out, int64_t xn,
                                  int64_t x_inner, int64_t k, int64_t inner, int64_t total) {
  PD_GRID_STRIDE(p, total) {
    const int64_t i = p % inner, o = p / (k * inner);
    out[p] = x[(o * xn + wrap_index(idx[p], xn)) * x_inner + i];
  }
}

template <typename U, typename I>
__global__ void one_hot_kernel(const I* __restrict__ cls, U* __restrict__ out, int64_t num_classes, U one, int64_t n) {
  PD_GRID_STRIDE(k, n) { out[k * num_classes + static_cast<int64_t>(cls[k])] = one; }
}

template <typename U>
__global__ void masked_fill_kernel(const U* __restrict__ x, const bool* __restrict__ mask, U* __restrict__ out, U fill,
                                   EwiseGeometry<2> g, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    int64_t rem = i, ox = 0, om = 0;
    for (int d = g.nd - 1; d >= 0; --d) {
      const int64_t c = rem % g.shape[d];
      rem /= g.shape[d];
      ox += c * g.strides[0][d];
      om += c * g.strides[1][d];
    }
    out[i] = mask[om] ? fill : x[ox];
  }
}

}  // namespace

template <typename T>
void gather(const KernelContext& ctx, const Tensor& x, const Tensor& index, int64_t axis, Tensor& out) {
  take_rows<T>(ctx, x, index, axis, out, "gather");
}

template <typename T>
void index_select(const KernelContext& ctx, const Tensor& x, const Tensor& index, int64_t axis, Tensor& out) {
  take_rows<T>(ctx, x, index, axis, out, "index_select");
}

template <typename T>
void take_along_axis(const KernelContext& ctx, const Tensor& x, const Tensor& index, int64_t axis, Tensor& out) {
  const cpu::AlongAxis g = cpu::along_axis(x.shape(), axis, "take_along_axis");
  const cpu::AlongAxis gi = cpu::along_axis(index.shape(), axis, "take_along_axis");
  const int64_t a = x.dim() == 0 ? 0 : normalize_axis(axis, x.dim(), "take_along_axis");
  visit_index(index, "take_along_axis", "index", [&]<typename I>() {
    check_axis_indices<I>(ctx, index, g.n, a, "take_along_axis");
    const int64_t total = index.numel();
    if (total == 0) return;
    using U = bits_t<T>;
    take_along_kernel<U, I><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(
        static_cast<const U*>(x.raw_data()), reinterpret_cast<const I*>(index.raw_data()), static_cast<U*>(out.raw_data()),
        g.n, g.inner, gi.n, gi.inner, total);
    PD_CUDA_CHECK_LAUNCH("take_along_axis");
  });
}

// T is the output dtype; x holds integer classes in [0, num_classes).
template <typename T>
void one_hot(const KernelContext& ctx, const Tensor& x, int64_t num_classes, DType dtype, Tensor& out) {
  visit_index(x, "one_hot", "x", [&]<typename I>() {
    const OutsideIndex bad = first_outside<I>(ctx, x, 0, num_classes, "one_hot");
    PD_CHECK(bad.pos < 0, ErrorCode::kOutOfRange,
             "one_hot: class {} (at index {} of 'x') is out of range [0, {}) for num_classes {}", bad.value, bad.pos,
             num_classes, num_classes);
    if (out.numel() == 0) return;
    cudaStream_t stream = stream_of(ctx);
    // Zero is all-zero bits in every dtype.
    PD_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, static_cast<size_t>(out.numel()) * sizeof(T), stream));
    const int64_t n = x.numel();
    using U = bits_t<T>;
    one_hot_kernel<U, I><<<blocks_for(n), kThreads, 0, stream>>>(reinterpret_cast<const I*>(x.raw_data()),
                                                                  static_cast<U*>(out.raw_data()), num_classes,
                                                                  to_bits(convert<T>(1)), n);
    PD_CUDA_CHECK_LAUNCH("one_hot");
  });
}

template <typename T>
void masked_fill(const KernelContext& ctx, const Tensor& x, const Tensor& mask, double value, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const EwiseGeometry<2> g = ewise_geometry<2>("masked_fill", out, {&x, &mask});
  using U = bits_t<T>;
  masked_fill_kernel<U><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
      static_cast<const U*>(x.raw_data()), reinterpret_cast<const bool*>(mask.raw_data()), static_cast<U*>(out.raw_data()),
      to_bits(convert<T>(value)), g, n);
  PD_CUDA_CHECK_LAUNCH("masked_fill");
}

// weight's rows by id: take_rows over [1, num_embeddings, dim].
template <typename T>
void embedding(const KernelContext& ctx, const Tensor& x, const Tensor& weight, int64_t padding_idx, Tensor& out) {
  const int64_t V = weight.shape()[0], D = weight.shape()[1];
  visit_index(x, "embedding", "x", [&]<typename I>() {
    check_ids<I>(ctx, x, V, "embedding");
    launch_take_rows<I>(ctx, weight.raw_data(), reinterpret_cast<const I*>(x.raw_data()), out.raw_data(), sizeof(T), 1,
                        x.numel(), V, D, "embedding kernel launch");
  });
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(gather, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(index_select, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(take_along_axis, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(one_hot, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(masked_fill, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(embedding, cuda, float, double, ::pd::float16, ::pd::bfloat16)
