// Shared by the direct int8 kernels (quantized_direct.cc: convolution, quantized_direct_linear.cc: linear;
// interface in quantized_direct.h): the instruction-set path, the per-channel epilogue's parameters, the
// dot products and the cache of packed weights. The epilogue's vector code is quantized_direct_epilogue.h.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "elementwise_ops.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"
#include "pd/core/packed_weights.h"

#if defined(__x86_64__)
namespace pd::kernels::reference::int8_direct {

#define PD_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")))
#define PD_AVX2_TARGET __attribute__((target("avx2,fma")))

// int8_path() is the machine's: none, vnni or avx2. avx2_u8 is AVX2 on u8 inputs and weights within 7
// bits (vpmaddubsw, exact there), which a convolution takes where its packed weights allow it.
enum class Path { none, vnni, avx2, avx2_u8 };

inline Path int8_path() {
  static const Path path = [] {
    if (cpu_has_avx512() && cpu_has_vnni() && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw"))
      return Path::vnni;
    return cpu_has_avx2_fma() ? Path::avx2 : Path::none;
  }();
  return path;
}

constexpr int64_t kLanes = 16;  // output channels per block of the packed weights (one VNNI vector)

// parallel_for's work per item counts f32 lane operations; one VNNI instruction makes 64 int8 products
// (AVX2's vpmaddwd 16), so products over this are the work. Counting products made LeNet's batch-1
// convolutions and linears (a few thousand instructions each) fork across threads: 5 us slower in all.
constexpr int64_t kProductsPerWork = 16;
// An output's epilogue (to f32, scale and bias, activation, requantize, store: about 20 instructions a
// vector of 8 on AVX2) in the same units. A convolution of one input channel spends most of its time
// there (the residual example's stem: 9 products an output), which counting products alone left on
// one thread.
constexpr int64_t kEpilogueWork = 2;

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

inline bool vector_activation(Activation a) {
  return a == Activation::none || a == Activation::relu || a == Activation::leaky_relu || a == Activation::relu6 ||
         a == Activation::gelu || a == Activation::hardswish;
}

// A direct convolution's geometry: the input NHWC, padded into a copy (Hp x Wp) with the zero point.
struct ConvShape {
  int64_t N, H, W, C, CO, KH, KW, OH, OW, sh, sw, ph, pw;
  int64_t Hp, Wp;  // the padded input
  int64_t run;     // KW * C: the taps of one kernel row
  int64_t groups;  // run groups of 4 (VNNI) or 2 (AVX2) values
  int64_t COp;     // CO rounded up to kLanes
  // Path::avx2_u8 on weights within 6 bits: the pair sums of two groups (4 x 255 x 32 < 32768) are added in
  // 16 bits before one vpmaddwd, 3 multiplies per 8 products where single groups take 4 (groups even).
  bool pairs = false;
};

// Everything after the int32 sums, per output channel (padded with zeros to whole blocks of kLanes).
struct Epilogue {
  std::vector<float> scale, bias;
  std::vector<int32_t> offset;  // subtracted from the sums: zero point x the channel's weight sum (VNNI)
  Activation act = Activation::none;
  float alpha = 0.0f;
  DType out_dtype = DType::f32;
  float out_scale = 1.0f, lo = 0.0f, hi = 0.0f;  // y / out_scale is clamped to [lo, hi] (minus the zero point)
  float out_rcp = 1.0f;                            // 1 / out_scale, for the division's multiply-add form
  int32_t out_zp = 0;
  bool finite = false;  // every y (without a residual) and y / out_scale is finite, whatever the sums
  // A u8 / i8 residual (AVX2 kernels only) adds (r - residual_zp) * residual_scale; else it is f32.
  bool residual_bytes = false, residual_signed = false;
  float residual_scale = 1.0f;
  int32_t residual_zp = 0;
};

// Sets e's int8 residual (a no-op for an undefined or f32 one).
inline void set_residual(Epilogue& e, const Tensor& residual, const Tensor& scale, const Tensor& zero_point) {
  if (!residual.defined() || residual.dtype() == DType::f32) return;
  e.residual_bytes = true, e.residual_signed = residual.dtype() == DType::i8;
  e.residual_scale = scale.item<float>();
  e.residual_zp = e.residual_signed ? int32_t{zero_point.item<int8_t>()} : int32_t{zero_point.item<uint8_t>()};
}

inline Epilogue make_epilogue(const Tensor& x_scale, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                       const Tensor& out_zero_point, Activation act, double alpha, DType out_dtype, int64_t channels,
                       bool seven_bit) {
  Epilogue e;
  const int64_t padded = round_up(channels, kLanes);
  e.scale.assign(padded, 0.0f), e.bias.assign(padded, 0.0f), e.offset.assign(padded, 0);
  const double xs = x_scale.item<float>() * (seven_bit ? 2.0 : 1.0);  // halved weights: doubled scales
  const float* ws = weight_scale.data<float>();
  for (int64_t c = 0; c < channels; ++c) {
    e.scale[c] = static_cast<float>(xs * ws[weight_scale.dim() == 1 ? c : 0]);
    if (bias.defined()) e.bias[c] = bias.data<float>()[c];
  }
  e.act = act, e.alpha = static_cast<float>(alpha), e.out_dtype = out_dtype;
  if (out_dtype != DType::f32) {
    e.out_scale = out_scale.item<float>();
    e.out_rcp = 1.0f / e.out_scale;
    e.out_zp = out_dtype == DType::u8 ? int32_t{out_zero_point.item<uint8_t>()} : int32_t{out_zero_point.item<int8_t>()};
    const bool u8 = out_dtype == DType::u8;
    e.lo = static_cast<float>((u8 ? 0 : -128) - e.out_zp), e.hi = static_cast<float>((u8 ? 255 : 127) - e.out_zp);
  }
  // The sum less its offset is an int32 (below 2^31 in size, 2^32 leaves room); an activation grows it
  // by alpha at most (leaky_relu; gelu(y) and relu(y) are no larger than y).
  double largest = 0;
  for (int64_t c = 0; c < channels; ++c) largest = std::max(largest, 4294967296.0 * std::fabs(e.scale[c]) + std::fabs(e.bias[c]));
  largest *= std::max(1.0, std::fabs(alpha)) * std::max(1.0, static_cast<double>(e.out_rcp));
  e.finite = largest < 1e30;
  return e;
}

inline int32_t load_u32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// acc + the sums of 4 u8 x s8 products a 32-bit lane (x: 4 u8 values repeated, w: 8 lanes of 4 s8 weights
// within 7 bits), VNNI's vpdpbusd on AVX2: the pairs' 16-bit sums cannot saturate there.
PD_AVX2_TARGET inline __m256i avx2_dot_u8(__m256i acc, __m256i x, __m256i w) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), _mm256_set1_epi16(1)));
}

