// [N, H, W, C] <-> [N, C, H, W] copies for kernels that take channels_last tensors but compute in
// NCHW (the reference convolution; the oneDNN backend's kernels that only know NCHW).
#pragma once
#include <cstdint>

#include "cpu/common/parallel.h"
#include "pd/core/tensor.h"

namespace pd::kernels::cpu {

// The NCHW extents of an NHWC shape.
inline Shape nchw_shape_of(const Shape& nhwc) { return {nhwc[0], nhwc[3], nhwc[1], nhwc[2]}; }

// to_nchw: dst [N, C, H, W] from src [N, H, W, C]; otherwise the other way. `nchw` holds N, C, H, W.
template <typename T>
void permute_channels(const T* src, T* dst, const Shape& nchw, bool to_nchw) {
  const int64_t C = nchw[1], HW = nchw[2] * nchw[3];
  parallel_for(nchw[0], C * HW, [&](int64_t n) {
    const T* s = src + n * C * HW;
    T* d = dst + n * C * HW;
    for (int64_t p = 0; p < HW; ++p)
      for (int64_t c = 0; c < C; ++c) {
        if (to_nchw) d[c * HW + p] = s[p * C + c];
        else d[p * C + c] = s[c * HW + p];
      }
  });
}

// A new NCHW tensor with the values of NHWC `x`.
template <typename T>
Tensor nchw_copy(const Tensor& x) {
  const Shape nchw = nchw_shape_of(x.shape());
  Tensor out = Tensor::empty(nchw, x.dtype(), x.place());
  permute_channels(x.data<T>(), out.data<T>(), nchw, true);
  return out;
}

// Writes NCHW `x` into NHWC `out`.
template <typename T>
void store_nhwc(const Tensor& x, Tensor& out) {
  permute_channels(x.data<T>(), out.data<T>(), x.shape(), false);
}

}  // namespace pd::kernels::cpu
