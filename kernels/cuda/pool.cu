// 2-D pooling on CUDA (NCHW): max, average and adaptive average, with gradients. The window rules are
// those of kernels/cpu/ref/pool.cc (and, for max, kernels/cpu/common/max_pool_rule.h): the same window
// clipping and divisors, NaN propagating through the max, and the max gradient going to the first
// maximum of each window in row-major order. Forward kernels run one thread per output element;
// gradient kernels one thread per input element, gathering from the windows that contain it in the
// reference's order (so the f32 / f64 results match it bit for bit, and no atomics are needed).
// Arithmetic runs in acc_t<T> (float for f16 / bf16).
#include <cmath>

#include "cuda/cuda_common.cuh"
#include "pd/kernels/pool_geometry.h"

namespace pd::kernels::cuda {
namespace {

// One window along one dim: [start, end) clipped to the input, and its extent clipped to the padded
// input (the count_include_pad divisor).
struct Win {
  int64_t start, end, padded_extent;
};

__device__ __forceinline__ Win window(int64_t o, int64_t s, int64_t k, int64_t p, int64_t size) {
  const int64_t start = o * s - p;
  const int64_t end_padded = ::min(start + k, size + p);
  return {::max(start, int64_t(0)), ::min(start + k, size), end_padded - start};
}

// The outputs o whose window [o*s - p, o*s - p + k) contains input index i, as [lo, hi] (empty if lo > hi).
__device__ __forceinline__ void covering(int64_t i, int64_t s, int64_t k, int64_t p, int64_t out_size, int64_t& lo,
                                         int64_t& hi) {
  const int64_t a = i + p;  // >= 0
  lo = a < k ? 0 : (a - k) / s + 1;
  hi = ::min(a / s, out_size - 1);
}

__device__ __forceinline__ int64_t avg_divisor(const Win& wh, const Win& ww, bool exclusive) {
  if (exclusive) return ::max(wh.end - wh.start, int64_t(0)) * ::max(ww.end - ww.start, int64_t(0));
  return wh.padded_extent * ww.padded_extent;
}

// max_pool_rule.h in device form. The running max: NaN wins and sticks.
template <typename A>
__device__ __forceinline__ A nan_max(A m, A v) {
  return ((v > m) || (v != v)) ? v : m;
}
template <typename A>
__device__ __forceinline__ bool is_pool_max(A v, A m) {
  return (v == m) || ((v != v) && (m != m));
}

// The max of one window, visiting it in the reference's order (each column reduced over rows first,
// then the columns left to right), so that even the sign of a zero maximum agrees. -inf if empty.
template <typename A, typename D>
__device__ __forceinline__ A window_max(const D* __restrict__ plane, int64_t W, const Win& wh, const Win& ww) {
  A m = -INFINITY;
  for (int64_t w = ww.start; w < ww.end; ++w) {
    A c = -INFINITY;
    for (int64_t h = wh.start; h < wh.end; ++h) c = nan_max(c, load_as<A>(plane[h * W + w]));
    m = nan_max(m, c);
  }
  return m;
}

template <typename D, typename A>
__global__ void max_pool_kernel(const D* __restrict__ x, D* __restrict__ out, PoolGeom g, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    const int64_t ow = i % g.oW, oh = (i / g.oW) % g.oH, p = i / (g.oW * g.oH);
    const Win wh = window(oh, g.sh, g.kh, g.ph, g.H), ww = window(ow, g.sw, g.kw, g.pw, g.W);
    out[i] = store_as<D>(window_max<A>(x + p * g.H * g.W, g.W, wh, ww));
  }
}

// dx at one input element: the sum, over the windows (in (oh, ow) order) whose first maximum it is, of
// their incoming gradient.
template <typename D, typename A>
__global__ void max_pool_grad_kernel(const D* __restrict__ x, const D* __restrict__ grad, D* __restrict__ dx, PoolGeom g,
                                     int64_t n) {
  PD_GRID_STRIDE(i, n) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H, p = i / (g.W * g.H);
    const D* plane = x + p * g.H * g.W;
    const D* gplane = grad + p * g.oH * g.oW;
    int64_t oh0, oh1, ow0, ow1;
    covering(h, g.sh, g.kh, g.ph, g.oH, oh0, oh1);
    covering(w, g.sw, g.kw, g.pw, g.oW, ow0, ow1);
    A acc = 0;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      const Win wh = window(oh, g.sh, g.kh, g.ph, g.H);
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const Win ww = window(ow, g.sw, g.kw, g.pw, g.W);
        const A m = window_max<A>(plane, g.W, wh, ww);
        // The first element of the window, row-major, that is the max.
        int64_t first = -1;
        for (int64_t hh = wh.start; hh < wh.end && first < 0; ++hh)
          for (int64_t ww2 = ww.start; ww2 < ww.end; ++ww2)
            if (is_pool_max(load_as<A>(plane[hh * g.W + ww2]), m)) {
              first = hh * g.W + ww2;
              break;
            }
        if (first == h * g.W + w) acc += load_as<A>(gplane[oh * g.oW + ow]);
      }
    }
    dx[i] = store_as<D>(acc);
  }
}

