// The direct int8 convolution with channel lanes on AVX-512 VNNI (quantized_direct.cc chooses the path;
// shared pieces in quantized_direct_common.h and quantized_direct_epilogue.h): 16 output channels a
// vector, one vpdpbusd per 4 u8 x s8 products; P pixels x V vectors of accumulators in registers, then
// one epilogue call over a chunk of pixels.
#include "cpu/ref/quantized_direct_epilogue.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics start some results from `__Y = __Y` (an undefined vector) and then warn
// about it where they are inlined.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pd::kernels::reference::int8_direct {
namespace {

// AVX-512 VNNI: the sums of P pixels x V blocks of 16 output channels, into sums[p * V + v]. The loops
// over P and V are unrolled so that the accumulators live in registers (GCC keeps an array it does not
// fully unroll in memory).
template <int P, int V>
PD_VNNI_TARGET void vnni_pixels(const ConvShape& s, const uint8_t* in, const int8_t* w, int64_t o0, __m512i* sums) {
  const int64_t pix_step = s.sw * s.C, row_step = s.Wp * s.C;
  __m512i acc[P][V];
  #pragma GCC unroll 16
  for (int p = 0; p < P; ++p)
    #pragma GCC unroll 16
    for (int v = 0; v < V; ++v) acc[p][v] = _mm512_setzero_si512();
  for (int64_t ky = 0; ky < s.KH; ++ky) {
    const uint8_t* r = in + ky * row_step;
    const int8_t* wk = w + (ky * s.groups * s.COp + o0) * 4;
    for (int64_t g = 0; g < s.groups; ++g) {
      __m512i wv[V];
      #pragma GCC unroll 16
      for (int v = 0; v < V; ++v) wv[v] = _mm512_loadu_si512(wk + (g * s.COp + v * 16) * 4);
      #pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const __m512i b = _mm512_set1_epi32(load_u32(r + p * pix_step + 4 * g));
        #pragma GCC unroll 16
        for (int v = 0; v < V; ++v) acc[p][v] = vnni_dot(acc[p][v], b, wv[v]);
      }
    }
  }
  #pragma GCC unroll 16
  for (int p = 0; p < P; ++p)
    #pragma GCC unroll 16
    for (int v = 0; v < V; ++v) sums[p * V + v] = acc[p][v];
}

// Most pixels per block for V channel vectors: about 12 accumulators (of 32 registers).
constexpr int64_t vnni_most_pixels(int64_t V) { return V == 1 ? 12 : V == 2 ? 6 : V == 3 ? 4 : 3; }

using VnniPixelsFn = void (*)(const ConvShape&, const uint8_t*, const int8_t*, int64_t, __m512i*);

template <int V, int... P>
constexpr VnniPixelsFn vnni_table[] = {vnni_pixels<P, V>...};

VnniPixelsFn vnni_pixels_for(int64_t pixels, int64_t V) {
  switch (V) {
    case 1: return vnni_table<1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12>[pixels - 1];
    case 2: return vnni_table<2, 1, 2, 3, 4, 5, 6>[pixels - 1];
    case 3: return vnni_table<3, 1, 2, 3, 4>[pixels - 1];
    default: return vnni_table<4, 1, 2, 3>[pixels - 1];
  }
}

