// max_pool2d_nhwc's row-buffer steps on 1-byte values (u8 / i8: int8 regions pool in them), as plain
// loops that the build compiles again for AVX2 and AVX-512 (isa/pool_rows.cc; pool_nhwc.cc picks the
// widest). A window's rows are maxed once per output row, over the whole row, and then its columns, as
// the row shifted by one pixel at a time: long runs of bytes, where a loop per output pixel and tap
// runs C bytes at a time.
#pragma once
#include <algorithm>
#include <cstdint>

namespace pd::kernels::reference {

// out[i] = the max of rows[0..count)[i] for i < n (count >= 1).
template <typename T>
void max_rows_bytes(const T* const* rows, int64_t count, int64_t n, T* __restrict out) {
  const T* __restrict first = rows[0];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = first[i];
  for (int64_t r = 1; r < count; ++r) {
    const T* __restrict row = rows[r];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = std::max(out[i], row[i]);
  }
}

// out[i] = the max of row[i + j C] for j < kw (kw >= 1), i < n: at i = ow sw C + c, output pixel ow's
// channel c of a pool with stride sw, as one long run whatever C is (ShuffleNet's 24 channels would be
// a short vector and a scalar tail a tap).
template <typename T>
void max_shifted_bytes(const T* __restrict row, int64_t C, int64_t kw, int64_t n, T* __restrict out) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = row[i];
  for (int64_t j = 1; j < kw; ++j) {
    const T* __restrict shifted = row + j * C;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = std::max(out[i], shifted[i]);
  }
}

// Output pixel ow (C values) = the max of row's pixels ow sw .. ow sw + kw (kw >= 1): for C of whole
// vectors, where the shifted form's all-pixels pass would do sw times the work.
template <typename T>
void max_pixels_bytes(const T* __restrict row, int64_t C, int64_t kw, int64_t sw, int64_t oW, T* __restrict out) {
  for (int64_t ow = 0; ow < oW; ++ow) {
    const T* t = row + ow * sw * C;
    T* o = out + ow * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) o[c] = t[c];
    for (int64_t j = 1; j < kw; ++j) {
      const T* tj = t + j * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) o[c] = std::max(o[c], tj[c]);
    }
  }
}

void max_rows_bytes_avx2(const uint8_t* const* rows, int64_t count, int64_t n, uint8_t* out);
void max_rows_bytes_avx512(const uint8_t* const* rows, int64_t count, int64_t n, uint8_t* out);
void max_rows_bytes_avx2(const int8_t* const* rows, int64_t count, int64_t n, int8_t* out);
void max_rows_bytes_avx512(const int8_t* const* rows, int64_t count, int64_t n, int8_t* out);
void max_pixels_bytes_avx2(const uint8_t* row, int64_t C, int64_t kw, int64_t sw, int64_t oW, uint8_t* out);
void max_pixels_bytes_avx512(const uint8_t* row, int64_t C, int64_t kw, int64_t sw, int64_t oW, uint8_t* out);
void max_pixels_bytes_avx2(const int8_t* row, int64_t C, int64_t kw, int64_t sw, int64_t oW, int8_t* out);
void max_pixels_bytes_avx512(const int8_t* row, int64_t C, int64_t kw, int64_t sw, int64_t oW, int8_t* out);
void max_shifted_bytes_avx2(const uint8_t* row, int64_t C, int64_t kw, int64_t n, uint8_t* out);
void max_shifted_bytes_avx512(const uint8_t* row, int64_t C, int64_t kw, int64_t n, uint8_t* out);
void max_shifted_bytes_avx2(const int8_t* row, int64_t C, int64_t kw, int64_t n, int8_t* out);
void max_shifted_bytes_avx512(const int8_t* row, int64_t C, int64_t kw, int64_t n, int8_t* out);

}  // namespace pd::kernels::reference
