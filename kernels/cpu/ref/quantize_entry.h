// An int8 region's entry: quantized_conv2d / quantized_conv2d_maxpool with quantize_x take the f32
// [N, C, H, W] input itself and read it through this, instead of a quantize_linear and a transpose to
// NHWC before them (two ops, two passes over the data, and at batch 1 most of the time is per op).
#pragma once
#include "kernels.h"

namespace pd::kernels::reference {

// x f32 [N, C, H, W] quantized as quantize_linear does with the 0-D scale and zero point (into the
// zero point's dtype, u8 or i8), written [N, H, W, C].
Tensor quantize_to_nhwc(const char* op, const Tensor& x, const Tensor& scale, const Tensor& zero_point);

// n f32 values quantized to u8 as quantize_linear does (the widest loop this CPU has), for kernels that
// quantize rows as they read them. s8 with zero point z gives the same bytes as u8 with z + 128, less 128.
void quantize_row_u8(const float* x, uint8_t* out, int64_t n, float scale, float zero_point);

// n int8 values dequantized as dequantize_linear does, (x - zero_point) * scale (the widest loop this CPU has).
void dequantize_row(const uint8_t* x, float* out, int64_t n, float scale, int32_t zero_point);
void dequantize_row(const int8_t* x, float* out, int64_t n, float scale, int32_t zero_point);

}  // namespace pd::kernels::reference
