// Naive references for quantize_linear / dequantize_linear, written from ONNX's definitions with an
// explicit round-half-to-even (not std::nearbyint, which the kernel uses).
#include <cmath>

#include "naive_util.h"

namespace {
using namespace pd::naive;

double round_half_even(double v) {
  const double f = std::floor(v), frac = v - f;
  if (frac > 0.5) return f + 1;
  if (frac < 0.5) return f;
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

// The channel of flat index i: the scale's own index for a 1-D scale along `axis`, else 0.
int64_t channel_of(const Ints& shape, int64_t axis, bool per_channel, int64_t i) {
  if (!per_channel) return 0;
  const int64_t nd = static_cast<int64_t>(shape.size()), a = axis < 0 ? axis + nd : axis;
  int64_t inner = 1;
  for (int64_t d = a + 1; d < nd; ++d) inner *= shape[d];
  return (i / inner) % shape[a];
}

}  // namespace

PD_NAIVE_REF(quantize_linear) {
  const pd::Tensor& x = in[0][0];
  const Reals v = vals(x), s = vals(in[1][0]), z = vals(in[2][0]);
  const bool per_channel = in[1][0].dim() == 1;
  const int64_t axis = get<int64_t>(attrs, "axis", 1);
  const bool u8 = get<pd::DType>(attrs, "dtype", pd::DType::u8) == pd::DType::u8;
  const double lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
  Reals out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t c = channel_of(x.shape(), axis, per_channel, static_cast<int64_t>(i));
    const double q = round_half_even(v[i] / s[c]) + z[c];
    out[i] = std::isnan(q) ? z[c] : std::min(std::max(q, lo), hi);
  }
  return {make(out, x.shape())};
}

// gated_quantize: the product in double, then quantize_linear's rounding (the kernel rounds the
// product to float first: the tolerance allows the one step that can move).
PD_NAIVE_REF(gated_quantize) {
  const pd::Tensor& x = in[0][0];
  const Ints xs = x.shape(), gs = in[1][0].shape();
  const Reals v = vals(x), g = vals(in[1][0]);
  const double s = vals(in[2][0])[0], z = vals(in[3][0])[0];
  const bool u8 = get<pd::DType>(attrs, "dtype", pd::DType::u8) == pd::DType::u8;
  const double lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
  Reals out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t c = static_cast<int64_t>(i) % xs[3], n = static_cast<int64_t>(i) / (xs[1] * xs[2] * xs[3]);
    const double q = round_half_even(v[i] * g[static_cast<size_t>((gs[0] == 1 ? 0 : n) * xs[3] + c)] / s) + z;
    out[i] = std::min(std::max(q, lo), hi);
  }
  return {make(out, xs)};
}

PD_NAIVE_REF(dequantize_linear) {
  const pd::Tensor& x = in[0][0];
  const Reals v = vals(x), s = vals(in[1][0]), z = vals(in[2][0]);
  const bool per_channel = in[1][0].dim() == 1;
  const int64_t axis = get<int64_t>(attrs, "axis", 1);
  Reals out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t c = channel_of(x.shape(), axis, per_channel, static_cast<int64_t>(i));
    out[i] = (v[i] - z[c]) * s[c];
  }
  return {make(out, x.shape())};
}