// acc + the sums of 8 u8 x s8 products a 32-bit lane, 4 from (xa, wa) and 4 from (xb, wb), weights within
// 6 bits: the two vpmaddubsw results add in 16 bits (4 x 255 x 32 < 32768) before one vpmaddwd.
PD_AVX2_TARGET __attribute__((always_inline)) inline __m256i avx2_dot_u8_pairs(__m256i acc, __m256i xa, __m256i wa, __m256i xb,
                                                                               __m256i wb) {
  const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(xa, wa), _mm256_maddubs_epi16(xb, wb));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// acc + the sums of 4 u8 x s8 products a 32-bit lane: vpdpbusd, written as one instruction on the
// accumulator's own register. GCC 12 compiles _mm512_dpbusd_epi32 with a register copy around every
// call (the builtin's result is not tied to its accumulator), which outnumbered the multiply-adds in the
// direct kernels' inner loops and made them move-bound (perf annotate on LeNet's int8 convolutions).
PD_VNNI_TARGET __attribute__((always_inline)) inline __m512i vnni_dot(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}

// AVX-512 conversions and max / min in their masked forms with every lane set: the unmasked forms pass
// an undefined source, which GCC 12 reports (-Wmaybe-uninitialized) once they are inlined into a kernel.
PD_VNNI_TARGET __attribute__((always_inline)) inline __m512 vmax(__m512 a, __m512 b) { return _mm512_mask_max_ps(a, 0xFFFF, a, b); }
PD_VNNI_TARGET __attribute__((always_inline)) inline __m512 vmin(__m512 a, __m512 b) { return _mm512_mask_min_ps(a, 0xFFFF, a, b); }
PD_VNNI_TARGET __attribute__((always_inline)) inline __m512i to_int32(__m512 a) {  // rounds half to even
  return _mm512_mask_cvtps_epi32(_mm512_setzero_si512(), 0xFFFF, a);
}
PD_VNNI_TARGET __attribute__((always_inline)) inline __m512 to_float(__m512i a) {
  return _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), 0xFFFF, a);
}
PD_VNNI_TARGET __attribute__((always_inline)) inline __m128i to_int8(__m512i a) {  // truncates each lane
  return _mm512_mask_cvtepi32_epi8(_mm_setzero_si128(), 0xFFFF, a);
}

