// conv2d forward and its input / weight gradients through oneDNN convolution primitives.
// The primitives pick their own (blocked) layouts via format_tag::any; plain user buffers are
// reordered in and out only when the chosen layout differs.
#include <algorithm>

#include "cpu/onednn/onednn_common.h"
#include "kernels.h"

namespace pd::kernels::onednn {
namespace {

using conv_fwd = dnnl::convolution_forward;
using conv_bwd_data = dnnl::convolution_backward_data;
using conv_bwd_weights = dnnl::convolution_backward_weights;

// Everything that identifies one convolution problem, in oneDNN terms.
struct ConvGeometry {
  dims src, wei, dst, strides, dilates, pad_l, pad_r;
  int64_t groups = 1;

  // x: [N, C, H, W], w: [Cout, C/g, kH, kW], y: [N, Cout, OH, OW] (output sizes come from y).
  ConvGeometry(const Shape& x, const Shape& w, const Shape& y, const std::vector<int64_t>& stride,
               const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t g)
      : src(x), dst(y), groups(g) {
    wei = g > 1 ? dims{g, w[0] / g, w[1], w[2], w[3]} : dims(w.begin(), w.end());
    for (int i = 0; i < 2; ++i) {
      strides.push_back(stride[i]);
      dilates.push_back(dilation[i] - 1);  // oneDNN counts the gaps, not the step
      pad_l.push_back(padding[i]);
      // The implicit right padding is whatever makes the last window end at the output size;
      // clamped at 0 because the trailing rows a strided window skips need no padding at all.
      const int64_t span = (y[2 + i] - 1) * stride[i] + (w[2 + i] - 1) * dilation[i] + 1;
      pad_r.push_back(std::max<int64_t>(span - x[2 + i] - padding[i], 0));
    }
  }

  std::string key(const char* op, bool bias) const {
    return fmt::format("{}:{}:{}:{}:{}:{}:{}:{}:{}", op, dims_key(src), dims_key(wei), dims_key(dst),
                       dims_key(strides), dims_key(dilates), dims_key(pad_l), dims_key(pad_r), bias);
  }
  dnnl::memory::desc any(const dims& d) const { return dnnl::memory::desc(d, dt::f32, tag::any); }
  dnnl::memory::desc plain_src() const { return plain_desc(src); }
  dnnl::memory::desc plain_wei() const { return dnnl::memory::desc(wei, dt::f32, groups > 1 ? tag::goihw : tag::oihw); }
  dnnl::memory::desc plain_dst() const { return plain_desc(dst); }

  conv_fwd::primitive_desc forward_pd(dnnl::prop_kind prop, bool bias) const {
    auto d = bias ? conv_fwd::desc(prop, dnnl::algorithm::convolution_direct, any(src), any(wei),
                                   plain_desc(dims{dst[1]}), any(dst), strides, dilates, pad_l, pad_r)
                  : conv_fwd::desc(prop, dnnl::algorithm::convolution_direct, any(src), any(wei), any(dst),
                                   strides, dilates, pad_l, pad_r);
    return conv_fwd::primitive_desc(d, user_scratchpad(), cpu_engine());
  }
};

// One primitive with reorders for its two inputs and its output, and the size of its scratchpad.
struct ConvEntry {
  dnnl::primitive prim;
  OptionalReorder in0, in1, out;
  dnnl::memory::desc scratchpad;
};

}  // namespace

template <typename T>
void conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
            const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups, Tensor& out) {
  if (out.numel() == 0) return;
  guarded("conv2d", [&] {
    ConvGeometry g(x.shape(), weight.shape(), out.shape(), stride, padding, dilation, groups);
    const bool has_bias = bias.defined();
    auto e = cached<ConvEntry>(g.key("conv2d", has_bias), [&] {
      auto pd = g.forward_pd(dnnl::prop_kind::forward_inference, has_bias);
      return ConvEntry{conv_fwd(pd), OptionalReorder::make(g.plain_src(), pd.src_desc()),
                       OptionalReorder::make(g.plain_wei(), pd.weights_desc()),
                       OptionalReorder::make(pd.dst_desc(), g.plain_dst()), pd.scratchpad_desc()};
    });
    dnnl::memory user_dst = wrap(g.plain_dst(), out);
    dnnl::memory dst = output_buffer(e->out, user_dst);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, reorder_in(e->in0, wrap(g.plain_src(), x))},
                                               {DNNL_ARG_WEIGHTS, reorder_in(e->in1, wrap(g.plain_wei(), weight))},
                                               {DNNL_ARG_DST, dst},
                                               {DNNL_ARG_SCRATCHPAD, scratch_memory(e->scratchpad)}};
    if (has_bias) args.emplace(DNNL_ARG_BIAS, wrap(plain_desc(dims{g.dst[1]}), bias));
    e->prim.execute(cpu_stream(), args);
    reorder_out(e->out, dst, user_dst);
  });
}

template <typename T>
void conv2d_grad_input(const Tensor& grad, const Tensor& weight, const std::vector<int64_t>& input_shape,
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
void conv2d_grad_weight(const Tensor& grad, const Tensor& x, const std::vector<int64_t>& weight_shape,
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
