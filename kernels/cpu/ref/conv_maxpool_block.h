// The direct convolution + max pooling behind fused_conv2d_maxpool's fast path (conv_maxpool.cc):
// the geometry it runs on and the AVX2/FMA routine that produces pooled rows of one image.
#pragma once
#include <cstdint>

#include "pd/ops/fused_activation.h"

namespace pd::kernels::reference::direct {

inline constexpr int kLanes = 8;  // floats per AVX2 register: one "unit" is 8 adjacent conv columns
inline constexpr int kMaxCB = 6;  // output channels per register block

struct Geom {
  int64_t N, C, H, W, Co, KH, KW, ph, pw;  // conv input, weight and padding (stride, dilation 1)
  int64_t OH, OW, OWv, Wp;                 // conv output; units per row; padded input row length
  int64_t pkh, pkw, psh, psw, pph, ppw, POH, POW;  // pooling and the pooled output
  FusedAct act;
  float alpha;
  int cb;              // output channels per block (<= kMaxCB)
  int64_t blocks;      // channel blocks (the last padded with zero weights)
  const float* x;      // [N, C, H, W]
  const float* w;      // packed [block][C][KH][KW][cb]
  const float* b;      // packed [blocks * cb] (zeros without a bias)
  float* out;          // [N, Co, POH, POW]
};

// Whether this CPU runs the AVX2/FMA code (the build targets baseline x86-64).
bool has_avx2_fma();

// Writes pooled rows [p0, p1) of image n, every output channel.
void pooled_rows(const Geom& g, int64_t n, int64_t p0, int64_t p1);

}  // namespace pd::kernels::reference::direct
