// quantized_conv2d and quantized_linear, the portable way: (x - zero_point) * weight summed exactly in
// int32, then the f32 epilogue (scales, bias, residual, activation) in double and, for an int8 output,
// requantization with round half to even and saturation. The oneDNN kernels are checked against these.
#include <cmath>
#include <cstdint>
#include <limits>

#include "cpu/common/parallel.h"
#include "cpu/ref/quantize_entry.h"
#include "cpu/ref/quantized_direct.h"
#include "elementwise_ops.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

// Everything after the int32 sum, for one output element of channel c.
class Epilogue {
 public:
  Epilogue(const char* op, const Tensor& x_scale, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
           const Tensor& out_zero_point, const std::string& activation, double alpha, DType out_dtype)
      : x_scale_(x_scale.item<float>()),
        w_scale_(weight_scale.data<float>()),
        per_channel_(weight_scale.dim() == 1),
        bias_(bias.defined() ? bias.data<float>() : nullptr),
        act_(parse_activation(op, activation)),
        alpha_(alpha),
        out_dtype_(out_dtype) {
    if (out_dtype == DType::f32) return;
    out_scale_ = out_scale.item<float>();
    out_zp_ = out_dtype == DType::u8 ? int32_t{out_zero_point.item<uint8_t>()} : int32_t{out_zero_point.item<int8_t>()};
  }

  // The real value of output channel c from its int32 sum, with the residual r added.
  double real(int32_t acc, int64_t c, double r = 0.0) const {
    const double scale = double{x_scale_} * double{w_scale_[per_channel_ ? c : 0]};
    const double y = acc * scale + (bias_ ? double{bias_[c]} : 0.0) + r;
    return activate(act_, y, alpha_);
  }

  // Writes y at flat index i of `out` in the output dtype.
  void store(double y, Tensor& out, int64_t i) const {
    switch (out_dtype_) {
      case DType::u8: out.data<uint8_t>()[i] = saturate<uint8_t>(y); break;
      case DType::i8: out.data<int8_t>()[i] = saturate<int8_t>(y); break;
      default: out.data<float>()[i] = static_cast<float>(y);
    }
  }

 private:
  template <typename Q>
  Q saturate(double y) const {
    const double q = std::nearbyint(y / out_scale_) + out_zp_;  // half to even in the default rounding mode
    constexpr double lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
    return static_cast<Q>(q < lo ? lo : (q > hi ? hi : q));
  }

  float x_scale_;
  const float* w_scale_;
  bool per_channel_;
  const float* bias_;
  Activation act_;
  double alpha_;
  DType out_dtype_;
  double out_scale_ = 1.0;
  int32_t out_zp_ = 0;
};

template <typename T>
int32_t zero_point_of(const Tensor& zp) {
  return static_cast<int32_t>(zp.item<T>());
}

// The residual's real value at a flat index: f32 as it is, u8 / i8 as (r - zero_point) * scale.
class ResidualReader {
 public:
  ResidualReader(const Tensor& residual, const Tensor& scale, const Tensor& zero_point) : r_(residual) {
    if (!residual.defined() || residual.dtype() == DType::f32) return;
    scale_ = scale.item<float>();
    zp_ = residual.dtype() == DType::u8 ? zero_point_of<uint8_t>(zero_point) : zero_point_of<int8_t>(zero_point);
  }
  double operator()(int64_t i) const {
    if (!r_.defined()) return 0.0;
    switch (r_.dtype()) {
      case DType::u8: return (int32_t{r_.data<uint8_t>()[i]} - zp_) * double{scale_};
      case DType::i8: return (int32_t{r_.data<int8_t>()[i]} - zp_) * double{scale_};
      default: return r_.data<float>()[i];
    }
  }

 private:
  const Tensor& r_;
  float scale_ = 1.0f;
  int32_t zp_ = 0;
};

}  // namespace

// Element strides of an [N, C, H, W] activation held as NCHW, or as NHWC (channels_last).
struct ActivationStrides {
  int64_t n, c, h, w;
  ActivationStrides(int64_t C, int64_t H, int64_t W, bool channels_last)
      : n(C * H * W), c(channels_last ? 1 : H * W), h(channels_last ? W * C : W), w(channels_last ? C : 1) {}
};

