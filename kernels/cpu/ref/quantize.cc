// quantize_linear and dequantize_linear (QDQ): per tensor or per channel along `axis`. Rounding is half
// to even (the default rounding mode's, see round_half_even), then saturation to the int8 type's range; NaN
// quantizes to the zero point. Rows of one channel are independent, so they spread over the threads.
// gated_quantize: quantize_linear of an NHWC map times a per-channel gate, the product never stored.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/common/widest.h"
#include "cpu/ref/quantize_entry.h"
#include "cpu/ref/quantize_run.h"
#include "kernels.h"

namespace pd::kernels::reference {

void quantize_run_u8_avx2(const float* x, uint8_t* out, int64_t n, float s, float z);
void quantize_run_u8_avx512(const float* x, uint8_t* out, int64_t n, float s, float z);
void quantize_run_i8_avx2(const float* x, int8_t* out, int64_t n, float s, float z);
void quantize_run_i8_avx512(const float* x, int8_t* out, int64_t n, float s, float z);
void quantize_gated_run_u8_avx2(const float* x, const float* g, uint8_t* out, int64_t n, float s, float z);
void quantize_gated_run_u8_avx512(const float* x, const float* g, uint8_t* out, int64_t n, float s, float z);
void quantize_gated_run_i8_avx2(const float* x, const float* g, int8_t* out, int64_t n, float s, float z);
void quantize_gated_run_i8_avx512(const float* x, const float* g, int8_t* out, int64_t n, float s, float z);
void dequantize_run_u8_avx2(const uint8_t* x, float* out, int64_t n, float s, int32_t z);
void dequantize_run_u8_avx512(const uint8_t* x, float* out, int64_t n, float s, int32_t z);
void dequantize_run_i8_avx2(const int8_t* x, float* out, int64_t n, float s, int32_t z);
void dequantize_run_i8_avx512(const int8_t* x, float* out, int64_t n, float s, int32_t z);

namespace {

// The tensor as [outer, channels, inner] around `axis`; a 0-D scale makes it one channel.
struct ChannelGeom {
  int64_t outer = 1, channels = 1, inner = 1;
};

ChannelGeom channel_geom(const Tensor& x, const Tensor& scale, int64_t axis) {
  ChannelGeom g;
  if (scale.dim() == 0) {
    g.inner = x.numel();
    return g;
  }
  const int64_t a = normalize_axis(axis, x.dim(), "quantize");
  for (int64_t d = 0; d < a; ++d) g.outer *= x.shape()[d];
  g.channels = x.shape()[a];
  for (int64_t d = a + 1; d < x.dim(); ++d) g.inner *= x.shape()[d];
  return g;
}

template <typename T>
void check_scales(const char* op, const T* s, int64_t n) {
  for (int64_t c = 0; c < n; ++c)
    PD_CHECK(std::isfinite(s[c]) && s[c] > T(0), ErrorCode::kInvalidArgument,
             "{}: scale[{}] must be positive and finite, but is {}", op, c, static_cast<double>(s[c]));
}

// The quantize loop for float runs: the widest form this CPU has, chosen once per process.
template <typename T, typename Q>
using RunFn = void (*)(const T*, Q*, int64_t, T, T);

template <typename T, typename Q>
RunFn<T, Q> quantize_run_for() {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Q, uint8_t>)
    return cpu::widest<RunFn<T, Q>>(quantize_run<T, Q>, quantize_run_u8_avx2, quantize_run_u8_avx512);
  else if constexpr (std::is_same_v<T, float> && std::is_same_v<Q, int8_t>)
    return cpu::widest<RunFn<T, Q>>(quantize_run<T, Q>, quantize_run_i8_avx2, quantize_run_i8_avx512);
  else
    return quantize_run<T, Q>;
}

// Quantizes each row in blocks, so that a per-tensor quantization (one long row) spreads over the
// threads too.
template <typename T, typename Q>
void quantize_rows(const ChannelGeom& g, const T* x, const T* scale, const Q* zp, Q* out) {
  static const RunFn<T, Q> run = quantize_run_for<T, Q>();
  constexpr int64_t kBlock = 16384;
  const int64_t blocks = (g.inner + kBlock - 1) / kBlock;
  cpu::parallel_for(g.outer * g.channels * blocks, std::min(g.inner, kBlock), [&](int64_t item) {
    const int64_t row = item / blocks, begin = (item % blocks) * kBlock, end = std::min(g.inner, begin + kBlock);
    const int64_t c = row % g.channels;
    run(x + row * g.inner + begin, out + row * g.inner + begin, end - begin, scale[c], static_cast<T>(zp[c]));
  });
}

template <typename T, typename Q>
using GatedFn = void (*)(const T*, const T*, Q*, int64_t, T, T);

template <typename T, typename Q>
GatedFn<T, Q> quantize_gated_run_for() {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Q, uint8_t>)
    return cpu::widest<GatedFn<T, Q>>(quantize_gated_run<T, Q>, quantize_gated_run_u8_avx2, quantize_gated_run_u8_avx512);
  else if constexpr (std::is_same_v<T, float> && std::is_same_v<Q, int8_t>)
    return cpu::widest<GatedFn<T, Q>>(quantize_gated_run<T, Q>, quantize_gated_run_i8_avx2, quantize_gated_run_i8_avx512);
  else
    return quantize_gated_run<T, Q>;
}

