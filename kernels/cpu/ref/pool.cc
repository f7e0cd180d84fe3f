// Reference 2-D pooling (NCHW): max, average and adaptive average, with gradients.
// Output sizes come from the preallocated tensors; only the window rule is computed here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "cpu/common/max_pool_rule.h"
#include "cpu/common/parallel.h"
#include "cpu/ref/pool2x2_avx2.h"
#include "cpu/ref/sum_run.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"
#include "pd/kernels/pool_geometry.h"

namespace pd::kernels::reference {
namespace {

// Window [start, end) along one dim clipped to the padded input (for count_include_pad) and to the input.
struct Window {
  int64_t start, end;      // clipped to the real input
  int64_t padded_extent;   // extent clipped to the padded input
};

Window window(int64_t o, int64_t s, int64_t k, int64_t p, int64_t size) {
  const int64_t start = o * s - p;
  const int64_t end_padded = std::min(start + k, size + p);
  return {std::max<int64_t>(start, 0), std::min(start + k, size), end_padded - start};
}

using cpu::is_pool_max;
using cpu::keep_if;
using cpu::nan_max;

// Max of every window of output row `oh` (-inf where a window is all padding); NaN propagates, as in
// PyTorch. Rows of the window are first reduced elementwise into the padded row `tmp`, then each output
// column reduces its kw entries (max_pool_rule.h: a compare and a blend, no branch, which made pooling
// stop being the slowest part of a LeNet training step). `tmp` (padded_row_buffer) has the identity in
// the pw before the row and after it, so every column window is kw entries from ow * sw with no bounds
// to look up; f32 on AVX2 runs both steps 8 windows at a time (ResNet's 3x3 / stride 2 stem pool,
// 64 x 112 x 112: 1.2 -> 0.13 ms on 2 threads).
int64_t padded_width(const PoolGeom& g) { return std::max(g.W + 2 * g.pw, (g.oW - 1) * g.sw + g.kw); }

// A padded row for max_row, the identity in its padding and in 32 values beyond (the AVX2 column step
// reads up to 16 past its last window).
template <typename T>
T* padded_row_buffer(const PoolGeom& g) {
  thread_local std::vector<T> tmp;
  tmp.assign(static_cast<size_t>(padded_width(g) + 32), cpu::max_identity<T>());
  return tmp.data();
}

// acc[w] = max(acc[w], row[w]): its own function, so that the vectoriser sees two unaliased arrays.
template <typename T>
void max_into(T* __restrict acc, const T* __restrict row, int64_t n) {
  for (int64_t w = 0; w < n; ++w) acc[w] = nan_max(acc[w], row[w]);
}

template <typename T>
void max_row(const T* plane, const PoolGeom& g, int64_t oh, bool avx2, T* __restrict tmp, T* __restrict out_row) {
  const Window wh = window(oh, g.sh, g.kh, g.ph, g.H);
  std::fill(tmp + g.pw, tmp + g.pw + g.W, cpu::max_identity<T>());
  if constexpr (std::is_same_v<T, float>) {
    if (avx2) {
      for (int64_t h = wh.start; h < wh.end; ++h) max_into_avx2(tmp + g.pw, plane + h * g.W, g.W);
      if (g.sw == 2 && (g.kw == 2 || g.kw == 3)) return max_columns_stride2_avx2(tmp, g.kw, g.oW, out_row);
    }
  }
  if (!avx2)
    for (int64_t h = wh.start; h < wh.end; ++h) max_into(tmp + g.pw, plane + h * g.W, g.W);
  for (int64_t ow = 0; ow < g.oW; ++ow) {
    const T* __restrict t = tmp + ow * g.sw;
    T m = t[0];
    for (int64_t j = 1; j < g.kw; ++j) m = nan_max(m, t[j]);
    out_row[ow] = m;
  }
}

// 2x2 windows with stride 2 tiling the plane exactly (LeNet's pools): the AVX2 kernels' case.
bool tiles_2x2(const PoolGeom& g) {
  return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && 2 * g.oH == g.H && 2 * g.oW == g.W;
}

std::vector<Window> column_windows(const PoolGeom& g) {
  std::vector<Window> cols(static_cast<size_t>(g.oW));
  for (int64_t ow = 0; ow < g.oW; ++ow) cols[ow] = window(ow, g.sw, g.kw, g.pw, g.W);
  return cols;
}

// Divisor of one average window: exclusive counts real input elements only.
int64_t avg_divisor(const PoolGeom& g, int64_t oh, int64_t ow, bool exclusive) {
  const Window wh = window(oh, g.sh, g.kh, g.ph, g.H), ww = window(ow, g.sw, g.kw, g.pw, g.W);
  if (exclusive) return std::max<int64_t>(wh.end - wh.start, 0) * std::max<int64_t>(ww.end - ww.start, 0);
  return wh.padded_extent * ww.padded_extent;
}

int64_t bin_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
int64_t bin_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

}  // namespace

template <typename T>
void max_pool2d(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                const std::vector<int64_t>& padding, bool ceil_mode, Tensor& out) {
  const PoolGeom g = make_pool_geom(x.shape(), out.shape(), kernel_size, stride, padding);
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    if (tiles_2x2(g) && cpu_has_avx2_fma()) {
      cpu::parallel_for(g.planes, g.H * g.W, [&](int64_t p) {
        max_pool2x2_plane_avx2(xd + p * g.H * g.W, g.H, g.W, od + p * g.oH * g.oW);
      });
      return;
    }
  }
  if constexpr (std::is_integral_v<T>) {
    if (tiles_2x2(g)) {  // int8 LeNet's pool: no NaN, so a plain max of 4, over all rows of all planes
      cpu::parallel_for(g.planes, g.H * g.W, [&](int64_t p) {
        for (int64_t oh = 0; oh < g.oH; ++oh) {
          const T* r0 = xd + (p * g.H + 2 * oh) * g.W;
          const T* r1 = r0 + g.W;
          T* o = od + (p * g.oH + oh) * g.oW;
          for (int64_t ow = 0; ow < g.oW; ++ow)
            o[ow] = std::max(std::max(r0[2 * ow], r0[2 * ow + 1]), std::max(r1[2 * ow], r1[2 * ow + 1]));
        }
      });
      return;
    }
  }
  const bool avx2 = std::is_same_v<T, float> && cpu_has_avx2_fma();
  cpu::parallel_for(g.planes, g.H * g.W, [&](int64_t p) {
    T* tmp = padded_row_buffer<T>(g);
    for (int64_t oh = 0; oh < g.oH; ++oh) max_row(xd + p * g.H * g.W, g, oh, avx2, tmp, od + (p * g.oH + oh) * g.oW);
  });
}

