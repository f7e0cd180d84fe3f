// The direct int8 convolution for one input channel and few output channels (LeNet's 1 -> 6 conv on a
// grayscale image), on AVX-512 VNNI, and on AVX2 for weights within 7 bits (8 pixels a vector, each
// vpdpbusd a vpmaddubsw + vpmaddwd: avx2_dot_u8). With output channels as the vector lanes
// (quantized_direct.cc), 6 of 16 lanes would work and a 5-tap kernel row would fill 5 of 8 bytes: a
// quarter of the machine. Here the lanes are 16 output pixels of a row instead, and each lane's 4 bytes are 4 horizontally adjacent
// input pixels: a "quad" image Q[i] = bytes (x[i], x[i+1], x[i+2], x[i+3]) of the padded input, built
// once per call, lets one 64-byte load feed the taps kx..kx+3 of 16 neighbouring outputs, against a
// broadcast of the channel's 4 weights. A kernel row of KW taps takes ceil(KW / 4) such groups (zero
// weights past its end), so LeNet's 5 x 5 kernel is 10 multiply-adds per 16 pixels and channel.
//
// The epilogue is quantized_direct.h's, per channel on 16 pixels; integer results are then transposed
// from [channel][pixel] to NHWC's [pixel][channel] in registers (an 8 x 16 byte transpose).
#include "cpu/ref/quantized_direct_epilogue.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/ref/quantize_entry.h"
#include "pd/kernels/int8_direct_conv.h"

#if defined(__x86_64__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pd::kernels::reference::int8_direct {
namespace {

constexpr int64_t kBlock = 32;  // output pixels per step: two vectors of 16, for enough independent sums

PixelPack pack_pixels(const ConvShape& s, const Tensor& weight, bool seven_bit) {
  PixelPack p;
  const int8_t* w = weight.data<int8_t>();  // [CO][1][KH][KW]
  p.sum.assign(static_cast<size_t>(s.CO), 0);
  for (int64_t ky = 0; ky < s.KH; ++ky)
    for (int64_t kx0 = 0; kx0 < s.KW; kx0 += 4) {
      p.offset.push_back(ky * s.Wp + kx0);
      for (int64_t o = 0; o < s.CO; ++o) {
        uint32_t packed = 0;
        for (int64_t t = 0; t < 4 && kx0 + t < s.KW; ++t) {
          const int8_t v = weight_value(w[(o * s.KH + ky) * s.KW + kx0 + t], seven_bit);
          packed |= static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * t);
          p.sum[o] += v;
        }
        p.w.push_back(static_cast<int32_t>(packed));
      }
    }
  return p;
}

// With VBMI (Ice Lake, Sapphire Rapids, Zen 4 on), 16 quads are one byte permute of a 64-byte load.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) int64_t build_quads_vbmi(const uint8_t* line, int64_t count, uint32_t* q) {
  alignas(64) static constexpr uint8_t kOrder[64] = {0,  1,  2,  3,  1,  2,  3,  4,  2,  3,  4,  5,  3,  4,  5,  6,
                                                     4,  5,  6,  7,  5,  6,  7,  8,  6,  7,  8,  9,  7,  8,  9,  10,
                                                     8,  9,  10, 11, 9,  10, 11, 12, 10, 11, 12, 13, 11, 12, 13, 14,
                                                     12, 13, 14, 15, 13, 14, 15, 16, 14, 15, 16, 17, 15, 16, 17, 18};  // quad k: bytes k..k+3
  const __m512i idx = _mm512_load_si512(kOrder);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16)
    _mm512_storeu_si512(q + i, _mm512_permutexvar_epi8(idx, _mm512_loadu_si512(line + i)));
  return i;
}

// Q[i] for `count` positions from `line` (which has at least 64 readable bytes past the last one).
PD_AVX2_TARGET void build_quads_avx2(const uint8_t* line, int64_t count, uint32_t* q) {
  // Quads 0-3 from the low copy of 16 bytes, 4-7 from the high one.
  const __m256i order = _mm256_setr_epi8(0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6, 4, 5, 6, 7, 5, 6, 7, 8, 6, 7, 8, 9, 7, 8, 9, 10);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i bytes = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(line + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), _mm256_shuffle_epi8(bytes, order));
  }
  for (; i < count; ++i) q[i] = static_cast<uint32_t>(load_u32(line + i));
}