// x [N, HW, C] times gate [N or 1, C], quantized: runs of pixels of an image across threads, each
// pixel's C channels one vector loop.
template <typename T, typename Q>
void quantize_gated_pixels(const T* x, const T* gate, bool gate_per_image, int64_t N, int64_t HW, int64_t C, T s, Q zp, Q* out) {
  static const GatedFn<T, Q> run = quantize_gated_run_for<T, Q>();
  constexpr int64_t kPixelRun = 64;
  const int64_t runs = (HW + kPixelRun - 1) / kPixelRun;
  cpu::parallel_for(N * runs, C * kPixelRun, [&](int64_t item) {
    const int64_t n = item / runs, p0 = item % runs * kPixelRun, p1 = std::min(HW, p0 + kPixelRun);
    const T* g = gate + (gate_per_image ? n * C : 0);
    for (int64_t p = p0; p < p1; ++p) run(x + (n * HW + p) * C, g, out + (n * HW + p) * C, C, s, static_cast<T>(zp));
  });
}

template <typename Q>
using DequantizeFn = void (*)(const Q*, float*, int64_t, float, int32_t);

template <typename Q>
DequantizeFn<Q> dequantize_run_for() {
  if constexpr (std::is_same_v<Q, uint8_t>) return cpu::widest<DequantizeFn<Q>>(dequantize_run<Q>, dequantize_run_u8_avx2, dequantize_run_u8_avx512);
  else return cpu::widest<DequantizeFn<Q>>(dequantize_run<Q>, dequantize_run_i8_avx2, dequantize_run_i8_avx512);
}

template <typename Q>
void dequantize_rows(const ChannelGeom& g, const Q* x, const float* scale, const Q* zp, float* out) {
  static const DequantizeFn<Q> run = dequantize_run_for<Q>();
  cpu::parallel_for(g.outer * g.channels, g.inner, [&](int64_t row) {
    const int64_t c = row % g.channels;
    run(x + row * g.inner, out + row * g.inner, g.inner, scale[c], static_cast<int32_t>(zp[c]));
  });
}

// Runs of kPixelRun pixels of an image: each channel's run quantized into a buffer, then interleaved
// into NHWC, the runs across threads (a run's output stays in L1; whole images a thread left batch 1
// on one thread: MobileNetV3's 16 x 112 x 112 entry took 194 us). One channel is already NHWC, so it is
// one run.
template <typename Q>
void quantize_planes_to_nhwc(const float* x, Q* out, int64_t N, int64_t C, int64_t HW, float s, Q zp) {
  if (C == 1) return quantize_rows<float, Q>(ChannelGeom{1, 1, N * HW}, x, &s, &zp, out);
  static const RunFn<float, Q> run = quantize_run_for<float, Q>();
  constexpr int64_t kPixelRun = 512;
  const int64_t runs = (HW + kPixelRun - 1) / kPixelRun;
  cpu::parallel_for(N * runs, C * kPixelRun, [&](int64_t item) {
    const int64_t n = item / runs, p0 = item % runs * kPixelRun, count = std::min(kPixelRun, HW - p0);
    Q plane[kPixelRun];
    Q* o = out + (n * HW + p0) * C;
    for (int64_t c = 0; c < C; ++c) {
      run(x + (n * C + c) * HW + p0, plane, count, s, static_cast<float>(zp));
      for (int64_t i = 0; i < count; ++i) o[i * C + c] = plane[i];
    }
  });
}

}  // namespace