// The gradient goes to the first maximum of each window (row-major), found branch-free against the
// recomputed window max; the other elements get 0.
template <typename T>
void max_pool2d_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, const std::vector<int64_t>& kernel_size,
                     const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode,
                     Tensor& dx) {
  const PoolGeom g = make_pool_geom(x.shape(), grad.shape(), kernel_size, stride, padding);
  const T* xd = x.data<T>();
  const T* gd = grad.data<T>();
  T* dd = dx.data<T>();
  // The AVX2 kernel, 2x faster on [64, 6, 28, 28] (0.33 -> 0.16 ms).
  if constexpr (std::is_same_v<T, float>) {
    if (tiles_2x2(g) && cpu_has_avx2_fma()) {
      cpu::parallel_for(g.planes, g.H * g.W, [&](int64_t p) {
        max_pool2x2_grad_plane_avx2(xd + p * g.H * g.W, gd + p * g.oH * g.oW, g.H, g.W, dd + p * g.H * g.W);
      });
      return;
    }
  }
  const std::vector<Window> cols = column_windows(g);
  const bool avx2 = std::is_same_v<T, float> && cpu_has_avx2_fma();
  cpu::parallel_for(g.planes, g.H * g.W, [&](int64_t p) {
    T* tmp = padded_row_buffer<T>(g);
    thread_local std::vector<T> maxes;
    maxes.resize(static_cast<size_t>(g.oW));
    std::fill(dd + p * g.H * g.W, dd + (p + 1) * g.H * g.W, T(0));
    const T* plane = xd + p * g.H * g.W;
    T* dplane = dd + p * g.H * g.W;
    for (int64_t oh = 0; oh < g.oH; ++oh) {
      max_row(plane, g, oh, avx2, tmp, maxes.data());
      const Window wh = window(oh, g.sh, g.kh, g.ph, g.H);
      const T* grow = gd + (p * g.oH + oh) * g.oW;
      for (int64_t ow = 0; ow < g.oW; ++ow) {
        const T m = maxes[ow], gv = grow[ow];
        int found = 0;
        for (int64_t h = wh.start; h < wh.end; ++h)
          for (int64_t w = cols[ow].start; w < cols[ow].end; ++w) {
            const T v = plane[h * g.W + w];
            const int hit = (1 - found) & static_cast<int>(is_pool_max(v, m));
            dplane[h * g.W + w] += keep_if(hit, gv);
            found |= hit;
          }
      }
    }
  });
}

