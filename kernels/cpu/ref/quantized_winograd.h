// An exact int8 Winograd convolution, F(2x2, 3x3), for 3x3 stride-1 convolutions on AVX2 without VNNI.
// There every 4 u8 x s8 products cost two multiplies (vpmaddubsw, then vpmaddwd to widen; oneDNN's
// kernels and the direct ones), and the weights must fit 7 bits so that vpmaddubsw cannot saturate.
// Winograd's transforms need 16 products for each 2 x 2 outputs of a channel pair where the direct
// form needs 36, and in int16 they stay exact: the input transform of values minus their zero point
// lies in [-1020, 1020], the weights' (with 2G for G, so that it is integral) in [-1143, 1143], and the
// output transform gives 4 x the exact sums, which a shift divides. One vpmaddwd makes 2 products a
// lane, so the 3x3 layer takes 16 / 36 x 2 = 0.9 multiplies per 4 products where the direct form takes 2,
// with all 8 bits of the weights (nothing halved) and the same int32 sums as the reference loops.
//
// Returns false, having done nothing, where it does not take the call: not AVX2 without VNNI, not a
// 3x3 stride-1 undilated ungrouped NHWC convolution of 8 to 256 input channels (beyond 256 the int32
// sums could overflow), or an activation outside the direct kernels' epilogue. The oneDNN and reference
// kernels of quantized_conv2d try it first.
#pragma once
#include "kernels.h"

namespace pd::kernels::reference {

bool quantized_conv2d_winograd(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                               const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& residual,
                               const Tensor& residual_scale, const Tensor& residual_zero_point, const Tensor& out_scale,
                               const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                               const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                               bool channels_last, DType out_dtype, Tensor& out);

}  // namespace pd::kernels::reference
