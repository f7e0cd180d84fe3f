// quantized_conv2d and quantized_conv2d_maxpool on CUDA, with the semantics of kernels/cpu/ref/quantized.cc
// and quantized_conv_pool.h: sum((x - x_zero_point) * weight) exact in int32 over the receptive field
// (padding adds nothing: it is the real value 0), then the epilogue of quant_common.cuh (scales, bias,
// residual, activation, requantization), in the CPU's float arithmetic so that u8 / i8 results match it
// bit for bit.
//
// A direct kernel, one thread per output element (NCHW or NHWC, consecutive threads on consecutive
// outputs), int32 multiply-adds over (kernel row, kernel column, input channel). cuDNN's int8
// convolutions take no zero point and fuse none of this epilogue, and the int8 layers these ops come
// from are small (few channels: the CPU's own direct kernels' cases), so a plain kernel is the honest
// form here; the sums are exact, so their order is free.
//
// quantized_conv2d_maxpool: one thread per pooled output, the maximum of the epilogue's values over its
// window (max_pool2d_nhwc's rule: padding taps skipped, ceil mode's windows clipped, NaN wins for f32).
// The CPU's direct kernels pool the int32 sums instead where the epilogue is monotonic, which gives the
// same values (a non-decreasing function commutes with max), so one form serves every case.
// quantize_x: the f32 NCHW input is first quantized into an NHWC scratch (quantize.cu).
#include <climits>
#include <cmath>

#include "cuda/quant_common.cuh"
#include "pd/kernels/spatial_arg.h"

namespace pd::kernels::cuda {
namespace {

// A convolution's geometry and the element strides of its input and output, NCHW or NHWC.
struct QConvGeom {
  int64_t N, C, H, W, CO, CIg, COg, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw;
  int64_t xn, xc, xh, xw;  // input strides
  bool nhwc;
};

QConvGeom make_geom(const Shape& xs, const Shape& ws, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                    const std::vector<int64_t>& dilation, int64_t groups, bool channels_last) {
  QConvGeom g{};
  g.nhwc = channels_last;
  g.N = xs[0];
  g.C = channels_last ? xs[3] : xs[1];
  g.H = channels_last ? xs[1] : xs[2];
  g.W = channels_last ? xs[2] : xs[3];
  g.CO = ws[0], g.CIg = ws[1], g.KH = ws[2], g.KW = ws[3];
  g.COg = g.CO / groups;
  g.sh = stride[0], g.sw = stride[1], g.ph = padding[0], g.pw = padding[1], g.dh = dilation[0], g.dw = dilation[1];
  g.OH = (g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
  g.OW = (g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
  g.xn = g.C * g.H * g.W;
  g.xc = channels_last ? 1 : g.H * g.W;
  g.xh = channels_last ? g.W * g.C : g.W;
  g.xw = channels_last ? g.C : 1;
  return g;
}

// The int32 sum of output pixel (oh, ow) of channel co in image n.
template <typename T>
__device__ __forceinline__ int32_t conv_sum(const QConvGeom& g, const T* __restrict__ x, const int8_t* __restrict__ w, int32_t zp,
                                            int64_t n, int64_t co, int64_t oh, int64_t ow) {
  const int64_t taps = g.KH * g.KW;
  const T* xb = x + n * g.xn + (co / g.COg) * g.CIg * g.xc;
  const int8_t* wb = w + co * g.CIg * taps;
  int32_t acc = 0;
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
    if (ih < 0 || ih >= g.H) continue;
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
      if (iw < 0 || iw >= g.W) continue;
      const T* px = xb + ih * g.xh + iw * g.xw;
      const int8_t* pk = wb + kh * g.KW + kw;
      for (int64_t ci = 0; ci < g.CIg; ++ci) acc += (static_cast<int32_t>(px[ci * g.xc]) - zp) * static_cast<int32_t>(pk[ci * taps]);
    }
  }
  return acc;
}

template <typename T>
__global__ void qconv_kernel(const T* __restrict__ x, const T* __restrict__ x_zero_point, const int8_t* __restrict__ w, QConvGeom g,
                             QuantEpilogue e, void* __restrict__ out, int64_t total) {
  const int32_t zp = static_cast<int32_t>(*x_zero_point);
  PD_GRID_STRIDE(i, total) {
    int64_t n, co, oh, ow;
    if (g.nhwc) {
      co = i % g.CO;
      const int64_t p = i / g.CO;
      ow = p % g.OW, oh = (p / g.OW) % g.OH, n = p / (g.OW * g.OH);
    } else {
      ow = i % g.OW;
      const int64_t p = i / g.OW;
      oh = p % g.OH, co = (p / g.OH) % g.CO, n = p / (g.OH * g.CO);
    }
    epilogue_store(e, conv_sum(g, x, w, zp, n, co, oh, ow), co, i, out);
  }
}

// max_pool2d_nhwc's window over the convolution's output.
struct QPoolGeom {
  int64_t PH, PW, kh, kw, sh, sw, ph, pw;
};

template <typename T>
__global__ void qconv_pool_kernel(const T* __restrict__ x, const T* __restrict__ x_zero_point, const int8_t* __restrict__ w,
                                  QConvGeom g, QPoolGeom p, QuantEpilogue e, void* __restrict__ out, int64_t total) {
  const int32_t zp = static_cast<int32_t>(*x_zero_point);
  PD_GRID_STRIDE(i, total) {
    const int64_t co = i % g.CO, q = i / g.CO, pw = q % p.PW, ph = (q / p.PW) % p.PH, n = q / (p.PW * p.PH);
    const int64_t top = ph * p.sh - p.ph, left = pw * p.sw - p.pw;
    const int64_t h0 = ::max(top, int64_t{0}), h1 = ::min(top + p.kh, g.OH);
    const int64_t w0 = ::max(left, int64_t{0}), w1 = ::min(left + p.kw, g.OW);
    if (e.out == QKind::f32) {
      float m = -INFINITY;
      for (int64_t oh = h0; oh < h1; ++oh)
        for (int64_t ow = w0; ow < w1; ++ow) {
          const float v = epilogue_float_out(e, conv_sum(g, x, w, zp, n, co, oh, ow), co, ((n * g.OH + oh) * g.OW + ow) * g.CO + co);
          m = (v > m || v != v) ? v : m;  // NaN wins and sticks (cpu/common/max_pool_rule.h)
        }
      static_cast<float*>(out)[i] = m;
    } else {
      int32_t m = INT_MIN;
      for (int64_t oh = h0; oh < h1; ++oh)
        for (int64_t ow = w0; ow < w1; ++ow)
          m = ::max(m, epilogue_int_out(e, conv_sum(g, x, w, zp, n, co, oh, ow), co, ((n * g.OH + oh) * g.OW + ow) * g.CO + co));
      if (e.out == QKind::u8) static_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(m);
      else static_cast<int8_t*>(out)[i] = static_cast<int8_t>(m);
    }
  }
}

}  // namespace

template <typename T>
void quantized_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                      const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& residual,
                      const Tensor& residual_scale, const Tensor& residual_zero_point, const Tensor& out_scale,
                      const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                      const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                      bool channels_last, DType out_dtype, bool quantize_x, Tensor& out) {
  if (quantize_x)
    return quantized_conv2d<T>(ctx, quantize_to_nhwc(ctx, "quantized_conv2d", x, x_scale, x_zero_point), x_scale, x_zero_point, weight,
                               weight_scale, bias, residual, residual_scale, residual_zero_point, out_scale, out_zero_point, stride,
                               padding, dilation, groups, activation, alpha, channels_last, out_dtype, false, out);
  const Activation act = parse_activation("quantized_conv2d", activation);
  const int64_t total = out.numel();
  if (total == 0) return;
  const QConvGeom g = make_geom(x.shape(), weight.shape(), stride, padding, dilation, groups, channels_last);
  const bool int8_residual = residual.defined() && residual.dtype() != DType::f32;
  const bool f32_math = direct_conv_on_cpu(channels_last, groups, dilation, act, int8_residual, g.C, g.KW);
  const QuantEpilogue e = make_quant_epilogue(x_scale, weight_scale, bias, residual, residual_scale, residual_zero_point, out_scale,
                                              out_zero_point, act, alpha, out_dtype, f32_math);
  qconv_kernel<T><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(dptr<T>(x), dptr<T>(x_zero_point), dptr<int8_t>(weight), g, e,
                                                                      out.raw_data(), total);
  PD_CUDA_CHECK_LAUNCH("quantized_conv2d");
}

