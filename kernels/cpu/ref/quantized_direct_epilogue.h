// The direct int8 kernels' epilogue in vectors (quantized_direct_common.h has its parameters, Epilogue):
// activations, the requantizing division without vdivps, and the tile epilogues the kernels call on their
// stored sums, compiled per activation, output type, residual and finiteness, for AVX-512 VNNI and AVX2.
#pragma once
#include "cpu/ref/quantized_direct_common.h"

#if defined(__x86_64__)
#include "cpu/common/simd.h"

namespace pd::kernels::reference::int8_direct {

// GELU, 0.5 y (1 + erf(y / sqrt 2)) with the f32 kernels' erf (simd.h). Out of line: inlined, its erf
// grew the epilogue until vnni_store was no longer inlined into the kernels (a call per store, the
// accumulators spilled around it), whatever their activation.
[[gnu::noinline]] PD_VNNI_TARGET inline __m512 vnni_gelu(__m512 y) {
  using S = simd::Avx512;
  return S::mul(S::mul(S::set1(0.5f), y), S::add(S::set1(1.f), S::erf(S::mul(y, S::set1(0.70710678118654752f)))));
}

[[gnu::noinline]] PD_AVX2_TARGET inline __m256 avx2_gelu(__m256 y) {
  using S = simd::Avx2;
  return S::mul(S::mul(S::set1(0.5f), y), S::add(S::set1(1.f), S::erf(S::mul(y, S::set1(0.70710678118654752f)))));
}

PD_VNNI_TARGET inline __m512 vnni_hardswish(__m512 y);  // below, after the division it uses
PD_AVX2_TARGET inline __m256 avx2_hardswish(__m256 y);

// The activation on 16 f32 values.
PD_VNNI_TARGET inline __m512 vnni_activate(const Epilogue& e, __m512 y) {
  const __m512 zero = _mm512_setzero_ps();
  switch (e.act) {
    case Activation::relu: return vmax(zero, y);  // NaN stays NaN (max returns the second)
    case Activation::leaky_relu: return _mm512_mask_mul_ps(y, _mm512_cmp_ps_mask(y, zero, _CMP_LT_OQ), y, _mm512_set1_ps(e.alpha));
    case Activation::relu6: return vmin(_mm512_set1_ps(6.0f), vmax(zero, y));
    case Activation::gelu: return vnni_gelu(y);
    case Activation::hardswish: return vnni_hardswish(y);
    default: return y;
  }
}

// y / out_scale without a division (vdivps: 8-16 cycles a vector, most of a small convolution's
// epilogue): q0 = y * (1 / s), then one correction with q0's exact remainder y - q0 * s (Markstein's),
// which gives the correctly rounded quotient, as the division does (tests/unit/int8_divide_test.cc). Where
// the remainder is not finite (q0 overflowed, or y is NaN), q0 is what the division would give.
PD_VNNI_TARGET inline __m512 vnni_divide(__m512 y, float s, float rcp) {
  const __m512 vs = _mm512_set1_ps(s), vr = _mm512_set1_ps(rcp);
  const __m512 q0 = _mm512_mul_ps(y, vr);
  const __m512 q1 = _mm512_fmadd_ps(_mm512_fnmadd_ps(q0, vs, y), vr, q0);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(q1, q1, _CMP_ORD_Q), q0, q1);
}

PD_AVX2_TARGET inline __m256 avx2_divide(__m256 y, float s, float rcp) {
  const __m256 vs = _mm256_set1_ps(s), vr = _mm256_set1_ps(rcp);
  const __m256 q0 = _mm256_mul_ps(y, vr);
  const __m256 q1 = _mm256_fmadd_ps(_mm256_fnmadd_ps(q0, vs, y), vr, q0);
  return _mm256_blendv_ps(q0, q1, _mm256_cmp_ps(q1, q1, _CMP_ORD_Q));
}

// hardswish as the reference computes it, bit for bit where y (y + 3) is a normal float: y <= -3 ? 0 :
// y >= 3 ? y : y (y + 3) / 6, the division correctly rounded (vnni_divide; tests/unit/int8_divide_test.cc);
// NaN stays NaN (both compares fail).
PD_VNNI_TARGET inline __m512 vnni_hardswish(__m512 y) {
  const __m512 three = _mm512_set1_ps(3.0f);
  __m512 r = vnni_divide(_mm512_mul_ps(y, _mm512_add_ps(y, three)), 6.0f, 1.0f / 6.0f);
  r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(y, three, _CMP_GE_OQ), r, y);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(y, _mm512_set1_ps(-3.0f), _CMP_LE_OQ), r, _mm512_setzero_ps());
}