// A weight as the kernels multiply it: halved (half to even) in the 7-bit case.
inline int8_t weight_value(int8_t w, bool seven_bit) {
  return seven_bit ? static_cast<int8_t>(std::nearbyint(w * 0.5f)) : w;
}

// The path a layer's kernels take on this machine: AVX2 reads u8 where every weight as multiplied fits in
// 7 bits (halved ones always do), so that vpmaddubsw cannot saturate.
inline Path weights_path(Path machine, const Tensor& weight, bool seven_bit) {
  if (machine != Path::avx2 || seven_bit) return machine == Path::avx2 ? Path::avx2_u8 : machine;
  const int8_t* w = weight.data<int8_t>();
  return std::all_of(w, w + weight.numel(), [](int8_t v) { return v >= -64 && v <= 64; }) ? Path::avx2_u8 : Path::avx2;
}

// Whether every weight lies in [-32, 32], as pd-quant --weight-bits 6 quantizes them: AVX2 then adds
// two groups' pair sums before widening them (ConvShape::pairs).
inline bool within_six_bits(const Tensor& weight) {
  const int8_t* w = weight.data<int8_t>();
  return std::all_of(w, w + weight.numel(), [](int8_t v) { return v >= -32 && v <= 32; });
}

// A row's pixels in blocks of at most `most`, as equal as they come (10 pixels at most 8: 5 + 5), so that
// every block keeps enough independent accumulator chains to hide the multiply-add latency.
template <typename F>
void balanced_blocks(int64_t count, int64_t most, F f) {
  const int64_t blocks = (count + most - 1) / most, base = count / blocks, extra = count % blocks;
  for (int64_t b = 0, at = 0; b < blocks; ++b) {
    const int64_t size = base + (b < extra ? 1 : 0);
    f(at, size);
    at += size;
  }
}

// quantized_direct_vnni.cc: output row `oh` of image n with channel lanes, 16 a vector, from the padded
// NHWC u8 input (s8 shifted by 128) and the weights packed [KH][groups][COp][4]; residual f32 or null.
void vnni_conv_row(const ConvShape& s, const Epilogue& e, const uint8_t* in, const int8_t* w, const float* residual, void* out,
                   int64_t n, int64_t oh);
// Pooled row `pr` of image n (PW pooled pixels, 2 x 2 windows of stride 2 pooled on the sums).
void vnni_pool_row(const ConvShape& s, const Epilogue& e, const uint8_t* in, const int8_t* w, void* out, int64_t n, int64_t pr,
                   int64_t PH, int64_t PW);