template <typename T>
void avg_pool2d(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                const std::vector<int64_t>& padding, bool ceil_mode, bool exclusive, Tensor& out) {
  const PoolGeom g = make_pool_geom(x.shape(), out.shape(), kernel_size, stride, padding);
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* plane = xd + p * g.H * g.W;
    for (int64_t oh = 0; oh < g.oH; ++oh)
      for (int64_t ow = 0; ow < g.oW; ++ow) {
        const Window wh = window(oh, g.sh, g.kh, g.ph, g.H), ww = window(ow, g.sw, g.kw, g.pw, g.W);
        T sum = 0;
        for (int64_t h = wh.start; h < wh.end; ++h)
          for (int64_t w = ww.start; w < ww.end; ++w) sum += plane[h * g.W + w];
        // An empty window divides 0 by 0; PyTorch gives NaN there too.
        od[(p * g.oH + oh) * g.oW + ow] = sum / static_cast<T>(avg_divisor(g, oh, ow, exclusive));
      }
  }
}

template <typename T>
void avg_pool2d_grad(const KernelContext& ctx, const Tensor& grad, const std::vector<int64_t>& input_shape,
                     const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                     const std::vector<int64_t>& padding, bool ceil_mode, bool exclusive, Tensor& dx) {
  const PoolGeom g = make_pool_geom(dx.shape(), grad.shape(), kernel_size, stride, padding);
  const T* gd = grad.data<T>();
  T* dd = dx.data<T>();
  std::fill(dd, dd + dx.numel(), T(0));
  for (int64_t p = 0; p < g.planes; ++p) {
    T* plane = dd + p * g.H * g.W;
    for (int64_t oh = 0; oh < g.oH; ++oh)
      for (int64_t ow = 0; ow < g.oW; ++ow) {
        const Window wh = window(oh, g.sh, g.kh, g.ph, g.H), ww = window(ow, g.sw, g.kw, g.pw, g.W);
        const int64_t div = avg_divisor(g, oh, ow, exclusive);
        if (div == 0) continue;
        const T v = gd[(p * g.oH + oh) * g.oW + ow] / static_cast<T>(div);
        for (int64_t h = wh.start; h < wh.end; ++h)
          for (int64_t w = ww.start; w < ww.end; ++w) plane[h * g.W + w] += v;
      }
  }
}

template <typename T>
void adaptive_avg_pool2d(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& output_size, Tensor& out) {
  const Shape& s = x.shape();
  const int64_t planes = s[0] * s[1], H = s[2], W = s[3];
  const int64_t oH = out.shape()[2], oW = out.shape()[3];
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  // Planes across threads; each bin row is a contiguous run summed in double by 8 chains (a global
  // pool's 7x7 plane is one run of 49 values).
  cpu::parallel_for(planes, H * W, [&](int64_t p) {
    const T* plane = xd + p * H * W;
    for (int64_t i = 0; i < oH; ++i) {
      const int64_t h0 = bin_start(i, H, oH), h1 = bin_end(i, H, oH);
      for (int64_t j = 0; j < oW; ++j) {
        const int64_t w0 = bin_start(j, W, oW), w1 = bin_end(j, W, oW);
        double sum = 0;
        if (w0 == 0 && w1 == W) sum = sum_run(plane + h0 * W, (h1 - h0) * W);  // whole rows: one run
        else
          for (int64_t h = h0; h < h1; ++h) sum += sum_run(plane + h * W + w0, w1 - w0);
        od[(p * oH + i) * oW + j] = static_cast<T>(sum / static_cast<double>((h1 - h0) * (w1 - w0)));
      }
    }
  });
}

template <typename T>
void adaptive_avg_pool2d_grad(const KernelContext& ctx, const Tensor& grad, const std::vector<int64_t>& input_shape, Tensor& dx) {
  const Shape& s = dx.shape();
  const int64_t planes = s[0] * s[1], H = s[2], W = s[3];
  const int64_t oH = grad.shape()[2], oW = grad.shape()[3];
  const T* gd = grad.data<T>();
  T* dd = dx.data<T>();
  std::fill(dd, dd + dx.numel(), T(0));
  for (int64_t p = 0; p < planes; ++p) {
    T* plane = dd + p * H * W;
    for (int64_t i = 0; i < oH; ++i) {
      const int64_t h0 = bin_start(i, H, oH), h1 = bin_end(i, H, oH);
      for (int64_t j = 0; j < oW; ++j) {
        const int64_t w0 = bin_start(j, W, oW), w1 = bin_end(j, W, oW);
        const int64_t count = (h1 - h0) * (w1 - w0);
        if (count == 0) continue;
        const T v = gd[(p * oH + i) * oW + j] / static_cast<T>(count);
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) plane[h * W + w] += v;
      }
    }
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(max_pool2d, reference, float, double, uint8_t, int8_t)
PD_INSTANTIATE_KERNELS(max_pool2d_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(avg_pool2d, reference, float, double)
PD_INSTANTIATE_KERNELS(avg_pool2d_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(adaptive_avg_pool2d, reference, float, double)
PD_INSTANTIATE_KERNELS(adaptive_avg_pool2d_grad, reference, float, double)
