// The tile geometry and input transform that winograd_conv2d (winograd_conv.cc) and its weight
// gradient (winograd_grad_weight.cc) share: output tiles in blocks sized for the L2 cache, and a
// block's 6x6 input patches transformed into V[36][tiles][C_in]. Everything inlines into each file's
// per-instruction-set entry points.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu/ref/winograd_f43.h"
#include "kernels.h"

namespace pd::kernels::reference::winograd_tiles {

using namespace cpu::winograd;

constexpr int64_t kBlockBytes = 256 * 1024;  // V and M of one block: about half of an L2 cache

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

struct WinoGeom {
  int64_t N, C, H, W, K, OH, OW, ph, pw;
  int64_t B, BK;          // channels per block of a channel-blocked x, out (to_channel_blocks); 0: NCHW. They
                          // differ for NHWC tensors, seen as one block of all channels ([N, 1, H, W, C])
  int64_t TH, TW, tiles;  // tile rows and columns per image; tiles in the batch
  int64_t CV, KV;         // channel counts rounded up to whole vectors (buffer row lengths)
  int64_t TB;             // tiles per block (the last block may have fewer)
  int64_t VS, MS;         // elements from one point's rows to the next in V and M (point_stride)
};

// The distance between consecutive points' rows in V and M: TB * row elements, plus one cache line when
// that is an even number of lines. The 36 points of a tile are written (and read back) together; at a
// distance of a multiple of 4 KiB (16 tiles of 64 channels) all 36 fall into one set of the L1 cache,
// which holds 12 of them, and the input transform of the residual example's 14x14 layer ran 5x slower.
template <typename T>
int64_t point_stride(int64_t tiles, int64_t row) {
  constexpr int64_t kLine = 64 / sizeof(T);
  const int64_t lines = (tiles * row + kLine - 1) / kLine;
  return (lines % 2 == 0 ? lines + 1 : lines) * kLine;
}

// Tiles per block: V and M of a block should fit kBlockBytes (a little more is allowed), and the blocks
// should spread evenly over the threads (49 tiles on 2 threads: 2 blocks of 25, not 24 + 24 + 1). The
// cost counts the tile rows on the busiest thread plus a per-block overhead (reloading U). When each
// thread gets several blocks, blocks are whole micro-kernel heights: the shorter kernels that take a
// remainder are slower per row (14x14 images at batch 64: 3.7 ms with 16 tiles a block, 3.2 with 12).
//
// A weight U too large for the L2 cache is read again from L3 by every block, so then blocks may grow
// 8x past the L2 budget: fewer reads of U for V and M that spill to L3 (128 channels at batch 64 on
// Zen 5: 1.55 -> 1.3 ms).
inline int64_t tiles_per_block(int64_t tiles, int64_t row_bytes, int64_t weight_bytes, int64_t threads) {
  const int64_t budget = weight_bytes > kBlockBytes ? 8 * kBlockBytes : kBlockBytes;
  const int64_t fit = budget / (kPoints * row_bytes);
  const int64_t most = std::clamp<int64_t>(fit * 5 / 4, kRows, 16 * kRows);
  int64_t best = kRows, best_cost = -1;
  for (int64_t tb = kRows; tb <= std::min(most, round_up(tiles, kRows)); ++tb) {
    const int64_t rounds = ((tiles + tb - 1) / tb + threads - 1) / threads;
    if (rounds > 1 && tb % kRows != 0) continue;
    const int64_t cost = rounds * (tb + kRows);
    if (best_cost < 0 || cost <= best_cost) best = tb, best_cost = cost;
  }
  return best;
}

template <typename T>
WinoGeom geometry(const Tensor& x, const Tensor& u, const Tensor& out, const std::vector<int64_t>& padding, int64_t threads) {
  WinoGeom g{};
  // H and W sit at dims 2 and 3 in both layouts; C is the weight's (a blocked x has C / B blocks of B).
  g.N = x.shape()[0], g.C = u.shape()[1], g.H = x.shape()[2], g.W = x.shape()[3];
  g.B = x.dim() == 5 ? x.shape()[4] : 0;
  g.BK = out.dim() == 5 ? out.shape()[4] : 0;
  g.K = u.shape()[2], g.OH = out.shape()[2], g.OW = out.shape()[3];
  g.ph = padding[0], g.pw = padding[1];
  g.TH = (g.OH + kOut - 1) / kOut, g.TW = (g.OW + kOut - 1) / kOut;
  g.tiles = g.N * g.TH * g.TW;
  g.CV = round_up(g.C, kLanes<T>), g.KV = round_up(g.K, kLanes<T>);
  g.TB = tiles_per_block(g.tiles, (g.CV + g.KV) * int64_t{sizeof(T)}, u.numel() * int64_t{sizeof(T)}, threads);
  g.VS = point_stride<T>(g.TB, g.CV), g.MS = point_stride<T>(g.TB, g.KV);
  return g;
}

// The 6x6 patch at (iy0, ix0) of channels [c0, c0 + lanes) of image n, as 36 channel vectors, zero
// outside the image. Floats with a whole vector of channels and rows of at least 8 take the fast way:
// one 8-wide load per channel and row, from where the 6 columns fit, and an 8x8 transpose.
template <typename T>
PD_WINO_INLINE void gather_patch(const WinoGeom& g, const T* x, int64_t n, int64_t c0, int64_t iy0, int64_t ix0, Vec<T>* d) {
  constexpr int L = kLanes<T>;
  const int64_t plane = g.H * g.W;
  const T* base = x + (n * g.C + c0) * plane;
  if constexpr (L == 8) {
    if (c0 + L <= g.C && g.W >= L) {
      const int64_t start = std::clamp<int64_t>(ix0, 0, g.W - L);  // the loaded columns [start, start + 8)
      for (int r = 0; r < kIn; ++r) {
        const int64_t y = iy0 + r;
        if (y < 0 || y >= g.H) {
          for (int q = 0; q < kIn; ++q) d[r * kIn + q] = Vec<T>{};
          continue;
        }
        Vec<T> rows[L], cols[L];
        for (int c = 0; c < L; ++c) rows[c] = load(base + c * plane + y * g.W + start);
        transpose8(rows, cols);
        for (int q = 0; q < kIn; ++q) {
          const int64_t xx = ix0 + q;
          d[r * kIn + q] = xx >= 0 && xx < g.W ? cols[xx - start] : Vec<T>{};
        }
      }
      return;
    }
  }
  alignas(32) T e[kPoints][L];
  const int64_t qlo = std::clamp<int64_t>(-ix0, 0, kIn), qhi = std::clamp<int64_t>(g.W - ix0, qlo, kIn);
  for (int lane = 0; lane < L; ++lane) {
    const bool channel = c0 + lane < g.C;
    for (int r = 0; r < kIn; ++r) {
      const int64_t y = iy0 + r;
      const bool inside = channel && y >= 0 && y < g.H;
      const T* row = base + lane * plane + y * g.W + ix0;
      for (int q = 0; q < kIn; ++q) e[r * kIn + q][lane] = inside && q >= qlo && q < qhi ? row[q] : T(0);
    }
  }
  __builtin_memcpy(d, e, sizeof e);
}

// The 6x6 patch at (iy0, ix0) of channels [c0, c0 + lanes) of image n of a channel-blocked x, as vectors
// of type V: each pixel's channel vector is contiguous there (a block holds a whole number of vectors),
// so no transposes.
template <typename T, typename V = Vec<T>>
PD_WINO_INLINE void gather_blocked(const WinoGeom& g, const T* x, int64_t n, int64_t c0, int64_t iy0, int64_t ix0, V* d) {
  const T* base = x + ((n * (g.C / g.B) + c0 / g.B) * g.H * g.W) * g.B + c0 % g.B;
  for (int r = 0; r < kIn; ++r) {
    const int64_t y = iy0 + r;
    for (int q = 0; q < kIn; ++q) {
      const int64_t xx = ix0 + q;
      d[r * kIn + q] = y >= 0 && y < g.H && xx >= 0 && xx < g.W ? load<T, V>(base + (y * g.W + xx) * g.B) : V{};
    }
  }
}

// The patches of the tiles [tl, tl + run) of one row of tiles (its first at column tx, image n) of a
// channel-blocked x, transformed into V a vector of type V at a time.
template <typename T, typename V>
PD_WINO_INLINE void transform_blocked_row(const WinoGeom& g, const T* x, int64_t n, int64_t iy0, int64_t tx, int64_t tl,
                                          int64_t run, T* out) {
  for (int64_t c0 = 0; c0 < g.C; c0 += lanes_of<V>)
    for (int64_t j = 0; j < run; ++j) {
      V d[kPoints];
      gather_blocked<T, V>(g, x, n, c0, iy0, (tx + j) * kOut - g.pw, d);
      input_transform<T, V>(d, kIn, out + (tl + j) * g.CV + c0, g.VS);
    }
}

// Rows iy0 .. iy0 + 5, columns [xs, xe) of float channels [c0, c0 + 8) of image n as channel vectors,
// S[r * (xe - xs) + xx - xs], zero outside the image (needs W >= 8): each 8-column chunk is loaded from
// the 8 channels' rows and transposed once, so the tiles along a row of tiles, whose patches overlap by
// 2 columns, share the transposes (3 per tile and channel vector instead of gather_patch's 6).
PD_WINO_INLINE void gather_strip(const WinoGeom& g, const float* x, int64_t n, int64_t c0, int64_t iy0, int64_t xs,
                                 int64_t xe, Vec<float>* S) {
  constexpr int L = 8;
  const int64_t plane = g.H * g.W, cols = xe - xs;
  const float* base = x + (n * g.C + c0) * plane;
  const int64_t lo = std::max<int64_t>(xs, 0), hi = std::min(xe, g.W);  // the columns inside the image
  for (int r = 0; r < kIn; ++r) {
    Vec<float>* row = S + r * cols;
    const int64_t y = iy0 + r;
    if (y < 0 || y >= g.H || lo >= hi) {
      std::fill(row, row + cols, Vec<float>{});
      continue;
    }
    std::fill(row, row + (lo - xs), Vec<float>{});
    std::fill(row + (hi - xs), row + cols, Vec<float>{});
    for (int64_t x0 = lo; x0 < hi; x0 += L) {
      const int64_t start = std::min(x0, g.W - L);  // the loaded columns [start, start + 8)
      Vec<float> rows[L], out[L];
      for (int c = 0; c < L; ++c) rows[c] = load(base + c * plane + y * g.W + start);
      transpose8(rows, out);
      for (int64_t xx = x0; xx < std::min(x0 + L, hi); ++xx) row[xx - xs] = out[xx - start];
    }
  }
}

// Phase 1: the input patches of tiles [t0, t0 + nt) into V (36 points VS apart, each [TB][CV]), a row of
// tiles at a time. Channel blocks of whole W vectors (AVX-512's blocks of 16) go a W vector at a time.
template <typename T, typename W = Vec<T>>
PD_WINO_INLINE void transform_inputs(const WinoGeom& g, const T* x, int64_t t0, int64_t nt, T* V) {
  constexpr int L = kLanes<T>;
  const int64_t point_stride = g.VS;
  for (int64_t tl = 0; tl < nt;) {
    const int64_t t = t0 + tl, n = t / (g.TH * g.TW), ty = t / g.TW % g.TH, tx = t % g.TW;
    const int64_t run = std::min(nt - tl, g.TW - tx);  // tiles [tl, tl + run) share the row of tiles
    const int64_t iy0 = ty * kOut - g.ph;
    int64_t c0 = 0;
    if (g.B > 0) {
      if (lanes_of<W> > L && g.B % lanes_of<W> == 0) transform_blocked_row<T, W>(g, x, n, iy0, tx, tl, run, V);
      else transform_blocked_row<T, Vec<T>>(g, x, n, iy0, tx, tl, run, V);
      tl += run;
      continue;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (g.W >= L) {
        const int64_t xs = tx * kOut - g.pw, xe = (tx + run - 1) * kOut - g.pw + kIn, cols = xe - xs;
        // A float buffer aligned by hand: std::vector of a vector-extension type does not get its
        // 32-byte alignment from the allocator.
        thread_local std::vector<float> buffer;
        buffer.resize(static_cast<size_t>((kIn * cols + 1) * L));
        const auto address = reinterpret_cast<uintptr_t>(buffer.data());
        Vec<float>* strip = reinterpret_cast<Vec<float>*>((address + sizeof(Vec<float>) - 1) & ~(sizeof(Vec<float>) - 1));
        for (; c0 + L <= g.C; c0 += L) {
          gather_strip(g, x, n, c0, iy0, xs, xe, strip);
          for (int64_t j = 0; j < run; ++j)
            input_transform<T>(strip + j * kOut, static_cast<int>(cols), V + (tl + j) * g.CV + c0, point_stride);
        }
      }
    }
    for (; c0 < g.C; c0 += L)  // doubles, a last partial vector of channels, rows narrower than 8
      for (int64_t j = 0; j < run; ++j) {
        Vec<T> d[kPoints];
        gather_patch(g, x, n, c0, iy0, (tx + j) * kOut - g.pw, d);
        input_transform<T>(d, kIn, V + (tl + j) * g.CV + c0, point_stride);
      }
    tl += run;
  }
}

}  // namespace pd::kernels::reference::winograd_tiles
