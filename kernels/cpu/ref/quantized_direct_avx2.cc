// The direct int8 convolution with channel lanes on AVX2 (quantized_direct.cc chooses the path; shared
// pieces in quantized_direct_common.h and quantized_direct_epilogue.h): 8 output channels a vector, P
// pixels x 2 vectors of accumulators.
// On u8 (Path::avx2_u8, weights within 7 bits) each lane sums 4 products with vpmaddubsw + vpmaddwd by
// ones, and the zero point comes off in the epilogue; with weights within 6 bits (ConvShape::pairs) two
// groups' vpmaddubsw results are added first, 8 products for one vpmaddwd; on int16 values (Path::avx2,
// 8-bit weights) each lane sums 2 with vpmaddwd, the zero point already subtracted from the input.
#include "cpu/ref/quantized_direct_epilogue.h"

#include <type_traits>

#if defined(__x86_64__)
namespace pd::kernels::reference::int8_direct {
namespace {

// P pixels x V blocks of 8 output channels; In is uint8_t or int16_t; Pairs: ConvShape::pairs (u8 only).
template <int P, int V, bool Pairs, typename In, typename W>
PD_AVX2_TARGET void avx2_pixels(const ConvShape& s, const Epilogue& e, Avx2EpilogueFn epilogue, const In* in, const W* w, int64_t o0,
                                const void* residual, void* out, int64_t pixel) {
  constexpr bool u8 = std::is_same_v<In, uint8_t>;
  constexpr int64_t per = u8 ? 4 : 2;  // values a 32-bit lane
  const int64_t pix_step = s.sw * s.C, row_step = s.Wp * s.C;
  __m256i acc[P][V];
  #pragma GCC unroll 16
  for (int p = 0; p < P; ++p)
    #pragma GCC unroll 16
    for (int v = 0; v < V; ++v) acc[p][v] = _mm256_setzero_si256();
  for (int64_t ky = 0; ky < s.KH; ++ky) {
    const In* r = in + ky * row_step;
    const W* wk = w + (ky * s.groups * s.COp + o0) * per;
    if constexpr (Pairs) {
      for (int64_t g = 0; g < s.groups; g += 2) {
        __m256i wa[V], wb[V];
        #pragma GCC unroll 16
        for (int v = 0; v < V; ++v) {
          wa[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + (g * s.COp + v * 8) * per));
          wb[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + ((g + 1) * s.COp + v * 8) * per));
        }
        #pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
          const __m256i a = _mm256_set1_epi32(load_u32(r + p * pix_step + per * g));
          const __m256i b = _mm256_set1_epi32(load_u32(r + p * pix_step + per * (g + 1)));
          #pragma GCC unroll 16
          for (int v = 0; v < V; ++v) acc[p][v] = avx2_dot_u8_pairs(acc[p][v], a, wa[v], b, wb[v]);
        }
      }
      continue;
    }
    for (int64_t g = 0; g < s.groups; ++g) {
      __m256i wv[V];
      #pragma GCC unroll 16
      for (int v = 0; v < V; ++v) wv[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + (g * s.COp + v * 8) * per));
      #pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const __m256i b = _mm256_set1_epi32(load_u32(r + p * pix_step + per * g));
        #pragma GCC unroll 16
        for (int v = 0; v < V; ++v)
          acc[p][v] = u8 ? avx2_dot_u8(acc[p][v], b, wv[v]) : _mm256_add_epi32(acc[p][v], _mm256_madd_epi16(b, wv[v]));
      }
    }
  }
  alignas(32) __m256i sums[P * V];
  #pragma GCC unroll 16
  for (int p = 0; p < P; ++p)
    #pragma GCC unroll 16
    for (int v = 0; v < V; ++v) sums[p * V + v] = acc[p][v];
  epilogue(e, {sums, P, V, o0, s.CO - o0, pixel * s.CO + o0, s.CO, out, residual, u8});
}

// One output row from `row`, its first padded input row; pixel0: the row's first output pixel.
template <bool Pairs, typename In, typename W>
void avx2_conv_row(const ConvShape& s, const Epilogue& e, const In* row, const W* w, const void* residual, void* out, int64_t pixel0,
                   int64_t o_begin, int64_t o_end) {
  using PixelsFn = void (*)(const ConvShape&, const Epilogue&, Avx2EpilogueFn, const In*, const W*, int64_t, const void*, void*, int64_t);
  static constexpr PixelsFn kPixels[] = {avx2_pixels<1, 2, Pairs, In, W>, avx2_pixels<2, 2, Pairs, In, W>, avx2_pixels<3, 2, Pairs, In, W>,
                                         avx2_pixels<4, 2, Pairs, In, W>, avx2_pixels<5, 2, Pairs, In, W>};
  const int64_t pix_step = s.sw * s.C;
  const Avx2EpilogueFn epilogue = avx2_epilogue_for(e, residual != nullptr);
  for (int64_t o0 = o_begin; o0 < o_end; o0 += 16)  // 2 vectors of 8 channels: 10 accumulators of 16 registers
    balanced_blocks(s.OW, 5, [&](int64_t ow, int64_t pixels) {
      kPixels[pixels - 1](s, e, epilogue, row + ow * pix_step, w, o0, residual, out, pixel0 + ow);
    });
}

