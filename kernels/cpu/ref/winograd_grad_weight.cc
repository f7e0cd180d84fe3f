// conv2d_grad_weight by Winograd F(4x4, 3x3) on NHWC tensors (winograd_grad_weight.h): the adjoint of
// winograd_conv2d's forward pass, on the same tiles and input transform (winograd_tiles.h).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/ref/winograd_grad_weight.h"
#include "cpu/ref/winograd_tiles.h"
#include "pd/core/cpu_features.h"

namespace pd::kernels::reference {

namespace {

using namespace winograd_tiles;

// The adjoint of the forward pass: with Y = A^T [U .* V] A per tile and U = G g G^T, the filter's
// gradient is dg = G^T [sum over the tiles of (A dY A^T) .* V] G. Per point the sum over tiles is a
// matrix product, dU[p] (C_in x C_out) += V[p]^T Z[p] with Z = A dY A^T the transformed output
// gradient: 36 multiply-adds per channel pair and tile instead of the direct 144.

// The output gradient's 4x4 tiles [t0, t0 + nt) into Z[36][TB][KV], zero past the output's edge (the
// forward computed those outputs and dropped them). dy is channel-blocked, as the forward's out; the
// channels go a vector of type V at a time (64-byte ones on AVX-512 where they divide K).
template <typename T, typename V>
PD_WINO_INLINE void transform_grads(const WinoGeom& g, const T* dy, int64_t t0, int64_t nt, T* Z) {
  constexpr int L = lanes_of<V>;
  const int64_t point_stride = g.MS;
  for (int64_t tl = 0; tl < nt; ++tl) {
    const int64_t t = t0 + tl, n = t / (g.TH * g.TW), oy0 = t / g.TW % g.TH * kOut, ox0 = t % g.TW * kOut;
    const bool whole = oy0 + kOut <= g.OH && ox0 + kOut <= g.OW;
    for (int64_t k = 0; k < g.K; k += L) {
      const T* base = dy + ((n * (g.K / g.BK) + k / g.BK) * g.OH * g.OW + oy0 * g.OW + ox0) * g.BK + k % g.BK;
      V y[kOut * kOut], u[kIn * kOut], z[kPoints];
#pragma GCC unroll 4
      for (int r = 0; r < kOut; ++r)
#pragma GCC unroll 4
        for (int q = 0; q < kOut; ++q)
          y[r * kOut + q] = whole || (oy0 + r < g.OH && ox0 + q < g.OW) ? load<T, V>(base + (r * g.OW + q) * g.BK) : V{};
#pragma GCC unroll 4
      for (int q = 0; q < kOut; ++q) grad_1d<T, V>(y + q, kOut, u + q, kOut);  // u[i * 4 + q], i < 6
#pragma GCC unroll 6
      for (int i = 0; i < kIn; ++i) grad_1d<T, V>(u + i * kOut, 1, z + i * kIn, 1);
#pragma GCC unroll 36
      for (int p = 0; p < kPoints; ++p) store(Z + p * point_stride + tl * g.KV + k, z[p]);
    }
  }
}

// dUp[r][KV] += sum over the nt tiles of Vp[t][r] Zp[t][.] for the R input channels r that Vp and dUp start at.
template <typename T, int R, typename W>
PD_WINO_INLINE void accumulate_rows(const WinoGeom& g, int64_t nt, const T* Vp, const T* Zp, T* dUp) {
  constexpr int L = kLanes<T>, LW = lanes_of<W>;
  int64_t k = 0;
  for (; k + 2 * LW <= g.KV; k += 2 * LW) gemm_rows<T, R, 2, W, true, true>(nt, Vp, g.CV, Zp + k, g.KV, dUp + k, g.KV);
  for (; k + LW <= g.KV; k += LW) gemm_rows<T, R, 1, W, true, true>(nt, Vp, g.CV, Zp + k, g.KV, dUp + k, g.KV);
  if constexpr (LW > L)
    for (; k < g.KV; k += L) gemm_rows<T, R, 1, Vec<T>, true, true>(nt, Vp, g.CV, Zp + k, g.KV, dUp + k, g.KV);
}

// Tiles [t0, t1) in blocks of TB, their products added to dU[36][CV][KV], 4 input channels at a time
// (C is whole vectors of 8). On AVX-512, 4 x 2 accumulators took 4.7 ms for 32 channels at 28x28, batch
// 128; 6 x 2 took 5.0 (with a 2-row remainder) and 8 x 2, which GCC spills, 6.7.
template <typename T, typename W>
PD_WINO_INLINE void grad_weight_part(const WinoGeom& g, const T* x, const T* dy, int64_t t0, int64_t t1, T* V, T* Z, T* dU) {
  constexpr int R = 4;
  for (int64_t b0 = t0; b0 < t1; b0 += g.TB) {
    const int64_t nt = std::min(g.TB, t1 - b0);
    transform_inputs(g, x, b0, nt, V);
    if (g.K % lanes_of<W> == 0) transform_grads<T, W>(g, dy, b0, nt, Z);
    else transform_grads<T, Vec<T>>(g, dy, b0, nt, Z);
    for (int p = 0; p < kPoints; ++p) {
      const T* Vp = V + p * g.VS;
      const T* Zp = Z + p * g.MS;
      T* dUp = dU + p * g.CV * g.KV;
      for (int64_t c0 = 0; c0 < g.C; c0 += R) accumulate_rows<T, R, W>(g, nt, Vp + c0, Zp, dUp + c0 * g.KV);
    }
  }
}

using GradPartFn = void (*)(const WinoGeom&, const float*, const float*, int64_t, int64_t, float*, float*, float*);

__attribute__((target("avx512f,avx512vl,avx2,fma"))) void grad_weight_part_avx512(const WinoGeom& g, const float* x,
                                                                                   const float* dy, int64_t t0, int64_t t1,
                                                                                   float* V, float* Z, float* dU) {
  grad_weight_part<float, WideVec<float>>(g, x, dy, t0, t1, V, Z, dU);
}

__attribute__((target("avx2,fma"))) void grad_weight_part_avx2(const WinoGeom& g, const float* x, const float* dy, int64_t t0,
                                                                int64_t t1, float* V, float* Z, float* dU) {
  grad_weight_part<float, Vec<float>>(g, x, dy, t0, t1, V, Z, dU);
}

}  // namespace

// The tiles are split into a fixed number of parts (set by the shape, not the thread count), each summed
// into its own dU in a fixed order, and the parts added in order: the result has the same bits on any
// number of threads. The parts' sum and G^T dU G are done in double.
void winograd_conv2d_grad_weight(const KernelContext& ctx, const Tensor& grad, const Tensor& x, const std::vector<int64_t>& padding,
                                 Tensor& dw) {
  const Shape &xs = x.shape(), &gs = grad.shape();
  WinoGeom g{};
  g.N = xs[0], g.H = xs[1], g.W = xs[2], g.C = xs[3], g.B = g.C;
  g.OH = gs[1], g.OW = gs[2], g.K = gs[3], g.BK = g.K;
  g.ph = padding[0], g.pw = padding[1];
  g.TH = (g.OH + kOut - 1) / kOut, g.TW = (g.OW + kOut - 1) / kOut;
  g.tiles = g.N * g.TH * g.TW;
  g.CV = g.C, g.KV = g.K;  // whole vectors (winograd_grad_weight.h)
  const int64_t point_bytes = g.CV * g.KV * int64_t{sizeof(float)};
  g.TB = tiles_per_block(g.tiles, (g.CV + g.KV) * int64_t{sizeof(float)}, kPoints * point_bytes, 1);
  g.VS = point_stride<float>(g.TB, g.CV), g.MS = point_stride<float>(g.TB, g.KV);
  // Parts of whole blocks, at most 8 and at most 32 MiB of partial sums.
  const int64_t blocks = (g.tiles + g.TB - 1) / g.TB;
  const int64_t parts = std::clamp<int64_t>(std::min<int64_t>(8, (32 << 20) / (kPoints * point_bytes)), 1, blocks);
  const int64_t part_tiles = (blocks + parts - 1) / parts * g.TB;
  std::vector<float> dU(static_cast<size_t>(parts * kPoints * g.CV * g.KV), 0.0f);
  const GradPartFn run_part = cpu_has_avx512() ? grad_weight_part_avx512 : grad_weight_part_avx2;
  const float* xd = x.data<float>();
  const float* gd = grad.data<float>();
  cpu::parallel_for(parts, part_tiles * kPoints * g.C * g.K, [&](int64_t part) {
    thread_local std::vector<float> V, Z;
    V.resize(std::max<size_t>(V.size(), kPoints * g.VS));
    Z.resize(std::max<size_t>(Z.size(), kPoints * g.MS));
    const int64_t t0 = part * part_tiles, t1 = std::min(g.tiles, t0 + part_tiles);
    if (t0 < t1) run_part(g, xd, gd, t0, t1, V.data(), Z.data(), dU.data() + part * kPoints * g.CV * g.KV);
  });
  const int64_t point_size = g.CV * g.KV;
  std::vector<double> total(static_cast<size_t>(kPoints * point_size), 0.0);
  cpu::parallel_for(kPoints, parts * point_size, [&](int64_t p) {
    for (int64_t part = 0; part < parts; ++part) {
      const float* src = dU.data() + (part * kPoints + p) * point_size;
      double* dst = total.data() + p * point_size;
      for (int64_t i = 0; i < point_size; ++i) dst[i] += static_cast<double>(src[i]);
    }
  });
  float* out = dw.data<float>();
  cpu::parallel_for(g.K, g.C * kPoints * 20, [&](int64_t k) {
    for (int64_t c = 0; c < g.C; ++c) {
      double u[kIn][kIn], gu[3][kIn];  // the summed dU of (c, k), then G^T dU
      for (int p = 0; p < kPoints; ++p) u[p / kIn][p % kIn] = total[static_cast<size_t>(p * point_size + c * g.KV + k)];
      for (int r = 0; r < 3; ++r)
        for (int j = 0; j < kIn; ++j) {
          gu[r][j] = 0;
          for (int i = 0; i < kIn; ++i) gu[r][j] += kG[i][r] * u[i][j];
        }
      for (int r = 0; r < 3; ++r)
        for (int q = 0; q < 3; ++q) {
          double v = 0;
          for (int j = 0; j < kIn; ++j) v += gu[r][j] * kG[j][q];
          out[((k * g.C + c) * 3 + r) * 3 + q] = static_cast<float>(v);
        }
    }
  });
}

}  // namespace pd::kernels::reference
