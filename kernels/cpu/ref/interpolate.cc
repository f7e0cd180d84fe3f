// interpolate and its gradient on NCHW (ops.yaml). The taps of each axis are worked out once per call
// (pd/kernels/interp_geometry.h, shared with the CUDA kernels); each output row then reads one input row
// (nearest), blends two resized along W (bilinear) or sums 4x4 taps (bicubic). The gradient gathers:
// each input element sums the outputs that read it in output order, as the CUDA kernel does, so the two
// agree and no two threads write one element.
#include <algorithm>
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
  int64_t first = 0;  // never moves back as i grows (the CUDA kernel bisects instead)
  for (int64_t i = 0; i < a.in; ++i) {
    while (first < a.out && taps[first].i1 < i) ++first;
    int64_t end = first;
    while (end < a.out && taps[end].i0 <= i) ++end;
    r.first[i] = first;
    r.end[i] = end;
  }
  return r;
}

// One thread's run of output rows: each output row blends two input rows already resized along W, kept
// from the row before while they are the same rows (an 8x upsample resizes each input row once, not
// eight times), so the blend is a contiguous, vectorisable pass. Its arithmetic is the CUDA kernel's,
// term for term: (1 - lh) * ((1 - lw) a + lw b) + lh * ((1 - lw) c + lw d).
template <typename T>
class BilinearRows {
 public:
  BilinearRows(const InterpGeom& g, const std::vector<InterpTap>& tw, const T* x) : g_(g), tw_(tw), x_(x), rows_{buffer(), buffer()} {}

  void run(int64_t p, const InterpTap& h, T* out) {
    const int64_t k0 = p * g_.h.in + h.i0, k1 = p * g_.h.in + h.i1;
    int s0 = slot_of(k0);
    if (s0 < 0) s0 = fill(slot_of(k1) == 0 ? 1 : 0, k0);
    int s1 = slot_of(k1);
    if (s1 < 0) s1 = fill(1 - s0, k1);
    const T* top = rows_[s0].data();
    const T* bottom = rows_[s1].data();
    const T lh = static_cast<T>(h.lambda), kh = T(1) - lh;
    for (int64_t ow = 0; ow < g_.w.out; ++ow) out[ow] = kh * top[ow] + lh * bottom[ow];
  }

 private:
  std::vector<T> buffer() const { return std::vector<T>(static_cast<size_t>(g_.w.out)); }

  // The slot holding input row `key` (plane * H + row) resized along W, or -1.
  int slot_of(int64_t key) const { return keys_[0] == key ? 0 : (keys_[1] == key ? 1 : -1); }

  // Resizes input row `key` along W into `slot`; returns the slot.
  int fill(int slot, int64_t key) {
    const T* in = x_ + key * g_.w.in;
    T* r = rows_[slot].data();
    for (int64_t ow = 0; ow < g_.w.out; ++ow) {
      const InterpTap& w = tw_[ow];
      const T lw = static_cast<T>(w.lambda);
      r[ow] = (T(1) - lw) * in[w.i0] + lw * in[w.i1];
    }
    keys_[slot] = key;
    return slot;
  }

  const InterpGeom& g_;
  const std::vector<InterpTap>& tw_;
  const T* x_;
  std::vector<T> rows_[2];
  int64_t keys_[2] = {-1, -1};
};

std::vector<CubicTap> cubic_taps_of(const InterpGeom& g, const InterpAxis& a) {
  std::vector<CubicTap> t(static_cast<size_t>(a.out));
  for (int64_t o = 0; o < a.out; ++o) t[o] = interp_cubic_tap(a, g.coord, o);
  return t;
}

// An axis's bicubic taps with their weights in T.
template <typename T>
struct CubicAxis {
  std::vector<CubicTap> taps;
  std::vector<T> weights;  // 4 an output index

  CubicAxis(const InterpGeom& g, const InterpAxis& a) : taps(cubic_taps_of(g, a)), weights(4 * taps.size()) {
    for (size_t o = 0; o < taps.size(); ++o) cubic_weights<T>(taps[o], g.cubic_a, &weights[4 * o]);
  }
};

// Bicubic output rows [begin, end) of all planes: each value the H taps' blend of the W taps' blends,
// the CUDA kernel's order.
template <typename T>
void bicubic_rows(const InterpGeom& g, const CubicAxis<T>& ah, const CubicAxis<T>& aw, const T* x, T* out, int64_t begin,
                  int64_t end) {
  const int64_t H = g.h.in, W = g.w.in, oH = g.h.out, oW = g.w.out;
  for (int64_t r = begin; r < end; ++r) {
    const int64_t oh = r % oH;
    const CubicTap& h = ah.taps[oh];
    const T* wh = &ah.weights[4 * oh];
    const T* plane = x + (r / oH) * H * W;
    T* o = out + r * oW;
    for (int64_t ow = 0; ow < oW; ++ow) {
      const CubicTap& w = aw.taps[ow];
      const T* ww = &aw.weights[4 * ow];
      T acc = 0;
      for (int j = 0; j < 4; ++j) {
        const T* row = plane + h.i[j] * W;
        T across = 0;
        for (int k = 0; k < 4; ++k) across += ww[k] * row[w.i[k]];
        acc += wh[j] * across;
      }
      o[ow] = acc;
    }
  }
}

