// conv2d_grad_weight for 5x5 convolutions with few input channels and 16 to 64 output channels
// (LeNet's 6 -> 16) on AVX-512: oneDNN takes its AVX2 kernel on 8-channel blocks there and reorders both
// operands on every call. Measured on [64, 6, 14, 14] -> 16 channels, 2 threads: 0.24-0.31 ms against
// oneDNN's 0.30-0.50 (alternating runs, host C); LeNet's training step spends 0.50-0.55 ms a step in
// conv2d_grad_weight instead of 0.62-0.78. The same kernel on AVX2, on 3x3 kernels (9 taps a
// vector load), or with an output gradient larger than the cache (3 -> 32 channels at 32x32) was no
// faster or slower, so it does not take those.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels.h"

namespace pd::kernels::reference {

// False, having done nothing, unless the call fits (above: f32, stride and dilation 1, one group, at
// most 15 input channels, an output gradient of at most 1 MiB) and the CPU has AVX-512.
bool conv2d_grad_weight_direct(const Tensor& grad, const Tensor& x, const std::vector<int64_t>& weight_shape,
                               const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                               const std::vector<int64_t>& dilation, int64_t groups, Tensor& dw);

// x [N, C, H, W] (f32) at (ph, pw) inside zeroed Hp x Wp planes; rows and columns past them are left
// out. Both kernels' input, so that a tap's reach needs no bounds tests.
Tensor zero_padded_planes(const Tensor& x, int64_t Hp, int64_t Wp, int64_t ph, int64_t pw);

// The same for 1-3 input channels (conv_grad_weight_rows.cc; oneDNN pads them to blocks of 8 or 16):
// f32 NCHW, stride and dilation 1, one group, kernels at most 6 wide, AVX2 + FMA without AVX-512.
// False, having done nothing, otherwise.
bool conv2d_grad_weight_rows(const Tensor& grad, const Tensor& x, const std::vector<int64_t>& weight_shape,
                             const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation, int64_t groups, Tensor& dw);

}  // namespace pd::kernels::reference
