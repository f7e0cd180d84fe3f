// Shared by the direct int8 kernels (quantized_direct.cc: convolution, quantized_direct_linear.cc: linear;
// interface in quantized_direct.h): the instruction-set path, the per-channel epilogue and the cache of
// packed weights.
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

enum class Path { none, vnni, avx2 };

inline Path int8_path() {
  static const Path path = [] {
    if (cpu_has_avx512() && cpu_has_vnni() && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw"))
      return Path::vnni;
    return cpu_has_avx2_fma() ? Path::avx2 : Path::none;
  }();
  return path;
}

constexpr int64_t kLanes = 16;  // output channels per block of the packed weights (one VNNI vector)

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

inline bool vector_activation(Activation a) {
  return a == Activation::none || a == Activation::relu || a == Activation::leaky_relu || a == Activation::relu6;
}

// Everything after the int32 sums, per output channel (padded with zeros to whole blocks of kLanes).
struct Epilogue {
  std::vector<float> scale, bias;
  std::vector<int32_t> offset;  // subtracted from the sums: zero point x the channel's weight sum (VNNI)
  Activation act = Activation::none;
  float alpha = 0.0f;
  DType out_dtype = DType::f32;
  float out_scale = 1.0f, lo = 0.0f, hi = 0.0f;  // y / out_scale is clamped to [lo, hi] (minus the zero point)
  int32_t out_zp = 0;
};

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
    e.out_zp = out_dtype == DType::u8 ? int32_t{out_zero_point.item<uint8_t>()} : int32_t{out_zero_point.item<int8_t>()};
    const bool u8 = out_dtype == DType::u8;
    e.lo = static_cast<float>((u8 ? 0 : -128) - e.out_zp), e.hi = static_cast<float>((u8 ? 255 : 127) - e.out_zp);
  }
  return e;
}

inline int32_t load_u32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// 16 output channels' int32 sums (lanes of acc, from channel o; `lanes` of them real) through the
// epilogue into out[at...]; residual (f32, or null) is indexed by channel like the epilogue.
PD_VNNI_TARGET inline void vnni_store(const Epilogue& e, __m512i acc, int64_t o, int64_t lanes, const float* residual,
                                      void* out, int64_t at) {
  const __mmask16 m = lanes >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << lanes) - 1);
  const __m512i a = _mm512_sub_epi32(acc, _mm512_loadu_si512(e.offset.data() + o));
  __m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), _mm512_loadu_ps(e.scale.data() + o), _mm512_loadu_ps(e.bias.data() + o));
  if (residual) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, residual + o));
  const __m512 zero = _mm512_setzero_ps();
  switch (e.act) {
    case Activation::relu: y = _mm512_max_ps(zero, y); break;  // NaN stays NaN (max returns the second)
    case Activation::leaky_relu: y = _mm512_mask_mul_ps(y, _mm512_cmp_ps_mask(y, zero, _CMP_LT_OQ), y, _mm512_set1_ps(e.alpha)); break;
    case Activation::relu6: y = _mm512_min_ps(_mm512_set1_ps(6.0f), _mm512_max_ps(zero, y)); break;
    default: break;
  }
  if (e.out_dtype == DType::f32) return _mm512_mask_storeu_ps(static_cast<float*>(out) + at, m, y);
  __m512 q = _mm512_div_ps(y, _mm512_set1_ps(e.out_scale));
  q = _mm512_min_ps(_mm512_max_ps(q, _mm512_set1_ps(e.lo)), _mm512_set1_ps(e.hi));
  const __m512i v = _mm512_add_epi32(_mm512_cvtps_epi32(q), _mm512_set1_epi32(e.out_zp));  // rounds half to even
  _mm512_mask_cvtepi32_storeu_epi8(static_cast<char*>(out) + at, m, v);
}

// A weight as the kernels multiply it: halved (half to even) in the 7-bit case.
inline int8_t weight_value(int8_t w, bool seven_bit) {
  return seven_bit ? static_cast<int8_t>(std::nearbyint(w * 0.5f)) : w;
}

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