void quantize_row_u8(const float* x, uint8_t* out, int64_t n, float scale, float zero_point) {
  static const RunFn<float, uint8_t> run = quantize_run_for<float, uint8_t>();
  run(x, out, n, scale, zero_point);
}

void dequantize_row(const uint8_t* x, float* out, int64_t n, float scale, int32_t zero_point) {
  static const DequantizeFn<uint8_t> run = dequantize_run_for<uint8_t>();
  run(x, out, n, scale, zero_point);
}

void dequantize_row(const int8_t* x, float* out, int64_t n, float scale, int32_t zero_point) {
  static const DequantizeFn<int8_t> run = dequantize_run_for<int8_t>();
  run(x, out, n, scale, zero_point);
}

Tensor quantize_to_nhwc(const char* op, const Tensor& x, const Tensor& scale, const Tensor& zero_point) {
  const float s = *scale.data<float>();
  check_scales(op, &s, 1);
  const Shape& xs = x.shape();  // [N, C, H, W]
  const DType dt = zero_point.dtype();
  Tensor out = Tensor::empty({xs[0], xs[2], xs[3], xs[1]}, dt);
  if (dt == DType::u8)
    quantize_planes_to_nhwc(x.data<float>(), out.data<uint8_t>(), xs[0], xs[1], xs[2] * xs[3], s, *zero_point.data<uint8_t>());
  else
    quantize_planes_to_nhwc(x.data<float>(), out.data<int8_t>(), xs[0], xs[1], xs[2] * xs[3], s, *zero_point.data<int8_t>());
  return out;
}

template <typename T>
void quantize_linear(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                     DType dtype, Tensor& out) {
  const ChannelGeom g = channel_geom(x, scale, axis);
  check_scales("quantize_linear", scale.data<T>(), scale.numel());
  if (dtype == DType::u8) quantize_rows<T, uint8_t>(g, x.data<T>(), scale.data<T>(), zero_point.data<uint8_t>(), out.data<uint8_t>());
  else quantize_rows<T, int8_t>(g, x.data<T>(), scale.data<T>(), zero_point.data<int8_t>(), out.data<int8_t>());
}

template <typename T>
void gated_quantize(const KernelContext& ctx, const Tensor& x, const Tensor& gate, const Tensor& scale, const Tensor& zero_point,
                    DType dtype, Tensor& out) {
  const Shape& xs = x.shape();  // [N, H, W, C]; gate [N or 1, 1, 1, C]
  const T s = *scale.data<T>();
  check_scales("gated_quantize", &s, 1);
  const bool per_image = gate.shape()[0] != 1;
  const int64_t N = xs[0], HW = xs[1] * xs[2], C = xs[3];
  if (dtype == DType::u8)
    quantize_gated_pixels<T, uint8_t>(x.data<T>(), gate.data<T>(), per_image, N, HW, C, s, *zero_point.data<uint8_t>(), out.data<uint8_t>());
  else
    quantize_gated_pixels<T, int8_t>(x.data<T>(), gate.data<T>(), per_image, N, HW, C, s, *zero_point.data<int8_t>(), out.data<int8_t>());
}

template <typename T>
void dequantize_linear(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                       Tensor& out) {
  const ChannelGeom g = channel_geom(x, scale, axis);
  check_scales("dequantize_linear", scale.data<float>(), scale.numel());
  dequantize_rows<T>(g, x.data<T>(), scale.data<float>(), zero_point.data<T>(), out.data<float>());
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(quantize_linear, reference, float, double)
PD_INSTANTIATE_KERNELS(gated_quantize, reference, float, double)
PD_INSTANTIATE_KERNELS(dequantize_linear, reference, uint8_t, int8_t)
