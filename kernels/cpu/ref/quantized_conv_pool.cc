// quantized_conv2d_maxpool on the reference backend: exact products (quantized_conv_pool.h).
#include "cpu/ref/quantized_conv_pool.h"

namespace pd::kernels::reference {

template <typename T>
void quantized_conv2d_maxpool(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                              const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                              const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                              const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                              DType out_dtype, const std::vector<int64_t>& pool_kernel_size, const std::vector<int64_t>& pool_stride,
                              const std::vector<int64_t>& pool_padding, bool pool_ceil_mode, bool quantize_x, Tensor& out) {
  quantized_conv2d_maxpool_with<T>(ctx, /*seven_bit=*/false, quantized_conv2d<T>, x, x_scale, x_zero_point, weight, weight_scale, bias,
                                   out_scale, out_zero_point, stride, padding, dilation, groups, activation, alpha, out_dtype,
                                   pool_kernel_size, pool_stride, pool_padding, pool_ceil_mode, quantize_x, out);
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(quantized_conv2d_maxpool, reference, uint8_t, int8_t)
