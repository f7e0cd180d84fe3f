// interpolate and its gradient on CUDA (NCHW): one thread per output element forward, one per input
// element backward, gathering from the outputs that read it in output order. The taps come from
// pd/kernels/interp_geometry.h, as the CPU kernel's do, so both read the same elements with the same
// weights, and sum in the same order; arithmetic in acc_t<T> (float for f16 / bf16).
#include "cuda/cuda_common.cuh"
#include "pd/kernels/interp_geometry.h"

namespace pd::kernels::cuda {
namespace {

template <typename D, typename A>
__global__ void interpolate_kernel(const D* __restrict__ x, D* __restrict__ out, InterpGeom g, int64_t n) {
  PD_GRID_STRIDE(k, n) {
    const int64_t ow = k % g.w.out, oh = (k / g.w.out) % g.h.out, p = k / (g.w.out * g.h.out);
    const InterpTap h = interp_tap(g.h, g.mode, g.coord, g.round, oh), w = interp_tap(g.w, g.mode, g.coord, g.round, ow);
    const D* plane = x + p * g.h.in * g.w.in;
    const int64_t W = g.w.in;
    if (g.mode == InterpMode::nearest) {
      out[k] = plane[h.i0 * W + w.i0];
      continue;
    }
    const A lh = static_cast<A>(h.lambda), lw = static_cast<A>(w.lambda), one = 1;
    const A top = (one - lw) * load_as<A>(plane[h.i0 * W + w.i0]) + lw * load_as<A>(plane[h.i0 * W + w.i1]);
    const A bottom = (one - lw) * load_as<A>(plane[h.i1 * W + w.i0]) + lw * load_as<A>(plane[h.i1 * W + w.i1]);
    out[k] = store_as<D>((one - lh) * top + lh * bottom);
  }
}

template <typename D, typename A>
__global__ void interpolate_grad_kernel(const D* __restrict__ grad, D* __restrict__ dx, InterpGeom g, int64_t n) {
  PD_GRID_STRIDE(k, n) {
    const int64_t w = k % g.w.in, h = (k / g.w.in) % g.h.in, p = k / (g.w.in * g.h.in);
    const D* gp = grad + p * g.h.out * g.w.out;
    const int64_t oh0 = interp_first_reader(g.h, g.mode, g.coord, g.round, h);
    const int64_t ow0 = interp_first_reader(g.w, g.mode, g.coord, g.round, w);
    A acc = 0;
    for (int64_t oh = oh0; oh < g.h.out; ++oh) {
      const InterpTap th = interp_tap(g.h, g.mode, g.coord, g.round, oh);
      if (th.i0 > h) break;
      const A wh = interp_weight<A>(th, h);
      for (int64_t ow = ow0; ow < g.w.out; ++ow) {
        const InterpTap tw = interp_tap(g.w, g.mode, g.coord, g.round, ow);
        if (tw.i0 > w) break;
        acc += wh * interp_weight<A>(tw, w) * load_as<A>(gp[oh * g.w.out + ow]);
      }
    }
    dx[k] = store_as<D>(acc);
  }
}

// Bicubic: 4x4 taps, the H taps' blend of the W taps' blends (the CPU kernel's order).
template <typename D, typename A>
__global__ void bicubic_kernel(const D* __restrict__ x, D* __restrict__ out, InterpGeom g, int64_t n) {
  PD_GRID_STRIDE(k, n) {
    const int64_t ow = k % g.w.out, oh = (k / g.w.out) % g.h.out, p = k / (g.w.out * g.h.out);
    const CubicTap h = interp_cubic_tap(g.h, g.coord, oh), w = interp_cubic_tap(g.w, g.coord, ow);
    A wh[4], ww[4];
    cubic_weights<A>(h, g.cubic_a, wh);
    cubic_weights<A>(w, g.cubic_a, ww);
    const D* plane = x + p * g.h.in * g.w.in;
    A acc = 0;
    for (int j = 0; j < 4; ++j) {
      const D* row = plane + h.i[j] * g.w.in;
      A across = 0;
      for (int q = 0; q < 4; ++q) across += ww[q] * load_as<A>(row[w.i[q]]);
      acc += wh[j] * across;
    }
    out[k] = store_as<D>(acc);
  }
}

template <typename D, typename A>
__global__ void bicubic_grad_kernel(const D* __restrict__ grad, D* __restrict__ dx, InterpGeom g, int64_t n) {
  PD_GRID_STRIDE(k, n) {
    const int64_t w = k % g.w.in, h = (k / g.w.in) % g.h.in, p = k / (g.w.in * g.h.in);
    const D* gp = grad + p * g.h.out * g.w.out;
    const int64_t oh0 = cubic_first_reader(g.h, g.coord, h);
    const int64_t ow0 = cubic_first_reader(g.w, g.coord, w);
    A acc = 0;
    for (int64_t oh = oh0; oh < g.h.out; ++oh) {
      const CubicTap th = interp_cubic_tap(g.h, g.coord, oh);
      if (th.i[0] > h) break;
      const A wh = cubic_weight<A>(th, g.cubic_a, h);
      for (int64_t ow = ow0; ow < g.w.out; ++ow) {
        const CubicTap tw = interp_cubic_tap(g.w, g.coord, ow);
        if (tw.i[0] > w) break;
        acc += wh * cubic_weight<A>(tw, g.cubic_a, w) * load_as<A>(gp[oh * g.w.out + ow]);
      }
    }
    dx[k] = store_as<D>(acc);
  }
}

}  // namespace

template <typename T>
void interpolate(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& size, const std::vector<double>& scales,
                 const std::string& mode, const std::string& coordinate_mode, const std::string& nearest_mode, double cubic_coeff_a,
                 Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const InterpGeom g = make_interp_geom(x.shape(), out.shape(), scales, mode, coordinate_mode, nearest_mode, cubic_coeff_a);
  if (g.mode == InterpMode::bicubic) bicubic_kernel<dev_t<T>, acc_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(x), dptr<T>(out), g, n);
  else interpolate_kernel<dev_t<T>, acc_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(x), dptr<T>(out), g, n);
  PD_CUDA_CHECK_LAUNCH("interpolate");
}

template <typename T>
void interpolate_grad(const KernelContext& ctx, const Tensor& grad, const std::vector<int64_t>& input_shape,
                      const std::vector<double>& scales, const std::string& mode, const std::string& coordinate_mode,
                      const std::string& nearest_mode, double cubic_coeff_a, Tensor& dx) {
  const int64_t n = dx.numel();
  if (n == 0) return;
  const InterpGeom g = make_interp_geom(dx.shape(), grad.shape(), scales, mode, coordinate_mode, nearest_mode, cubic_coeff_a);
  if (g.mode == InterpMode::bicubic) bicubic_grad_kernel<dev_t<T>, acc_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(grad), dptr<T>(dx), g, n);
  else interpolate_grad_kernel<dev_t<T>, acc_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(grad), dptr<T>(dx), g, n);
  PD_CUDA_CHECK_LAUNCH("interpolate_grad");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(interpolate, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(interpolate_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