template <typename D, typename A>
__global__ void avg_pool_kernel(const D* __restrict__ x, D* __restrict__ out, PoolGeom g, bool exclusive, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    const int64_t ow = i % g.oW, oh = (i / g.oW) % g.oH, p = i / (g.oW * g.oH);
    const Win wh = window(oh, g.sh, g.kh, g.ph, g.H), ww = window(ow, g.sw, g.kw, g.pw, g.W);
    const D* plane = x + p * g.H * g.W;
    A sum = 0;
    for (int64_t h = wh.start; h < wh.end; ++h)
      for (int64_t w = ww.start; w < ww.end; ++w) sum += load_as<A>(plane[h * g.W + w]);
    // An empty window divides 0 by 0 (NaN), as the reference and PyTorch do.
    out[i] = store_as<D>(sum / static_cast<A>(avg_divisor(wh, ww, exclusive)));
  }
}

template <typename D, typename A>
__global__ void avg_pool_grad_kernel(const D* __restrict__ grad, D* __restrict__ dx, PoolGeom g, bool exclusive, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H, p = i / (g.W * g.H);
    const D* gplane = grad + p * g.oH * g.oW;
    int64_t oh0, oh1, ow0, ow1;
    covering(h, g.sh, g.kh, g.ph, g.oH, oh0, oh1);
    covering(w, g.sw, g.kw, g.pw, g.oW, ow0, ow1);
    A acc = 0;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      const Win wh = window(oh, g.sh, g.kh, g.ph, g.H);
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const Win ww = window(ow, g.sw, g.kw, g.pw, g.W);
        const int64_t div = avg_divisor(wh, ww, exclusive);
        if (div == 0) continue;
        acc += load_as<A>(gplane[oh * g.oW + ow]) / static_cast<A>(div);
      }
    }
    dx[i] = store_as<D>(acc);
  }
}

// Adaptive bins as in PyTorch: bin i of `out` over `in` is [floor(i*in/out), ceil((i+1)*in/out)).
__device__ __forceinline__ int64_t bin_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
__device__ __forceinline__ int64_t bin_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

// The bins containing input index h form a contiguous range around h*out/in; search one either side of
// the closed-form bounds and keep only the bins that really contain h.
__device__ __forceinline__ void covering_bins(int64_t h, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = ::max((h * out) / in - 1, int64_t(0));
  hi = ::min(((h + 1) * out + in - 1) / in, out - 1);
}

template <typename D, typename A>
__global__ void adaptive_avg_pool_kernel(const D* __restrict__ x, D* __restrict__ out, int64_t H, int64_t W, int64_t oH,
                                         int64_t oW, int64_t n) {
  PD_GRID_STRIDE(k, n) {
    const int64_t j = k % oW, i = (k / oW) % oH, p = k / (oW * oH);
    const int64_t h0 = bin_start(i, H, oH), h1 = bin_end(i, H, oH);
    const int64_t w0 = bin_start(j, W, oW), w1 = bin_end(j, W, oW);
    const D* plane = x + p * H * W;
    A sum = 0;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t w = w0; w < w1; ++w) sum += load_as<A>(plane[h * W + w]);
    out[k] = store_as<D>(sum / static_cast<A>((h1 - h0) * (w1 - w0)));
  }
}

