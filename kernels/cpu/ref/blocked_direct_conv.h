// Convolutions on channel blocks with many channels and small maps (ResNet's 3x3 layers on 7x7 and 14x14
// maps at 256-512 channels), a register-blocked direct kernel of our own. oneDNN 2.6's direct kernel
// (each thread a part of the output channels) runs them at about half the FMA peak at batch 1: it sums
// each output row over every input channel, so a part's weights (2-5 MB) stream from L3 once per row.
// Here the input channels are the outer loop: one input block's weights for 4 output blocks (36 KiB)
// stay in L1 while every pixel of the part is summed over it, the partial sums kept in the output.
#pragma once
#include <cstdint>
#include <vector>

#include "elementwise_ops.h"
#include "pd/core/kernel_context.h"
#include "pd/core/tensor.h"

namespace pd::kernels::reference {

// One call's operands, in blocks of L = the vector's lanes (C_in and C_out whole blocks): x padded
// [N, cib, Hp, Wp, L] (the zeros of the padding written in), the weight packed by groups of up to
// kDirectBlocks output blocks [group][C_in][KH][KW][blocks of the group][L], bias [cbo * L] or null, out
// and the residual (or null) [N, cbo, OH, OW, L].
struct BlockedDirectConv {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  const float* residual = nullptr;  // out's layout, added before the activation
  float* out = nullptr;
  int64_t cib = 0, cbo = 0, Hp = 0, Wp = 0, OH = 0, OW = 0, KH = 0, KW = 0, sh = 1, sw = 1;
  Activation act = Activation::none;
};

constexpr int64_t kDirectBlocks = 4;  // output blocks a tile: 4 x 7 pixels = 28 accumulators of 32

// Runs blocked_conv2d (f32) here when the kernel beats oneDNN's (blocked_direct_conv.cc: AVX-512, groups 1,
// no dilation, not 1x1, whole blocks of at least 256 channels in and out, at most 392 output pixels in
// the batch: two 14x14 maps) with an activation the vector kernels take; false leaves the call to the
// caller. The packed weight is kept in ctx.packed
// when the weight is a constant there.
bool blocked_direct_conv(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                         int64_t groups, Activation act, int64_t block, Tensor& out);

// The kernel (blocked_direct_rows.cc, AVX-512): output pixels [q0, q1) of the batch (image q / (OH OW),
// its pixel q % (OH OW) in raster order) in output-block group g, summed over every input block, each
// input block's weights used for all of them before the next.
void blocked_direct_rows_avx512(const BlockedDirectConv& c, int64_t g, int64_t q0, int64_t q1);

}  // namespace pd::kernels::reference
