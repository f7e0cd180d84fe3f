// quantize_linear and dequantize_linear (QDQ): per tensor or per channel along `axis`. Rounding is half
// to even (the default rounding mode's, see round_half_even), then saturation to the int8 type's range; NaN
// quantizes to the zero point. Rows of one channel are independent, so they spread over the threads.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "cpu/common/parallel.h"
#include "kernels.h"

namespace pd::kernels::reference {
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

// Rounds v half to even with the default rounding mode's own addition: once |v| < 2^22 (2^51 for
// double), v + 1.5 * 2^23 has no fraction bits left, so the sum rounds v and the subtraction is exact.
// Unlike std::nearbyint this is plain arithmetic, which vectorises on the baseline x86-64 build.
template <typename T>
inline T round_half_even(T v) {
  constexpr T magic = sizeof(T) == 4 ? T(12582912.0) : T(6755399441055744.0);
  return (v + magic) - magic;
}

// Quantizes each row in blocks, so that a per-tensor quantization (one long row) spreads over the
// threads too. Values are clamped before rounding (to keep the rounding trick in its range), NaN
// becomes the zero point by a select, not a branch.
template <typename T, typename Q>
void quantize_rows(const ChannelGeom& g, const T* x, const T* scale, const Q* zp, Q* out) {
  constexpr T lo = static_cast<T>(std::numeric_limits<Q>::min()), hi = static_cast<T>(std::numeric_limits<Q>::max());
  constexpr int64_t kBlock = 16384;
  const int64_t blocks = (g.inner + kBlock - 1) / kBlock;
  cpu::parallel_for(g.outer * g.channels * blocks, std::min(g.inner, kBlock), [&](int64_t item) {
    const int64_t row = item / blocks, begin = (item % blocks) * kBlock, end = std::min(g.inner, begin + kBlock);
    const int64_t c = row % g.channels;
    const T s = scale[c], z = static_cast<T>(zp[c]);
    const T* src = x + row * g.inner;
    Q* dst = out + row * g.inner;
    for (int64_t i = begin; i < end; ++i) {
      const T v = src[i] / s;
      const T clamped = v < lo - z ? lo - z : (v > hi - z ? hi - z : v);  // NaN passes both tests unchanged
      const T q = round_half_even(clamped) + z;
      dst[i] = static_cast<Q>(v != v ? z : q);
    }
  });
}

template <typename Q>
void dequantize_rows(const ChannelGeom& g, const Q* x, const float* scale, const Q* zp, float* out) {
  cpu::parallel_for(g.outer * g.channels, g.inner, [&](int64_t row) {
    const int64_t c = row % g.channels;
    const int32_t z = zp[c];
    const float s = scale[c];
    const Q* src = x + row * g.inner;
    float* dst = out + row * g.inner;
    for (int64_t i = 0; i < g.inner; ++i) dst[i] = static_cast<float>(static_cast<int32_t>(src[i]) - z) * s;
  });
}

}  // namespace

template <typename T>
void quantize_linear(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                     DType dtype, Tensor& out) {
  const ChannelGeom g = channel_geom(x, scale, axis);
  check_scales("quantize_linear", scale.data<T>(), scale.numel());
  if (dtype == DType::u8) quantize_rows<T, uint8_t>(g, x.data<T>(), scale.data<T>(), zero_point.data<uint8_t>(), out.data<uint8_t>());
  else quantize_rows<T, int8_t>(g, x.data<T>(), scale.data<T>(), zero_point.data<int8_t>(), out.data<int8_t>());
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
PD_INSTANTIATE_KERNELS(dequantize_linear, reference, uint8_t, int8_t)
