// Grouped convolutions of 8 channels a group in and out on AVX-512's blocks of 16 (RegNet's, ResNeXt's
// with groups of 8), a vector kernel of our own. oneDNN 2.6 runs them only in blocks of 8, so they broke
// a chain of blocks of 16 into plain tensors between reorders (with the squeeze-excitation after them,
// about 45% of RegNetY-400MF's time at batch 1). Here a block's two groups are its two halves: each input
// vector is permuted so that both halves hold one of their group's 8 channels, against that channel's
// weight vector for the 16 outputs.
#pragma once
#include <cstdint>
#include <vector>

#include "cpu/ref/depthwise_conv.h"
#include "elementwise_ops.h"
#include "pd/core/kernel_context.h"
#include "pd/core/tensor.h"

namespace pd::kernels::reference {

// One call's operands: depthwise_conv's geometry (x [N, CB, H, W, 16], bias [CB * 16] or null, out [N,
// CB, OH, OW, 16]), the weight packed [CB, K * K, 8, 16] instead (for output lane l, the weight of its
// group's input channel ci at tap t is at [b][t][ci][l]; lanes past C_out zero).
using GroupedConv = DepthwiseConv;

// Runs blocked_conv2d (f32) here when it is grouped with 8 input and 8 output channels a group (C_in =
// C_out), a square window of odd size, equal strides of 1 or 2, padding of at most K / 2, no dilation or
// residual, blocks of 16 on a CPU with AVX-512 and an activation the vector kernels take; false leaves
// the call to the caller.
bool grouped_conv(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                  int64_t groups, Activation act, int64_t block, Tensor& out);

// The kernel (AVX-512): output row `row` of block b of image n, `scratch` holding K padded input rows.
void grouped_row(const GroupedConv& c, int64_t n, int64_t b, int64_t row, float* scratch);

}  // namespace pd::kernels::reference