// For each input index along the axis, the bicubic outputs that read it: [first, end).
Readers cubic_readers_of(const InterpAxis& a, const std::vector<CubicTap>& taps) {
  Readers r{std::vector<int64_t>(static_cast<size_t>(a.in)), std::vector<int64_t>(static_cast<size_t>(a.in))};
  int64_t first = 0;
  for (int64_t i = 0; i < a.in; ++i) {
    while (first < a.out && taps[first].i[3] < i) ++first;
    int64_t end = first;
    while (end < a.out && taps[end].i[0] <= i) ++end;
    r.first[i] = first;
    r.end[i] = end;
  }
  return r;
}

// interpolate_grad's gather for input rows [begin, end) of all planes; `weight(tap, i)` reads a tap's
// weight for input index i.
template <typename T, typename Tap, typename Weight>
void gather_grad(const InterpGeom& g, const std::vector<Tap>& th, const std::vector<Tap>& tw, const Readers& rh, const Readers& rw,
                 Weight weight, const T* gd, T* dd, int64_t r) {
  const int64_t H = g.h.in, W = g.w.in, oH = g.h.out, oW = g.w.out;
  const int64_t p = r / H, h = r % H;
  const T* gp = gd + p * oH * oW;
  for (int64_t w = 0; w < W; ++w) {
    T acc = 0;
    for (int64_t oh = rh.first[h]; oh < rh.end[h]; ++oh) {
      const T wh = weight(th[oh], h);
      for (int64_t ow = rw.first[w]; ow < rw.end[w]; ++ow) acc += wh * weight(tw[ow], w) * gp[oh * oW + ow];
    }
    dd[r * W + w] = acc;
  }
}

}  // namespace

template <typename T>
void interpolate(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& size, const std::vector<double>& scales,
                 const std::string& mode, const std::string& coordinate_mode, const std::string& nearest_mode, double cubic_coeff_a,
                 Tensor& out) {
  if (out.numel() == 0) return;
  const InterpGeom g = make_interp_geom(x.shape(), out.shape(), scales, mode, coordinate_mode, nearest_mode, cubic_coeff_a);
  const int64_t H = g.h.in, W = g.w.in, oH = g.h.out, oW = g.w.out;
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  if (g.mode == InterpMode::bicubic) {
    const CubicAxis<T> ah(g, g.h), aw(g, g.w);
    cpu::parallel_ranges_images(cpu::image_parts(g.planes, oH), g.planes * oH, oW * 20,
                                [&](int64_t begin, int64_t end) { bicubic_rows(g, ah, aw, xd, od, begin, end); });
    return;
  }
  const std::vector<InterpTap> th = taps_of(g, g.h), tw = taps_of(g, g.w);
  // Runs of whole output rows a thread, so that a run reuses the rows it resized.
  cpu::parallel_ranges_images(cpu::image_parts(g.planes, oH), g.planes * oH, oW * 4, [&](int64_t begin, int64_t end) {
    if (g.mode == InterpMode::nearest) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t p = r / oH, oh = r % oH;
        T* o = od + r * oW;
        if (r > begin && oh > 0 && th[oh].i0 == th[oh - 1].i0) {  // the same input row as the row before
          std::copy(o - oW, o, o);
          continue;
        }
        const T* row = xd + (p * H + th[oh].i0) * W;
        for (int64_t ow = 0; ow < oW; ++ow) o[ow] = row[tw[ow].i0];
      }
      return;
    }
    BilinearRows<T> rows(g, tw, xd);
    for (int64_t r = begin; r < end; ++r) rows.run(r / oH, th[r % oH], od + r * oW);
  });
}

template <typename T>
void interpolate_grad(const KernelContext& ctx, const Tensor& grad, const std::vector<int64_t>& input_shape,
                      const std::vector<double>& scales, const std::string& mode, const std::string& coordinate_mode,
                      const std::string& nearest_mode, double cubic_coeff_a, Tensor& dx) {
  if (dx.numel() == 0) return;
  const InterpGeom g = make_interp_geom(dx.shape(), grad.shape(), scales, mode, coordinate_mode, nearest_mode, cubic_coeff_a);
  const T* gd = grad.data<T>();
  T* dd = dx.data<T>();
  if (g.mode == InterpMode::bicubic) {
    const std::vector<CubicTap> th = cubic_taps_of(g, g.h), tw = cubic_taps_of(g, g.w);
    const Readers rh = cubic_readers_of(g.h, th), rw = cubic_readers_of(g.w, tw);
    const auto weight = [&g](const CubicTap& t, int64_t i) { return cubic_weight<T>(t, g.cubic_a, i); };
    cpu::parallel_for(g.planes * g.h.in, g.w.in * 32, [&](int64_t r) { gather_grad(g, th, tw, rh, rw, weight, gd, dd, r); });
    return;
  }
  const std::vector<InterpTap> th = taps_of(g, g.h), tw = taps_of(g, g.w);
  const Readers rh = readers_of(g.h, th), rw = readers_of(g.w, tw);
  const auto weight = [](const InterpTap& t, int64_t i) { return interp_weight<T>(t, i); };
  cpu::parallel_for(g.planes * g.h.in, g.w.in * 8, [&](int64_t r) { gather_grad(g, th, tw, rh, rw, weight, gd, dd, r); });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(interpolate, reference, float, double)
PD_INSTANTIATE_KERNELS(interpolate_grad, reference, float, double)
