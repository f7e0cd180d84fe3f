// conv2d_grad_weight of a 3x3, stride-1 convolution on NHWC tensors by Winograd's F(4x4, 3x3), the
// adjoint of winograd_conv2d (winograd_grad_weight.cc): about a quarter of the direct form's multiply-adds. The
// onednn conv2d_grad_weight takes it for the shapes its forward and input gradient already run by
// Winograd (a training step's 28x28 convolutions of the residual example).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels.h"

namespace pd::kernels::reference {

// grad [N, OH, OW, K] and x [N, H, W, C] (NHWC, f32, C and K whole multiples of 8, padding 0 to 2 with
// OH = H + 2 * padding[0] - 2) -> dw [K, C, 3, 3]. Needs AVX2 and FMA.
void winograd_conv2d_grad_weight(const KernelContext& ctx, const Tensor& grad, const Tensor& x, const std::vector<int64_t>& padding,
                                 Tensor& dw);

}  // namespace pd::kernels::reference
