// Float vector operations for two instruction sets, Avx2 (8 floats a register) and Avx512 (16), for
// kernels written once as templates on one of them and compiled through pd_add_isa_variants
// (libcore/CMakeLists.txt); callers pick the widest the CPU has (widest.h). Every function carries its
// own target attribute, so this header may be included anywhere, before or after a target pragma.
// x86-64 only.
#pragma once
#include <immintrin.h>

namespace pd::kernels::simd {

// exp's range reduction and polynomial, shared by both widths: exp(x) = 2^n * exp(r) with
// n = round(x / ln 2) and |r| <= ln 2 / 2, exp(r) by its Taylor series to degree 6 (error below 2e-7
// relative). Below kLow the result is 0 (and exp(-inf) = 0 exactly); NaN stays NaN.
struct ExpConstants {
  static constexpr float kLow = -87.33654f;  // exp(kLow) is FLT_MIN, the smallest normal float
  static constexpr float kHigh = 88.37626f;  // 2^n stays finite up to here (the kernels take x <= 0)
  static constexpr float kLog2e = 1.44269504088896341f;
  static constexpr float kLn2Hi = 0.693359375f;  // ln 2 split so that n * kLn2Hi is exact
  static constexpr float kLn2Lo = -2.12194440e-4f;
  static constexpr float kC[7] = {1.f, 1.f, 0.5f, 1.f / 6, 1.f / 24, 1.f / 120, 1.f / 720};
};

// The sigmoid's exp(-x), for silu (which runs on every output of EfficientNet's convolutions): a degree-5
// minimax polynomial in place of exp's degree-6 Taylor series (2.1e-7 relative in float against 2.4e-7),
// evaluated in r' = -r with the odd coefficients negated, so that -x is never formed; and no blend for
// exp's far tail: x is clamped so that exp(-x) stays within [FLT_MIN, 2^127], where 1 / (1 + exp(-x))
// is already 1 or below 1e-38. 17 operations a vector where exp's form took 24.
struct SigmoidConstants {
  static constexpr float kC[6] = {1.00000012f, -0.999999702f, 0.499988943f, -0.166675746f, 0.0419153832f, -0.00829765480f};
};

// erf by Abramowitz and Stegun 7.1.26: for a = |x|, t = 1 / (1 + p a),
// erf(a) = 1 - t (c1 + t (c2 + t (c3 + t (c4 + t c5)))) exp(-a^2), absolute error below 1.5e-7 (float
// rounding adds about as much); erf(-x) = -erf(x); NaN stays NaN.
struct ErfConstants {
  static constexpr float kP = 0.3275911f;
  static constexpr float kC[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
};

#define PD_AVX2 [[gnu::target("avx2,fma"), gnu::always_inline]] static inline
struct Avx2 {
  using V = __m256;
  static constexpr int L = 8;
  PD_AVX2 V load(const float* p) { return _mm256_loadu_ps(p); }
  PD_AVX2 void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  PD_AVX2 V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  PD_AVX2 V set1(float s) { return _mm256_set1_ps(s); }
  PD_AVX2 V zero() { return _mm256_setzero_ps(); }
  PD_AVX2 V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  PD_AVX2 V add(V a, V b) { return _mm256_add_ps(a, b); }
  PD_AVX2 V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  PD_AVX2 V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  // 1 / x from the 12-bit estimate and one Newton step (about 23 bits: below float rounding in erf's t,
  // a fifth of a division's cost).
  PD_AVX2 V reciprocal(V x) {
    const V r = _mm256_rcp_ps(x);
    return mul(r, _mm256_fnmadd_ps(x, r, set1(2.f)));
  }
  PD_AVX2 V max(V a, V b) { return _mm256_max_ps(a, b); }
  PD_AVX2 V min(V a, V b) { return _mm256_min_ps(a, b); }
  // erf (see ErfConstants): computed on |x|, x's sign put back.
  PD_AVX2 V erf(V x) {
    const V sign = set1(-0.f), a = _mm256_andnot_ps(sign, x);
    const V t = reciprocal(fmadd(a, set1(ErfConstants::kP), set1(1.f)));
    V p = set1(ErfConstants::kC[4]);
    for (int i = 3; i >= 0; --i) p = fmadd(p, t, set1(ErfConstants::kC[i]));
    const V y = sub(set1(1.f), mul(mul(p, t), exp(mul(sub(zero(), a), a))));
    return _mm256_or_ps(_mm256_and_ps(x, sign), y);
  }
  PD_AVX2 float reduce_max(V v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
  PD_AVX2 float reduce_add(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  PD_AVX2 V exp(V x) {
    using C = ExpConstants;
    // max(lo, x) and min(hi, .) return their second operand for NaN, so NaN passes through.
    const V xc = _mm256_min_ps(set1(C::kHigh), _mm256_max_ps(set1(C::kLow), x));
    const V n = _mm256_round_ps(_mm256_mul_ps(xc, set1(C::kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const V r = _mm256_fnmadd_ps(n, set1(C::kLn2Lo), _mm256_fnmadd_ps(n, set1(C::kLn2Hi), xc));
    V p = set1(C::kC[6]);
    for (int i = 5; i >= 0; --i) p = fmadd(p, r, set1(C::kC[i]));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const V y = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
    return _mm256_blendv_ps(y, zero(), _mm256_cmp_ps(x, set1(C::kLow), _CMP_LT_OQ));
  }
  // 1 / (1 + exp(-x)) (see SigmoidConstants); NaN stays NaN.
  PD_AVX2 V sigmoid(V x) {
    using C = ExpConstants;
    const V xc = _mm256_min_ps(set1(-C::kLow), _mm256_max_ps(set1(-C::kHigh), x));
    const V n = _mm256_round_ps(_mm256_mul_ps(xc, set1(-C::kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const V r = _mm256_fmadd_ps(n, set1(C::kLn2Lo), _mm256_fmadd_ps(n, set1(C::kLn2Hi), xc));  // -(-x - n ln 2)
    V p = set1(SigmoidConstants::kC[5]);
    for (int i = 4; i >= 0; --i) p = fmadd(p, r, set1(SigmoidConstants::kC[i]));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return reciprocal(fmadd(p, _mm256_castsi256_ps(bits), set1(1.f)));
  }
};
#undef PD_AVX2

#define PD_AVX512 [[gnu::target("avx512f,avx2,fma"), gnu::always_inline]] static inline
struct Avx512 {
  using V = __m512;
  static constexpr int L = 16;
  PD_AVX512 V load(const float* p) { return _mm512_loadu_ps(p); }
  PD_AVX512 void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  PD_AVX512 V broadcast(const float* p) { return _mm512_set1_ps(*p); }
  PD_AVX512 V set1(float s) { return _mm512_set1_ps(s); }
  PD_AVX512 V zero() { return _mm512_setzero_ps(); }
  PD_AVX512 V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  PD_AVX512 V add(V a, V b) { return _mm512_add_ps(a, b); }
  PD_AVX512 V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  PD_AVX512 V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  PD_AVX512 V reciprocal(V x) {  // 14-bit estimate and one Newton step
    const V r = _mm512_mask_rcp14_ps(x, 0xFFFF, x);
    return mul(r, _mm512_fnmadd_ps(x, r, set1(2.f)));
  }
  PD_AVX512 V erf(V x) {  // as Avx2::erf (AVX-512F has bitwise ops on integers only; masked, as max above)
    const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u)), bits = _mm512_castps_si512(x);
    const V a = _mm512_castsi512_ps(_mm512_mask_andnot_epi32(bits, 0xFFFF, sign, bits));
    const V t = reciprocal(fmadd(a, set1(ErfConstants::kP), set1(1.f)));
    V p = set1(ErfConstants::kC[4]);
    for (int i = 3; i >= 0; --i) p = fmadd(p, t, set1(ErfConstants::kC[i]));
    const V y = sub(set1(1.f), mul(mul(p, t), exp(mul(sub(zero(), a), a))));
    return _mm512_castsi512_ps(_mm512_mask_or_epi32(bits, 0xFFFF, _mm512_mask_and_epi32(bits, 0xFFFF, bits, sign), _mm512_castps_si512(y)));
  }
  // The masked forms with every lane set: GCC 12's unmasked ones pass _mm512_undefined_ps() as the
  // source, which -Wmaybe-uninitialized reports once inlined under a target pragma.
  PD_AVX512 V max(V a, V b) { return _mm512_mask_max_ps(a, 0xFFFF, a, b); }
  PD_AVX512 V min(V a, V b) { return _mm512_mask_min_ps(a, 0xFFFF, a, b); }
  template <int Half>
  PD_AVX512 __m256 half(V v) {
    return _mm256_castpd_ps(_mm512_mask_extractf64x4_pd(_mm256_setzero_pd(), 0xF, _mm512_castps_pd(v), Half));
  }
  PD_AVX512 float reduce_max(V v) { return Avx2::reduce_max(_mm256_max_ps(half<0>(v), half<1>(v))); }
  PD_AVX512 float reduce_add(V v) { return Avx2::reduce_add(_mm256_add_ps(half<0>(v), half<1>(v))); }
  PD_AVX512 V exp(V x) {
    using C = ExpConstants;
    const V xc = min(set1(C::kHigh), max(set1(C::kLow), x));
    const V n = _mm512_mask_roundscale_ps(xc, 0xFFFF, _mm512_mul_ps(xc, set1(C::kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const V r = _mm512_fnmadd_ps(n, set1(C::kLn2Lo), _mm512_fnmadd_ps(n, set1(C::kLn2Hi), xc));
    V p = set1(C::kC[6]);
    for (int i = 5; i >= 0; --i) p = fmadd(p, r, set1(C::kC[i]));
    const __m512i zero_i = _mm512_setzero_si512();
    const __m512i e = _mm512_add_epi32(_mm512_mask_cvtps_epi32(zero_i, 0xFFFF, n), _mm512_set1_epi32(127));
    const V y = _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_mask_slli_epi32(zero_i, 0xFFFF, e, 23)));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, set1(C::kLow), _CMP_LT_OQ), y, zero());
  }
  PD_AVX512 V sigmoid(V x) {  // as Avx2::sigmoid, 2^n by scalef
    using C = ExpConstants;
    const V xc = min(set1(-C::kLow), max(set1(-C::kHigh), x));
    const V n = _mm512_mask_roundscale_ps(xc, 0xFFFF, _mm512_mul_ps(xc, set1(-C::kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const V r = _mm512_fmadd_ps(n, set1(C::kLn2Lo), _mm512_fmadd_ps(n, set1(C::kLn2Hi), xc));
    V p = set1(SigmoidConstants::kC[5]);
    for (int i = 4; i >= 0; --i) p = fmadd(p, r, set1(SigmoidConstants::kC[i]));
    return reciprocal(add(set1(1.f), _mm512_mask_scalef_ps(p, 0xFFFF, p, n)));
  }
};
#undef PD_AVX512

}  // namespace pd::kernels::simd
