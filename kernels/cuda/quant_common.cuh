// What the int8 CUDA kernels share (quantize.cu, quantized_conv.cu, quantized_linear.cu): quantizing one
// value as quantize_linear does, the host check of a scale tensor, and the epilogue that turns an exact
// int32 sum into the op's output (f32, or requantized u8 / i8).
//
// The epilogue reproduces the CPU kernels' float arithmetic operation by operation, since u8 / i8 results
// are compared exactly and a different rounding of the requantize step moves ties. The CPU has two forms:
//  - cpu/ref/quantized.cc (the reference loops, and what oneDNN's primitives are checked against): in
//    double, y = ((acc * (x_scale * w_scale[c])) + bias[c]) + residual, activation, then
//    nearbyint(y / out_scale) + out_zero_point, saturated;
//  - cpu/ref/quantized_direct*.cc (the direct kernels, which the reference and oneDNN backends both take
//    first on x86 where they fit): in f32, y = fma(float(acc), float(x_scale * w_scale[c]), bias[c]) +
//    residual, the activation in f32, then the correctly rounded y / out_scale clamped to the type's range
//    minus the zero point, rounded half to even, plus the zero point.
// `f32_math` picks the direct kernels' form where the CPU would run them (direct_conv_on_cpu /
// direct_linear_on_cpu below mirror their conditions). Every step is an explicit _rn intrinsic, so nvcc's
// default multiply-add contraction cannot fuse what the CPU (built without FMA) rounds twice.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/cuda_common.cuh"
#include "elementwise_ops.h"

