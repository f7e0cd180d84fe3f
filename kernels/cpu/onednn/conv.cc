// conv2d forward and its input / weight gradients through oneDNN convolution primitives.
// The primitives pick their own (blocked) layouts via format_tag::any; plain user buffers are
// reordered in and out only when the chosen layout differs.
#include <algorithm>

#include "cpu/onednn/conv_geometry.h"
#include "kernels.h"

namespace pd::kernels::onednn {
namespace {

using conv_bwd_data = dnnl::convolution_backward_data;
using conv_bwd_weights = dnnl::convolution_backward_weights;

}  // namespace

template <typename T>
void conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
            const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups, Tensor& out) {
  if (out.numel() == 0) return;
  if (use_direct_conv(x, weight, stride, padding, dilation, groups))
    return direct_conv(ctx, x, weight, bias, stride, padding, dilation, groups, "none", 0.0, out);
  guarded("conv2d", [&] {
    ConvGeometry g(x.shape(), weight.shape(), out.shape(), stride, padding, dilation, groups);
    conv_forward(ctx, g, g.key("conv2d", bias.defined()), user_scratchpad(), x, weight, bias, out);
  });
}

template <typename T>
void conv2d_grad_input(const KernelContext& ctx, const Tensor& grad, const Tensor& weight, const std::vector<int64_t>& input_shape,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                       const std::vector<int64_t>& dilation, int64_t groups, Tensor& dx) {
  if (dx.numel() == 0) return;
  guarded("conv2d_grad_input", [&] {
    ConvGeometry g(input_shape, weight.shape(), grad.shape(), stride, padding, dilation, groups);
    // An empty output means no window touches the input: the gradient is zero.
    if (grad.numel() == 0) {
      std::fill_n(dx.data<float>(), dx.numel(), 0.0f);
      return;
    }
    auto e = cached<ConvEntry>(g.key("conv2d_grad_input", false), [&] {
      auto hint = g.forward_pd(dnnl::prop_kind::forward_training, false);
      conv_bwd_data::desc d(dnnl::algorithm::convolution_direct, g.any(g.src), g.any(g.wei), g.any(g.dst), g.strides,
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
                        const std::vector<int64_t>& dilation, int64_t groups, Tensor& dw) {
  if (dw.numel() == 0) return;
  guarded("conv2d_grad_weight", [&] {
    ConvGeometry g(x.shape(), weight_shape, grad.shape(), stride, padding, dilation, groups);
    // No samples (or no output positions): nothing contributes to the weight gradient.
    if (grad.numel() == 0 || x.numel() == 0) {
      std::fill_n(dw.data<float>(), dw.numel(), 0.0f);
      return;
    }
    auto e = cached<ConvEntry>(g.key("conv2d_grad_weight", false), [&] {
      auto hint = g.forward_pd(dnnl::prop_kind::forward_training, false);
      conv_bwd_weights::desc d(dnnl::algorithm::convolution_direct, g.any(g.src), g.any(g.wei), g.any(g.dst),
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

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(conv2d, onednn, float)
PD_INSTANTIATE_KERNELS(conv2d_grad_input, onednn, float)
PD_INSTANTIATE_KERNELS(conv2d_grad_weight, onednn, float)