// quantized_conv2d / quantized_linear: x and the weight dequantized in double, the naive fused_conv2d /
// fused_linear (bias, residual, activation), then quantize_linear's rounding for an int8 out_dtype.
// Inputs: x, x_scale, x_zero_point, weight, weight_scale, bias, [residual, residual_scale,
// residual_zero_point,] out_scale, out_zero_point; a u8 / i8 residual is dequantized first.
namespace {

pd::Tensor dequantized(const pd::Tensor& q, const pd::Tensor& scale, const pd::Tensor& zero_point, int64_t axis) {
  return (*pd::test::find_naive("dequantize_linear"))({{q}, {scale}, {zero_point}}, {{"axis", pd::AttrValue(axis)}})[0];
}

// With quantize_x, x is f32 NCHW: quantized first (naive quantize_linear into the zero point's dtype).
std::vector<pd::Tensor> quantized(const char* fused, const pd::BoxedInputs& in, const pd::AttrMap& attrs, bool has_residual) {
  const bool nhwc = get<bool>(attrs, "channels_last", false), quantize_x = get<bool>(attrs, "quantize_x", false);
  const pd::Tensor xq = quantize_x ? (*pd::test::find_naive("quantize_linear"))(
                                         {in[0], in[1], in[2]}, {{"dtype", pd::AttrValue(in[2][0].dtype())}})[0]
                                   : in[0][0];
  const pd::Tensor x = dequantized(xq, in[1][0], in[2][0], 1);
  const pd::Tensor& ws = in[4][0];
  const pd::Tensor w = dequantized(in[3][0], ws, make(Reals(static_cast<size_t>(numel_of(ws.shape())), 0.0), ws.shape()), 0);
  pd::BoxedInputs f = {{nhwc && !quantize_x ? permuted(x, true) : x}, {w}, in[5]};
  if (has_residual) {
    pd::Tensor r = in[6].empty() ? pd::Tensor() : in[6][0];
    if (r.defined() && r.dtype() != pd::DType::f32) r = dequantized(r, in[7][0], in[8][0], 1);
    f.push_back(r.defined() ? std::vector<pd::Tensor>{nhwc ? permuted(r, true) : r} : std::vector<pd::Tensor>{});
  }
  pd::AttrMap nchw_attrs = attrs;  // the permutes are done here
  nchw_attrs.erase("channels_last");
  const pd::Tensor y_nchw = (*pd::test::find_naive(fused))(f, nchw_attrs)[0];
  const pd::Tensor y = nhwc ? permuted(y_nchw, false) : y_nchw;
  const pd::DType out_dtype = get<pd::DType>(attrs, "out_dtype", pd::DType::f32);
  if (out_dtype == pd::DType::f32) return {y};
  const size_t q = has_residual ? 9 : 6;
  pd::AttrMap qattrs = {{"dtype", pd::AttrValue(out_dtype)}};
  return (*pd::test::find_naive("quantize_linear"))({{y}, in[q], in[q + 1]}, qattrs);
}

}  // namespace

PD_NAIVE_REF(quantized_conv2d) { return quantized("fused_conv2d", in, attrs, true); }
PD_NAIVE_REF(quantized_linear) { return quantized("fused_linear", in, attrs, false); }

// quantized_conv2d_maxpool: the naive quantized_conv2d (NHWC, no residual), then the naive
// max_pool2d_nhwc with the pool_ attributes.
PD_NAIVE_REF(quantized_conv2d_maxpool) {
  pd::AttrMap conv_attrs = attrs, pool_attrs;
  conv_attrs["channels_last"] = pd::AttrValue(true);
  for (const char* key : {"kernel_size", "stride", "padding", "ceil_mode"}) {
    const auto it = attrs.find(std::string("pool_") + key);
    if (it != attrs.end()) pool_attrs[key] = it->second;
  }
  if (!pool_attrs.count("kernel_size")) pool_attrs["kernel_size"] = pd::AttrValue(std::vector<int64_t>{2, 2});
  const pd::BoxedInputs conv_in = {in[0], in[1], in[2], in[3], in[4], in[5], {}, {}, {}, in[6], in[7]};
  const pd::Tensor conv = quantized("fused_conv2d", conv_in, conv_attrs, true)[0];
  return (*pd::test::find_naive("max_pool2d_nhwc"))({{conv}}, pool_attrs);
}

// weight_only_linear: the weight dequantized in double, then the naive fused_linear.
PD_NAIVE_REF(weight_only_linear) {
  const pd::Tensor& ws = in[2][0];
  const pd::Tensor w = dequantized(in[1][0], ws, make(Reals(static_cast<size_t>(numel_of(ws.shape())), 0.0), ws.shape()), 0);
  return (*pd::test::find_naive("fused_linear"))({in[0], {w}, in[3]}, attrs);
}