PD_AVX2_TARGET inline __m256 avx2_hardswish(__m256 y) {
  const __m256 three = _mm256_set1_ps(3.0f);
  __m256 r = avx2_divide(_mm256_mul_ps(y, _mm256_add_ps(y, three)), 6.0f, 1.0f / 6.0f);
  r = _mm256_blendv_ps(r, y, _mm256_cmp_ps(y, three, _CMP_GE_OQ));
  return _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(y, _mm256_set1_ps(-3.0f), _CMP_LE_OQ));
}

// The activation on 8 f32 values.
PD_AVX2_TARGET inline __m256 avx2_activate(const Epilogue& e, __m256 y) {
  const __m256 zero = _mm256_setzero_ps();
  switch (e.act) {
    case Activation::relu: return _mm256_max_ps(zero, y);
    case Activation::leaky_relu: return _mm256_blendv_ps(y, _mm256_mul_ps(y, _mm256_set1_ps(e.alpha)), _mm256_cmp_ps(y, zero, _CMP_LT_OQ));
    case Activation::relu6: return _mm256_min_ps(_mm256_set1_ps(6.0f), _mm256_max_ps(zero, y));
    case Activation::gelu: return avx2_gelu(y);
    case Activation::hardswish: return avx2_hardswish(y);
    default: return y;
  }
}

// 8 f32 results requantized to out_dtype's integers (in int32 lanes, in range).
PD_AVX2_TARGET inline __m256i avx2_requantize(const Epilogue& e, __m256 y) {
  __m256 q = avx2_divide(y, e.out_scale, e.out_rcp);
  q = _mm256_min_ps(_mm256_max_ps(q, _mm256_set1_ps(e.lo)), _mm256_set1_ps(e.hi));
  return _mm256_add_epi32(_mm256_cvtps_epi32(q), _mm256_set1_epi32(e.out_zp));  // rounds half to even
}

// The low byte of each of 8 int32 lanes, in order, in the first 8 bytes (the rest zero).
PD_AVX2_TARGET inline __m128i avx2_low_bytes(__m256i v) {
  const __m256i low = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                       0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i b = _mm256_shuffle_epi8(v, low);  // bytes 0-3 of either half
  return _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
}

// The coordinates of a tile epilogue in the tables (avx2_epilogue_for, vnni_epilogue_for): e's
// activation among none, relu, leaky_relu, relu6, gelu, hardswish (vector_activation's), and its form,
// from the output type, the residual and finiteness, in the order the tables list them.
inline int epilogue_activation(Activation a) {
  switch (a) {
    case Activation::relu: return 1;
    case Activation::leaky_relu: return 2;
    case Activation::relu6: return 3;
    case Activation::gelu: return 4;
    case Activation::hardswish: return 5;
    default: return 0;
  }
}

inline int epilogue_form(const Epilogue& e, bool residual) { return (e.out_dtype == DType::f32) * 4 + residual * 2 + e.finite; }

// The activation A on 8 f32 values (alpha: leaky_relu's slope).
template <Activation A>
PD_AVX2_TARGET __attribute__((always_inline)) inline __m256 avx2_activate(__m256 alpha, __m256 y) {
  const __m256 zero = _mm256_setzero_ps();
  if constexpr (A == Activation::relu) return _mm256_max_ps(zero, y);
  else if constexpr (A == Activation::leaky_relu) return _mm256_blendv_ps(y, _mm256_mul_ps(y, alpha), _mm256_cmp_ps(y, zero, _CMP_LT_OQ));
  else if constexpr (A == Activation::relu6) return _mm256_min_ps(_mm256_set1_ps(6.0f), _mm256_max_ps(zero, y));
  else if constexpr (A == Activation::gelu) return avx2_gelu(y);
  else if constexpr (A == Activation::hardswish) return avx2_hardswish(y);
  else return y;
}

// A tile of int32 sums as the AVX2 kernels leave them for the epilogue, as VnniTile's with blocks of 8
// channels; `offsets`: the u8 paths' sums, from which the zero point's offsets still come off (the
// int16 path subtracted the zero point from its input).
struct Avx2Tile {
  const __m256i* acc;
  int64_t rows, V;
  int64_t o0, channels;
  int64_t at, row_stride;
  void* out;
  const void* residual;  // f32, or u8 / i8 where e.residual_bytes
  bool offsets;
};

