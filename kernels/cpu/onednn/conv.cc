// conv2d forward and its input / weight gradients through oneDNN convolution primitives.
// The primitives pick their own (blocked) layouts via format_tag::any; plain user buffers are
// reordered in and out only when the chosen layout differs. channels_last (NHWC) tensors are given to
// the primitives as they are: oneDNN's convolutions run on NHWC as fast as on their blocked layouts,
// so a network kept in NHWC pays no reorders (the weights, small, are still reordered).
#include <algorithm>

#include "cpu/common/channel_bias.h"
#include "cpu/common/channels_last.h"
#include "cpu/onednn/conv_geometry.h"
#include "cpu/ref/conv_grad_weight_direct.h"
#include "cpu/ref/winograd_grad_weight.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"

namespace pd::kernels::onednn {
namespace {

using conv_bwd_data = dnnl::convolution_backward_data;
using conv_bwd_weights = dnnl::convolution_backward_weights;

// A training step's 3x3 stride-1 convolutions go to winograd_conv2d's kernel, with the filter transform
// made on every call (the weights change every step; at a training batch it is small next to the
// convolution; winograd_filters keeps it for constant weights): forward, and the input gradient, which
// is the same convolution of the output gradient with each filter turned by 180 degrees and its
// channels swapped (padding 2 - p),
// and, on NHWC tensors, the weight gradient (winograd_grad_weight.h: 4.7 against oneDNN's 5.8 ms for 32
// channels at 28x28, batch 128, host C with AVX-512; 6.5 against 12.3 on its AVX2 path).
// Against oneDNN's direct convolution on plain NCHW tensors at batch 64 (host C, AVX-512, 2 threads):
// 32 channels at 28x28 2.9 against 5.4 ms forward, but 64 at 14x14 4.1 against 3.7 ms and 128 at 7x7
// 8.5 against about 3.7: on small maps the 4x4 output tiles overhang the image (16x16 computed for 14x14)
// and the transforms weigh more. So the conv_winograd pass's bounds (at least 16 channels each way, AVX2
// and FMA) and, with AVX-512, at least 36 output tiles an image (maps of 21x21 and up). With AVX2 only,
// oneDNN's direct kernels run at about half the FMA peak and Winograd wins down to 4 tiles (7x7 maps):
// the residual example's step on host A (batch 128, ms of conv2d / grad_input / grad_weight) 105 / 98 /
// 112 with 36 tiles, 94 / 86 / 97 with 16, 79 / 72 / 91 with 4. NHWC tensors are read as one block of
// all their channels ([N, 1, H, W, C], winograd_conv2d's blocked layout), which takes channel counts in
// whole vectors of 8.
constexpr int64_t kMinWinogradChannels = 16;
int64_t min_winograd_tiles() { return cpu_has_avx512() ? 36 : 4; }

// `out` in NCHW extents.
bool winograd_fits(const Shape& w, const Shape& out, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                   const std::vector<int64_t>& dilation, int64_t groups, bool channels_last) {
  if (w.size() != 4 || w[2] != 3 || w[3] != 3 || groups != 1 || stride != std::vector<int64_t>{1, 1} ||
      dilation != std::vector<int64_t>{1, 1} || !cpu_has_avx2_fma())
    return false;
  if (channels_last && (w[0] % 8 != 0 || w[1] % 8 != 0)) return false;
  for (int64_t p : padding)
    if (p < 0 || p > 2) return false;  // the input gradient's padding, 2 - p, must be one too
  return w[0] >= kMinWinogradChannels && w[1] >= kMinWinogradChannels && ((out[2] + 3) / 4) * ((out[3] + 3) / 4) >= min_winograd_tiles();
}

// NHWC t [N, H, W, C] seen as winograd_conv2d's channel blocks, one block of C: [N, 1, H, W, C].
Tensor as_one_block(const Tensor& t) {
  const Shape& s = t.shape();
  return t.as_strided({s[0], 1, s[1], s[2], s[3]}, {s[1] * s[2] * s[3], s[1] * s[2] * s[3], s[2] * s[3], s[3], 1}, 0);
}

// winograd_weight's [36, C_in, C_out] of weight [C_out, C_in, 3, 3]. Made on every call in training
// (the weights change every step; a batch of 128 amortises it), kept in ctx.packed for a weight an
// inference executor declared constant: the transform is scalar (double precision), about 1 ms for 128
// channels each way on host A, which made op-by-op inference at batch 1 (`pd-infer --no-lower`) ten
// times slower than the convolutions themselves once 7x7 maps went to Winograd on AVX2.
Tensor winograd_filters(const KernelContext& ctx, const Tensor& weight) {
  const Shape& w = weight.shape();
  const auto make = [&] {
    Tensor transformed = Tensor::empty({36, w[1], w[0]}, DType::f32);
    reference::winograd_weight<float>(ctx, weight, transformed);
    return transformed;
  };
  PackedKey key("winograd:filters");
  if (!ctx.packed || !key.add_constant(*ctx.packed, weight)) return make();
  if (std::shared_ptr<void> hit = ctx.packed->find(key.str())) return *static_cast<const Tensor*>(hit.get());
  auto made = std::make_shared<Tensor>(make());
  ctx.packed->store(key.str(), made);
  return *made;
}

// x [N, C_in, H, W] (NHWC: [N, H, W, C_in]) * weight [C_out, C_in, 3, 3] -> out, by Winograd.
void winograd_forward(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const std::vector<int64_t>& padding, bool channels_last, Tensor& out) {
  const Shape& w = weight.shape();
  const Tensor transformed = winograd_filters(ctx, weight);
  if (!channels_last) return reference::winograd_conv2d<float>(ctx, x, transformed, bias, Tensor(), padding, "none", 0.0, 0, out);
  Tensor out_blocks = as_one_block(out);
  reference::winograd_conv2d<float>(ctx, as_one_block(x), transformed, bias, Tensor(), padding, "none", 0.0, w[1], out_blocks);
}

Shape nchw_extents(const Shape& s, bool channels_last) { return channels_last ? cpu::nchw_shape_of(s) : s; }

// Each filter of weight [C_out, C_in, kH, kW] turned by 180 degrees, input and output channels swapped:
// [C_in, C_out, kH, kW]. A stride-1 convolution's input gradient is the forward convolution of the
// output gradient with it, at padding k - 1 - p.
Tensor turned_filters(const Tensor& weight) {
  const Shape& w = weight.shape();
  const int64_t taps = w[2] * w[3];
  Tensor turned = Tensor::empty({w[1], w[0], w[2], w[3]}, DType::f32);
  const float* src = weight.data<float>();
  float* dst = turned.data<float>();
  for (int64_t o = 0; o < w[0]; ++o)
    for (int64_t i = 0; i < w[1]; ++i)
      for (int64_t k = 0; k < taps; ++k) dst[(i * w[0] + o) * taps + taps - 1 - k] = src[(o * w[1] + i) * taps + k];
  return turned;
}

// Whether conv2d_grad_input of an NHWC convolution runs as that forward convolution: oneDNN's forward
// kernels (brgconv) beat its backward-data ones (jit) on the residual example's stride-1 3x3 layers at
// batch 128 (host C, AVX-512, 2 threads, ONEDNN_VERBOSE): 64 channels at 14x14 8.0 against 11.2 ms,
// 128 at 7x7 7.5 against 10.0; the training step's conv2d_grad_input 36.2 -> 32.7 and 40.9 -> 36.3 ms in
// two alternating pairs of `pd-train --profile` runs.
bool grad_input_as_forward(const Shape& w, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                           const std::vector<int64_t>& dilation, int64_t groups, bool channels_last) {
  if (!channels_last || groups != 1 || stride != std::vector<int64_t>{1, 1} || dilation != std::vector<int64_t>{1, 1}) return false;
  return padding[0] >= 0 && padding[1] >= 0 && padding[0] < w[2] && padding[1] < w[3];
}

}  // namespace

template <typename T>
void conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
            const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups, bool channels_last,
            Tensor& out) {
  if (out.numel() == 0) return;
  const Shape out_nchw = nchw_extents(out.shape(), channels_last);
  if (!channels_last && use_direct_conv(x, weight, stride, padding, dilation, groups))
    return direct_conv(ctx, x, weight, bias, stride, padding, dilation, groups, "none", 0.0, out);
  if (winograd_fits(weight.shape(), out_nchw, stride, padding, dilation, groups, channels_last))
    return winograd_forward(ctx, x, weight, bias, padding, channels_last, out);
  guarded("conv2d", [&] {
    ConvGeometry g(nchw_extents(x.shape(), channels_last), weight.shape(), out_nchw, stride, padding, dilation, groups, channels_last);
    conv_forward(ctx, g, g.key("conv2d", bias.defined()), user_scratchpad(), x, weight, bias, out);
  });
}

