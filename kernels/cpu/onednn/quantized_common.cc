// The int8 plumbing quantized_conv2d and quantized_linear share (quantized_common.h).
#include "cpu/onednn/quantized_common.h"

#include <algorithm>
#include <cmath>

#include "pd/core/cpu_features.h"

namespace pd::kernels::onednn::int8 {

dt onednn_dtype(DType d) { return d == DType::u8 ? dt::u8 : d == DType::i8 ? dt::s8 : dt::f32; }

bool beyond_seven_bits(const KernelContext& ctx, const Tensor& weight) {
  const auto scan = [&] {
    const int8_t* w = weight.data<int8_t>();
    return std::any_of(w, w + weight.numel(), [](int8_t v) { return v > 64 || v < -64; });
  };
  if (!ctx.packed || !ctx.packed->is_constant(weight)) return scan();
  const std::string key = fmt::format("int8:beyond7:{}:{}", static_cast<const void*>(weight.storage().get()), weight.offset());
  if (std::shared_ptr<void> hit = ctx.packed->find(key)) return *static_cast<bool*>(hit.get());
  const bool beyond = scan();
  ctx.packed->store(key, std::make_shared<bool>(beyond));
  return beyond;
}

Tensor int8_source(const Tensor& x) {
  if (x.dtype() == DType::u8 || cpu_has_vnni()) return x;
  Tensor shifted = Tensor::empty(x.shape(), DType::u8);
  const auto* from = static_cast<const uint8_t*>(x.raw_data());
  uint8_t* to = shifted.data<uint8_t>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) to[i] = from[i] ^ 0x80;  // two's complement v -> v + 128
  return shifted;
}

int32_t source_zero_point(const Tensor& x, const Tensor& x_zero_point) {
  if (x.dtype() == DType::u8) return x_zero_point.item<uint8_t>();
  return x_zero_point.item<int8_t>() + (cpu_has_vnni() ? 0 : 128);
}

Int8Params int8_params(const KernelContext& ctx, DType source_dtype, int32_t source_zp, const Tensor& x_scale,
                       const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                       const Tensor& out_zero_point, DType out_dtype) {
  Int8Params p;
  const int64_t channels = weight.shape()[0];
  p.seven_bit = source_dtype == DType::u8 && !cpu_has_vnni() && beyond_seven_bits(ctx, weight);
  const double xs = x_scale.item<float>(), factor = p.seven_bit ? 2.0 : 1.0;
  const float* ws = weight_scale.data<float>();
  p.output_scales.resize(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c)
    p.output_scales[c] = static_cast<float>(xs * ws[weight_scale.dim() == 1 ? c : 0] * factor);
  if (bias.defined()) {
    const float* b = bias.data<float>();
    for (int64_t c = 0; c < channels; ++c) p.bias.push_back(b[c] / p.output_scales[c]);
  }
  p.x_zero_point = source_zp;
  if (out_dtype != DType::f32) {
    p.inv_out_scale = 1.0f / out_scale.item<float>();
    p.out_zero_point = out_dtype == DType::u8 ? int32_t{out_zero_point.item<uint8_t>()} : int32_t{out_zero_point.item<int8_t>()};
  }
  p.mix(p.output_scales.data(), p.output_scales.size() * sizeof(float));
  p.mix(&p.inv_out_scale, sizeof(float));
  p.mix(&p.seven_bit, sizeof(bool));
  return p;
}

void residual_terms(Int8Params& p, DType residual_dtype, const Tensor& scale, const Tensor& zero_point, DType out_dtype) {
  p.residual = true;
  if (residual_dtype == DType::f32) return;
  p.residual_scale = scale.item<float>();
  p.residual_zero_point =
      residual_dtype == DType::u8 ? int32_t{zero_point.item<uint8_t>()} : int32_t{zero_point.item<int8_t>()};
  if (out_dtype == DType::f32) {
    p.widen_residual = true;
    return;
  }
  p.residual_dtype = residual_dtype;
  p.mix(&p.residual_dtype, sizeof(DType));
  p.mix(&p.residual_scale, sizeof(float));
  p.mix(&p.residual_zero_point, sizeof(int32_t));
}