template <typename T>
void quantized_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                      const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& residual,
                      const Tensor& residual_scale, const Tensor& residual_zero_point, const Tensor& out_scale,
                      const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                      const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                      bool channels_last, DType out_dtype, bool quantize_x, Tensor& out) {
  if (quantize_x)
    return quantized_conv2d<T>(ctx, quantize_to_nhwc("quantized_conv2d", x, x_scale, x_zero_point), x_scale, x_zero_point, weight,
                               weight_scale, bias, residual, residual_scale, residual_zero_point, out_scale, out_zero_point, stride,
                               padding, dilation, groups, activation, alpha, channels_last, out_dtype, false, out);
  const Epilogue epi("quantized_conv2d", x_scale, weight_scale, bias, out_scale, out_zero_point, activation, alpha, out_dtype);
  if (out.numel() == 0) return;
  if (quantized_conv2d_direct(ctx, /*seven_bit=*/false, x, x_scale, x_zero_point, weight, weight_scale, bias, residual, residual_scale,
                              residual_zero_point, out_scale, out_zero_point, stride, padding, dilation, groups, activation, alpha,
                              channels_last, out_dtype, out))
    return;
  const Shape& xs = x.shape();
  const Shape& ys = out.shape();
  const int64_t N = xs[0], C = channels_last ? xs[3] : xs[1], H = channels_last ? xs[1] : xs[2], W = channels_last ? xs[2] : xs[3];
  const int64_t CO = weight.shape()[0], CIg = weight.shape()[1], KH = weight.shape()[2], KW = weight.shape()[3];
  const int64_t OH = channels_last ? ys[1] : ys[2], OW = channels_last ? ys[2] : ys[3], COg = CO / groups;
  const ActivationStrides sx(C, H, W, channels_last), sy(CO, OH, OW, channels_last);
  const int32_t zp = zero_point_of<T>(x_zero_point);
  const T* xv = x.data<T>();
  const int8_t* wv = weight.data<int8_t>();
  const ResidualReader read_residual(residual, residual_scale, residual_zero_point);
  cpu::parallel_for(N * CO, OH * OW * CIg * KH * KW, [&](int64_t row) {
    const int64_t n = row / CO, co = row % CO, g = co / COg;
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int32_t acc = 0;
        for (int64_t ci = 0; ci < CIg; ++ci) {
          const T* plane = xv + n * sx.n + (g * CIg + ci) * sx.c;
          const int8_t* taps = wv + (co * CIg + ci) * KH * KW;
          for (int64_t kh = 0; kh < KH; ++kh) {
            const int64_t ih = oh * stride[0] - padding[0] + kh * dilation[0];
            if (ih < 0 || ih >= H) continue;  // padding is the real value 0: it adds nothing
            for (int64_t kw = 0; kw < KW; ++kw) {
              const int64_t iw = ow * stride[1] - padding[1] + kw * dilation[1];
              if (iw >= 0 && iw < W) acc += (static_cast<int32_t>(plane[ih * sx.h + iw * sx.w]) - zp) * taps[kh * KW + kw];
            }
          }
        }
        const int64_t i = n * sy.n + co * sy.c + oh * sy.h + ow * sy.w;
        epi.store(epi.real(acc, co, read_residual(i)), out, i);
      }
  });
}

template <typename T>
void quantized_linear(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                      const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                      const Tensor& out_zero_point, const std::string& activation, double alpha, DType out_dtype,
                      Tensor& out) {
  const Epilogue epi("quantized_linear", x_scale, weight_scale, bias, out_scale, out_zero_point, activation, alpha, out_dtype);
  if (out.numel() == 0) return;
  if (quantized_linear_direct(ctx, /*seven_bit=*/false, x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale, out_zero_point, activation,
                              alpha, out_dtype, out))
    return;
  const int64_t O = weight.shape()[0], I = weight.shape()[1], rows = out.numel() / O;
  const int32_t zp = zero_point_of<T>(x_zero_point);
  const T* xv = x.data<T>();
  const int8_t* wv = weight.data<int8_t>();
  cpu::parallel_for(rows, O * I, [&](int64_t r) {
    for (int64_t o = 0; o < O; ++o) {
      int32_t acc = 0;
      for (int64_t i = 0; i < I; ++i) acc += (static_cast<int32_t>(xv[r * I + i]) - zp) * wv[o * I + i];
      epi.store(epi.real(acc, o), out, r * O + o);
    }
  });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(quantized_conv2d, reference, uint8_t, int8_t)
PD_INSTANTIATE_KERNELS(quantized_linear, reference, uint8_t, int8_t)
