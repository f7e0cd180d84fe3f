// global_avg_pool_nhwc's sums over a map whose channels are innermost (NHWC, or one channel block of
// [N, CB, H, W, block]), as plain loops that the build compiles again for AVX2 and AVX-512
// (isa/pool_rows.cc; pool_nhwc.cc picks the widest). Eight pixels are summed as a tree before they meet
// the running sum, so the loop waits on one add per eight pixels: with one add a pixel it was bound by
// the add's latency (22 GB/s on one thread, EfficientNet's 112x112x32 pool 39 us on two against
// onnxruntime's 13). The order is fixed by the pixel count alone, the same for every instruction set.
#pragma once
#include <algorithm>
#include <cstdint>

namespace pd::kernels::reference {

// a[l] = the sum of rows[p L + l] over the pixels p < HW. With kL > 0 the lanes are known at compile time
// (L = kL: a channel block) and the running sums stay in registers; with kL = 0 they are L (NHWC's C) and
// the running sums are kept in a, which stays in L1.
template <typename T, int64_t kL>
void sum_pixels_of(const T* __restrict rows, int64_t HW, int64_t runtime_lanes, T* __restrict a) {
  const int64_t L = kL > 0 ? kL : runtime_lanes;
  T in_registers[kL > 0 ? kL : 1] = {};
  T* acc = kL > 0 ? in_registers : a;
  if constexpr (kL == 0) std::fill(a, a + L, T(0));
  int64_t p = 0;
  for (; p + 8 <= HW; p += 8) {
    const T* r = rows + p * L;
#pragma omp simd
    for (int64_t l = 0; l < L; ++l)
      acc[l] += ((r[l] + r[L + l]) + (r[2 * L + l] + r[3 * L + l])) + ((r[4 * L + l] + r[5 * L + l]) + (r[6 * L + l] + r[7 * L + l]));
  }
  for (; p < HW; ++p)
#pragma omp simd
    for (int64_t l = 0; l < L; ++l) acc[l] += rows[p * L + l];
  if constexpr (kL > 0) std::copy(in_registers, in_registers + kL, a);
}

template <typename T>
void sum_pixels(const T* __restrict rows, int64_t HW, int64_t L, T* __restrict a) {
  if (L == 8) return sum_pixels_of<T, 8>(rows, HW, L, a);
  if (L == 16) return sum_pixels_of<T, 16>(rows, HW, L, a);
  sum_pixels_of<T, 0>(rows, HW, L, a);
}

void sum_pixels_avx2(const float* rows, int64_t HW, int64_t L, float* a);
void sum_pixels_avx512(const float* rows, int64_t HW, int64_t L, float* a);

}  // namespace pd::kernels::reference
