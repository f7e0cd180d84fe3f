// max_pool2d_nhwc on CUDA: max pooling over [N, H, W, C] (channels innermost) into [N, oH, oW, C], as
// kernels/cpu/ref/pool_nhwc.cc. One thread per output element, consecutive threads on consecutive
// channels, so every window tap is a coalesced read of a pixel's channel run. Padding taps are skipped
// (they count as the dtype's lowest value, which never wins: the shape rule keeps every window on at
// least one real pixel). Floats follow max_pool2d's rule (kernels/cpu/common/max_pool_rule.h): NaN wins
// and sticks, and of equal values the first in row-major window order stays, so the result is the
// reference's bit for bit.
#include <limits>
#include <type_traits>

#include "cuda/cuda_common.cuh"
#include "pd/kernels/spatial_arg.h"

namespace pd::kernels::cuda {
namespace {

struct NhwcPool {
  int64_t H, W, C, oH, oW, kh, kw, sh, sw, ph, pw;
};

template <typename D>
__global__ void max_pool_nhwc_kernel(const D* __restrict__ x, D* __restrict__ out, NhwcPool g, int64_t total) {
  PD_GRID_STRIDE(i, total) {
    const int64_t c = i % g.C, pix = i / g.C, ow = pix % g.oW, row = pix / g.oW, oh = row % g.oH, n = row / g.oH;
    const int64_t hs = oh * g.sh - g.ph, ws = ow * g.sw - g.pw;
    const int64_t h0 = ::max(hs, int64_t(0)), h1 = ::min(hs + g.kh, g.H);
    const int64_t w0 = ::max(ws, int64_t(0)), w1 = ::min(ws + g.kw, g.W);
    D m;
    if constexpr (std::is_floating_point_v<D>) m = -std::numeric_limits<D>::infinity();
    else m = std::numeric_limits<D>::lowest();
    for (int64_t h = h0; h < h1; ++h) {
      const D* rowp = x + ((n * g.H + h) * g.W) * g.C + c;
      for (int64_t w = w0; w < w1; ++w) {
        const D v = rowp[w * g.C];
        if constexpr (std::is_floating_point_v<D>) m = ((v > m) || (v != v)) ? v : m;
        else m = v > m ? v : m;
      }
    }
    out[i] = m;
  }
}

}  // namespace

template <typename T>
void max_pool2d_nhwc(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& kernel_size,
                     const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode,
                     Tensor& out) {
  const int64_t total = out.numel();
  if (total == 0) return;
  const Shape& xs = x.shape();
  NhwcPool g{};
  const size_t d = xs.size() - 3;  // [N, H, W, C], or channel blocks [N, G, H, W, L]: N G images
  g.H = xs[d], g.W = xs[d + 1], g.C = xs[d + 2], g.oH = out.shape()[d], g.oW = out.shape()[d + 1];
  g.kh = spatial_arg(kernel_size, 0, 1), g.kw = spatial_arg(kernel_size, 1, 1);
  g.sh = spatial_arg(stride, 0, g.kh), g.sw = spatial_arg(stride, 1, g.kw);
  g.ph = spatial_arg(padding, 0, 0), g.pw = spatial_arg(padding, 1, 0);
  max_pool_nhwc_kernel<dev_t<T>><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(dptr<T>(x), dptr<T>(out), g, total);
  PD_CUDA_CHECK_LAUNCH("max_pool2d_nhwc");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(max_pool2d_nhwc, cuda, float, double, uint8_t, int8_t)