template <typename T>
void quantized_conv2d_maxpool(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                              const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                              const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                              const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                              DType out_dtype, const std::vector<int64_t>& pool_kernel_size, const std::vector<int64_t>& pool_stride,
                              const std::vector<int64_t>& pool_padding, bool pool_ceil_mode, bool quantize_x, Tensor& out) {
  if (quantize_x)
    return quantized_conv2d_maxpool<T>(ctx, quantize_to_nhwc(ctx, "quantized_conv2d_maxpool", x, x_scale, x_zero_point), x_scale,
                                       x_zero_point, weight, weight_scale, bias, out_scale, out_zero_point, stride, padding, dilation,
                                       groups, activation, alpha, out_dtype, pool_kernel_size, pool_stride, pool_padding,
                                       pool_ceil_mode, false, out);
  const Activation act = parse_activation("quantized_conv2d_maxpool", activation);
  const int64_t total = out.numel();
  if (total == 0) return;
  const QConvGeom g = make_geom(x.shape(), weight.shape(), stride, padding, dilation, groups, /*channels_last=*/true);
  QPoolGeom p{};
  p.PH = out.shape()[1], p.PW = out.shape()[2];
  p.kh = spatial_arg(pool_kernel_size, 0, 1), p.kw = spatial_arg(pool_kernel_size, 1, 1);
  p.sh = spatial_arg(pool_stride, 0, p.kh), p.sw = spatial_arg(pool_stride, 1, p.kw);
  p.ph = spatial_arg(pool_padding, 0, 0), p.pw = spatial_arg(pool_padding, 1, 0);
  const bool f32_math = direct_conv_on_cpu(true, groups, dilation, act, false, g.C, g.KW);
  const Tensor none;
  const QuantEpilogue e =
      make_quant_epilogue(x_scale, weight_scale, bias, none, none, none, out_scale, out_zero_point, act, alpha, out_dtype, f32_math);
  qconv_pool_kernel<T><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(dptr<T>(x), dptr<T>(x_zero_point), dptr<int8_t>(weight), g,
                                                                           p, e, out.raw_data(), total);
  PD_CUDA_CHECK_LAUNCH("quantized_conv2d_maxpool");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(quantized_conv2d, cuda, uint8_t, int8_t)
PD_INSTANTIATE_KERNELS(quantized_conv2d_maxpool, cuda, uint8_t, int8_t)
