// 3x3 and 5x5 depthwise convolutions on channel blocks (MobileNet's, EfficientNet's), a vector kernel
// of our own: each vector holds one pixel's lanes of a block, so a KxK window is K^2 multiply-adds of
// whole vectors by the block's K^2 weight vectors, and each input vector loaded is used by every output
// of the tile that reads it. oneDNN 2.6's jit_dw at batch 1, split by channel blocks across the threads, took 1.3-2x
// onnxruntime's time on MobileNetV2's 112x112 and 56x56 maps.
#pragma once
#include <cstdint>
#include <vector>

#include "elementwise_ops.h"
#include "pd/core/kernel_context.h"
#include "pd/core/tensor.h"

namespace pd::kernels::reference {

// One call's operands, in blocks of L = the vector's lanes: x [N, CB, H, W, L], the weight packed
// [CB, K * K, L] (lanes past C zero), bias [CB * L] or null, out [N, CB, OH, OW, L].
struct DepthwiseConv {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t k = 3, cb = 0, h = 0, w_in = 0, oh = 0, ow = 0, stride = 1, pad_h = 0, pad_w = 0;
  Activation act = Activation::none;
};

// Runs blocked_conv2d (f32) here when it is depthwise (groups = C_in = C_out) with a 3x3 or 5x5 kernel,
// equal strides of 1 or 2, padding of at most K / 2, no dilation or residual, and an activation and
// block the vector kernels take (vector_blocks_fit); false leaves the call to the caller.
bool depthwise_conv(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                    int64_t groups, Activation act, int64_t block, Tensor& out);

// The vector forms (isa/depthwise_rows.cc): output row `row` of block b of image n; and all of block b
// of image n at once (stride 1, maps at most a vector's lanes wide): in place for "same" padding on 7x7
// and 14x14 maps, else through a padded copy of its input.
void depthwise_row_avx2(const DepthwiseConv& c, int64_t n, int64_t b, int64_t row);
void depthwise_row_avx512(const DepthwiseConv& c, int64_t n, int64_t b, int64_t row);
void depthwise_plane_avx2(const DepthwiseConv& c, int64_t n, int64_t b);
void depthwise_plane_avx512(const DepthwiseConv& c, int64_t n, int64_t b);

}  // namespace pd::kernels::reference