// quantized_conv2d_maxpool (u8): J pairs of output pixels in each of two conv rows for the 8 channels from
// o, each 2 x 2 window's maximum taken on the int32 sums, then one epilogue. Pairs: as avx2_pixels'.
template <int J, bool Pairs>
PD_AVX2_TARGET void avx2_pool_pixels(const ConvShape& s, const Epilogue& e, const uint8_t* in, const int8_t* w, int64_t o, void* out,
                                     int64_t pooled) {
  const int64_t pix_step = s.sw * s.C, row_step = s.Wp * s.C, pair_step = s.sh * row_step;
  __m256i acc[2][2 * J];
  #pragma GCC unroll 16
  for (int p = 0; p < 2 * J; ++p) acc[0][p] = acc[1][p] = _mm256_setzero_si256();
  for (int64_t ky = 0; ky < s.KH; ++ky) {
    const uint8_t* r = in + ky * row_step;
    const int8_t* wk = w + (ky * s.groups * s.COp + o) * 4;
    for (int64_t g = 0; g < s.groups; g += Pairs ? 2 : 1) {
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + g * s.COp * 4));
      const __m256i wb = Pairs ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + (g + 1) * s.COp * 4)) : wv;
      #pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
        #pragma GCC unroll 16
        for (int p = 0; p < 2 * J; ++p) {
          const uint8_t* x = r + h * pair_step + p * pix_step + 4 * g;
          if constexpr (Pairs)
            acc[h][p] = avx2_dot_u8_pairs(acc[h][p], _mm256_set1_epi32(load_u32(x)), wv, _mm256_set1_epi32(load_u32(x + 4)), wb);
          else
            acc[h][p] = avx2_dot_u8(acc[h][p], _mm256_set1_epi32(load_u32(x)), wv);
        }
    }
  }
  alignas(32) __m256i sums[J];
  #pragma GCC unroll 16
  for (int j = 0; j < J; ++j)
    sums[j] = _mm256_max_epi32(_mm256_max_epi32(acc[0][2 * j], acc[0][2 * j + 1]), _mm256_max_epi32(acc[1][2 * j], acc[1][2 * j + 1]));
  avx2_epilogue_for(e, false)(e, {sums, J, 1, o, s.CO - o, pooled * s.CO + o, s.CO, out, nullptr, true});
}

}  // namespace

void avx2_conv_row_u8(const ConvShape& s, const Epilogue& e, const uint8_t* row, const int8_t* w, const void* residual, void* out,
                      int64_t pixel0, int64_t o_begin, int64_t o_end) {
  if (s.pairs) avx2_conv_row<true>(s, e, row, w, residual, out, pixel0, o_begin, o_end);
  else avx2_conv_row<false>(s, e, row, w, residual, out, pixel0, o_begin, o_end);
}

void avx2_conv_row_i16(const ConvShape& s, const Epilogue& e, const int16_t* in, const int16_t* w, const void* residual, void* out,
                       int64_t n, int64_t oh) {
  avx2_conv_row<false>(s, e, in + (n * s.Hp + oh * s.sh) * s.Wp * s.C, w, residual, out, (n * s.OH + oh) * s.OW, 0, s.CO);
}

void avx2_pool_row_u8(const ConvShape& s, const Epilogue& e, const uint8_t* in, const int8_t* w, void* out, int64_t n, int64_t pr,
                      int64_t PH, int64_t PW) {
  using PoolFn = void (*)(const ConvShape&, const Epilogue&, const uint8_t*, const int8_t*, int64_t, void*, int64_t);
  static constexpr PoolFn kPool[2][3] = {{avx2_pool_pixels<1, false>, avx2_pool_pixels<2, false>, avx2_pool_pixels<3, false>},
                                         {avx2_pool_pixels<1, true>, avx2_pool_pixels<2, true>, avx2_pool_pixels<3, true>}};
  const uint8_t* row = in + (n * s.Hp + 2 * pr * s.sh) * s.Wp * s.C;
  for (int64_t o = 0; o < s.CO; o += 8)  // 12 accumulators of 16 registers
    balanced_blocks(PW, 3, [&](int64_t j0, int64_t pairs) {
      kPool[s.pairs][pairs - 1](s, e, row + 2 * j0 * s.sw * s.C, w, o, out, (n * PH + pr) * PW + j0);
    });
}

}  // namespace pd::kernels::reference::int8_direct
#endif
