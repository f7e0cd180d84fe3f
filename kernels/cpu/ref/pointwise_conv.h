// 1x1 convolutions on channel blocks with few input channels (MobileNetV2's expansions: 16 -> 96 at
// 112x112, 24 -> 144 at 56x56), a register-blocked kernel of our own. oneDNN 2.6's jit_1x1 ran them at
// 1.7-2.1x onnxruntime's time on one thread: with so short a sum over input channels its loop and
// store overheads dominate. Here each tile of pixels and two output blocks is summed in registers over
// every input channel and stored once, the bias and activation applied on the way out.
#pragma once
#include <cstdint>

#include "elementwise_ops.h"
#include "pd/core/kernel_context.h"
#include "pd/core/tensor.h"

namespace pd::kernels::reference {

// One call's operands, all in blocks of L = the vector's lanes: x [N, ceil(cin / L), HW, L], the weight
// packed [cbo, cin, L] (output lanes past C_out zero), bias [cbo * L] or null, out and the residual (or
// null) [N, cbo, HW, L].
struct PointwiseConv {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  const float* residual = nullptr;  // out's layout, added before the activation
  float* out = nullptr;
  int64_t cin = 0, cib = 0, cbo = 0, hw = 0;
  int64_t group = 2;  // output blocks a work item: groups of `group` from block 0, the last maybe fewer
  Activation act = Activation::none;
};

// Output blocks a group for cbo output blocks of L lanes: up to 4 in one group on AVX-512, so that a
// projection into 2-4 blocks (MnasNet's 16 -> 48 at 112x112, 72 -> 40) reads each input pixel once;
// otherwise pairs (AVX2's 16 registers hold no wider tile).
inline int64_t pointwise_group(int64_t cbo, int64_t L) { return L == 16 && cbo <= 4 ? cbo : 2; }

// Runs blocked_conv2d (f32) here when it is a 1x1 convolution with stride 1, no padding, groups 1, a
// blocked input of few channels (pointwise_conv.cc: where it beats oneDNN), and an activation and block
// the vector kernels take (vector_blocks_fit: none, relu, relu6, silu, hardswish; blocks of the widest
// vector this CPU runs); false leaves the call to the caller. The packed weight is kept in ctx.packed
// when the weight is a constant there.
bool pointwise_conv(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, int64_t groups, Activation act,
                    int64_t block, Tensor& out);

// The vector forms (isa/pointwise_rows.cc): pixels [p0, p1) of image n in output group g (blocks
// g * c.group .. up to c.cbo).
void pointwise_rows_avx2(const PointwiseConv& c, int64_t n, int64_t g, int64_t p0, int64_t p1);
void pointwise_rows_avx512(const PointwiseConv& c, int64_t n, int64_t g, int64_t p0, int64_t p1);

}  // namespace pd::kernels::reference
