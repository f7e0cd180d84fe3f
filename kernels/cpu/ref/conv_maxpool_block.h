// The direct convolution + max pooling behind fused_conv2d_maxpool's fast path (conv_maxpool.cc):
// the geometry both of its kernels run on, and the routines that produce pooled rows of one image.
#pragma once
#include <cstdint>
#include <vector>

#include "elementwise_ops.h"
#include "pd/core/shape.h"

namespace pd::kernels::reference::direct {

inline constexpr int kMaxCB = 6;  // by columns: output channels per register block
inline constexpr int kMaxCV = 4;  // by channels: channel vectors (32 output channels in 8-float registers)

struct Geom {
  int L;                                   // floats per register: 8 (AVX2) or 16 (AVX-512)
  int64_t N, C, H, W, Co, KH, KW, ph, pw;  // conv input, weight and padding (stride, dilation 1)
  int64_t OH, OW, OWv, Wp;                 // conv output; L-column units per row; padded input row length
  int64_t pkh, pkw, psh, psw, pph, ppw, POH, POW;  // pooling and the pooled output
  Activation act;
  float alpha;
  int cb;          // by columns: output channels per block (<= kMaxCB); by channels: 0
  int cv;          // by channels: channel vectors (<= kMaxCV); by columns: 0
  int64_t blocks;  // by columns: channel blocks (the last padded with zero weights)
  const float* x;  // [N, C, H, W]
  const float* w;  // by columns [block][C][KH][KW][cb]; by channels [C][KH][KW][cv * L]
  const float* b;  // [blocks * cb] or [cv * L], zero padded (zeros without a bias)
  float* out;      // [N, Co, POH, POW]
};

// Floats per register of the widest direct kernel this CPU runs: 16 with AVX-512, else 8 (AVX2 + FMA).
int direct_lanes();

// For a convolution without pooling that direct_conv_fits (pd/kernels/direct_conv.h), on an AVX2 + FMA
// CPU: whether fused_conv2d_maxpool with a 1x1 pool (the direct kernel) beats oneDNN, so that conv2d
// and fused_conv2d take it too. pd-bench, 2 threads: it does below about 1 MFLOP (batch 1: LeNet's
// convs 6.6 and 10.7 us against 14.0 and 14.2, a ResNet stem 10.5 against 16.6) and where the channels
// fit one register block by columns (LeNet's first conv at batch 64: 0.17 against 0.29 ms); not for
// wider convs at batch 64 on AVX2 (a 1 -> 32 stem: 0.50 against 0.37 ms; LeNet's second: 0.34 against
// 0.27), while on AVX-512 the stems are faster direct too (see conv_maxpool.cc).
bool direct_conv_preferred(const Shape& x, const Shape& weight, const std::vector<int64_t>& padding);

// Rows [r0, r1) of image n's zero-padded input (conv padding on every side, each row Wp long so that
// L-wide loads past the last column stay inside), as [C][r1 - r0][Wp].
void fill_padded(const Geom& g, int64_t n, int64_t r0, int64_t r1, std::vector<float>& xp);

// Pooled rows [p0, p1) of image n, every output channel: by columns (g.cb > 0; L conv columns per
// register, a block of output channels at a time) or by channels (g.cv > 0; L output channels per
// register, the pixels of one pooling window at a time). The _avx512 one needs g.L == 16, the _avx2
// one g.L == 8.
void pooled_rows_avx2(const Geom& g, int64_t n, int64_t p0, int64_t p1);
void pooled_rows_avx512(const Geom& g, int64_t n, int64_t p0, int64_t p1);

}  // namespace pd::kernels::reference::direct
