// A network's first convolution: a plain [N, C, H, W] image of few channels (RGB) into channel blocks
// (MobileNet's, EfficientNet's and RegNet's 3x3 stride-2 stem into 32 channels), a vector kernel of our
// own. oneDNN 2.6 took 1.4x onnxruntime's time on MobileNetV2's (2 threads, AVX-512): with 3 input
// channels its blocked kernels have little to sum per load. Here each output row reads a
// zero-padded copy of its input rows, and a tile of pixels and two output blocks sums the C x K x K taps
// in registers, a broadcast input value against a weight vector each.
#pragma once
#include <cstdint>
#include <vector>

#include "elementwise_ops.h"
#include "pd/core/kernel_context.h"
#include "pd/core/tensor.h"

namespace pd::kernels::reference {

// One call's operands: x [N, C, H, W] plain, the weight packed [cbo, C * KH * KW, L] (lanes past C_out
// zero), bias [cbo * L] or null, out [N, cbo, OH, OW, L].
struct StemConv {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t c = 0, h = 0, w_in = 0, kh = 0, kw = 0, cbo = 0, oh = 0, ow = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  Activation act = Activation::none;
};

// Runs blocked_conv2d (f32) here when its input is plain with at most 4 channels, groups 1, no dilation
// or residual, the output in at least two blocks of the widest vector this CPU runs, and activation none,
// relu or relu6 (stem_conv.cc: where it beats oneDNN); false leaves the call to the caller.
bool stem_conv(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
               const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
               int64_t groups, Activation act, int64_t block, Tensor& out);

// The vector forms (isa/stem_rows.cc): output row `row` of image n, every block. `strip` holds
// C * KH * (the padded row's width) floats of scratch.
void stem_row_avx2(const StemConv& c, int64_t n, int64_t row, float* strip);
void stem_row_avx512(const StemConv& c, int64_t n, int64_t row, float* strip);

}  // namespace pd::kernels::reference
