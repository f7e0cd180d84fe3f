// Reference 2-D pooling (NCHW): max, average and adaptive average, with gradients.
// Output sizes come from the preallocated tensors; only the window rule is computed here.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels.h"

namespace pd::kernels::reference {
namespace {

struct PoolGeom {
  int64_t planes, H, W, oH, oW, kh, kw, sh, sw, ph, pw;
};

int64_t pick(const std::vector<int64_t>& v, size_t i, int64_t dflt) {
  if (v.empty()) return dflt;
  return v.size() == 1 ? v[0] : v[i];
}

// `in` is [N, C, H, W]; `o` is the output (or incoming grad) shape. stride [] means stride = kernel.
PoolGeom make_geom(const Shape& in, const Shape& o, const std::vector<int64_t>& kernel_size,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding) {
  PoolGeom g{};
  g.planes = in[0] * in[1];
  g.H = in[2];
  g.W = in[3];
  g.oH = o[2];
  g.oW = o[3];
  g.kh = pick(kernel_size, 0, 1);
  g.kw = pick(kernel_size, 1, 1);
  g.sh = pick(stride, 0, g.kh);
  g.sw = pick(stride, 1, g.kw);
  g.ph = pick(padding, 0, 0);
  g.pw = pick(padding, 1, 0);
  return g;
}

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

// Flat index (within the plane) of the first maximum of the window; -1 if the window is all padding.
// NaN wins, as in PyTorch, so it propagates.
template <typename T>
int64_t argmax_window(const T* plane, const PoolGeom& g, int64_t oh, int64_t ow) {
  const Window wh = window(oh, g.sh, g.kh, g.ph, g.H), ww = window(ow, g.sw, g.kw, g.pw, g.W);
  int64_t best = -1;
  T bv = -std::numeric_limits<T>::infinity();
  for (int64_t h = wh.start; h < wh.end; ++h)
    for (int64_t w = ww.start; w < ww.end; ++w) {
      const T v = plane[h * g.W + w];
      if (best < 0 || v > bv || (std::isnan(v) && !std::isnan(bv))) {
        best = h * g.W + w;
        bv = v;
      }
    }
  return best;
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
void max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                const std::vector<int64_t>& padding, bool ceil_mode, Tensor& out) {
  const PoolGeom g = make_geom(x.shape(), out.shape(), kernel_size, stride, padding);
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* plane = xd + p * g.H * g.W;
    for (int64_t oh = 0; oh < g.oH; ++oh)
      for (int64_t ow = 0; ow < g.oW; ++ow) {
        const int64_t idx = argmax_window(plane, g, oh, ow);
        od[(p * g.oH + oh) * g.oW + ow] = idx < 0 ? -std::numeric_limits<T>::infinity() : plane[idx];
      }
  }
}

template <typename T>
void max_pool2d_grad(const Tensor& x, const Tensor& grad, const std::vector<int64_t>& kernel_size,
                     const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode,
                     Tensor& dx) {
  const PoolGeom g = make_geom(x.shape(), grad.shape(), kernel_size, stride, padding);
  const T* xd = x.data<T>();
  const T* gd = grad.data<T>();
  T* dd = dx.data<T>();
  std::fill(dd, dd + dx.numel(), T(0));
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* plane = xd + p * g.H * g.W;
    for (int64_t oh = 0; oh < g.oH; ++oh)
      for (int64_t ow = 0; ow < g.oW; ++ow) {
        const int64_t idx = argmax_window(plane, g, oh, ow);
        if (idx >= 0) dd[p * g.H * g.W + idx] += gd[(p * g.oH + oh) * g.oW + ow];
      }
  }
}

template <typename T>
void avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                const std::vector<int64_t>& padding, bool ceil_mode, bool exclusive, Tensor& out) {
  const PoolGeom g = make_geom(x.shape(), out.shape(), kernel_size, stride, padding);
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
void avg_pool2d_grad(const Tensor& grad, const std::vector<int64_t>& input_shape,
                     const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                     const std::vector<int64_t>& padding, bool ceil_mode, bool exclusive, Tensor& dx) {
  const PoolGeom g = make_geom(dx.shape(), grad.shape(), kernel_size, stride, padding);
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
void adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size, Tensor& out) {
  const Shape& s = x.shape();
  const int64_t planes = s[0] * s[1], H = s[2], W = s[3];
  const int64_t oH = out.shape()[2], oW = out.shape()[3];
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  for (int64_t p = 0; p < planes; ++p) {
    const T* plane = xd + p * H * W;
    for (int64_t i = 0; i < oH; ++i) {
      const int64_t h0 = bin_start(i, H, oH), h1 = bin_end(i, H, oH);
      for (int64_t j = 0; j < oW; ++j) {
        const int64_t w0 = bin_start(j, W, oW), w1 = bin_end(j, W, oW);
        T sum = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) sum += plane[h * W + w];
        od[(p * oH + i) * oW + j] = sum / static_cast<T>((h1 - h0) * (w1 - w0));
      }
    }
  }
}

template <typename T>
void adaptive_avg_pool2d_grad(const Tensor& grad, const std::vector<int64_t>& input_shape, Tensor& dx) {
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

PD_INSTANTIATE_KERNELS(max_pool2d, reference, float, double)
PD_INSTANTIATE_KERNELS(max_pool2d_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(avg_pool2d, reference, float, double)
PD_INSTANTIATE_KERNELS(avg_pool2d_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(adaptive_avg_pool2d, reference, float, double)
PD_INSTANTIATE_KERNELS(adaptive_avg_pool2d_grad, reference, float, double)
