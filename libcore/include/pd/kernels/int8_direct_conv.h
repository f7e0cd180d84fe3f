// Which convolutions the direct int8 kernels (kernels/cpu/ref/quantized_direct.h) take, and which of them
// they pool as they go: the kernels and the passes that make their ops (int8_lower, conv_pool_fuse) ask
// the same questions, so a graph is rewritten only where the kernel is actually fast.
//
//   if (pd::int8_direct_conv_fits(cin, kw, cout, stride, dilation, groups, activation, residual, pixel_lanes)) ...
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pd {

// One input channel, a column stride of 1 and at most 8 output channels: output pixels as the vector
// lanes (AVX-512 VNNI, or AVX2 with weights within 7 bits; LeNet's first conv).
inline bool int8_pixel_lanes_fit(int64_t cin, int64_t cout, int64_t stride_w) { return cin == 1 && cout <= 8 && stride_w == 1; }

inline int64_t column_stride(const std::vector<int64_t>& stride) { return stride.size() == 2 ? stride[1] : 0; }

inline bool int8_direct_activation(const std::string& a) {
  return a == "none" || a == "relu" || a == "leaky_relu" || a == "relu6" || a == "hardswish";
}

// The direct kernels: one group, no dilation, fewer than 16 input channels with a kernel row of at most
// 64 values, and either 16 output channels or more to fill the channel lanes, or (with `pixel_lanes`, the
// machine's kernels having them, and no residual) pixel lanes.
inline bool int8_direct_conv_fits(int64_t cin, int64_t kw, int64_t cout, const std::vector<int64_t>& stride,
                                  const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, bool residual,
                                  bool pixel_lanes) {
  const bool lanes = (cout >= 16 && cin * kw <= 64) || (pixel_lanes && !residual && int8_pixel_lanes_fit(cin, cout, column_stride(stride)));
  return groups == 1 && dilation == std::vector<int64_t>{1, 1} && cin < 16 && lanes && int8_direct_activation(activation);
}

// quantized_conv2d_maxpool's direct kernels (AVX-512 VNNI, or AVX2 with weights within 7 bits, which the
// oneDNN backend's halving always gives there): 2 x 2 windows of stride 2 without padding, pooled on the
// int32 sums, which needs an epilogue that keeps their order (positive scales, checked at run time;
// leaky_relu's slope not negative), and 16 channel lanes at most or (with `pixel_lanes`) pixel lanes.
inline bool int8_direct_conv_pool_fits(int64_t cin, int64_t kw, int64_t cout, const std::vector<int64_t>& stride,
                                       const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation,
                                       double alpha, const std::vector<int64_t>& pool_kernel, const std::vector<int64_t>& pool_stride,
                                       const std::vector<int64_t>& pool_padding, bool pixel_lanes) {
  const std::vector<int64_t> two = {2, 2};
  const bool pool = pool_kernel == two && (pool_stride.empty() || pool_stride == two) && pool_padding == std::vector<int64_t>{0, 0};
  const bool lanes = (pixel_lanes && int8_pixel_lanes_fit(cin, cout, column_stride(stride))) || (cout <= 16 && cin * kw <= 64);
  return pool && lanes && groups == 1 && dilation == std::vector<int64_t>{1, 1} && cin < 16 &&
         int8_direct_activation(activation) && !(activation == "leaky_relu" && alpha < 0);
}

}  // namespace pd
