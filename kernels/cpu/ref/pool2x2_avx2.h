// The AVX2 kernels of max_pool2d's and max_pool2d_grad's commonest case, 2x2 windows with stride 2
// tiling the plane (pool2x2_avx2.cc); call them only after pd::cpu_has_avx2_fma().
#pragma once
#include <cstdint>

namespace pd::kernels::reference {

// max_pool2d_grad of one [H, W] plane of floats pooled 2x2 with stride 2, no padding, H and W even:
// every input element lies in exactly one window and gets that window's grad if it is the window's
// first maximum (row-major; a NaN max matches the first NaN), else +0.
// max_pool2d of one such plane: each window's max, NaN winning (max_pool_rule.h).
void max_pool2x2_plane_avx2(const float* plane, int64_t H, int64_t W, float* out);

void max_pool2x2_grad_plane_avx2(const float* plane, const float* grad, int64_t H, int64_t W, float* dplane);

}  // namespace pd::kernels::reference