// 8 (or `lanes`) residual values at `at` as f32: f32 as they are, bytes as (r - zero point) x scale.
PD_AVX2_TARGET __attribute__((always_inline)) inline __m256 avx2_residual(const Epilogue& e, const void* residual, int64_t at,
                                                                          int64_t lanes, __m256i mask) {
  if (!e.residual_bytes) return _mm256_maskload_ps(static_cast<const float*>(residual) + at, mask);
  const auto* r = static_cast<const uint8_t*>(residual) + at;
  __m128i b;
  if (lanes == 8) {
    b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r));
  } else {
    int64_t bytes = 0;
    std::memcpy(&bytes, r, static_cast<size_t>(lanes));
    b = _mm_cvtsi64_si128(bytes);
  }
  const __m256i v = e.residual_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, _mm256_set1_epi32(e.residual_zp))), _mm256_set1_ps(e.residual_scale));
}

// vnni_tile_epilogue's AVX2 form, the same operations in the same order on 8 lanes.
template <Activation A, bool F32, bool Residual, bool Finite>
PD_AVX2_TARGET void avx2_tile_epilogue(const Epilogue& e, const Avx2Tile& t) {
  constexpr bool kInClamp = Finite && !Residual && !F32 && (A == Activation::relu || A == Activation::relu6);
  const __m256 out_scale = _mm256_set1_ps(e.out_scale), out_rcp = _mm256_set1_ps(e.out_rcp), alpha = _mm256_set1_ps(e.alpha);
  const __m256 lo = _mm256_set1_ps(kInClamp ? std::max(e.lo, 0.0f) : e.lo);
  const __m256 hi = _mm256_set1_ps(kInClamp && A == Activation::relu6 ? std::min(e.hi, 6.0f / e.out_scale) : e.hi);
  const __m256i out_zp = _mm256_set1_epi32(e.out_zp);
  // The tile's fields in locals: the stores may alias anything, `t` included.
  const __m256i* const acc = t.acc;
  const int64_t rows = t.rows, V = t.V, row_stride = t.row_stride;
  const void* const residual = t.residual;
  char* const out = static_cast<char*>(t.out);
  for (int64_t v = 0; v < V; ++v) {
    const int64_t o = t.o0 + 8 * v, lanes = std::min<int64_t>(8, t.o0 + t.channels - o);
    if (lanes <= 0) break;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(lanes)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i offset = t.offsets ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.offset.data() + o)) : _mm256_setzero_si256();
    const __m256 scale = _mm256_loadu_ps(e.scale.data() + o), bias = _mm256_loadu_ps(e.bias.data() + o);
    const int64_t at0 = t.at + 8 * v;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = at0 + r * row_stride;
      __m256 y = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc[r * V + v], offset)), scale, bias);
      if constexpr (Residual) y = _mm256_add_ps(y, avx2_residual(e, residual, at, lanes, mask));
      if constexpr (!kInClamp) y = avx2_activate<A>(alpha, y);
      if constexpr (F32) {
        if (lanes == 8) _mm256_storeu_ps(reinterpret_cast<float*>(out) + at, y);
        else _mm256_maskstore_ps(reinterpret_cast<float*>(out) + at, mask, y);
        continue;
      }
      const __m256 q0 = _mm256_mul_ps(y, out_rcp);  // y / out_scale as avx2_divide
      const __m256 q1 = _mm256_fmadd_ps(_mm256_fnmadd_ps(q0, out_scale, y), out_rcp, q0);
      const __m256 q1_or_q0 = (Finite && !Residual) ? q1 : _mm256_blendv_ps(q0, q1, _mm256_cmp_ps(q1, q1, _CMP_ORD_Q));
      const __m256 q = _mm256_min_ps(_mm256_max_ps(q1_or_q0, lo), hi);
      // in range after the clamp: u8 or i8 alike
      const __m128i bytes = avx2_low_bytes(_mm256_add_epi32(_mm256_cvtps_epi32(q), out_zp));
      if (lanes == 8) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + at), bytes);
      } else {
        alignas(16) char b[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(b), bytes);
        std::memcpy(out + at, b, static_cast<size_t>(lanes));
      }
    }
  }
}

using Avx2EpilogueFn = void (*)(const Epilogue&, const Avx2Tile&);

