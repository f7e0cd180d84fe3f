// interpolate and its gradient on NCHW (ops.yaml). The taps of each axis are worked out once per call
// (pd/kernels/interp_geometry.h, shared with the CUDA kernels); each output row then reads one or two
// input rows. The gradient gathers: each input element sums the outputs that read it in output order,
// as the CUDA kernel does, so the two agree and no two threads write one element.
#include <vector>

#include "cpu/common/parallel.h"
#include "kernels.h"
#include "pd/kernels/interp_geometry.h"

namespace pd::kernels::reference {
namespace {

std::vector<InterpTap> taps_of(const InterpGeom& g, const InterpAxis& a) {
  std::vector<InterpTap> t(static_cast<size_t>(a.out));
  for (int64_t o = 0; o < a.out; ++o) t[o] = interp_tap(a, g.mode, g.coord, g.round, o);
  return t;
}

// For each input index along the axis, the outputs that read it: [first, end).
struct Readers {
  std::vector<int64_t> first, end;
};

Readers readers_of(const InterpAxis& a, const std::vector<InterpTap>& taps) {
  Readers r{std::vector<int64_t>(static_cast<size_t>(a.in)), std::vector<int64_t>(static_cast<size_t>(a.in))};
  for (int64_t i = 0; i < a.in; ++i) {
    int64_t o = 0;
    while (o < a.out && taps[o].i1 < i) ++o;  // the axes are short; the CUDA kernel bisects
    r.first[i] = o;
    while (o < a.out && taps[o].i0 <= i) ++o;
    r.end[i] = o;
  }
  return r;
}

}  // namespace

template <typename T>
void interpolate(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& size, const std::vector<double>& scales,
                 const std::string& mode, const std::string& coordinate_mode, const std::string& nearest_mode, Tensor& out) {
  if (out.numel() == 0) return;
  const InterpGeom g = make_interp_geom(x.shape(), out.shape(), scales, mode, coordinate_mode, nearest_mode);
  const std::vector<InterpTap> th = taps_of(g, g.h), tw = taps_of(g, g.w);
  const int64_t H = g.h.in, W = g.w.in, oH = g.h.out, oW = g.w.out;
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  cpu::parallel_for(g.planes * oH, oW * 4, [&](int64_t r) {
    const int64_t p = r / oH, oh = r % oH;
    const InterpTap& h = th[oh];
    const T* row0 = xd + (p * H + h.i0) * W;
    T* o = od + r * oW;
    if (g.mode == InterpMode::nearest) {
      for (int64_t ow = 0; ow < oW; ++ow) o[ow] = row0[tw[ow].i0];
      return;
    }
    const T* row1 = xd + (p * H + h.i1) * W;
    const T lh = static_cast<T>(h.lambda);
    for (int64_t ow = 0; ow < oW; ++ow) {
      const InterpTap& w = tw[ow];
      const T lw = static_cast<T>(w.lambda);
      const T top = (T(1) - lw) * row0[w.i0] + lw * row0[w.i1], bottom = (T(1) - lw) * row1[w.i0] + lw * row1[w.i1];
      o[ow] = (T(1) - lh) * top + lh * bottom;
    }
  });
}

template <typename T>
void interpolate_grad(const KernelContext& ctx, const Tensor& grad, const std::vector<int64_t>& input_shape,
                      const std::vector<double>& scales, const std::string& mode, const std::string& coordinate_mode,
                      const std::string& nearest_mode, Tensor& dx) {
  if (dx.numel() == 0) return;
  const InterpGeom g = make_interp_geom(dx.shape(), grad.shape(), scales, mode, coordinate_mode, nearest_mode);
  const std::vector<InterpTap> th = taps_of(g, g.h), tw = taps_of(g, g.w);
  const Readers rh = readers_of(g.h, th), rw = readers_of(g.w, tw);
  const int64_t H = g.h.in, W = g.w.in, oH = g.h.out, oW = g.w.out;
  const T* gd = grad.data<T>();
  T* dd = dx.data<T>();
  cpu::parallel_for(g.planes * H, W * 8, [&](int64_t r) {
    const int64_t p = r / H, h = r % H;
    const T* gp = gd + p * oH * oW;
    for (int64_t w = 0; w < W; ++w) {
      T acc = 0;
      for (int64_t oh = rh.first[h]; oh < rh.end[h]; ++oh) {
        const T wh = interp_weight<T>(th[oh], h);
        for (int64_t ow = rw.first[w]; ow < rw.end[w]; ++ow) acc += wh * interp_weight<T>(tw[ow], w) * gp[oh * oW + ow];
      }
      dd[r * W + w] = acc;
    }
  });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(interpolate, reference, float, double)
PD_INSTANTIATE_KERNELS(interpolate_grad, reference, float, double)
