// Direct int8 kernels for the shapes oneDNN's primitives serve badly: convolutions with few input
// channels (LeNet's 6 -> 16: oneDNN pads the channels to its blocks and takes 85 us for the batch of 64
// where the arithmetic needs 20) and linear layers on a few rows (batch 1: oneDNN's per-call set-up is
// 4 us for a 400 x 120 product). The sums are exact on every path: AVX-512 VNNI on u8; AVX2 on u8 with
// vpmaddubsw where every weight fits in 7 bits (no pair of products can saturate); otherwise AVX2 on
// values widened to 16 bits (no weight narrowed; the linear kernel always). The epilogue is oneDNN's: f32
// scales, bias, residual, activation, requantization rounding half to even.
//
// Each returns false, having done nothing, when it does not take the call (shape, activation, an int8
// residual, or CPU);
// the reference and oneDNN kernels of quantized_conv2d / quantized_linear try it first. `seven_bit`
// halves the weights beyond [-64, 64] (scale doubled) as oneDNN's kernels do without VNNI, so that a
// backend gives the same numbers whichever kernel takes a shape (the reference backend passes false).
#pragma once
#include "kernels.h"

namespace pd::kernels::reference {

// residual: f32, or u8 / i8 with its scale and zero point (taken on AVX2 only, with weights within 6 bits).
bool quantized_conv2d_direct(const KernelContext& ctx, bool seven_bit, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                             const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& residual,
                             const Tensor& residual_scale, const Tensor& residual_zero_point, const Tensor& out_scale,
                             const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                             bool channels_last, DType out_dtype, Tensor& out);

// quantized_conv2d_maxpool with 2 x 2 windows of stride 2, pooled on the int32 sums (VNNI, or AVX2 on 7-bit weights).
// x is NHWC int8, or f32 [N, H, W, 1] (one channel, as an int8 region's entry reads it) quantized here
// with x_scale and x_zero_point.
bool quantized_conv2d_maxpool_direct(const KernelContext& ctx, bool seven_bit, const Tensor& x, const Tensor& x_scale,
                                     const Tensor& x_zero_point, const Tensor& weight, const Tensor& weight_scale, const Tensor& bias,
                                     const Tensor& out_scale, const Tensor& out_zero_point, const std::vector<int64_t>& stride,
                                     const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                                     const std::string& activation, double alpha, DType out_dtype,
                                     const std::vector<int64_t>& pool_kernel_size, const std::vector<int64_t>& pool_stride,
                                     const std::vector<int64_t>& pool_padding, Tensor& out);

bool quantized_linear_direct(const KernelContext& ctx, bool seven_bit, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                             const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                             const Tensor& out_zero_point, const std::string& activation, double alpha, DType out_dtype,
                             Tensor& out);

// quantized_linear_direct on the pixels of an NHWC map x [N, H, W, C] at strides (stride_h, stride_w):
// a 1x1 convolution without padding, weight [C_out, C] and result [N, OH, OW, C_out]. u8 pixels of whole
// groups of 4 channels are read where they lie (no gathered copy).
bool quantized_pointwise_direct(const KernelContext& ctx, bool seven_bit, const Tensor& x, int64_t stride_h, int64_t stride_w,
                                const Tensor& x_scale, const Tensor& x_zero_point, const Tensor& weight, const Tensor& weight_scale,
                                const Tensor& bias, const Tensor& out_scale, const Tensor& out_zero_point, const std::string& activation,
                                double alpha, DType out_dtype, Tensor& out);

}  // namespace pd::kernels::reference