template <typename T>
void conv2d_grad_input(const KernelContext& ctx, const Tensor& grad, const Tensor& weight, const std::vector<int64_t>& input_shape,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                       const std::vector<int64_t>& dilation, int64_t groups, bool channels_last, Tensor& dx) {
  if (dx.numel() == 0) return;
  const Shape grad_nchw = nchw_extents(grad.shape(), channels_last);
  if (grad.numel() > 0 && winograd_fits(weight.shape(), grad_nchw, stride, padding, dilation, groups, channels_last))
    return winograd_forward(ctx, grad, turned_filters(weight), Tensor(), {2 - padding[0], 2 - padding[1]}, channels_last, dx);
  const Shape& w = weight.shape();
  if (grad.numel() > 0 && grad_input_as_forward(w, stride, padding, dilation, groups, channels_last)) {
    return guarded("conv2d_grad_input", [&] {
      const Tensor turned = turned_filters(weight);
      const std::vector<int64_t> turned_padding{w[2] - 1 - padding[0], w[3] - 1 - padding[1]};
      ConvGeometry g(grad_nchw, turned.shape(), nchw_extents(input_shape, true), stride, turned_padding, dilation, 1, true);
      conv_forward(ctx, g, g.key("conv2d", false), user_scratchpad(), grad, turned, Tensor(), dx);
    });
  }
  guarded("conv2d_grad_input", [&] {
    ConvGeometry g(nchw_extents(input_shape, channels_last), weight.shape(), grad_nchw, stride, padding, dilation, groups,
                   channels_last);
    // An empty output means no window touches the input: the gradient is zero.
    if (grad.numel() == 0) {
      std::fill_n(dx.data<float>(), dx.numel(), 0.0f);
      return;
    }
    auto e = cached<ConvEntry>(g.key("conv2d_grad_input", false), [&] {
      auto hint = g.forward_pd(dnnl::prop_kind::forward_training, false);
      conv_bwd_data::desc d(dnnl::algorithm::convolution_direct, g.act(g.src), g.any(g.wei), g.act(g.dst), g.strides,
                            g.dilates, g.pad_l, g.pad_r);
      conv_bwd_data::primitive_desc pd(d, user_scratchpad(), cpu_engine(), hint);
      return ConvEntry{conv_bwd_data(pd), OptionalReorder::make(g.plain_dst(), pd.diff_dst_desc()),
                       OptionalReorder::make(g.plain_wei(), pd.weights_desc()),
                       OptionalReorder::make(pd.diff_src_desc(), g.plain_src()), pd.scratchpad_desc()};
    });
    dnnl::memory user_dx = wrap(g.plain_src(), dx);
    dnnl::memory diff_src = output_buffer(e->out, user_dx);
    e->prim.execute(cpu_stream(), {{DNNL_ARG_DIFF_DST, reorder_in(e->in0, wrap(g.plain_dst(), grad))},
                                   {DNNL_ARG_WEIGHTS, reorder_in(e->in1, wrap(g.plain_wei(), weight))},
                                   {DNNL_ARG_DIFF_SRC, diff_src},
                                   {DNNL_ARG_SCRATCHPAD, scratch_memory(e->scratchpad)}});
    reorder_out(e->out, diff_src, user_dx);
  });
}