// The tile epilogue of activation A in `form` (epilogue_form).
template <Activation A>
Avx2EpilogueFn avx2_epilogue_of(int form) {
  static constexpr Avx2EpilogueFn kForms[] = {
    avx2_tile_epilogue<A, false, false, false>, avx2_tile_epilogue<A, false, false, true>, avx2_tile_epilogue<A, false, true, false>,
    avx2_tile_epilogue<A, false, true, true>,   avx2_tile_epilogue<A, true, false, false>, avx2_tile_epilogue<A, true, false, true>,
    avx2_tile_epilogue<A, true, true, false>,   avx2_tile_epilogue<A, true, true, true>};
  return kForms[form];
}

// vnni_epilogue_for's AVX2 form.
inline Avx2EpilogueFn avx2_epilogue_for(const Epilogue& e, bool residual) {
  static constexpr Avx2EpilogueFn (*kByActivation[])(int) = {avx2_epilogue_of<Activation::none>, avx2_epilogue_of<Activation::relu>,
                                                         avx2_epilogue_of<Activation::leaky_relu>, avx2_epilogue_of<Activation::relu6>,
                                                         avx2_epilogue_of<Activation::gelu>, avx2_epilogue_of<Activation::hardswish>};
  return kByActivation[epilogue_activation(e.act)](epilogue_form(e, residual));
}

// 16 f32 results requantized to out_dtype's integers (in int32 lanes, in range).
PD_VNNI_TARGET inline __m512i vnni_requantize(const Epilogue& e, __m512 y) {
  __m512 q = vnni_divide(y, e.out_scale, e.out_rcp);
  q = vmin(vmax(q, _mm512_set1_ps(e.lo)), _mm512_set1_ps(e.hi));
  return _mm512_add_epi32(to_int32(q), _mm512_set1_epi32(e.out_zp));  // rounds half to even
}

// The epilogue's per-call values as vectors.
struct VnniConstants {
  __m512 out_scale, out_rcp, lo, hi, alpha;
  __m512i out_zp;
};

PD_VNNI_TARGET inline VnniConstants vnni_constants(const Epilogue& e) {
  return {_mm512_set1_ps(e.out_scale), _mm512_set1_ps(e.out_rcp), _mm512_set1_ps(e.lo),
          _mm512_set1_ps(e.hi),        _mm512_set1_ps(e.alpha),   _mm512_set1_epi32(e.out_zp)};
}

// The activation A on 16 f32 values (alpha: leaky_relu's slope).
template <Activation A>
PD_VNNI_TARGET __attribute__((always_inline)) inline __m512 vnni_activate(__m512 alpha, __m512 y) {
  const __m512 zero = _mm512_setzero_ps();
  if constexpr (A == Activation::relu) return vmax(zero, y);  // NaN stays NaN (max returns the second)
  else if constexpr (A == Activation::leaky_relu) return _mm512_mask_mul_ps(y, _mm512_cmp_ps_mask(y, zero, _CMP_LT_OQ), y, alpha);
  else if constexpr (A == Activation::relu6) return vmin(_mm512_set1_ps(6.0f), vmax(zero, y));
  else if constexpr (A == Activation::gelu) return vnni_gelu(y);
  else if constexpr (A == Activation::hardswish) return vnni_hardswish(y);
  else return y;
}

// A tile of int32 sums as a kernel leaves them for the epilogue: `rows` rows (pixels, or a linear's
// rows) of V blocks of 16 output channels from channel o0, acc[row * V + v].
struct VnniTile {
  const __m512i* acc;
  int64_t rows, V;
  int64_t o0, channels;  // the first channel and the channel count (the last block may be partial)
  int64_t at;            // the first row's first channel in out (and in the residual, indexed alike)
  int64_t row_stride;    // values from one row to the next in out
  void* out;
  const float* residual;  // f32, or null
};

