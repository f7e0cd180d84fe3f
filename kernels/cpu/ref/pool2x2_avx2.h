// The AVX2 kernels of max_pool2d's and max_pool2d_grad's commonest case, 2x2 windows with stride 2
// tiling the plane, and of the generic kernel's row steps (pool2x2_avx2.cc); call them only after
// pd::cpu_has_avx2_fma().
#pragma once
#include <cstdint>

namespace pd::kernels::reference {

// max_pool2d_grad of one [H, W] plane of floats pooled 2x2 with stride 2, no padding, H and W even:
// every input element lies in exactly one window and gets that window's grad if it is the window's
// first maximum (row-major; a NaN max matches the first NaN), else +0.
// max_pool2d of one such plane: each window's max, NaN winning (max_pool_rule.h).
void max_pool2x2_plane_avx2(const float* plane, int64_t H, int64_t W, float* out);

void max_pool2x2_grad_plane_avx2(const float* plane, const float* grad, int64_t H, int64_t W, float* dplane);

// pool.cc's row-buffer steps. acc[w] = max(acc[w], row[w]) for w < n, NaN winning.
void max_into_avx2(float* acc, const float* row, int64_t n);
// out[w] = the max of rows[0..count)[w] for w < n (count >= 1), NaN winning.
void max_rows_avx2(const float* const* rows, int64_t count, int64_t n, float* out);
// The same asking for each row's line 2 KiB ahead, for maps beyond the cache: the hardware's
// prefetchers left these interleaved streams at a third of the memory's bandwidth (SqueezeNet's 3x3 / 2
// pool of 96 x 109 x 109 at batch 8, 2 threads: 1.9 -> 1.2 ms); on a map in cache the prefetches cost.
void max_rows_prefetch_avx2(const float* const* rows, int64_t count, int64_t n, float* out);
// out[ow] = the max of row[2 ow .. 2 ow + kw) for ow < oW, kw 2 or 3: row is read up to 16 values past
// 2 oW + kw (which the caller fills with -inf).
void max_columns_stride2_avx2(const float* row, int64_t kw, int64_t oW, float* out);
// The same on a row of pixels of C channels (C a multiple of 8; max_pool2d_nhwc): out pixel ow = the
// max of row pixels ow sw .. ow sw + kw.
void max_pixels_avx2(const float* row, int64_t C, int64_t kw, int64_t sw, int64_t oW, float* out);

}  // namespace pd::kernels::reference
