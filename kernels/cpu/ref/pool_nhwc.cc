// max_pool2d_nhwc: max pooling over [N, H, W, C]. Channels are innermost, so each window tap is a
// contiguous run of C values maxed into the output pixel's run (16 bytes at a time for int8), with no
// transposes around the pool in an NHWC int8 region. global_avg_pool_nhwc: the mean of each channel over
// H x W, on NHWC or on channel blocks, whose channels are innermost too.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "cpu/common/max_pool_rule.h"
#include "cpu/common/parallel.h"
#include "cpu/common/widest.h"
#include "cpu/ref/pixel_sums.h"
#include "cpu/ref/pool2x2_avx2.h"
#include "cpu/ref/pool_rows.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"
#include "pd/kernels/spatial_arg.h"

namespace pd::kernels::reference {
namespace {

constexpr int64_t kMaxWindowRows = 16;  // the row-buffer kernels' window height; taller ones take the generic loop
// f32 maps past this take max_rows_prefetch_avx2: beyond half of a 32 MiB L3 the prefetches pay (96 x
// 109 x 109 at batch 4: 0.36 -> 0.31 ms), below it they cost (at batch 2: 0.11 -> 0.14 ms; 2 threads).
constexpr int64_t kPrefetchedBytes = int64_t{16} << 20;

// out[i] = max(a[i], b[i]) for n 1-byte values, 16 at a time in SSE2 (every x86-64 has it; GCC does not
// vectorise this loop at -O2): i8 through u8's max with the sign bit flipped. out may be a.
template <typename T>
void max_bytes(T* out, const T* a, const T* b, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  const __m128i flip = _mm_set1_epi8(std::is_signed_v<T> ? char(0x80) : 0);
  for (; i + 16 <= n; i += 16) {
    const __m128i x = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)), flip);
    const __m128i y = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)), flip);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_xor_si128(_mm_max_epu8(x, y), flip));
  }
#endif
  for (; i < n; ++i) out[i] = std::max(a[i], b[i]);
}

// o[c] = max(o[c], r[c]) over one pixel's channels; NaN wins for floats (max_pool2d's rule).
template <typename T>
void max_into(T* o, const T* r, int64_t C) {
  if constexpr (sizeof(T) == 1) {
    max_bytes(o, o, r, C);
  } else {
    for (int64_t c = 0; c < C; ++c) {
      if constexpr (std::is_integral_v<T>) o[c] = std::max(o[c], r[c]);
      else o[c] = cpu::nan_max(o[c], r[c]);
    }
  }
}

// 2 x 2 windows of stride 2, all inside the image, on 1-byte values (LeNet's pools in an int8 region,
// with 6 or 16 channels: too few for max_into's vectors): per output row, the two input rows maxed as
// one run, then each pixel's neighbour maxed in as the same run shifted by C, then every other pixel's C
// values kept.
template <typename T>
void pool2x2_bytes(const T* x, int64_t H, int64_t W, int64_t C, int64_t oH, int64_t oW, int64_t N, T* out) {
  cpu::parallel_for(N * oH, 4 * oW * C, [&](int64_t row) {
    const int64_t n = row / oH, oh = row % oH, run = 2 * oW * C;
    const T* top = x + (n * H + 2 * oh) * W * C;
    thread_local std::vector<T> pair;
    pair.resize(static_cast<size_t>(2 * run + 16));
    T* v = pair.data();
    T* m = v + run;
    max_bytes(v, top, top + W * C, run);
    max_bytes(m, v, v + C, run - C);
    T* o = out + row * oW * C;
    int64_t ow = 0;
    if (C <= 16)  // 16 bytes a pixel, each copy's bytes past C overwritten by the next pixel's
      for (; ow + 1 < oW; ++ow) std::memcpy(o + ow * C, m + 2 * ow * C, 16);
    for (; ow < oW; ++ow) std::memcpy(o + ow * C, m + 2 * ow * C, static_cast<size_t>(C));
  });
}

// Output row `row` (image row / oH, row row % oH) of a pool's row-buffer kernels: its window's input rows
// maxed (rows_max, over the whole row) into a thread's buffer of `width` pixels of C values, the padding
// pixels the lowest value. Returns the buffer.
template <typename T, typename RowsMax>
const T* window_rows(const T* x, int64_t H, int64_t W, int64_t C, int64_t oH, int64_t kh, int64_t sh, int64_t ph, int64_t pw,
                     int64_t width, int64_t row, RowsMax rows_max) {
  const int64_t n = row / oH, oh = row % oH;
  const int64_t h0 = std::max<int64_t>(oh * sh - ph, 0), h1 = std::min(oh * sh - ph + kh, H);
  thread_local std::vector<T> buf;
  buf.resize(static_cast<size_t>(width * C));
  std::fill(buf.begin(), buf.begin() + pw * C, cpu::max_identity<T>());
  std::fill(buf.begin() + (pw + W) * C, buf.end(), cpu::max_identity<T>());
  const T* rows[kMaxWindowRows];
  int64_t count = 0;
  for (int64_t h = h0; h < h1; ++h) rows[count++] = x + (n * H + h) * W * C;
  rows_max(rows, count, W * C, buf.data() + pw * C);
  return buf.data();
}