template <typename D, typename A>
__global__ void adaptive_avg_pool_grad_kernel(const D* __restrict__ grad, D* __restrict__ dx, int64_t H, int64_t W,
                                              int64_t oH, int64_t oW, int64_t n) {
  PD_GRID_STRIDE(k, n) {
    const int64_t w = k % W, h = (k / W) % H, p = k / (W * H);
    const D* gplane = grad + p * oH * oW;
    int64_t i0, i1, j0, j1;
    covering_bins(h, H, oH, i0, i1);
    covering_bins(w, W, oW, j0, j1);
    A acc = 0;
    for (int64_t i = i0; i <= i1; ++i) {
      const int64_t h0 = bin_start(i, H, oH), h1 = bin_end(i, H, oH);
      if (h < h0 || h >= h1) continue;
      for (int64_t j = j0; j <= j1; ++j) {
        const int64_t w0 = bin_start(j, W, oW), w1 = bin_end(j, W, oW);
        if (w < w0 || w >= w1) continue;
        const int64_t count = (h1 - h0) * (w1 - w0);
        if (count == 0) continue;
        acc += load_as<A>(gplane[i * oW + j]) / static_cast<A>(count);
      }
    }
    dx[k] = store_as<D>(acc);
  }
}

}  // namespace

template <typename T>
void max_pool2d(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& kernel_size,
                const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const PoolGeom g = make_pool_geom(x.shape(), out.shape(), kernel_size, stride, padding);
  max_pool_kernel<dev_t<T>, acc_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(x), dptr<T>(out), g, n);
  PD_CUDA_CHECK_LAUNCH("max_pool2d");
}

template <typename T>
void max_pool2d_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, const std::vector<int64_t>& kernel_size,
                     const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode,
                     Tensor& dx) {
  const int64_t n = dx.numel();
  if (n == 0) return;
  const PoolGeom g = make_pool_geom(x.shape(), grad.shape(), kernel_size, stride, padding);
  max_pool_grad_kernel<dev_t<T>, acc_t<T>>
      <<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(x), dptr<T>(grad), dptr<T>(dx), g, n);
  PD_CUDA_CHECK_LAUNCH("max_pool2d_grad");
}

template <typename T>
void avg_pool2d(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& kernel_size,
                const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode, bool exclusive,
                Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const PoolGeom g = make_pool_geom(x.shape(), out.shape(), kernel_size, stride, padding);
  avg_pool_kernel<dev_t<T>, acc_t<T>>
      <<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(x), dptr<T>(out), g, exclusive, n);
  PD_CUDA_CHECK_LAUNCH("avg_pool2d");
}

template <typename T>
void avg_pool2d_grad(const KernelContext& ctx, const Tensor& grad, const std::vector<int64_t>& input_shape,
                     const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                     const std::vector<int64_t>& padding, bool ceil_mode, bool exclusive, Tensor& dx) {
  const int64_t n = dx.numel();
  if (n == 0) return;
  const PoolGeom g = make_pool_geom(dx.shape(), grad.shape(), kernel_size, stride, padding);
  avg_pool_grad_kernel<dev_t<T>, acc_t<T>>
      <<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(grad), dptr<T>(dx), g, exclusive, n);
  PD_CUDA_CHECK_LAUNCH("avg_pool2d_grad");
}

template <typename T>
void adaptive_avg_pool2d(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& output_size, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Shape& s = x.shape();
  adaptive_avg_pool_kernel<dev_t<T>, acc_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
      dptr<T>(x), dptr<T>(out), s[2], s[3], out.shape()[2], out.shape()[3], n);
  PD_CUDA_CHECK_LAUNCH("adaptive_avg_pool2d");
}

template <typename T>
void adaptive_avg_pool2d_grad(const KernelContext& ctx, const Tensor& grad, const std::vector<int64_t>& input_shape,
                              Tensor& dx) {
  const int64_t n = dx.numel();
  if (n == 0) return;
  const Shape& s = dx.shape();
  const int64_t oH = grad.shape()[2], oW = grad.shape()[3];
  if (grad.numel() == 0) {  // no bins: nothing flows back
    PD_CUDA_CHECK(cudaMemsetAsync(dx.raw_data(), 0, static_cast<size_t>(n) * sizeof(T), stream_of(ctx)));
    return;
  }
  adaptive_avg_pool_grad_kernel<dev_t<T>, acc_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
      dptr<T>(grad), dptr<T>(dx), s[2], s[3], oH, oW, n);
  PD_CUDA_CHECK_LAUNCH("adaptive_avg_pool2d_grad");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(max_pool2d, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(max_pool2d_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(avg_pool2d, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(avg_pool2d_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(adaptive_avg_pool2d, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(adaptive_avg_pool2d_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
