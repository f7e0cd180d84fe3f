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
#include "cpu/ref/winograd_tiles.h"
#include "elementwise_ops.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"

namespace pd::kernels::reference {

namespace {

using namespace winograd_tiles;

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
template <typename F, typename V>
PD_WINO_INLINE V lanes(const F& f, V v) {
  for (int i = 0; i < lanes_of<V>; ++i) v[i] = f(v[i]);
  return v;
}
// Activation A with the formula of its op (elementwise_ops.h); relu, the common case, on whole vectors.
template <typename T, Activation A>
struct Of {
  T alpha;
  PD_WINO_INLINE T operator()(T v) const { return activate<A>(v, alpha); }
  template <typename V>
  PD_WINO_INLINE V vec(V v) const {
    if constexpr (A == Activation::none) return v;
    else if constexpr (sizeof(V) > sizeof(Vec<T>)) {
      // In two halves: GCC 12 turns a compare of 64-byte vectors (without AVX512DQ to widen its mask)
      // into a compare and a branch per lane, which doubled the AVX-512 kernel's time with relu. The
      // halves are shuffles (register moves), not a round trip through memory, whose two stores and one
      // load cannot be forwarded.
      if constexpr (lanes_of<V> == 16) {
        const Vec<T> lo = vec(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7)),
                     hi = vec(__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
        return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      } else {
        const Vec<T> lo = vec(__builtin_shufflevector(v, v, 0, 1, 2, 3)), hi = vec(__builtin_shufflevector(v, v, 4, 5, 6, 7));
        return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
      }
    } else if constexpr (A == Activation::relu) return ((v > T(0)) | (v != v)) ? v : V{};  // NaN stays
    else return lanes(*this, v);
  }
};
}  // namespace act


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
    const T* Vp = V + p * g.VS;
    const T* Up = U + p * g.C * g.K;
    T* Mp = M + p * g.MS;
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

// Writes the 4x4 tile o (channel vectors of type V) of channels [k, k + lanes) at (oy0, ox0) of image n
// into a channel-blocked output, rows x cols of it (fewer at the image's edge), with residual and activation.
template <typename T, typename Act, typename V>
PD_WINO_INLINE void scatter_blocked_tile(const WinoGeom& g, const Epilogue<T>& e, const Act& act, int64_t n, int64_t k,
                                         int64_t oy0, int64_t ox0, int64_t rows, int64_t cols, const V* o, T* out) {
  const int64_t base = ((n * (g.K / g.BK) + k / g.BK) * g.OH * g.OW) * g.BK + k % g.BK;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < cols; ++q) {
      const int64_t at = base + ((oy0 + r) * g.OW + ox0 + q) * g.BK;
      V v = o[r * kOut + q];
      if (e.residual) v += load<T, V>(e.residual + at);
      store(out + at, act.vec(v));
    }
}

// Asks for the residual of tile t, channels [k0, k1), in a channel-blocked layout: its rows are 4
// pixels of 32 bytes in each block, far apart, so the hardware's prefetchers miss them and each load
// waited on memory (a residual made the example's 28x28 convolutions at batch 64 1.9 ms slower, 6.4 MB).
template <typename T>
PD_WINO_INLINE void prefetch_blocked_tile(const WinoGeom& g, const T* residual, int64_t t, int64_t k0, int64_t k1) {
  const int64_t n = t / (g.TH * g.TW), oy0 = t / g.TW % g.TH * kOut, ox0 = t % g.TW * kOut;
  const int64_t rows = std::min<int64_t>(kOut, g.OH - oy0), row_bytes = std::min<int64_t>(kOut, g.OW - ox0) * g.BK * sizeof(T);
  for (int64_t k = k0 - k0 % g.BK; k < k1; k += g.BK) {
    const char* at = reinterpret_cast<const char*>(residual + (((n * (g.K / g.BK) + k / g.BK) * g.OH + oy0) * g.OW + ox0) * g.BK);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(at + r * g.OW * g.BK * sizeof(T) + b);
  }
}

// Phase 3: the 4x4 output tiles of channels [k0, k1), with bias, residual and activation. Channel blocks
// of whole W vectors (AVX-512's blocks of 16) go a W vector at a time: half the transform's instructions.
template <typename T, typename Act, typename W>
PD_WINO_INLINE void transform_outputs(const WinoGeom& g, const Epilogue<T>& e, const Act& act, int64_t t0, int64_t nt,
                                      int64_t k0, int64_t k1, const T* M, T* out) {
  constexpr int L = kLanes<T>, LW = lanes_of<W>;
  const int64_t point_stride = g.MS;
  const bool wide = LW > L && g.BK > 0 && g.BK % LW == 0;  // then k0, k1 are whole blocks too
  for (int64_t tl = 0; tl < nt; ++tl) {
    const int64_t t = t0 + tl, n = t / (g.TH * g.TW), ty = t / g.TW % g.TH, tx = t % g.TW;
    const int64_t oy0 = ty * kOut, ox0 = tx * kOut;
    const int64_t rows = std::min<int64_t>(kOut, g.OH - oy0), cols = std::min<int64_t>(kOut, g.OW - ox0);
    if (e.residual && g.BK > 0 && tl + 1 < nt) prefetch_blocked_tile(g, e.residual, t + 1, k0, k1);
    if constexpr (LW > L) {
      if (wide) {
        for (int64_t k = k0; k < k1; k += LW) {
          W o[kOut * kOut];
          output_transform<T, W>(M + tl * g.KV + k, point_stride, load<T, W>(e.bias + k), o);
          scatter_blocked_tile(g, e, act, n, k, oy0, ox0, rows, cols, o, out);
        }
        continue;
      }
    }
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
  transform_inputs<T, W>(g, x, t0, nt, V);
  multiply_points<T, W>(g, U, nt, k0, k1, V, M);
  const Act act{e.alpha};
  transform_outputs<T, Act, W>(g, e, act, t0, nt, k0, k1, M, out);
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
    V.resize(std::max<size_t>(V.size(), kPoints * g.VS));
    M.resize(std::max<size_t>(M.size(), kPoints * g.MS));
    const int64_t t0 = i / slices * g.TB, k0 = i % slices * slice_k;
    const int64_t k1 = std::min(g.K, k0 + slice_k);
    if (k0 < k1) run_tiles(g, e, xd, ud, t0, std::min(g.TB, g.tiles - t0), k0, k1, V.data(), M.data(), od);
  });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(winograd_weight, reference, float, double)
PD_INSTANTIATE_KERNELS(winograd_conv2d, reference, float, double)