// f32 with C a multiple of 8 on AVX2 (channel_blocking pools ResNet's stem output here, blocks of 16
// channels): per output row, the window's input rows maxed in one pass into a row of pixels padded with
// -inf, then each output pixel the max of its kw pixels, 8 channels at a time.
void max_pool_rows_avx2(const float* x, int64_t N, int64_t H, int64_t W, int64_t C, int64_t oH, int64_t oW, int64_t kh,
                        int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, float* out) {
  const int64_t width = std::max(W + 2 * pw, (oW - 1) * sw + kw);  // in pixels
  const auto rows_max = N * H * W * C * 4 > kPrefetchedBytes ? max_rows_prefetch_avx2 : max_rows_avx2;
  cpu::parallel_for(N * oH, oW * kh * kw * C, [&](int64_t row) {
    const float* buf = window_rows(x, H, W, C, oH, kh, sh, ph, pw, width, row, rows_max);
    max_pixels_avx2(buf, C, kw, sw, oW, out + row * oW * C);
  });
}

// 1-byte values, any window: per output row, the window's input rows maxed over the whole row into a
// row of pixels padded with the lowest value, then its columns (pool_rows.h): a pixel's window at a
// time where C fills whole vectors of 32 bytes, else as the row shifted a pixel at a time, every sw-th
// pixel of that the output. 2 threads: ResNet's 3x3 / 2 stem pool of 64 channels on 112 x 112 40 ->
// 16 us, ShuffleNet's of 24 channels 72 -> 10.
template <typename T>
void max_pool_rows_bytes(const T* x, int64_t N, int64_t H, int64_t W, int64_t C, int64_t oH, int64_t oW, int64_t kh,
                         int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, T* out) {
  using Rows = void (*)(const T* const*, int64_t, int64_t, T*);
  using Pixels = void (*)(const T*, int64_t, int64_t, int64_t, int64_t, T*);
  using Shifted = void (*)(const T*, int64_t, int64_t, int64_t, T*);
  static const Rows rows_max = cpu::widest<Rows>(&max_rows_bytes<T>, &max_rows_bytes_avx2, &max_rows_bytes_avx512);
  static const Pixels pixels_max = cpu::widest<Pixels>(&max_pixels_bytes<T>, &max_pixels_bytes_avx2, &max_pixels_bytes_avx512);
  static const Shifted shifted_max = cpu::widest<Shifted>(&max_shifted_bytes<T>, &max_shifted_bytes_avx2, &max_shifted_bytes_avx512);
  const int64_t width = std::max(W + 2 * pw, (oW - 1) * sw + kw);  // in pixels
  const int64_t span = ((oW - 1) * sw + 1) * C;                     // the window starts' bytes
  cpu::parallel_for(N * oH, oW * kh * kw * C, [&](int64_t row) {
    const T* buf = window_rows(x, H, W, C, oH, kh, sh, ph, pw, width, row, rows_max);
    T* o = out + row * oW * C;
    if (C % 32 == 0) return pixels_max(buf, C, kw, sw, oW, o);
    if (sw == 1) return shifted_max(buf, C, kw, span, o);
    thread_local std::vector<T> cols;
    cols.resize(static_cast<size_t>(span));
    shifted_max(buf, C, kw, span, cols.data());
    for (int64_t ow = 0; ow < oW; ++ow) std::memcpy(o + ow * C, cols.data() + ow * sw * C, static_cast<size_t>(C));
  });
}

}  // namespace

