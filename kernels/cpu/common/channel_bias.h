// The bias of each channel added to an NCHW result in place (a convolution's bias where the kernel that
// made the result has none: the reference conv2d, conv2d_transpose on conv2d_grad_input).
#pragma once
#include <cstdint>

#include "pd/core/tensor.h"

namespace pd::kernels::cpu {

template <typename T>
void add_channel_bias(const T* bias, Tensor& out) {
  const Shape& s = out.shape();
  const int64_t channels = s[1], plane = s[2] * s[3];
  T* o = out.data<T>();
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      T* p = o + (n * channels + c) * plane;
      for (int64_t k = 0; k < plane; ++k) p[k] += bias[c];
    }
}

}  // namespace pd::kernels::cpu