PD_VNNI_TARGET void build_quads(const uint8_t* line, int64_t count, uint32_t* q) {
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi");
  int64_t i = vbmi ? build_quads_vbmi(line, count, q) : 0;
  for (; i + 16 <= count; i += 16) {
    __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(line + i)));
    for (int t = 1; t < 4; ++t) {
      const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(line + i + t)));
      v = _mm512_or_si512(v, _mm512_slli_epi32(b, 8 * t));
    }
    _mm512_storeu_si512(q + i, v);
  }
  for (; i < count; ++i) q[i] = static_cast<uint32_t>(load_u32(line + i));
}

// The quad image of the input padded with its zero point, image by image (no padded copy in between):
// a row's quads past its end read padding, which only taps of zero weight and lanes not stored see. An
// f32 or s8 image is first made this thread's u8 image in one pass (one call of the quantize loop a
// image: a call a row cost LeNet's batch 1 more than the quantized copy it saves).
void fill_quads(const ConvShape& s, const PixelInput& in, uint32_t* q) {
  const uint8_t pad = static_cast<uint8_t>(in.zero_point);
  const int64_t pixels = s.H * s.W;
  cpu::parallel_for(s.N, s.Hp * s.Wp * 4, [&](int64_t n) {
    thread_local std::vector<uint8_t> image, line;
    const uint8_t* x = static_cast<const uint8_t*>(in.data) + n * pixels;
    if (in.dtype != DType::u8) {
      image.resize(static_cast<size_t>(pixels));
      if (in.dtype == DType::f32)
        quantize_row_u8(static_cast<const float*>(in.data) + n * pixels, image.data(), pixels, in.scale, static_cast<float>(in.zero_point));
      else
        for (int64_t i = 0; i < pixels; ++i) image[static_cast<size_t>(i)] = x[i] ^ 0x80;  // s8 shifted by 128
      x = image.data();
    }
    line.assign(static_cast<size_t>(s.Wp + 64), pad);
    for (int64_t hp = 0; hp < s.Hp; ++hp) {
      const int64_t h = hp - s.ph;
      uint32_t* out = q + (n * s.Hp + hp) * s.Wp;
      if (h < 0 || h >= s.H) {
        std::fill(out, out + s.Wp, pad * 0x01010101u);
        continue;
      }
      std::memcpy(line.data() + s.pw, x + h * s.W, static_cast<size_t>(s.W));  // the padding around it stays
      if (int8_path() == Path::vnni) build_quads(line.data(), s.Wp, out);
      else build_quads_avx2(line.data(), s.Wp, out);
    }
  });
}

// Rows r[0..7] of 16 bytes (channel-major) to 16 pixels of 8 bytes: pixel p in tile[p].
[[gnu::always_inline]] PD_AVX2_TARGET inline void transpose_8x16(const __m128i r[8], uint64_t tile[16]) {
  __m128i a[8], b[8];
  for (int i = 0; i < 4; ++i) {
    a[2 * i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);      // pixels 0-7: channel pairs
    a[2 * i + 1] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);  // pixels 8-15
  }
  for (int h = 0; h < 2; ++h) {  // h: pixels 0-7 or 8-15
    b[4 * h + 0] = _mm_unpacklo_epi16(a[h], a[2 + h]);      // 4 pixels x channels 0-3
    b[4 * h + 1] = _mm_unpackhi_epi16(a[h], a[2 + h]);
    b[4 * h + 2] = _mm_unpacklo_epi16(a[4 + h], a[6 + h]);  // channels 4-7
    b[4 * h + 3] = _mm_unpackhi_epi16(a[4 + h], a[6 + h]);
  }
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 2; ++k) {
      const __m128i lo = _mm_unpacklo_epi32(b[4 * h + k], b[4 * h + 2 + k]), hi = _mm_unpackhi_epi32(b[4 * h + k], b[4 * h + 2 + k]);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(tile + 8 * h + 4 * k), lo);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(tile + 8 * h + 4 * k + 2), hi);
    }
}