// quantized_direct_avx2.cc: output row `oh` of image n with channel lanes, 8 a vector, from the padded
// NHWC input (u8 for Path::avx2_u8, int16 values minus their zero point for Path::avx2) and the weights
// packed [KH][groups][COp][4] (u8) or [2] (int16); residual: f32, u8 / i8 where e.residual_bytes, or null.
// The u8 form reads from `row`, the output row's first padded input row, and writes the output channels
// [o_begin, o_end) (multiples of 16, or CO) of the pixels from pixel0.
void avx2_conv_row_u8(const ConvShape& s, const Epilogue& e, const uint8_t* row, const int8_t* w, const void* residual, void* out,
                      int64_t pixel0, int64_t o_begin, int64_t o_end);
void avx2_conv_row_i16(const ConvShape& s, const Epilogue& e, const int16_t* in, const int16_t* w, const void* residual, void* out,
                       int64_t n, int64_t oh);
// Pooled row `pr` of image n (PW pooled pixels, 2 x 2 windows of stride 2 pooled on the sums; u8 path).
void avx2_pool_row_u8(const ConvShape& s, const Epilogue& e, const uint8_t* in, const int8_t* w, void* out, int64_t n, int64_t pr,
                      int64_t PH, int64_t PW);

// The pixel-lane kernels' input, one channel: u8, s8 (read shifted by 128) or f32, which is quantized
// image by image as the kernel reads it (an int8 region's entry: one channel's NCHW is NHWC, so the f32
// input itself, without a quantized copy); zero_point is the u8 one the kernels read (s8's + 128).
struct PixelInput {
  const void* data;
  DType dtype;
  int32_t zero_point;
  float scale = 1.0f;  // f32's
};

// quantized_direct_pixels.cc: convolutions of one input channel and at most 8 output channels (LeNet's
// first), with output pixels as the vector lanes (AVX-512 VNNI, or AVX2 on weights within 7 bits). `in`
// is the input (see PixelInput). `pooled`: the result is the max pool of 2 x 2 windows, stride 2, of the
// convolution's (OH / 2 x OW / 2 pixels).
// The weights are packed once (pixel_pack; kept in ctx.packed for a constant weight) and e.offset must
// hold zero_point * pack.sum.
struct PixelPack {
  std::vector<int64_t> offset;  // per tap group: its first tap's position in the quad image, from the output pixel's
  std::vector<int32_t> w;       // [group][CO]: the 4 weights of the group's taps, as one int32
  std::vector<int32_t> sum;     // per output channel: the sum of its weights
};
bool pixel_lanes_take(const ConvShape& s, bool residual);
std::shared_ptr<const PixelPack> pixel_pack(const KernelContext& ctx, const ConvShape& s, const Tensor& weight, bool seven_bit);
void conv_pixel_lanes(const KernelContext& ctx, const ConvShape& s, const Epilogue& e, const PixelPack& pack, const PixelInput& in,
                      void* out, bool pooled);

// The packed weight of a constant is kept in ctx.packed; a key names the storage and the path.
template <typename Packed, typename Make>
std::shared_ptr<const Packed> packed_once(const KernelContext& ctx, const Tensor& weight, const char* what, bool seven_bit, Make make) {
  if (!ctx.packed || !ctx.packed->is_constant(weight)) return std::make_shared<const Packed>(make());
  const std::string key = std::string("int8-direct:") + what + ':' + std::to_string(reinterpret_cast<uintptr_t>(weight.storage().get())) +
                          ':' + std::to_string(weight.offset()) + ':' + std::to_string(static_cast<int>(int8_path())) + (seven_bit ? ":7" : ":8");
  if (std::shared_ptr<void> hit = ctx.packed->find(key)) return std::static_pointer_cast<const Packed>(hit);
  auto made = std::make_shared<Packed>(make());
  ctx.packed->store(key, made);
  return made;
}


}  // namespace pd::kernels::reference::int8_direct
#endif