// The epilogue over a tile in one loop per block: the kernels store their sums and call this, compiled
// once per activation, output type, residual and `Finite` (vnni_epilogue_for), each loop branch-free.
// Its vector operations bound a small convolution (the residual example's stem spends 3.4 of its 6 us
// here: 9 products an output, then about 11 floating-point operations a vector). With Finite (e.finite
// and no residual: y and the quotient cannot be NaN or infinite), the quotient's NaN select goes, and
// relu / relu6 go into the clamp's bounds: y / s is monotonic in y and 0 / s = 0, so
// max(0, y) / s = max(0, y / s) and min(6, y) / s = min(6 / s, y / s), all correctly rounded, bit for bit.
template <Activation A, bool F32, bool Residual, bool Finite>
PD_VNNI_TARGET void vnni_tile_epilogue(const Epilogue& e, const VnniTile& t) {
  constexpr bool kInClamp = Finite && !Residual && !F32 && (A == Activation::relu || A == Activation::relu6);
  VnniConstants k = vnni_constants(e);
  if constexpr (kInClamp) {
    k.lo = _mm512_set1_ps(std::max(e.lo, 0.0f));
    if constexpr (A == Activation::relu6) k.hi = _mm512_set1_ps(std::min(e.hi, 6.0f / e.out_scale));
  }
  // The tile's fields in locals: the byte stores may alias anything, `t` included.
  const __m512i* const acc = t.acc;
  const int64_t rows = t.rows, V = t.V, row_stride = t.row_stride;
  const float* const residual = t.residual;
  for (int64_t v = 0; v < V; ++v) {
    const int64_t o = t.o0 + 16 * v, lanes = std::min<int64_t>(16, t.o0 + t.channels - o);
    const __mmask16 m = lanes >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << lanes) - 1);
    const __m512i offset = _mm512_loadu_si512(e.offset.data() + o);
    const __m512 scale = _mm512_loadu_ps(e.scale.data() + o), bias = _mm512_loadu_ps(e.bias.data() + o);
    const int64_t at0 = t.at + 16 * v;
    char* const out = static_cast<char*>(t.out);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = at0 + r * row_stride;
      __m512 y = _mm512_fmadd_ps(to_float(_mm512_sub_epi32(acc[r * V + v], offset)), scale, bias);
      if constexpr (Residual) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, residual + at));
      if constexpr (!kInClamp) y = vnni_activate<A>(k.alpha, y);
      if constexpr (F32) {
        _mm512_mask_storeu_ps(reinterpret_cast<float*>(out) + at, m, y);
      } else {
        // y / out_scale as vnni_divide, clamped and rounded as vnni_requantize, narrowed in a register
        const __m512 q0 = _mm512_mul_ps(y, k.out_rcp);
        const __m512 q1 = _mm512_fmadd_ps(_mm512_fnmadd_ps(q0, k.out_scale, y), k.out_rcp, q0);
        const __m512 q1_or_q0 = (Finite && !Residual) ? q1 : _mm512_mask_blend_ps(_mm512_cmp_ps_mask(q1, q1, _CMP_ORD_Q), q0, q1);
        const __m512 q = vmin(vmax(q1_or_q0, k.lo), k.hi);
        const __m128i bytes = to_int8(_mm512_add_epi32(to_int32(q), k.out_zp));
        if (lanes >= 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + at), bytes);
        else _mm_mask_storeu_epi8(out + at, m, bytes);
      }
    }
  }
}

using VnniEpilogueFn = void (*)(const Epilogue&, const VnniTile&);

// The tile epilogue of activation A in `form` (epilogue_form).
template <Activation A>
VnniEpilogueFn vnni_epilogue_of(int form) {
  static constexpr VnniEpilogueFn kForms[] = {
    vnni_tile_epilogue<A, false, false, false>, vnni_tile_epilogue<A, false, false, true>, vnni_tile_epilogue<A, false, true, false>,
    vnni_tile_epilogue<A, false, true, true>,   vnni_tile_epilogue<A, true, false, false>, vnni_tile_epilogue<A, true, false, true>,
    vnni_tile_epilogue<A, true, true, false>,   vnni_tile_epilogue<A, true, true, true>};
  return kForms[form];
}

// The epilogue of e's activation and output type, with or without a residual (vector_activation's
// activations only).
inline VnniEpilogueFn vnni_epilogue_for(const Epilogue& e, bool residual) {
  static constexpr VnniEpilogueFn (*kByActivation[])(int) = {vnni_epilogue_of<Activation::none>, vnni_epilogue_of<Activation::relu>,
                                                         vnni_epilogue_of<Activation::leaky_relu>, vnni_epilogue_of<Activation::relu6>,
                                                         vnni_epilogue_of<Activation::gelu>, vnni_epilogue_of<Activation::hardswish>};
  return kByActivation[epilogue_activation(e.act)](epilogue_form(e, residual));
}

}  // namespace pd::kernels::reference::int8_direct
#endif