// The byte permutation from [channel][16 pixels] (channel c's bytes at 16 c) to NHWC's [pixel][CO]: NHWC
// byte k is pixel k / CO's channel k % CO.
template <int CO>
struct NhwcOrder {
  alignas(64) uint8_t index[128] = {};
  constexpr NhwcOrder() {
    for (int k = 0; k < 16 * CO; ++k) index[k] = static_cast<uint8_t>(16 * (k % CO) + k / CO);
  }
};

// With VBMI, the requantized bytes of 16 pixels go to NHWC in two byte permutes across the 8 channels'
// 128 bytes and two masked stores (the 8 x 16 transpose and a store a pixel took a tenth of LeNet's int8
// time at batch 64, host B).
template <int CO>
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void store_bytes_vbmi(const __m128i rows[8], int64_t valid, char* o) {
  static constexpr NhwcOrder<CO> kOrder;
  const __m512i lo = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(rows[1], rows[0])), _mm256_set_m128i(rows[3], rows[2]), 1);
  const __m512i hi = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(rows[5], rows[4])), _mm256_set_m128i(rows[7], rows[6]), 1);
  const int64_t bytes = valid * CO;
  const auto mask = [](int64_t n) { return n >= 64 ? ~__mmask64(0) : n <= 0 ? __mmask64(0) : (__mmask64(1) << n) - 1; };
  _mm512_mask_storeu_epi8(o, mask(bytes), _mm512_permutex2var_epi8(lo, _mm512_load_si512(kOrder.index), hi));
  if (bytes > 64) _mm512_mask_storeu_epi8(o + 64, mask(bytes - 64), _mm512_permutex2var_epi8(lo, _mm512_load_si512(kOrder.index + 64), hi));
}

// 16 pixels' results of CO channels (y[c]: channel c's 16 pixels) into NHWC out, `valid` pixels from `at`.
template <int CO>
PD_VNNI_TARGET void store_pixels(const Epilogue& e, const __m512 y[CO], int64_t valid, void* out, int64_t at) {
  if (e.out_dtype == DType::f32) {
    alignas(64) float t[CO][16];
    for (int c = 0; c < CO; ++c) _mm512_store_ps(t[c], y[c]);
    float* o = static_cast<float*>(out) + at * CO;
    for (int64_t p = 0; p < valid; ++p)
      for (int c = 0; c < CO; ++c) o[p * CO + c] = t[c][p];
    return;
  }
  __m128i rows[8];
  for (int c = 0; c < 8; ++c) rows[c] = c < CO ? to_int8(vnni_requantize(e, y[c])) : _mm_setzero_si128();
  char* o = static_cast<char*>(out) + at * CO;
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi");
  if (vbmi) return store_bytes_vbmi<CO>(rows, valid, o);
  alignas(16) uint64_t tile[16];
  transpose_8x16(rows, tile);
  // 8 bytes a pixel, each store's bytes past the pixel's CO overwritten by the next; the last exactly CO.
  for (int64_t p = 0; p + 1 < valid; ++p) std::memcpy(o + p * CO, &tile[p], 8);
  std::memcpy(o + (valid - 1) * CO, &tile[valid - 1], CO);
}

// The sums of 32 output pixels from `q` (the quad image at their first input position), per channel.
template <int CO>
[[gnu::always_inline]] PD_VNNI_TARGET inline void pixel_sums(const PixelPack& pack, const uint32_t* q, __m512i acc[CO][2]) {
  #pragma GCC unroll 16
  for (int c = 0; c < CO; ++c) acc[c][0] = acc[c][1] = _mm512_setzero_si512();
  const int64_t groups = static_cast<int64_t>(pack.offset.size());
  for (int64_t g = 0; g < groups; ++g) {
    const uint32_t* src = q + pack.offset[g];
    const __m512i x0 = _mm512_loadu_si512(src), x1 = _mm512_loadu_si512(src + 16);
    const int32_t* w = pack.w.data() + g * CO;
    #pragma GCC unroll 16
    for (int c = 0; c < CO; ++c) {
      const __m512i wv = _mm512_set1_epi32(w[c]);
      acc[c][0] = vnni_dot(acc[c][0], x0, wv);
      acc[c][1] = vnni_dot(acc[c][1], x1, wv);
    }
  }
}

