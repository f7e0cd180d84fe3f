// depthwise_conv's kernel (depthwise_conv.h) compiled for one instruction set. The build compiles this
// file once per set (pd_add_isa_variants, libcore/CMakeLists.txt).
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/ref/depthwise_conv.h"

#if defined(__x86_64__)
#include "cpu/common/simd.h"
#include "cpu/common/target_pragma.h"

PD_TARGET_PUSH(PD_ISA_TARGET)
#include "cpu/ref/isa/vector_activation.h"

namespace pd::kernels::reference {
namespace {

// P outputs of a row: `rows` are the K input rows (null for a padding row) at the first window's left
// column, or with PAD > 0 at the column after the window's PAD padding columns: the first and last PAD
// of the window's columns are padding, left out at compile time (a whole "same" row in one tile). Each
// input vector is loaded once and multiplied into every output whose window holds it (K of them at
// stride 1).
template <class S, int K, int P, int STRIDE, Activation A, int PAD = 0>
void tile(const float* const rows[K], const float* w, typename S::V bias, float* out) {
  using V = typename S::V;
  constexpr int L = S::L, inputs = (P - 1) * STRIDE + K;
  V acc[P];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) acc[p] = bias;
  for (int ky = 0; ky < K; ++ky) {
    if (rows[ky] == nullptr) continue;
    V wk[K];
#pragma GCC unroll 5
    for (int kx = 0; kx < K; ++kx) wk[kx] = S::load(w + (ky * K + kx) * L);
#pragma GCC unroll 80
    for (int i = PAD; i < inputs - PAD; ++i) {
      const V v = S::load(rows[ky] + (i - PAD) * L);
      // Input i is column kx of output p where i = p * STRIDE + kx.
#pragma GCC unroll 5
      for (int kx = 0; kx < K; ++kx)
        if (i >= kx && (i - kx) % STRIDE == 0 && (i - kx) / STRIDE < P)
          acc[(i - kx) / STRIDE] = S::fmadd(v, wk[kx], acc[(i - kx) / STRIDE]);
    }
  }
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) S::store(out + p * L, activate_vector<S, A>(acc[p]));
}

// One output whose window may reach past the input's columns (the padding reads as zero).
template <class S, int K, Activation A>
void edge(const DepthwiseConv& c, const float* const rows[K], int64_t ox, const float* w, typename S::V bias, float* out) {
  constexpr int L = S::L;
  typename S::V acc = bias;
  for (int ky = 0; ky < K; ++ky) {
    if (rows[ky] == nullptr) continue;
    for (int kx = 0; kx < K; ++kx) {
      const int64_t ix = ox * c.stride - c.pad_w + kx;
      if (ix >= 0 && ix < c.w_in) acc = S::fmadd(S::load(rows[ky] + ix * L), S::load(w + (ky * K + kx) * L), acc);
    }
  }
  S::store(out, activate_vector<S, A>(acc));
}

