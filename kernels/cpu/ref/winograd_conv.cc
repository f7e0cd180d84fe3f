// winograd_weight and winograd_conv2d: 3x3, stride-1 convolution by Winograd's F(4x4, 3x3) (see
// winograd_f43.h), on NCHW or channel-blocked tensors (block > 0: to_channel_blocks' layout, where a
// patch is read and a tile written as channel vectors with no transposes). The output tiles are
// processed in blocks sized to stay in the L2 cache: the block's input patches are transformed into
// V[36][tiles][C_in], multiplied point by point with the pre-transformed weight U[36][C_in][C_out] into
// M[36][tiles][C_out], and transformed back into the output, with bias, residual and activation, so the
// 36-point intermediates never reach main memory.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/ref/winograd_f43.h"
#include "cpu/ref/winograd_grad_weight.h"
#include "elementwise_ops.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"

namespace pd::kernels::reference {

namespace {

using namespace cpu::winograd;

constexpr int64_t kBlockBytes = 256 * 1024;  // V and M of one block: about half of an L2 cache

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

struct WinoGeom {
  int64_t N, C, H, W, K, OH, OW, ph, pw;
  int64_t B, BK;          // channels per block of a channel-blocked x, out (to_channel_blocks); 0: NCHW. They
                          // differ for NHWC tensors, seen as one block of all channels ([N, 1, H, W, C])
  int64_t TH, TW, tiles;  // tile rows and columns per image; tiles in the batch
  int64_t CV, KV;         // channel counts rounded up to whole vectors (buffer row lengths)
  int64_t TB;             // tiles per block (the last block may have fewer)
};

// Tiles per block: V and M of a block should fit kBlockBytes (a little more is allowed), and the blocks
// should spread evenly over the threads (49 tiles on 2 threads: 2 blocks of 25, not 24 + 24 + 1). The
// cost counts the tile rows on the busiest thread plus a per-block overhead (reloading U). When each
// thread gets several blocks, blocks are whole micro-kernel heights: the shorter kernels that take a
// remainder are slower per row (14x14 images at batch 64: 3.7 ms with 16 tiles a block, 3.2 with 12).
//
// A weight U too large for the L2 cache is read again from L3 by every block, so then blocks may grow
// 8x past the L2 budget: fewer reads of U for V and M that spill to L3 (128 channels at batch 64 on
// Zen 5: 1.55 -> 1.3 ms).
int64_t tiles_per_block(int64_t tiles, int64_t row_bytes, int64_t weight_bytes, int64_t threads) {
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
  return g;
}

template <typename T>
struct Epilogue {
  const T* bias;      // KV values, zero-padded
  const T* residual;  // null when absent
  T alpha;  // leaky_relu's slope
};

// The activations as function objects: a template argument of the block code, so the per-element loop
// has no switch in it and everything inlines into the AVX2 entry point.
namespace act {
// Each applies to one value and, lane by lane unless it has a faster form, to a vector.
template <typename T, typename F>
PD_WINO_INLINE Vec<T> lanes(const F& f, Vec<T> v) {
  for (int i = 0; i < kLanes<T>; ++i) v[i] = f(v[i]);
  return v;
}
// Activation A with the formula of its op (elementwise_ops.h); relu, the common case, on whole vectors.
template <typename T, Activation A>
struct Of {
  T alpha;
  PD_WINO_INLINE T operator()(T v) const { return activate<A>(v, alpha); }
  PD_WINO_INLINE Vec<T> vec(Vec<T> v) const {
    if constexpr (A == Activation::none) return v;
    else if constexpr (A == Activation::relu) return ((v > T(0)) | (v != v)) ? v : Vec<T>{};  // NaN stays
    else return lanes<T>(*this, v);
  }
};
}  // namespace act

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

// The 6x6 patch at (iy0, ix0) of channels [c0, c0 + lanes) of image n of a channel-blocked x: each pixel's
// channel vector is contiguous there (a block holds a whole number of vectors), so no transposes.
template <typename T>
PD_WINO_INLINE void gather_blocked(const WinoGeom& g, const T* x, int64_t n, int64_t c0, int64_t iy0, int64_t ix0, Vec<T>* d) {
  const T* base = x + ((n * (g.C / g.B) + c0 / g.B) * g.H * g.W) * g.B + c0 % g.B;
  for (int r = 0; r < kIn; ++r) {
    const int64_t y = iy0 + r;
    for (int q = 0; q < kIn; ++q) {
      const int64_t xx = ix0 + q;
      d[r * kIn + q] = y >= 0 && y < g.H && xx >= 0 && xx < g.W ? load(base + (y * g.W + xx) * g.B) : Vec<T>{};
    }
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

// Phase 1: the input patches of tiles [t0, t0 + nt) into V[36][TB][CV], a row of tiles at a time.
template <typename T>
PD_WINO_INLINE void transform_inputs(const WinoGeom& g, const T* x, int64_t t0, int64_t nt, T* V) {
  constexpr int L = kLanes<T>;
  const int64_t point_stride = g.TB * g.CV;
  for (int64_t tl = 0; tl < nt;) {
    const int64_t t = t0 + tl, n = t / (g.TH * g.TW), ty = t / g.TW % g.TH, tx = t % g.TW;
    const int64_t run = std::min(nt - tl, g.TW - tx);  // tiles [tl, tl + run) share the row of tiles
    const int64_t iy0 = ty * kOut - g.ph;
    int64_t c0 = 0;
    if (g.B > 0) {
      for (; c0 < g.C; c0 += L)
        for (int64_t j = 0; j < run; ++j) {
          Vec<T> d[kPoints];
          gather_blocked(g, x, n, c0, iy0, (tx + j) * kOut - g.pw, d);
          input_transform<T>(d, kIn, V + (tl + j) * g.CV + c0, point_stride);
        }
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

// R rows (tiles) of one point's product, output channels [k0, k1): two vectors of type W at a time,
// then one, then (when W is wider) one 32-byte vector, then single columns. W is Vec<T> (16 floats a
// step) or, for AVX-512, WideVec<T> (32 floats a step).
template <typename T, int R, typename W>
PD_WINO_INLINE void multiply_rows(const WinoGeom& g, const T* A, const T* Up, int64_t k0, int64_t k1, T* Cr) {
  constexpr int L = kLanes<T>, LW = lanes_of<W>;
  int64_t k = k0;
  for (; k + 2 * LW <= k1; k += 2 * LW) gemm_rows<T, R, 2, W>(g.C, A, g.CV, Up + k, g.K, Cr + k, g.KV);
  for (; k + LW <= k1; k += LW) gemm_rows<T, R, 1, W>(g.C, A, g.CV, Up + k, g.K, Cr + k, g.KV);
  if constexpr (LW > L)
    for (; k + L <= k1; k += L) gemm_rows<T, R, 1>(g.C, A, g.CV, Up + k, g.K, Cr + k, g.KV);
  for (; k < k1; ++k)
    for (int r = 0; r < R; ++r) {
      T s = T(0);
      for (int64_t c = 0; c < g.C; ++c) s += A[r * g.CV + c] * Up[c * g.K + k];
      Cr[r * g.KV + k] = s;
    }
}

// Phase 2: M[p] = V[p] U[p] for the 36 points, output channels [k0, k1). A last group of fewer than 6
// tiles gets a micro-kernel of its own height, not padding (a 7x7 image has 4 tiles).
template <typename T, typename W>
PD_WINO_INLINE void multiply_points(const WinoGeom& g, const T* U, int64_t nt, int64_t k0, int64_t k1, const T* V, T* M) {
  for (int p = 0; p < kPoints; ++p) {
    const T* Vp = V + p * g.TB * g.CV;
    const T* Up = U + p * g.C * g.K;
    T* Mp = M + p * g.TB * g.KV;
    for (int64_t r0 = 0; r0 < nt; r0 += kRows) {
      const T* A = Vp + r0 * g.CV;
      T* Cr = Mp + r0 * g.KV;
      switch (std::min<int64_t>(kRows, nt - r0)) {
        case 1: multiply_rows<T, 1, W>(g, A, Up, k0, k1, Cr); break;
        case 2: multiply_rows<T, 2, W>(g, A, Up, k0, k1, Cr); break;
        case 3: multiply_rows<T, 3, W>(g, A, Up, k0, k1, Cr); break;
        case 4: multiply_rows<T, 4, W>(g, A, Up, k0, k1, Cr); break;
        case 5: multiply_rows<T, 5, W>(g, A, Up, k0, k1, Cr); break;
        default: multiply_rows<T, kRows, W>(g, A, Up, k0, k1, Cr); break;
      }
    }
  }
}

// Writes the 4x4 tile o (channel vectors) of channels [k, k + 8) at (oy0, ox0) of image n: two output rows
// at a time become 8 vectors, one per channel, by an 8x8 transpose, then residual and activation.
template <typename T, typename Act>
PD_WINO_INLINE void scatter_full_tile(const WinoGeom& g, const Epilogue<T>& e, const Act& act, int64_t n, int64_t k,
                                      int64_t oy0, int64_t ox0, const Vec<T>* o, T* out) {
  constexpr size_t kHalf = sizeof(Vec<T>) / 2;  // one row of 4 outputs
  for (int r = 0; r < kOut; r += 2) {
    Vec<T> ch[8];
    transpose8(o + r * kOut, ch);  // rows r and r + 1 are 8 consecutive pixel vectors
    for (int c = 0; c < 8; ++c) {
      const int64_t at = ((n * g.K + k + c) * g.OH + oy0 + r) * g.OW + ox0;
      Vec<T> v = ch[c];
      if (e.residual) {
        Vec<T> res;
        __builtin_memcpy(&res, e.residual + at, kHalf);
        __builtin_memcpy(reinterpret_cast<char*>(&res) + kHalf, e.residual + at + g.OW, kHalf);
        v += res;
      }
      v = act.vec(v);
      __builtin_memcpy(out + at, &v, kHalf);
      __builtin_memcpy(out + at + g.OW, reinterpret_cast<const char*>(&v) + kHalf, kHalf);
    }
  }
}

// Writes the 4x4 tile o (channel vectors) of channels [k, k + lanes) at (oy0, ox0) of image n into a
// channel-blocked output, rows x cols of it (fewer at the image's edge), with residual and activation.
template <typename T, typename Act>
PD_WINO_INLINE void scatter_blocked_tile(const WinoGeom& g, const Epilogue<T>& e, const Act& act, int64_t n, int64_t k,
                                         int64_t oy0, int64_t ox0, int64_t rows, int64_t cols, const Vec<T>* o, T* out) {
  const int64_t base = ((n * (g.K / g.BK) + k / g.BK) * g.OH * g.OW) * g.BK + k % g.BK;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < cols; ++q) {
      const int64_t at = base + ((oy0 + r) * g.OW + ox0 + q) * g.BK;
      Vec<T> v = o[r * kOut + q];
      if (e.residual) v += load(e.residual + at);
      store(out + at, act.vec(v));
    }
}

// Phase 3: the 4x4 output tiles of channels [k0, k1), with bias, residual and activation.
template <typename T, typename Act>
PD_WINO_INLINE void transform_outputs(const WinoGeom& g, const Epilogue<T>& e, const Act& act, int64_t t0, int64_t nt,
                                      int64_t k0, int64_t k1, const T* M, T* out) {
  constexpr int L = kLanes<T>;
  const int64_t point_stride = g.TB * g.KV;
  for (int64_t tl = 0; tl < nt; ++tl) {
    const int64_t t = t0 + tl, n = t / (g.TH * g.TW), ty = t / g.TW % g.TH, tx = t % g.TW;
    const int64_t oy0 = ty * kOut, ox0 = tx * kOut;
    const int64_t rows = std::min<int64_t>(kOut, g.OH - oy0), cols = std::min<int64_t>(kOut, g.OW - ox0);
    for (int64_t k = k0; k < k1; k += L) {
      alignas(32) T o[kOut * kOut][L];
      output_transform<T>(M + tl * g.KV + k, point_stride, load(e.bias + k), reinterpret_cast<Vec<T>*>(o));
      if (g.BK > 0) {  // k1 - k is a whole vector: the channels are whole blocks of whole vectors
        scatter_blocked_tile(g, e, act, n, k, oy0, ox0, rows, cols, reinterpret_cast<const Vec<T>*>(o), out);
        continue;
      }
      if constexpr (L == 8) {
        if (rows == kOut && cols == kOut && k + L <= k1) {
          scatter_full_tile(g, e, act, n, k, oy0, ox0, reinterpret_cast<const Vec<T>*>(o), out);
          continue;
        }
      }
      for (int64_t lane = 0; lane < std::min<int64_t>(L, k1 - k); ++lane) {
        const int64_t base = ((n * g.K + k + lane) * g.OH + oy0) * g.OW + ox0;
        for (int64_t r = 0; r < rows; ++r) {
          T* dst = out + base + r * g.OW;
          const T* res = e.residual ? e.residual + base + r * g.OW : nullptr;
          for (int64_t q = 0; q < cols; ++q) dst[q] = act(o[r * kOut + q][lane] + (res ? res[q] : T(0)));
        }
      }
    }
  }
}

template <typename T, typename Act, typename W>
PD_WINO_INLINE void run_block(const WinoGeom& g, const Epilogue<T>& e, const T* x, const T* U, int64_t t0, int64_t nt,
                              int64_t k0, int64_t k1, T* V, T* M, T* out) {
  transform_inputs(g, x, t0, nt, V);
  multiply_points<T, W>(g, U, nt, k0, k1, V, M);
  const Act act{e.alpha};
  transform_outputs(g, e, act, t0, nt, k0, k1, M, out);
}

// The same code three times, chosen at run time: for AVX-512 (the point products on 64-byte vectors,
// twice AVX2's multiply rate where the FMA units are 512 bits wide), for AVX2 + FMA, and for the baseline.
template <typename T, typename Act>
__attribute__((target("avx512f,avx512vl,avx2,fma"))) void run_block_avx512(const WinoGeom& g, const Epilogue<T>& e, const T* x,
                                                                            const T* U, int64_t t0, int64_t nt, int64_t k0,
                                                                            int64_t k1, T* V, T* M, T* out) {
  run_block<T, Act, WideVec<T>>(g, e, x, U, t0, nt, k0, k1, V, M, out);
}

template <typename T, typename Act>
__attribute__((target("avx2,fma"))) void run_block_avx2(const WinoGeom& g, const Epilogue<T>& e, const T* x, const T* U,
                                                         int64_t t0, int64_t nt, int64_t k0, int64_t k1, T* V, T* M, T* out) {
  run_block<T, Act, Vec<T>>(g, e, x, U, t0, nt, k0, k1, V, M, out);
}

template <typename T, typename Act>
void run_block_baseline(const WinoGeom& g, const Epilogue<T>& e, const T* x, const T* U, int64_t t0, int64_t nt, int64_t k0,
                        int64_t k1, T* V, T* M, T* out) {
  run_block<T, Act, Vec<T>>(g, e, x, U, t0, nt, k0, k1, V, M, out);
}

// ---- The weight gradient (winograd_grad_weight.h) ----
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
  const int64_t point_stride = g.TB * g.KV;
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
      const T* Vp = V + p * g.TB * g.CV;
      const T* Zp = Z + p * g.TB * g.KV;
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

template <typename T>
using BlockFn = void (*)(const WinoGeom&, const Epilogue<T>&, const T*, const T*, int64_t, int64_t, int64_t, int64_t, T*, T*,
                         T*);

template <typename T, typename Act>
BlockFn<T> block_for() {
  if (cpu_has_avx512()) return run_block_avx512<T, Act>;
  return cpu_has_avx2_fma() ? run_block_avx2<T, Act> : run_block_baseline<T, Act>;
}

template <typename T>
BlockFn<T> block_for(Activation a) {
  return dispatch_activation(a, [](auto A) { return block_for<T, act::Of<T, decltype(A)::value>>(); });
}

}  // namespace

template <typename T>
void winograd_weight(const KernelContext& ctx, const Tensor& weight, Tensor& out) {
  const int64_t K = weight.shape()[0], C = weight.shape()[1];
  const T* w = weight.data<T>();
  T* u = out.data<T>();
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c) {
      const T* g = w + (k * C + c) * 9;
      double gg[kIn][3];  // G g
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < 3; ++j) gg[i][j] = kG[i][0] * g[j] + kG[i][1] * g[3 + j] + kG[i][2] * g[6 + j];
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < kIn; ++j)
          u[((i * kIn + j) * C + c) * K + k] = static_cast<T>(gg[i][0] * kG[j][0] + gg[i][1] * kG[j][1] + gg[i][2] * kG[j][2]);
    }
}

template <typename T>
void winograd_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                     const std::vector<int64_t>& padding, const std::string& activation, double alpha, int64_t block,
                     Tensor& out) {
  const Activation act = parse_activation("winograd_conv2d", activation);
  if (out.numel() == 0) return;
  const int64_t threads = std::max(ctx.threads, 1);
  const WinoGeom g = geometry<T>(x, weight, out, padding, threads);
  std::vector<T> padded_bias(g.KV, T(0));
  if (bias.defined()) std::copy_n(bias.data<T>(), g.K, padded_bias.begin());
  const Epilogue<T> e{padded_bias.data(), residual.defined() ? residual.data<T>() : nullptr, static_cast<T>(alpha)};

  // Blocks of tiles go to the threads; when there are fewer blocks than threads (small images at
  // batch 1), the output channels are split too, in whole 16-channel micro-kernel columns.
  const int64_t blocks = (g.tiles + g.TB - 1) / g.TB;
  const int64_t slices = blocks >= threads ? 1 : std::min((threads + blocks - 1) / blocks, (g.K + 15) / 16);
  const int64_t slice_k = round_up((g.K + slices - 1) / slices, 16);
  const BlockFn<T> run_tiles = block_for<T>(act);
  const T* xd = x.data<T>();
  const T* ud = weight.data<T>();
  T* od = out.data<T>();
  cpu::parallel_for(blocks * slices, g.TB * kPoints * g.C * g.K / slices, [&](int64_t i) {
    thread_local std::vector<T> V, M;
    V.resize(std::max<size_t>(V.size(), kPoints * g.TB * g.CV));
    M.resize(std::max<size_t>(M.size(), kPoints * g.TB * g.KV));
    const int64_t t0 = i / slices * g.TB, k0 = i % slices * slice_k;
    const int64_t k1 = std::min(g.K, k0 + slice_k);
    if (k0 < k1) run_tiles(g, e, xd, ud, t0, std::min(g.TB, g.tiles - t0), k0, k1, V.data(), M.data(), od);
  });
}

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
    V.resize(std::max<size_t>(V.size(), kPoints * g.TB * g.CV));
    Z.resize(std::max<size_t>(Z.size(), kPoints * g.TB * g.KV));
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

PD_INSTANTIATE_KERNELS(winograd_weight, reference, float, double)
PD_INSTANTIATE_KERNELS(winograd_conv2d, reference, float, double)