// 16 pixels' sums of CO channels through the epilogue into `valid` NHWC pixels from `at`.
template <int CO>
[[gnu::always_inline]] PD_VNNI_TARGET inline void pixel_epilogue(const Epilogue& e, const __m512i sums[CO], int64_t valid, void* out,
                                                                 int64_t at) {
  __m512 y[CO];
  #pragma GCC unroll 16
  for (int c = 0; c < CO; ++c) {
    const __m512i a = _mm512_sub_epi32(sums[c], _mm512_set1_epi32(e.offset[c]));
    y[c] = vnni_activate(e, _mm512_fmadd_ps(to_float(a), _mm512_set1_ps(e.scale[c]), _mm512_set1_ps(e.bias[c])));
  }
  store_pixels<CO>(e, y, valid, out, at);
}

// One output row from the quad image `q` at its first input position; with Pool, one row of 2 x 2
// windows (stride 2): conv rows `q` and the next, maxed on the sums, then pixel pairs maxed.
template <int CO, bool Pool>
PD_VNNI_TARGET void pixel_row(const ConvShape& s, const Epilogue& e, const PixelPack& pack, const uint32_t* q, void* out,
                              int64_t pixel0, int64_t width) {
  for (int64_t ow0 = 0; ow0 < s.OW; ow0 += kBlock) {
    __m512i acc[CO][2];
    pixel_sums<CO>(pack, q + ow0, acc);
    if constexpr (Pool) {
      __m512i below[CO][2];
      pixel_sums<CO>(pack, q + s.sh * s.Wp + ow0, below);
      const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
      const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
      __m512i pooled[CO];
      #pragma GCC unroll 16
      for (int c = 0; c < CO; ++c) {
        const __m512i a = _mm512_max_epi32(acc[c][0], below[c][0]), b = _mm512_max_epi32(acc[c][1], below[c][1]);
        pooled[c] = _mm512_max_epi32(_mm512_permutex2var_epi32(a, even, b), _mm512_permutex2var_epi32(a, odd, b));
      }
      const int64_t first = ow0 / 2;
      if (first < width) pixel_epilogue<CO>(e, pooled, std::min<int64_t>(16, width - first), out, pixel0 + first);
    } else {
      #pragma GCC unroll 2
      for (int b = 0; b < 2; ++b) {
        const int64_t first = ow0 + 16 * b;
        if (first >= width) break;
        __m512i sums[CO];
        #pragma GCC unroll 16
        for (int c = 0; c < CO; ++c) sums[c] = acc[c][b];
        pixel_epilogue<CO>(e, sums, std::min<int64_t>(16, width - first), out, pixel0 + first);
      }
    }
  }
}

using PixelRowFn = void (*)(const ConvShape&, const Epilogue&, const PixelPack&, const uint32_t*, void*, int64_t, int64_t);
template <bool Pool>
constexpr PixelRowFn kPixelRows[] = {pixel_row<1, Pool>, pixel_row<2, Pool>, pixel_row<3, Pool>, pixel_row<4, Pool>,
                                     pixel_row<5, Pool>, pixel_row<6, Pool>, pixel_row<7, Pool>, pixel_row<8, Pool>};

// ---- AVX2: the same with 8 pixels a vector, blocks of 16 pixels, channels 3 at a time ---------------

constexpr int64_t kAvx2Block = 16;