template <typename T>
void max_pool2d_nhwc(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& kernel_size,
                     const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode,
                     Tensor& out) {
  // [N, H, W, C], or channel blocks [N, G, H, W, L]: N G images of L channels.
  const Shape& xs = x.shape();
  const size_t d = xs.size() - 3;
  const int64_t N = d == 2 ? xs[0] * xs[1] : xs[0], H = xs[d], W = xs[d + 1], C = xs[d + 2];
  const int64_t oH = out.shape()[d], oW = out.shape()[d + 1];
  const int64_t kh = spatial_arg(kernel_size, 0, 1), kw = spatial_arg(kernel_size, 1, 1);
  const int64_t sh = spatial_arg(stride, 0, kh), sw = spatial_arg(stride, 1, kw);
  const int64_t ph = spatial_arg(padding, 0, 0), pw = spatial_arg(padding, 1, 0);
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  if constexpr (sizeof(T) == 1) {
    if (kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 && 2 * oH <= H && 2 * oW <= W && out.numel() > 0)
      return pool2x2_bytes(xd, H, W, C, oH, oW, N, od);
    if (kh <= kMaxWindowRows && out.numel() > 0) return max_pool_rows_bytes(xd, N, H, W, C, oH, oW, kh, kw, sh, sw, ph, pw, od);
  }
  if constexpr (std::is_same_v<T, float>) {
    if (C % 8 == 0 && cpu_has_avx2_fma() && out.numel() > 0 && kh <= kMaxWindowRows)
      return max_pool_rows_avx2(xd, N, H, W, C, oH, oW, kh, kw, sh, sw, ph, pw, od);
  }
  // One task per output row of one image; padding taps are skipped (they count as the lowest value,
  // which never wins over a real one: the shape rule keeps every window on at least one real pixel).
  cpu::parallel_for(N * oH, oW * kh * kw * C, [&](int64_t row) {
    const int64_t n = row / oH, oh = row % oH;
    const int64_t h0 = std::max<int64_t>(oh * sh - ph, 0), h1 = std::min(oh * sh - ph + kh, H);
    for (int64_t ow = 0; ow < oW; ++ow) {
      const int64_t w0 = std::max<int64_t>(ow * sw - pw, 0), w1 = std::min(ow * sw - pw + kw, W);
      T* o = od + (row * oW + ow) * C;
      std::fill_n(o, C, cpu::max_identity<T>());
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t w = w0; w < w1; ++w) max_into(o, xd + ((n * H + h) * W + w) * C, C);
    }
  });
}

// x as [N, G, HW, L], channels innermost: NHWC is G = 1 group of L = C lanes, channel blocks G = CB of L
// = block. Work items are (image, group, part of about 32 K values): each sums its part's rows, then each
// (image, group) adds its parts' sums in order and writes the lanes below `channels` as means. The parts
// spread one image's map over the threads (by images and groups alone, an NHWC squeeze-excitation's pool
// at batch 1, EfficientNet's 32 x 112 x 112 map, ran on one thread); their count depends on the map
// only, so the sums are the same on any number of threads.
template <typename T>
void global_avg_pool_nhwc(const KernelContext& ctx, const Tensor& x, int64_t channels, Tensor& out) {
  const Shape& s = x.shape();
  const bool blocked = s.size() == 5;
  const int64_t N = s[0], G = blocked ? s[1] : 1, HW = blocked ? s[2] * s[3] : s[1] * s[2], L = blocked ? s[4] : s[3];
  const int64_t kPart = std::max<int64_t>(64, 32768 / std::max<int64_t>(L, 1));  // pixels
  const int64_t parts = std::max<int64_t>(1, (HW + kPart - 1) / kPart);
  const T* in = x.data<T>();
  T* o = out.data<T>();
  using Sums = void (*)(const T*, int64_t, int64_t, T*);
  Sums sum = sum_pixels<T>;
  if constexpr (std::is_same_v<T, float>) sum = cpu::widest<Sums>(sum_pixels<float>, sum_pixels_avx2, sum_pixels_avx512);
  std::vector<T> sums(static_cast<size_t>(N * G * parts * L));
  cpu::parallel_for(N * G * parts, std::min(HW, kPart) * L, [&](int64_t i) {
    const int64_t ng = i / parts, p0 = i % parts * kPart, p1 = std::min(HW, p0 + kPart);
    sum(in + (ng * HW + p0) * L, p1 - p0, L, sums.data() + i * L);
  });
  for (int64_t ng = 0; ng < N * G; ++ng) {
    T* acc = sums.data() + ng * parts * L;
    for (int64_t part = 1; part < parts; ++part)
      for (int64_t l = 0; l < L; ++l) acc[l] += acc[part * L + l];
    const int64_t n = ng / G, g = ng % G, lanes = std::min(L, channels - g * L);
    for (int64_t l = 0; l < lanes; ++l) o[n * channels + g * L + l] = acc[l] / static_cast<T>(HW);
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(max_pool2d_nhwc, reference, float, double, uint8_t, int8_t)
PD_INSTANTIATE_KERNELS(global_avg_pool_nhwc, reference, float, double)