template <typename T>
void conv2d_grad_weight(const KernelContext& ctx, const Tensor& grad, const Tensor& x, const std::vector<int64_t>& weight_shape,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& dilation, int64_t groups, bool channels_last, Tensor& dw) {
  if (dw.numel() == 0) return;
  if (!channels_last && (reference::conv2d_grad_weight_direct(grad, x, weight_shape, stride, padding, dilation, groups, dw) ||
                         reference::conv2d_grad_weight_rows(grad, x, weight_shape, stride, padding, dilation, groups, dw)))
    return;
  if (channels_last && grad.numel() > 0 && x.numel() > 0 &&
      winograd_fits(weight_shape, nchw_extents(grad.shape(), true), stride, padding, dilation, groups, true))
    return reference::winograd_conv2d_grad_weight(ctx, grad, x, padding, dw);
  guarded("conv2d_grad_weight", [&] {
    ConvGeometry g(nchw_extents(x.shape(), channels_last), weight_shape, nchw_extents(grad.shape(), channels_last), stride, padding,
                   dilation, groups, channels_last);
    // No samples (or no output positions): nothing contributes to the weight gradient.
    if (grad.numel() == 0 || x.numel() == 0) {
      std::fill_n(dw.data<float>(), dw.numel(), 0.0f);
      return;
    }
    auto e = cached<ConvEntry>(g.key("conv2d_grad_weight", false), [&] {
      auto hint = g.forward_pd(dnnl::prop_kind::forward_training, false);
      conv_bwd_weights::desc d(dnnl::algorithm::convolution_direct, g.act(g.src), g.any(g.wei), g.act(g.dst),
                               g.strides, g.dilates, g.pad_l, g.pad_r);
      conv_bwd_weights::primitive_desc pd(d, user_scratchpad(), cpu_engine(), hint);
      return ConvEntry{conv_bwd_weights(pd), OptionalReorder::make(g.plain_src(), pd.src_desc()),
                       OptionalReorder::make(g.plain_dst(), pd.diff_dst_desc()),
                       OptionalReorder::make(pd.diff_weights_desc(), g.plain_wei()), pd.scratchpad_desc()};
    });
    dnnl::memory user_dw = wrap(g.plain_wei(), dw);
    dnnl::memory diff_w = output_buffer(e->out, user_dw);
    e->prim.execute(cpu_stream(), {{DNNL_ARG_SRC, reorder_in(e->in0, wrap(g.plain_src(), x))},
                                   {DNNL_ARG_DIFF_DST, reorder_in(e->in1, wrap(g.plain_dst(), grad))},
                                   {DNNL_ARG_DIFF_WEIGHTS, diff_w},
                                   {DNNL_ARG_SCRATCHPAD, scratch_memory(e->scratchpad)}});
    reorder_out(e->out, diff_w, user_dw);
  });
}

// conv2d_transpose is conv2d's input gradient of x (oneDNN's backward-data primitive, or the turned
// filters' forward convolution where that is faster), then the bias on each output channel.
template <typename T>
void conv2d_transpose(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
                      const std::vector<int64_t>& padding, const std::vector<int64_t>& output_padding, const std::vector<int64_t>& dilation,
                      int64_t groups, Tensor& out) {
  conv2d_grad_input<T>(ctx, x, weight, out.shape(), stride, padding, dilation, groups, false, out);
  if (bias.defined() && out.numel() > 0) cpu::add_channel_bias<T>(bias.data<T>(), out);
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(conv2d, onednn, float)
PD_INSTANTIATE_KERNELS(conv2d_grad_input, onednn, float)
PD_INSTANTIATE_KERNELS(conv2d_grad_weight, onednn, float)
PD_INSTANTIATE_KERNELS(conv2d_transpose, onednn, float)