// Channels C0.. in one pass over the groups, 3 at most: 6 accumulators. All 12 of 6 channels in one pass
// spill to the stack under GCC (16 registers), which made LeNet's first conv 3x slower.
template <int CO, int C0>
[[gnu::always_inline]] PD_AVX2_TARGET inline void avx2_pixel_pass(const PixelPack& pack, const uint32_t* q, __m256i acc[CO][2]) {
  constexpr int kPass = CO - C0 < 3 ? CO - C0 : 3;
  __m256i a[kPass][2];
  #pragma GCC unroll 4
  for (int c = 0; c < kPass; ++c) a[c][0] = a[c][1] = _mm256_setzero_si256();
  const int64_t groups = static_cast<int64_t>(pack.offset.size());
  for (int64_t g = 0; g < groups; ++g) {
    const uint32_t* src = q + pack.offset[g];
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 8));
    const int32_t* w = pack.w.data() + g * CO + C0;
    #pragma GCC unroll 4
    for (int c = 0; c < kPass; ++c) {
      const __m256i wv = _mm256_set1_epi32(w[c]);
      a[c][0] = avx2_dot_u8(a[c][0], x0, wv);
      a[c][1] = avx2_dot_u8(a[c][1], x1, wv);
    }
  }
  #pragma GCC unroll 4
  for (int c = 0; c < kPass; ++c) acc[C0 + c][0] = a[c][0], acc[C0 + c][1] = a[c][1];
  if constexpr (C0 + kPass < CO) avx2_pixel_pass<CO, C0 + kPass>(pack, q, acc);
}

// The sums of 16 output pixels from `q` (the quad image at their first input position), per channel.
template <int CO>
[[gnu::always_inline]] PD_AVX2_TARGET inline void avx2_pixel_sums(const PixelPack& pack, const uint32_t* q, __m256i acc[CO][2]) {
  avx2_pixel_pass<CO, 0>(pack, q, acc);
}

// 8 pixels' sums of CO channels through the epilogue into `valid` NHWC pixels from `at`.
template <int CO>
[[gnu::always_inline]] PD_AVX2_TARGET inline void avx2_pixel_epilogue(const Epilogue& e, const __m256i sums[CO], int64_t valid,
                                                                      void* out, int64_t at) {
  __m256 y[CO];
  #pragma GCC unroll 16
  for (int c = 0; c < CO; ++c) {
    const __m256i a = _mm256_sub_epi32(sums[c], _mm256_set1_epi32(e.offset[c]));
    y[c] = avx2_activate(e, _mm256_fmadd_ps(_mm256_cvtepi32_ps(a), _mm256_set1_ps(e.scale[c]), _mm256_set1_ps(e.bias[c])));
  }
  if (e.out_dtype == DType::f32) {
    alignas(32) float t[CO][8];
    for (int c = 0; c < CO; ++c) _mm256_store_ps(t[c], y[c]);
    float* o = static_cast<float*>(out) + at * CO;
    for (int64_t p = 0; p < valid; ++p)
      for (int c = 0; c < CO; ++c) o[p * CO + c] = t[c][p];
    return;
  }
  __m128i rows[8];
  for (int c = 0; c < 8; ++c) rows[c] = c < CO ? avx2_low_bytes(avx2_requantize(e, y[c])) : _mm_setzero_si128();
  alignas(16) uint64_t tile[16];
  transpose_8x16(rows, tile);  // pixels 8-15 are zeros
  char* o = static_cast<char*>(out) + at * CO;
  for (int64_t p = 0; p + 1 < valid; ++p) std::memcpy(o + p * CO, &tile[p], 8);
  std::memcpy(o + (valid - 1) * CO, &tile[valid - 1], CO);
}