// quantized_conv2d_maxpool on channel lanes: J pairs of output pixels in each of two conv rows (4J
// sums of 16 channels), each 2 x 2 window's maximum taken on the int32 sums, then one epilogue.
template <int J>
PD_VNNI_TARGET void vnni_pool_pixels(const ConvShape& s, const Epilogue& e, const uint8_t* in, const int8_t* w, void* out,
                                     int64_t pooled) {
  const int64_t pix_step = s.sw * s.C, row_step = s.Wp * s.C, pair_step = s.sh * row_step;
  __m512i acc[2][2 * J];
  #pragma GCC unroll 16
  for (int p = 0; p < 2 * J; ++p) acc[0][p] = acc[1][p] = _mm512_setzero_si512();
  for (int64_t ky = 0; ky < s.KH; ++ky) {
    const uint8_t* r = in + ky * row_step;
    const int8_t* wk = w + ky * s.groups * s.COp * 4;
    for (int64_t g = 0; g < s.groups; ++g) {
      const __m512i wv = _mm512_loadu_si512(wk + g * s.COp * 4);
      #pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
        #pragma GCC unroll 16
        for (int p = 0; p < 2 * J; ++p)
          acc[h][p] = vnni_dot(acc[h][p], _mm512_set1_epi32(load_u32(r + h * pair_step + p * pix_step + 4 * g)), wv);
    }
  }
  alignas(64) __m512i sums[J];
  #pragma GCC unroll 16
  for (int j = 0; j < J; ++j)
    sums[j] = _mm512_max_epi32(_mm512_max_epi32(acc[0][2 * j], acc[0][2 * j + 1]), _mm512_max_epi32(acc[1][2 * j], acc[1][2 * j + 1]));
  vnni_epilogue_for(e, false)(e, {sums, J, 1, 0, s.CO, pooled * s.CO, s.CO, out, nullptr});
}

using VnniPoolFn = void (*)(const ConvShape&, const Epilogue&, const uint8_t*, const int8_t*, void*, int64_t);
constexpr VnniPoolFn kVnniPool[] = {vnni_pool_pixels<1>, vnni_pool_pixels<2>, vnni_pool_pixels<3>, vnni_pool_pixels<4>,
                                    vnni_pool_pixels<5>};
}  // namespace

void vnni_conv_row(const ConvShape& s, const Epilogue& e, const uint8_t* in, const int8_t* w, const float* residual, void* out,
                   int64_t n, int64_t oh) {
  const uint8_t* row = in + (n * s.Hp + oh * s.sh) * s.Wp * s.C;
  const int64_t pixel0 = (n * s.OH + oh) * s.OW, pix_step = s.sw * s.C;
  const VnniEpilogueFn epilogue = vnni_epilogue_for(e, residual != nullptr);
  // The sums of up to kChunk pixels, then one epilogue call over them (one a tile of 3-12 pixels cost the
  // residual example's stem 0.3 of its 4.6 us on one thread).
  constexpr int64_t kChunk = 64;
  alignas(64) __m512i sums[kChunk * 4];
  for (int64_t o0 = 0; o0 < s.CO; o0 += 64) {
    const int64_t V = std::min<int64_t>(4, (s.CO - o0 + 15) / 16);
    for (int64_t c0 = 0; c0 < s.OW; c0 += kChunk) {
      const int64_t count = std::min(kChunk, s.OW - c0);
      balanced_blocks(count, vnni_most_pixels(V), [&](int64_t ow, int64_t pixels) {
        vnni_pixels_for(pixels, V)(s, row + (c0 + ow) * pix_step, w, o0, sums + ow * V);
      });
      epilogue(e, {sums, count, V, o0, s.CO - o0, (pixel0 + c0) * s.CO + o0, s.CO, out, residual});
    }
  }
}

// Pooled row `pr` of image n (PW pooled pixels): conv rows 2 pr and 2 pr + 1.
void vnni_pool_row(const ConvShape& s, const Epilogue& e, const uint8_t* in, const int8_t* w, void* out, int64_t n, int64_t pr,
                   int64_t PH, int64_t PW) {
  const uint8_t* row = in + (n * s.Hp + 2 * pr * s.sh) * s.Wp * s.C;
  balanced_blocks(PW, 5, [&](int64_t j0, int64_t pairs) {
    kVnniPool[pairs - 1](s, e, row + 2 * j0 * s.sw * s.C, w, out, (n * PH + pr) * PW + j0);
  });
}

}  // namespace pd::kernels::reference::int8_direct
#endif
