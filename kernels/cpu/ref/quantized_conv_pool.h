// quantized_conv2d_maxpool for a backend (reference: quantized_conv_pool.cc; oneDNN:
// onednn/quantized_conv_pool.cc): the direct kernels pool 2 x 2 windows on the int32 sums
// (quantized_direct.h), multiplying the weights as the backend's quantized_conv2d does (`seven_bit`: halved
// where the oneDNN backend halves them on CPUs without VNNI), so that the fused op gives the same numbers
// as the two ops it replaces; anything else is the backend's quantized_conv2d (`conv`, called with the
// NHWC arguments and a scratch result) then max_pool2d_nhwc.
#pragma once
#include "cpu/ref/quantize_entry.h"
#include "cpu/ref/quantized_direct.h"
#include "kernels.h"

namespace pd::kernels::reference {

template <typename T, typename Conv>
void quantized_conv2d_maxpool_with(const KernelContext& ctx, bool seven_bit, Conv conv, const Tensor& x, const Tensor& x_scale,
                                   const Tensor& x_zero_point, const Tensor& weight, const Tensor& weight_scale, const Tensor& bias,
                                   const Tensor& out_scale, const Tensor& out_zero_point, const std::vector<int64_t>& stride,
                                   const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                                   const std::string& activation, double alpha, DType out_dtype,
                                   const std::vector<int64_t>& pool_kernel_size, const std::vector<int64_t>& pool_stride,
                                   const std::vector<int64_t>& pool_padding, bool pool_ceil_mode, bool quantize_x, Tensor& out) {
  if (out.numel() == 0) return;
  // An entry of one channel: its NCHW is NHWC, and the direct kernels quantize it as they read it (no
  // quantized copy); more channels are quantized into NHWC first. Either way the direct kernels see one
  // dtype per op, so their prepared call stays in the op's memo slot.
  const Shape& in = x.shape();
  const bool one_channel = quantize_x && in[1] == 1;
  const Tensor xd = !quantize_x ? x
                    : one_channel ? x.as_strided({in[0], in[2], in[3], 1}, {in[2] * in[3], in[3], 1, 1}, x.offset())
                                  : quantize_to_nhwc("quantized_conv2d_maxpool", x, x_scale, x_zero_point);
  if (quantized_conv2d_maxpool_direct(ctx, seven_bit, xd, x_scale, x_zero_point, weight, weight_scale, bias, out_scale, out_zero_point,
                                      stride, padding, dilation, groups, activation, alpha, out_dtype, pool_kernel_size, pool_stride,
                                      pool_padding, out))
    return;
  const Tensor xq = one_channel ? quantize_to_nhwc("quantized_conv2d_maxpool", x, x_scale, x_zero_point) : xd;
  const Shape& xs = xq.shape();
  const Shape& ws = weight.shape();
  auto extent = [&](int64_t in, int64_t d) { return (in + 2 * padding[d] - dilation[d] * (ws[2 + d] - 1) - 1) / stride[d] + 1; };
  Tensor scratch = Tensor::empty({xs[0], extent(xs[1], 0), extent(xs[2], 1), ws[0]}, out_dtype);
  const Tensor none;
  KernelContext conv_ctx = ctx;
  conv_ctx.memo = nullptr;  // the op's slot keeps the direct kernel's decision above
  conv(conv_ctx, xq, x_scale, x_zero_point, weight, weight_scale, bias, none, none, none, out_scale, out_zero_point, stride, padding,
       dilation, groups, activation, alpha, /*channels_last=*/true, out_dtype, /*quantize_x=*/false, scratch);
  switch (out_dtype) {
    case DType::u8: return max_pool2d_nhwc<uint8_t>(ctx, scratch, pool_kernel_size, pool_stride, pool_padding, pool_ceil_mode, out);
    case DType::i8: return max_pool2d_nhwc<int8_t>(ctx, scratch, pool_kernel_size, pool_stride, pool_padding, pool_ceil_mode, out);
    default: return max_pool2d_nhwc<float>(ctx, scratch, pool_kernel_size, pool_stride, pool_padding, pool_ceil_mode, out);
  }
}

}  // namespace pd::kernels::reference