namespace pd::kernels::cuda {

// ---- quantize_linear's rounding --------------------------------------------------------------------

// saturate(round_half_even(x / s) + z), NaN -> z, as cpu/ref/quantize_run.h: clamped to the range minus
// the zero point before rounding (rint rounds half to even, as the CPU's magic-number addition does in
// that range), the division correctly rounded in T.
template <typename Q, typename T>
__device__ __forceinline__ Q quantize_value(T x, T s, T z) {
  constexpr T lo = std::is_signed_v<Q> ? T(-128) : T(0), hi = std::is_signed_v<Q> ? T(127) : T(255);
  const T lo_z = lo - z, hi_z = hi - z;
  T v, clamped, q;
  if constexpr (sizeof(T) == 4) {
    v = __fdiv_rn(x, s);
    clamped = v < lo_z ? lo_z : (v > hi_z ? hi_z : v);
    q = rintf(clamped) + z;  // exact: both integers of at most 9 bits
  } else {
    v = __ddiv_rn(x, s);
    clamped = v < lo_z ? lo_z : (v > hi_z ? hi_z : v);
    q = ::rint(clamped) + z;
  }
  return static_cast<Q>(static_cast<int32_t>(v != v ? z : q));
}

// The scale tensor's values on the host (a small 0-D or 1-D tensor): waits for the stream.
template <typename T>
std::vector<T> scales_on_host(const KernelContext& ctx, const Tensor& scale) {
  std::vector<T> host(static_cast<size_t>(scale.numel()));
  if (host.empty()) return host;
  cudaStream_t stream = stream_of(ctx);
  PD_CUDA_CHECK(cudaMemcpyAsync(host.data(), scale.raw_data(), host.size() * sizeof(T), cudaMemcpyDeviceToHost, stream));
  PD_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// cpu/ref/quantize.cc's check_scales, with its message: every scale positive and finite.
template <typename T>
void check_quant_scales(const KernelContext& ctx, const char* op, const Tensor& scale) {
  const std::vector<T> s = scales_on_host<T>(ctx, scale);
  for (size_t c = 0; c < s.size(); ++c)
    PD_CHECK(std::isfinite(s[c]) && s[c] > T(0), ErrorCode::kInvalidArgument,
             "{}: scale[{}] must be positive and finite, but is {}", op, c, static_cast<double>(s[c]));
}

// quantize.cu: x f32 [N, C, H, W] quantized with the 0-D scale and zero point into the zero point's dtype,
// written [N, H, W, C] (cpu/ref/quantize_entry.h's quantize_to_nhwc, scale check included).
Tensor quantize_to_nhwc(const KernelContext& ctx, const char* op, const Tensor& x, const Tensor& scale, const Tensor& zero_point);

// ---- which epilogue the CPU runs -------------------------------------------------------------------

inline bool direct_activation(Activation a) {
  return a == Activation::none || a == Activation::relu || a == Activation::leaky_relu || a == Activation::relu6;
}

// cpu/ref/quantized_direct.cc's setup_direct on an x86 CPU with AVX2 or more: NHWC, one group, no
// dilation, an activation of the vector epilogue, no int8 residual, fewer than 16 input channels and a
// kernel row (KW * C) of at most 64 values. quantized_conv2d_maxpool's direct kernels take a subset of
// these, and its other calls run quantized_conv2d, so the same test decides its epilogue.
inline bool direct_conv_on_cpu(bool channels_last, int64_t groups, const std::vector<int64_t>& dilation, Activation act,
                               bool int8_residual, int64_t C, int64_t KW) {
  return channels_last && groups == 1 && dilation.size() == 2 && dilation[0] == 1 && dilation[1] == 1 && direct_activation(act) &&
         !int8_residual && C < 16 && KW * C <= 64;
}

// cpu/ref/quantized_direct_linear.cc's quantized_linear_direct on such a CPU (VNNI, or AVX2 on weights
// within 7 bits): rows up to 256 where the weight holds at most 1 MiB, else up to 4.
inline bool direct_linear_on_cpu(Activation act, int64_t M, int64_t O, int64_t K) {
  const int64_t most_rows = O * K <= (int64_t{1} << 20) ? 256 : 4;
  return direct_activation(act) && M > 0 && K > 0 && M <= most_rows;
}

// ---- the epilogue ----------------------------------------------------------------------------------

enum class QKind : int { none, f32, u8, i8 };

inline QKind qkind(DType d) { return d == DType::u8 ? QKind::u8 : d == DType::i8 ? QKind::i8 : QKind::f32; }

// Device pointers to the op's scalars and per-channel values (read in the kernel: no host copies).
struct QuantEpilogue {
  const float* x_scale = nullptr;  // 0-D
  const float* w_scale = nullptr;  // [CO] or 0-D
  bool per_channel = false;
  const float* bias = nullptr;     // [CO] or null
  Activation act = Activation::none;
  double alpha = 0.0;
  bool f32_math = false;           // the CPU direct kernels' form (see the top of this file)
  QKind out = QKind::f32;
  const float* out_scale = nullptr;
  const void* out_zero_point = nullptr;
  QKind res = QKind::none;         // the residual, indexed like the output
  const void* residual = nullptr;
  const float* res_scale = nullptr;
  const void* res_zero_point = nullptr;
};

// The epilogue of the op's tensors (undefined ones stay null; residual_* only for an int8 residual).
inline QuantEpilogue make_quant_epilogue(const Tensor& x_scale, const Tensor& weight_scale, const Tensor& bias, const Tensor& residual,
                                         const Tensor& residual_scale, const Tensor& residual_zero_point, const Tensor& out_scale,
                                         const Tensor& out_zero_point, Activation act, double alpha, DType out_dtype, bool f32_math) {
  QuantEpilogue e;
  e.x_scale = static_cast<const float*>(x_scale.raw_data());
  e.w_scale = static_cast<const float*>(weight_scale.raw_data());
  e.per_channel = weight_scale.dim() == 1;
  e.bias = bias.defined() ? static_cast<const float*>(bias.raw_data()) : nullptr;
  e.act = act;
  e.alpha = alpha;
  e.f32_math = f32_math;
  e.out = qkind(out_dtype);
  if (e.out != QKind::f32) {
    e.out_scale = static_cast<const float*>(out_scale.raw_data());
    e.out_zero_point = out_zero_point.raw_data();
  }
  if (residual.defined()) {
    e.res = qkind(residual.dtype());
    e.residual = residual.raw_data();
    if (e.res != QKind::f32) {
      e.res_scale = static_cast<const float*>(residual_scale.raw_data());
      e.res_zero_point = residual_zero_point.raw_data();
    }
  }
  return e;
}

__device__ __forceinline__ int32_t read_zero_point(const void* p, QKind k) {
  return k == QKind::u8 ? int32_t{*static_cast<const uint8_t*>(p)} : int32_t{*static_cast<const int8_t*>(p)};
}

// The SIMD epilogue's activations (max_ps / min_ps operand order: NaN passes as the second operand does).
__device__ __forceinline__ float direct_activate(Activation a, float y, float alpha) {
  switch (a) {
    case Activation::relu: return 0.0f > y ? 0.0f : y;
    case Activation::leaky_relu: return y < 0.0f ? __fmul_rn(y, alpha) : y;
    case Activation::relu6: {
      const float r = 0.0f > y ? 0.0f : y;
      return 6.0f < r ? 6.0f : r;
    }
    default: return y;
  }
}

// The direct kernels' f32 value of output element i (channel c) after the activation.
__device__ __forceinline__ float epilogue_f32(const QuantEpilogue& e, int32_t acc, int64_t c, int64_t i) {
  const float scale = __fmul_rn(*e.x_scale, e.w_scale[e.per_channel ? c : 0]);  // = float(double product)
  float y = __fmaf_rn(__int2float_rn(acc), scale, e.bias ? e.bias[c] : 0.0f);
  if (e.res == QKind::f32) y = __fadd_rn(y, static_cast<const float*>(e.residual)[i]);
  return direct_activate(e.act, y, static_cast<float>(e.alpha));
}

// The reference loops' double value (cpu/ref/quantized.cc's Epilogue::real, ResidualReader).
__device__ __forceinline__ double epilogue_f64(const QuantEpilogue& e, int32_t acc, int64_t c, int64_t i) {
  const double scale = __dmul_rn(static_cast<double>(*e.x_scale), static_cast<double>(e.w_scale[e.per_channel ? c : 0]));
  double r = 0.0;
  if (e.res == QKind::f32) {
    r = static_cast<const float*>(e.residual)[i];
  } else if (e.res != QKind::none) {
    const int32_t v = e.res == QKind::u8 ? int32_t{static_cast<const uint8_t*>(e.residual)[i]}
                                         : int32_t{static_cast<const int8_t*>(e.residual)[i]};
    r = __dmul_rn(static_cast<double>(v - read_zero_point(e.res_zero_point, e.res)), static_cast<double>(*e.res_scale));
  }
  const double y = __dadd_rn(__dadd_rn(__dmul_rn(static_cast<double>(acc), scale), e.bias ? static_cast<double>(e.bias[c]) : 0.0), r);
  return activate(e.act, y, e.alpha);
}

// An f32 result.
__device__ __forceinline__ float epilogue_float_out(const QuantEpilogue& e, int32_t acc, int64_t c, int64_t i) {
  return e.f32_math ? epilogue_f32(e, acc, c, i) : __double2float_rn(epilogue_f64(e, acc, c, i));
}

// A u8 / i8 result, as an int32 in the type's range.
__device__ __forceinline__ int32_t epilogue_int_out(const QuantEpilogue& e, int32_t acc, int64_t c, int64_t i) {
  const bool u8 = e.out == QKind::u8;
  const int32_t zp = read_zero_point(e.out_zero_point, e.out), qlo = u8 ? 0 : -128, qhi = u8 ? 255 : 127;
  if (e.f32_math) {
    const float lo = static_cast<float>(qlo - zp), hi = static_cast<float>(qhi - zp);
    float q = __fdiv_rn(epilogue_f32(e, acc, c, i), *e.out_scale);
    q = q > lo ? q : lo;  // max_ps(q, lo): NaN becomes lo
    q = q < hi ? q : hi;
    return __float2int_rn(q) + zp;
  }
  const double q = rint(__ddiv_rn(epilogue_f64(e, acc, c, i), static_cast<double>(*e.out_scale))) + zp;
  const double lo = qlo, hi = qhi;
  return static_cast<int32_t>(q < lo ? lo : (q > hi ? hi : q));
}

// Writes output element i from its int32 sum.
__device__ __forceinline__ void epilogue_store(const QuantEpilogue& e, int32_t acc, int64_t c, int64_t i, void* out) {
  if (e.out == QKind::f32) static_cast<float*>(out)[i] = epilogue_float_out(e, acc, c, i);
  else if (e.out == QKind::u8) static_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(epilogue_int_out(e, acc, c, i));
  else static_cast<int8_t*>(out)[i] = static_cast<int8_t>(epilogue_int_out(e, acc, c, i));
}

}  // namespace pd::kernels::cuda
