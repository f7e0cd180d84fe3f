// quantized_direct.h's linear kernel: up to 4 rows, each output a dot product of a row of x with a row of
// the weight (AVX-512 VNNI on u8 in 64-byte masked chunks, or AVX2 on int16 values), so nothing is packed.
#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12's AVX-512 intrinsics start some results from `__Y = __Y` (an undefined vector) and then warn
// about it where they are inlined.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "cpu/common/parallel.h"
#include "cpu/ref/quantized_direct.h"
#include "cpu/ref/quantized_direct_common.h"

namespace pd::kernels::reference {

#if defined(__x86_64__)
namespace {

using namespace int8_direct;

// One output value from its sum, for the linear kernels' few outputs.
void store_one(const Epilogue& e, int32_t acc, int64_t c, void* out, int64_t i) {
  float y = static_cast<float>(acc - e.offset[c]) * e.scale[c] + e.bias[c];
  switch (e.act) {
    case Activation::relu: y = y < 0.0f ? 0.0f : y; break;
    case Activation::leaky_relu: y = y < 0.0f ? y * e.alpha : y; break;
    case Activation::relu6: y = y < 0.0f ? 0.0f : (y > 6.0f ? 6.0f : y); break;
    default: break;
  }
  if (e.out_dtype == DType::f32) {
    static_cast<float*>(out)[i] = y;
    return;
  }
  const float q = std::clamp(y / e.out_scale, e.lo, e.hi);
  const int32_t v = static_cast<int32_t>(std::nearbyint(q)) + e.out_zp;
  if (e.out_dtype == DType::u8) static_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(v);
  else static_cast<int8_t*>(out)[i] = static_cast<int8_t>(v);
}


// ---- linear --------------------------------------------------------------------------------------

constexpr int64_t kLinearRows = 4;  // rows taken directly: oneDNN's matmul wins from about here on

// Rows [m0, m0 + M) (M <= 4) of x (u8, K per row) against weight row o: the M exact sums.
PD_VNNI_TARGET void vnni_dot_rows(const uint8_t* x, int64_t M, int64_t K, const int8_t* w, int32_t* sums) {
  __m512i acc[kLinearRows];
  for (int64_t m = 0; m < M; ++m) acc[m] = _mm512_setzero_si512();
  for (int64_t k = 0; k < K; k += 64) {
    const __mmask64 mask = K - k >= 64 ? ~__mmask64(0) : (__mmask64(1) << (K - k)) - 1;
    const __m512i wv = _mm512_maskz_loadu_epi8(mask, w + k);
    for (int64_t m = 0; m < M; ++m) acc[m] = _mm512_dpbusd_epi32(acc[m], _mm512_maskz_loadu_epi8(mask, x + m * K + k), wv);
  }
  for (int64_t m = 0; m < M; ++m) sums[m] = _mm512_reduce_add_epi32(acc[m]);
}

PD_AVX2_TARGET void avx2_dot_rows(const int16_t* x, int64_t M, int64_t K, const int8_t* w, int32_t* sums) {
  __m256i acc[kLinearRows];
  for (int64_t m = 0; m < M; ++m) acc[m] = _mm256_setzero_si256();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    const __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + k)));
    for (int64_t m = 0; m < M; ++m)
      acc[m] = _mm256_add_epi32(acc[m], _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + m * K + k)), wv));
  }
  for (int64_t m = 0; m < M; ++m) {
    alignas(32) int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc[m]);
    int32_t s = 0;
    for (int32_t l : lanes) s += l;
    for (int64_t kk = k; kk < K; ++kk) s += int32_t{x[m * K + kk]} * w[kk];
    sums[m] = s;
  }
}

}  // namespace