std::optional<dnnl::primitive_attr> int8_attr(const Int8Params& p, int channel_mask, Activation act, double alpha,
                                              DType out_dtype) {
  using alg = dnnl::algorithm;
  dnnl::primitive_attr attr = user_scratchpad();
  attr.set_output_scales(channel_mask, p.output_scales);
  if (p.x_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (out_dtype != DType::f32 && p.out_zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  dnnl::post_ops ops;
  if (p.residual && p.residual_dtype == DType::f32) ops.append_sum(1.0f);
  if (p.residual && p.residual_dtype != DType::f32)
    ops.append_sum(p.residual_scale, p.residual_zero_point, onednn_dtype(p.residual_dtype));
  const float scale = p.inv_out_scale;
  switch (act) {
    case Activation::none:
      if (out_dtype != DType::f32) ops.append_eltwise(1.0f, alg::eltwise_linear, scale, 0.0f);
      break;
    case Activation::relu: ops.append_eltwise(scale, alg::eltwise_relu, 0.0f, 0.0f); break;
    // The clip to [0, 6] is relu6 on the finite sums an int8 convolution makes (the f32 paths keep
    // relu6 off it: it makes NaN 0). Without it MobileNetV2's int8 layers ran the reference kernel,
    // 50x their f32 time.
    case Activation::relu6: ops.append_eltwise(scale, alg::eltwise_clip, 0.0f, 6.0f); break;
    case Activation::hardswish: ops.append_eltwise(scale, alg::eltwise_hardswish, 0.0f, 0.0f); break;
    case Activation::leaky_relu: ops.append_eltwise(scale, alg::eltwise_relu, static_cast<float>(alpha), 0.0f); break;
    case Activation::gelu: ops.append_eltwise(scale, alg::eltwise_gelu_erf, 0.0f, 0.0f); break;
    case Activation::gelu_tanh: ops.append_eltwise(scale, alg::eltwise_gelu_tanh, 0.0f, 0.0f); break;
    case Activation::silu: ops.append_eltwise(scale, alg::eltwise_swish, 1.0f, 0.0f); break;
    case Activation::tanh: ops.append_eltwise(scale, alg::eltwise_tanh, 0.0f, 0.0f); break;
    case Activation::sigmoid: ops.append_eltwise(scale, alg::eltwise_logistic, 0.0f, 0.0f); break;
    default: return std::nullopt;
  }
  attr.set_post_ops(ops);
  return attr;
}

dnnl::memory wrap_any(const dnnl::memory::desc& md, const Tensor& t) {
  return dnnl::memory(md, cpu_engine(), t.raw_data());
}

dnnl::memory int8_weights(const KernelContext& ctx, const OptionalReorder& r, const dnnl::memory::desc& plain,
                          const Tensor& weight, const Int8Params& p, const std::string& key, Tensor& keep) {
  return weights_in(
      ctx.packed, r, weight,
      [&] {
        if (!p.seven_bit) return wrap_any(plain, weight);
        keep = Tensor::empty(weight.shape(), DType::i8);
        const int8_t* w = weight.data<int8_t>();
        int8_t* h = keep.data<int8_t>();
        const int64_t n = weight.numel();
        for (int64_t i = 0; i < n; ++i) h[i] = static_cast<int8_t>(std::nearbyint(w[i] * 0.5f));
        return wrap_any(plain, keep);
      },
      key);
}

void add_zero_points(std::unordered_map<int, dnnl::memory>& args, const Int8Params& p, DType out_dtype, int32_t* storage) {
  storage[0] = p.x_zero_point;
  storage[1] = p.out_zero_point;
  const dnnl::memory::desc one({1}, dt::s32, tag::x);
  if (p.x_zero_point != 0) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, dnnl::memory(one, cpu_engine(), storage));
  if (out_dtype != DType::f32 && p.out_zero_point != 0)
    args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, dnnl::memory(one, cpu_engine(), storage + 1));
}

}  // namespace pd::kernels::onednn::int8
