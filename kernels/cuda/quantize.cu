// quantize_linear and dequantize_linear (QDQ) on CUDA, per tensor or per channel along `axis`, with the
// semantics of kernels/cpu/ref/quantize.cc: round half to even after a correctly rounded division,
// saturation to u8 / i8, NaN to the zero point (quant_common.cuh's quantize_value, the CPU's operations in
// the same order); dequantize as float(x - zero_point) * scale. One thread per element, the channel found
// from the flat index ([outer, channels, inner] around the axis). The scales are checked positive and
// finite on the host as the reference does, which needs their values there (one small copy and a wait).
// Also quantize_to_nhwc: the quantize_x entry of the int8 convolutions (NCHW f32 in, NHWC int8 out).
#include "cuda/quant_common.cuh"

namespace pd::kernels::cuda {
namespace {

// The tensor as [outer, channels, inner] around `axis`; a 0-D scale makes it one channel.
struct ChannelGeom {
  int64_t channels = 1, inner = 1;
};

ChannelGeom channel_geom(const Tensor& x, const Tensor& scale, int64_t axis) {
  ChannelGeom g;
  if (scale.dim() == 0) return g;
  const int64_t a = normalize_axis(axis, x.dim(), "quantize");
  g.channels = x.shape()[a];
  for (int64_t d = a + 1; d < x.dim(); ++d) g.inner *= x.shape()[d];
  return g;
}

template <typename T, typename Q>
__global__ void quantize_kernel(const T* __restrict__ x, const T* __restrict__ scale, const Q* __restrict__ zp,
                                Q* __restrict__ out, int64_t channels, int64_t inner, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    const int64_t c = channels == 1 ? 0 : (i / inner) % channels;
    out[i] = quantize_value<Q, T>(x[i], scale[c], static_cast<T>(zp[c]));
  }
}

template <typename Q>
__global__ void dequantize_kernel(const Q* __restrict__ x, const float* __restrict__ scale, const Q* __restrict__ zp,
                                  float* __restrict__ out, int64_t channels, int64_t inner, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    const int64_t c = channels == 1 ? 0 : (i / inner) % channels;
    out[i] = __fmul_rn(static_cast<float>(int32_t{x[i]} - int32_t{zp[c]}), scale[c]);  // the difference is exact in f32
  }
}

// out [N, H, W, C] from x [N, C, H, W]: one thread per output element, reading x's planes strided.
template <typename Q>
__global__ void quantize_nhwc_kernel(const float* __restrict__ x, const float* __restrict__ scale, const Q* __restrict__ zp,
                                     Q* __restrict__ out, int64_t C, int64_t HW, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    const int64_t c = i % C, p = i / C, img = p / HW, pix = p % HW;
    out[i] = quantize_value<Q, float>(x[(img * C + c) * HW + pix], *scale, static_cast<float>(*zp));
  }
}

template <typename T, typename Q>
void launch_quantize(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& zero_point, const ChannelGeom& g,
                     Tensor& out) {
  const int64_t n = x.numel();
  quantize_kernel<T, Q><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(x), dptr<T>(scale), dptr<Q>(zero_point), dptr<Q>(out),
                                                                        g.channels, g.inner, n);
  PD_CUDA_CHECK_LAUNCH("quantize_linear");
}

}  // namespace

Tensor quantize_to_nhwc(const KernelContext& ctx, const char* op, const Tensor& x, const Tensor& scale, const Tensor& zero_point) {
  check_quant_scales<float>(ctx, op, scale);
  const Shape& xs = x.shape();  // [N, C, H, W]
  Tensor out = Tensor::empty({xs[0], xs[2], xs[3], xs[1]}, zero_point.dtype(), ctx.place);
  const int64_t n = x.numel();
  if (n == 0) return out;
  if (zero_point.dtype() == DType::u8)
    quantize_nhwc_kernel<uint8_t><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
        dptr<float>(x), dptr<float>(scale), dptr<uint8_t>(zero_point), dptr<uint8_t>(out), xs[1], xs[2] * xs[3], n);
  else
    quantize_nhwc_kernel<int8_t><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
        dptr<float>(x), dptr<float>(scale), dptr<int8_t>(zero_point), dptr<int8_t>(out), xs[1], xs[2] * xs[3], n);
  PD_CUDA_CHECK_LAUNCH("quantize_to_nhwc");
  return out;
}

template <typename T>
void quantize_linear(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                     DType dtype, Tensor& out) {
  const ChannelGeom g = channel_geom(x, scale, axis);
  check_quant_scales<T>(ctx, "quantize_linear", scale);
  if (x.numel() == 0) return;
  if (dtype == DType::u8) launch_quantize<T, uint8_t>(ctx, x, scale, zero_point, g, out);
  else launch_quantize<T, int8_t>(ctx, x, scale, zero_point, g, out);
}

template <typename T>
void dequantize_linear(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                       Tensor& out) {
  const ChannelGeom g = channel_geom(x, scale, axis);
  check_quant_scales<float>(ctx, "dequantize_linear", scale);
  const int64_t n = x.numel();
  if (n == 0) return;
  dequantize_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(x), dptr<float>(scale), dptr<T>(zero_point),
                                                                       dptr<float>(out), g.channels, g.inner, n);
  PD_CUDA_CHECK_LAUNCH("dequantize_linear");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(quantize_linear, cuda, float, double)
PD_INSTANTIATE_KERNELS(dequantize_linear, cuda, uint8_t, int8_t)