bool quantized_linear_direct(const KernelContext& ctx, bool seven_bit, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                             const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                             const Tensor& out_zero_point, const std::string& activation, double alpha, DType out_dtype,
                             Tensor& out) {
  const Path path = int8_path();
  const Activation act = parse_activation("quantized_linear", activation);
  const int64_t O = weight.shape()[0], K = weight.shape()[1], M = O > 0 ? out.numel() / O : 0;
  if (path == Path::none || !vector_activation(act) || M == 0 || M > kLinearRows || K == 0) return false;
  Epilogue e = make_epilogue(x_scale, weight_scale, bias, out_scale, out_zero_point, act, alpha, out_dtype, O, seven_bit);
  const bool u8 = x.dtype() == DType::u8;
  const int32_t zp = u8 ? int32_t{x_zero_point.item<uint8_t>()} : int32_t{x_zero_point.item<int8_t>()};
  // The weight rows as multiplied (a halved copy in the 7-bit case) and their sums (for the VNNI path's
  // zero point), kept for a constant weight.
  struct Rows {
    std::vector<int8_t> halved;
    std::vector<int32_t> sums;
  };
  const auto rows = packed_once<Rows>(ctx, weight, "rows", seven_bit, [&] {
    Rows r;
    const int8_t* w = weight.data<int8_t>();
    if (seven_bit) {
      r.halved.resize(static_cast<size_t>(O * K));
      for (int64_t i = 0; i < O * K; ++i) r.halved[i] = weight_value(w[i], true);
      w = r.halved.data();
    }
    r.sums.assign(static_cast<size_t>(O), 0);
    for (int64_t o = 0; o < O; ++o)
      for (int64_t k = 0; k < K; ++k) r.sums[o] += w[o * K + k];
    return r;
  });
  const int8_t* w = seven_bit ? rows->halved.data() : weight.data<int8_t>();
  void* o = out.raw_data();
  if (path == Path::vnni) {
    // s8 activations shifted to u8 (v ^ 0x80 = v + 128), the zero point with them.
    thread_local std::vector<uint8_t> shifted;
    const auto* xu = static_cast<const uint8_t*>(x.raw_data());
    int32_t zp_u8 = zp;
    if (!u8) {
      shifted.resize(static_cast<size_t>(M * K));
      for (int64_t i = 0; i < M * K; ++i) shifted[i] = xu[i] ^ 0x80;
      xu = shifted.data(), zp_u8 = zp + 128;
    }
    for (int64_t c = 0; c < O; ++c) e.offset[c] = zp_u8 * rows->sums[c];
    cpu::parallel_for(O, M * K, [&](int64_t r) {
      int32_t s[kLinearRows];
      vnni_dot_rows(xu, M, K, w + r * K, s);
      for (int64_t m = 0; m < M; ++m) store_one(e, s[m], r, o, m * O + r);
    });
  } else {
    thread_local std::vector<int16_t> wide;  // x minus its zero point
    wide.resize(static_cast<size_t>(M * K));
    if (u8) std::transform(x.data<uint8_t>(), x.data<uint8_t>() + M * K, wide.begin(), [zp](uint8_t v) { return static_cast<int16_t>(v - zp); });
    else std::transform(x.data<int8_t>(), x.data<int8_t>() + M * K, wide.begin(), [zp](int8_t v) { return static_cast<int16_t>(v - zp); });
    const int16_t* xw = wide.data();  // the thread_local is this thread's: the workers get the pointer
    cpu::parallel_for(O, M * K, [&](int64_t r) {
      int32_t s[kLinearRows];
      avx2_dot_rows(xw, M, K, w + r * K, s);
      for (int64_t m = 0; m < M; ++m) store_one(e, s[m], r, o, m * O + r);
    });
  }
  return true;
}


#else  // not x86-64: the reference loops and oneDNN take every call

bool quantized_linear_direct(const KernelContext&, bool, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                             const Tensor&, const Tensor&, const Tensor&, const std::string&, double, DType, Tensor&) {
  return false;
}


#endif

}  // namespace pd::kernels::reference
