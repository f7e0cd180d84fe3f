// When the direct small-channel convolution of fused_conv2d_maxpool (kernels/cpu/ref/conv_maxpool.cc)
// runs instead of its general composition: the kernel and the conv_pool_fuse pass ask the same
// question, so the pass fuses only where the fused kernel is actually fast.
//
//   if (pd::direct_conv_fits(DType::f32, cin, kh, kw, cout, stride, dilation, groups)) ...
#pragma once
#include <cstdint>
#include <vector>

#include "pd/core/dtype.h"

namespace pd {

// The direct kernel keeps every output channel of a row block in registers and re-reads the input
// once per tap, so it wins where a GEMM-based kernel (oneDNN, im2col) has too little work per call to
// amortise its packing: few taps per output (C_in * kH * kW) and few output channels (at most 4
// registers of 8). The bounds cover LeNet (25 and 150 taps; 6 and 16 channels) with headroom; they
// were not swept, so shapes near them may be faster through oneDNN.
inline constexpr int64_t kDirectConvMaxTaps = 256;
inline constexpr int64_t kDirectConvMaxCout = 32;

inline bool direct_conv_fits(DType dtype, int64_t cin, int64_t kh, int64_t kw, int64_t cout,
                             const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation, int64_t groups) {
  auto ones = [](const std::vector<int64_t>& v) {
    for (int64_t e : v)
      if (e != 1) return false;
    return true;
  };
  return dtype == DType::f32 && groups == 1 && ones(stride) && ones(dilation) && cin > 0 && kh > 0 && kw > 0 &&
         cout > 0 && cin * kh * kw <= kDirectConvMaxTaps && cout <= kDirectConvMaxCout;
}

}  // namespace pd