template <int CO, bool Pool>
PD_AVX2_TARGET void avx2_pixel_row(const ConvShape& s, const Epilogue& e, const PixelPack& pack, const uint32_t* q, void* out,
                                   int64_t pixel0, int64_t width) {
  for (int64_t ow0 = 0; ow0 < s.OW; ow0 += kAvx2Block) {
    __m256i acc[CO][2];
    avx2_pixel_sums<CO>(pack, q + ow0, acc);
    if constexpr (Pool) {
      __m256i below[CO][2];
      avx2_pixel_sums<CO>(pack, q + s.sh * s.Wp + ow0, below);
      __m256i pooled[CO];
      #pragma GCC unroll 16
      for (int c = 0; c < CO; ++c) {
        const __m256 a = _mm256_castsi256_ps(_mm256_max_epi32(acc[c][0], below[c][0]));
        const __m256 b = _mm256_castsi256_ps(_mm256_max_epi32(acc[c][1], below[c][1]));
        // Even and odd pixels: [a0 a2 b0 b2 | a4 a6 b4 b6] put in order by 64-bit pairs.
        const __m256i even = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(a, b, 0x88)), 0xD8);
        const __m256i odd = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8);
        pooled[c] = _mm256_max_epi32(even, odd);
      }
      const int64_t first = ow0 / 2;
      if (first < width) avx2_pixel_epilogue<CO>(e, pooled, std::min<int64_t>(8, width - first), out, pixel0 + first);
    } else {
      #pragma GCC unroll 2
      for (int b = 0; b < 2; ++b) {
        const int64_t first = ow0 + 8 * b;
        if (first >= width) break;
        __m256i sums[CO];
        #pragma GCC unroll 16
        for (int c = 0; c < CO; ++c) sums[c] = acc[c][b];
        avx2_pixel_epilogue<CO>(e, sums, std::min<int64_t>(8, width - first), out, pixel0 + first);
      }
    }
  }
}

template <bool Pool>
constexpr PixelRowFn kAvx2PixelRows[] = {avx2_pixel_row<1, Pool>, avx2_pixel_row<2, Pool>, avx2_pixel_row<3, Pool>,
                                         avx2_pixel_row<4, Pool>, avx2_pixel_row<5, Pool>, avx2_pixel_row<6, Pool>,
                                         avx2_pixel_row<7, Pool>, avx2_pixel_row<8, Pool>};

}  // namespace

bool pixel_lanes_take(const ConvShape& s, bool residual) { return int8_pixel_lanes_fit(s.C, s.CO, s.sw) && !residual; }

std::shared_ptr<const PixelPack> pixel_pack(const KernelContext& ctx, const ConvShape& s, const Tensor& weight, bool seven_bit) {
  return packed_once<PixelPack>(ctx, weight, "conv-pixels", seven_bit, [&] { return pack_pixels(s, weight, seven_bit); });
}

void conv_pixel_lanes(const KernelContext& ctx, const ConvShape& s, const Epilogue& e, const PixelPack& pack, const PixelInput& in,
                      void* out, bool pooled) {
  // The quad image, with a tail for the last row's reads past its end (weights zero there, or lanes
  // that are not stored).
  const int64_t positions = s.N * s.Hp * s.Wp;
  thread_local std::vector<uint32_t> quads;
  quads.resize(static_cast<size_t>(positions + s.KW + kBlock + 16));
  std::fill(quads.begin() + positions, quads.end(), 0u);
  uint32_t* q = quads.data();  // the workers get the pointer: the thread_local is this thread's
  fill_quads(s, in, q);
  const int64_t rows = pooled ? s.OH / 2 : s.OH, width = pooled ? s.OW / 2 : s.OW, row_step = pooled ? 2 * s.sh : s.sh;
  const bool vnni = int8_path() == Path::vnni;
  const PixelRowFn* rows_for = vnni ? (pooled ? kPixelRows<true> : kPixelRows<false>) : (pooled ? kAvx2PixelRows<true> : kAvx2PixelRows<false>);
  const PixelRowFn row = rows_for[s.CO - 1];
  const int64_t work = s.OW * s.CO * s.KH * s.KW * (pooled ? 2 : 1) / kProductsPerWork;
  cpu::parallel_for(s.N * rows, work, [&](int64_t r) {
    const int64_t n = r / rows, oh = r % rows;
    row(s, e, pack, q + (n * s.Hp + oh * row_step) * s.Wp, out, r * width, width);
  });
}

}  // namespace pd::kernels::reference::int8_direct
#endif