// A block of a small map through tiles of Q outputs over a copy of its input rows with the padding
// written in as zeros, so that no output takes the per-tap checks of `edge` or loads its window alone.
// For maps at most a tile wide (7x7, 14x14), where the windows of many outputs reach past an edge and no
// whole tile fits between the edges (MnasNet's 5x5 layers there ran at 2.1-2.4x onnxruntime's time).
// The whole plane is copied once, each padded row then read by the K output rows whose windows hold it
// (a copy of the K rows for every output row cost as much as the multiply-adds on 7x7 maps). A last
// tile past the row's end is computed into a scratch row and its real outputs copied.
template <class S, int K, int STRIDE, Activation A>
void padded_plane(const DepthwiseConv& c, int64_t n, int64_t b) {
  constexpr int L = S::L, Q = 8;
  const int64_t tiles = (c.ow + Q - 1) / Q;
  const int64_t width = std::max((tiles * Q - 1) * STRIDE + K, c.pad_w + c.w_in) * L;  // floats a padded row
  thread_local std::vector<float> buffer;
  buffer.resize(static_cast<size_t>(c.h * width + Q * L));
  const float* image = c.x + (n * c.cb + b) * c.h * c.w_in * L;
  for (int64_t iy = 0; iy < c.h; ++iy) {
    float* dst = buffer.data() + iy * width;
    std::fill(dst, dst + c.pad_w * L, 0.0f);
    std::copy(image + iy * c.w_in * L, image + (iy + 1) * c.w_in * L, dst + c.pad_w * L);
    std::fill(dst + (c.pad_w + c.w_in) * L, dst + width, 0.0f);
  }
  float* scratch = buffer.data() + c.h * width;
  const float* w = c.w + b * K * K * L;
  const typename S::V bias = c.bias ? S::load(c.bias + b * L) : S::zero();
  for (int64_t oy = 0; oy < c.oh; ++oy) {
    float* out = c.out + ((n * c.cb + b) * c.oh + oy) * c.ow * L;
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t ox = t * Q, count = std::min<int64_t>(Q, c.ow - ox);
      const float* at[K];
      for (int ky = 0; ky < K; ++ky) {
        const int64_t iy = oy * STRIDE - c.pad_h + ky;
        at[ky] = iy >= 0 && iy < c.h ? buffer.data() + iy * width + ox * STRIDE * L : nullptr;
      }
      if (count == Q) {
        tile<S, K, Q, STRIDE, A>(at, w, bias, out + ox * L);
      } else {
        tile<S, K, Q, STRIDE, A>(at, w, bias, scratch);
        std::copy(scratch, scratch + count * L, out + ox * L);
      }
    }
  }
}

// A whole output row of a stride-1 convolution padded K / 2 on each side ("same") on a map W columns
// wide is one tile, read in place (tile's PAD). For the 7x7 and 14x14 maps of MobileNet's, MnasNet's and
// EfficientNet's late stages, where padded_plane copied each plane and computed a 14-column row as two
// tiles of 8 (pd-bench, 2 threads, AVX-512: 5x5 on 14x14 x 576 at batch 8 210 -> 89 us, 3x3 on 7x7 x 1152
// at batch 1 11.3 -> 6.4).
template <class S, int K, int W, Activation A>
void same_plane(const DepthwiseConv& c, int64_t n, int64_t b) {
  constexpr int L = S::L, PAD = K / 2;
  const float* image = c.x + (n * c.cb + b) * c.h * W * L;
  const float* w = c.w + b * K * K * L;
  const typename S::V bias = c.bias ? S::load(c.bias + b * L) : S::zero();
  for (int64_t oy = 0; oy < c.oh; ++oy) {
    const float* rows[K];
    for (int ky = 0; ky < K; ++ky) {
      const int64_t iy = oy - PAD + ky;
      rows[ky] = iy >= 0 && iy < c.h ? image + iy * W * L : nullptr;
    }
    tile<S, K, W, 1, A, PAD>(rows, w, bias, c.out + ((n * c.cb + b) * c.oh + oy) * W * L);
  }
}

// Whether same_plane<S, K, W> takes the call: stride 1, padding K / 2, W = 7 or 14 (14 on AVX-512's 32
// registers only: 14 sums, K weights and an input).
template <class S, int K>
bool same_fits(const DepthwiseConv& c) {
  return c.stride == 1 && c.pad_h == K / 2 && c.pad_w == K / 2 && c.ow == c.w_in && c.oh == c.h &&
         (c.ow == 7 || (c.ow == 14 && S::L == 16));
}

