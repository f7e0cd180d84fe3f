// blocked_direct_conv's kernel (blocked_direct_conv.h), for AVX-512 only: with AVX2's 16 registers a
// tile of 2 x 6 ran ResNet-50's strided 3x3 layers no faster than oneDNN (PD_CPU_ISA=avx2 on Zen 5), and
// AVX2 targets run the stride-1 ones as Winograd.
#include <algorithm>
#include <cstdint>

#include "cpu/ref/blocked_direct_conv.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/common/simd.h"
#include "cpu/common/target_pragma.h"

PD_TARGET_PUSH("avx512f,avx2,fma")
#include "cpu/ref/isa/vector_activation.h"

namespace pd::kernels::reference {
namespace {

// Where a tile's values are: `in[p]`, pixel p's first tap in the padded input block; `w`, the input
// block's weights for the group ([lane][KH][KW][blocks][L]) at the tile's first output block; `out` (and
// `res`), the first pixel of the first output block.
struct TileAt {
  const float* const* in;
  const float* w;
  const float* bias;  // the tile's first output block's, or null
  const float* res;   // or null
  float* out;
  int64_t blocks;     // output blocks in the group: the weights' stride from one tap to the next
  bool first, last;   // the first input block (start from the bias), the last (residual, activation)
  const char* prefetch;  // `prefetch_lines` cache lines from here to fetch on the way, or null
  int64_t prefetch_lines;
};

using S = simd::Avx512;
using V = S::V;
constexpr int L = S::L;

// P pixels x NB output blocks summed over one input block in registers (up to 28 accumulators), each
// tap's NB weight vectors loaded once for the P pixels and each input value broadcast once for the NB
// blocks. The first input block starts from the bias, a later one from the partial sums in `out`; the
// last adds the residual and applies the activation.
template <int P, int NB>
void tile(const BlockedDirectConv& c, const TileAt& t) {
  const int64_t out_block = c.OH * c.OW * L, tap_w = t.blocks * L;
  V acc[P][NB];
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    const V b = t.bias ? S::load(t.bias + j * L) : S::zero();
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[p][j] = t.first ? b : S::load(t.out + j * out_block + p * L);
  }
  const float* w = t.w;
  const char* pf = t.prefetch;
  int64_t pf_left = pf ? t.prefetch_lines : 0;
  for (int64_t lane = 0; lane < L; ++lane)
    for (int64_t kh = 0; kh < c.KH; ++kh) {
      const int64_t row = (kh * c.Wp) * L + lane;
      for (int64_t kw = 0; kw < c.KW; ++kw, w += tap_w) {
        if (pf_left > 0) _mm_prefetch(pf, _MM_HINT_T0), pf += 64, --pf_left;
        V wv[NB];
#pragma GCC unroll 4
        for (int j = 0; j < NB; ++j) wv[j] = S::load(w + j * L);
        const int64_t at = row + kw * L;
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) {
          const V b = S::broadcast(t.in[p] + at);
#pragma GCC unroll 4
          for (int j = 0; j < NB; ++j) acc[p][j] = S::fmadd(b, wv[j], acc[p][j]);
        }
      }
    }
  if (!t.last) {
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) S::store(t.out + j * out_block + p * L, acc[p][j]);
    return;
  }
  dispatch_vector_activation(c.act, [&](auto a) {
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) {
        V v = acc[p][j];
        if (t.res) v = S::add(v, S::load(t.res + j * out_block + p * L));
        S::store(t.out + j * out_block + p * L, activate_vector<S, decltype(a)::value>(v));
      }
  });
}

constexpr int kTilePixels = 7;  // x kDirectBlocks output blocks: 28 accumulators of 32 registers

// The tile of `pixels` pixels (kTilePixels, 4, 2 or 1) and `nb` blocks (1 to kDirectBlocks).
void run_tile(const BlockedDirectConv& c, const TileAt& t, int64_t pixels, int64_t nb) {
  using Fn = void (*)(const BlockedDirectConv&, const TileAt&);
  constexpr int P = kTilePixels;
  static constexpr Fn kTiles[4][kDirectBlocks] = {{tile<P, 1>, tile<P, 2>, tile<P, 3>, tile<P, 4>},
                                                  {tile<4, 1>, tile<4, 2>, tile<4, 3>, tile<4, 4>},
                                                  {tile<2, 1>, tile<2, 2>, tile<2, 3>, tile<2, 4>},
                                                  {tile<1, 1>, tile<1, 2>, tile<1, 3>, tile<1, 4>}};
  kTiles[pixels == P ? 0 : pixels == 4 ? 1 : pixels == 2 ? 2 : 3][nb - 1](c, t);
}

}  // namespace

void blocked_direct_rows_avx512(const BlockedDirectConv& c, int64_t g, int64_t q0, int64_t q1) {
  constexpr int P = kTilePixels;
  const int64_t ob = g * kDirectBlocks, blocks = std::min(kDirectBlocks, c.cbo - ob);
  const int64_t taps = c.KH * c.KW, map = c.OH * c.OW, x_block = c.Hp * c.Wp * L, out_block = map * L;
  // An input block's weights for the group; every earlier group has kDirectBlocks blocks.
  const int64_t block_weights = L * taps * blocks * L;
  const float* wg = c.w + ob * c.cib * L * taps * L;
  // The next input block's weights are fetched while this one's are used, a line a tap over the first
  // tiles: streamed from memory as they were first used, they made ResNet-50's 7x7 x 512 layers 1.33-1.40
  // ms on one thread, 1.10-1.24 fetched ahead.
  const int64_t next_lines = block_weights * static_cast<int64_t>(sizeof(float)) / 64, per_tile = L * taps;
  for (int64_t ib = 0; ib < c.cib; ++ib) {
    const float* wb = wg + ib * block_weights;
    const char* next = ib + 1 < c.cib ? reinterpret_cast<const char*>(wb + block_weights) : nullptr;
    int64_t fetched = 0;
    // Pixel q of the range is pixel q % map of image q / map; a tile stays in one image.
    int64_t q = q0, n = q0 / map, oh = q0 % map / c.OW, ow = q0 % c.OW;
    while (q < q1) {
      const int64_t p = q - n * map, left = std::min(q1 - q, map - p);
      const int64_t pixels = left >= P ? P : left >= 4 ? 4 : left >= 2 ? 2 : 1;
      const float* xb = c.x + (n * c.cib + ib) * x_block;
      const float* in[P];
      for (int64_t k = 0; k < pixels; ++k) {
        in[k] = xb + (oh * c.sh * c.Wp + ow * c.sw) * L;
        if (++ow == c.OW) ow = 0, ++oh;
      }
      const int64_t at = (n * c.cbo + ob) * out_block + p * L;
      const TileAt t{in,
                     wb,
                     c.bias ? c.bias + ob * L : nullptr,
                     c.residual ? c.residual + at : nullptr,
                     c.out + at,
                     blocks,
                     ib == 0,
                     ib == c.cib - 1,
                     next && fetched < next_lines ? next + fetched * 64 : nullptr,
                     std::min(per_tile, next_lines - fetched)};
      run_tile(c, t, pixels, blocks);
      if (t.prefetch) fetched += t.prefetch_lines;
      q += pixels;
      if (oh == c.OH) oh = 0, ++n;
    }
  }
}

}  // namespace pd::kernels::reference

PD_TARGET_POP

#else  // not x86-64: blocked_direct_conv declines before calling it

namespace pd::kernels::reference {
void blocked_direct_rows_avx512(const BlockedDirectConv&, int64_t, int64_t, int64_t) {}
}  // namespace pd::kernels::reference
#endif