template <class S, int K, int STRIDE, Activation A>
void row(const DepthwiseConv& c, int64_t n, int64_t b, int64_t oy) {
  constexpr int L = S::L, P = L == 16 ? 16 : 8;
  const float* image = c.x + (n * c.cb + b) * c.h * c.w_in * L;
  const float* rows[K];
  for (int ky = 0; ky < K; ++ky) {
    const int64_t iy = oy * STRIDE - c.pad_h + ky;
    rows[ky] = iy >= 0 && iy < c.h ? image + iy * c.w_in * L : nullptr;
  }
  const float* w = c.w + b * K * K * L;
  const typename S::V bias = c.bias ? S::load(c.bias + b * L) : S::zero();
  float* out = c.out + ((n * c.cb + b) * c.oh + oy) * c.ow * L;
  // Outputs [lo, hi) have their whole window inside the columns.
  const int64_t lo = (c.pad_w + STRIDE - 1) / STRIDE;
  const int64_t hi = c.w_in - K + c.pad_w < 0 ? 0 : std::min(c.ow, (c.w_in - K + c.pad_w) / STRIDE + 1);
  int64_t ox = 0;
  for (; ox < std::min(lo, c.ow); ++ox) edge<S, K, A>(c, rows, ox, w, bias, out + ox * L);
  const float* moved[K];
  const auto at = [&](int64_t o) {
    for (int ky = 0; ky < K; ++ky) moved[ky] = rows[ky] ? rows[ky] + (o * STRIDE - c.pad_w) * L : nullptr;
  };
  // Tiles of P, then of 8, 4, 2 and 1 for the rest: on small maps (14 columns at stride 2) and past the
  // last whole tile, a window a tile reloaded all K x K weight vectors for its K x K multiply-adds.
  const auto tiles = [&]<int Q>(std::integral_constant<int, Q>) {
    for (; ox + Q <= hi; ox += Q) {
      at(ox);
      tile<S, K, Q, STRIDE, A>(moved, w, bias, out + ox * L);
    }
  };
  tiles(std::integral_constant<int, P>{});
  if constexpr (P > 8) tiles(std::integral_constant<int, 8>{});
  tiles(std::integral_constant<int, 4>{});
  tiles(std::integral_constant<int, 2>{});
  tiles(std::integral_constant<int, 1>{});
  for (; ox < c.ow; ++ox) edge<S, K, A>(c, rows, ox, w, bias, out + ox * L);
}

// f<K, STRIDE, A>() for the call's window, stride and activation.
template <typename F>
void by_shape(const DepthwiseConv& c, F&& f) {
  dispatch_vector_activation(c.act, [&](auto a) {
    constexpr Activation A = decltype(a)::value;
    if (c.k == 5) return c.stride == 2 ? f.template operator()<5, 2, A>() : f.template operator()<5, 1, A>();
    return c.stride == 2 ? f.template operator()<3, 2, A>() : f.template operator()<3, 1, A>();
  });
}

}  // namespace

void PD_ISA_FN(depthwise_row)(const DepthwiseConv& c, int64_t n, int64_t b, int64_t oy) {
  by_shape(c, [&]<int K, int STRIDE, Activation A>() { row<simd::PD_ISA, K, STRIDE, A>(c, n, b, oy); });
}

void PD_ISA_FN(depthwise_plane)(const DepthwiseConv& c, int64_t n, int64_t b) {
  using S = simd::PD_ISA;
  by_shape(c, [&]<int K, int STRIDE, Activation A>() {
    if constexpr (STRIDE == 1) {
      if (same_fits<S, K>(c)) return c.ow == 7 ? same_plane<S, K, 7, A>(c, n, b) : same_plane<S, K, 14, A>(c, n, b);
    }
    padded_plane<S, K, STRIDE, A>(c, n, b);
  });
}

}  // namespace pd::kernels::reference

PD_TARGET_POP

#else  // not x86-64: depthwise_conv declines before calling these

namespace pd::kernels::reference {
void PD_ISA_FN(depthwise_row)(const DepthwiseConv&, int64_t, int64_t, int64_t) {}
void PD_ISA_FN(depthwise_plane)(const DepthwiseConv&, int64_t, int64_t) {}
}  // namespace pd::kernels::reference
#endif
