// Shape rules named after the rule, not the op (ops.yaml `shape:` entries call them). Each takes the
// op name for its messages and tensors as In{"name", tensor}.
#pragma once
#include <vector>

#include "pd/core/tensor.h"

namespace pd {

struct In {
  const char* name;
  const Tensor& t;
};
struct InList {
  const char* name;
  const std::vector<Tensor>& ts;
};

namespace infer {

Shape same_as(const char* op, In x);
// clip: x's shape; min must not exceed max (checked here so that every backend refuses it alike).
Shape clip_range(const char* op, In x, double min, double max);
Shape same_shapes(const char* op, In a, In b);  // a's shape; b must have the same
Shape same_shapes(const char* op, In a, In b, In c);
// Adam's four tensors share a shape, and its step counts from 1 (bias correction divides by 1 - beta^step).
Shape adam_step(const char* op, In param, In grad, In m, In v, int64_t step);
Shape reduce_mask(const char* op, In x, In out, const std::vector<int64_t>& axis, bool keepdim);
Shape pool2d_input(const char* op, In x, In grad, const std::vector<int64_t>& kernel_size,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode);
Shape loss_grad(const char* op, In logits, In label, In grad, int64_t axis, const std::string& reduction);
Shape embedding_grad(const char* op, In x, In grad, const std::vector<int64_t>& weight_shape);
Shape slice_grad(const char* op, In grad, const std::vector<int64_t>& input_shape, const std::vector<int64_t>& axes,
                 const std::vector<int64_t>& starts, const std::vector<int64_t>& ends, const std::vector<int64_t>& steps);
Shape conv2d_grad_weight(const char* op, In grad, In x, const std::vector<int64_t>& weight_shape,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                         const std::vector<int64_t>& dilation, int64_t groups, bool channels_last = false);
Shape broadcast(const char* op, In a, In b);
Shape broadcast(const char* op, In a, In b, In c);
Shape from_shape(const char* op, const std::vector<int64_t>& shape);
Shape arange(const char* op, double start, double end, double step);
Shape reduce(const char* op, In x, const std::vector<int64_t>& axis, bool keepdim);
Shape reduce_nonempty(const char* op, In x, const std::vector<int64_t>& axis, bool keepdim);
Shape sum_to(const char* op, In x, const std::vector<int64_t>& shape);
Shape matmul(const char* op, In x, In y, bool transpose_x, bool transpose_y);
// matmul's operand as a matrix: a 1-D x [K] is read as [1, K] ([K, 1] when transposed, so that the
// transpose is the same row), a 1-D y [K] as [K, 1] ([1, K] when transposed); other shapes unchanged.
Shape matmul_operand(const Shape& s, bool transpose, bool is_y);
// matmul's result before 1-D operands' added axes are dropped (the shape of its gradient as a matrix).
Shape matmul_as_matrices(const char* op, In x, In y, bool transpose_x, bool transpose_y);
// scaled_dot_product_attention: q [N, H, Lq, E], k [N, Hk, Lk, E], v [N, Hk, Lk, Ev] with Hk dividing H
// (grouped-query attention), mask (bool, or additive of q's dtype) broadcastable to [N, H, Lq, Lk].
// attention: the output [N, H, Lq, Ev]; attention_lse: the row log-sum-exp [N, H, Lq]; attention_grad:
// q's shape once grad has the output's.
Shape attention(const char* op, In q, In k, In v, In mask);
Shape attention_lse(const char* op, In q, In k, In v, In mask);
Shape attention_grad(const char* op, In q, In k, In v, In mask, In grad);
// qkv_attention: heads packed along the last axis, [N, L, (H + 2 Hk) E] -> [N, L, H E].
Shape qkv_attention(const char* op, In qkv, In mask, int64_t num_heads, int64_t num_kv_heads);
Shape linear(const char* op, In x, In weight, In bias);
// channels_last: x and the result are [N, H, W, C].
Shape conv2d(const char* op, In x, In weight, In bias, const std::vector<int64_t>& stride,
             const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
             bool channels_last = false);
// conv2d's rule on the NCHW extents `xs` of an input (an NHWC input passes its extents permuted).
Shape conv2d_nchw(const char* op, const char* x_name, const Shape& xs, In weight, In bias, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups);
// fused_linear: linear's rule, a residual (when given) of exactly the output's shape.
Shape fused_linear(const char* op, In x, In weight, In bias, In residual);
// fused_conv2d: conv2d's rule, a residual (when given) of exactly the output's shape (the
// activation is an enum(activation) attribute, which the generated op API checks).
Shape fused_conv2d(const char* op, In x, In weight, In bias, In residual, const std::vector<int64_t>& stride,
                   const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups);
// winograd_weight: a [C_out, C_in, 3, 3] weight becomes [36, C_in, C_out].
Shape winograd_weight(const char* op, In weight);
// winograd_conv2d: a 3x3, stride-1 convolution whose weight is winograd_weight's [36, C_in, C_out]; with
// block > 0 (a multiple of 8) x, the residual and the result are channel-blocked (to_channel_blocks).
Shape winograd_conv2d(const char* op, In x, In weight, In bias, In residual, const std::vector<int64_t>& padding,
                      int64_t block);
// to_channel_blocks: [N, C, H, W] -> [N, ceil(C / block), H, W, block]; from_channel_blocks the inverse,
// `channels` within the last block; blocked_conv2d: conv2d's rule on the blocked (or plain) input's NCHW
// extents, the output and residual blocked, C_out a multiple of block.
Shape to_channel_blocks(const char* op, In x, int64_t block);
Shape from_channel_blocks(const char* op, In x, int64_t channels);
// global_avg_pool_nhwc: [N, H, W, C] (channels == C) or [N, CB, H, W, block] (channels in the last
// block) -> [N, channels, 1, 1].
Shape global_avg_pool_nhwc(const char* op, In x, int64_t channels);
// scale_channel_blocks: x [N, CB, H, W, block], scale [N or 1, C, 1, 1] with C in the last block -> x's shape.
Shape scale_channel_blocks(const char* op, In x, In scale);
// gather_channel_blocks: xs [N, CB_i, H, W, block] holding channels[i] channels each (in their last
// block), index[j] in [0, sum of channels) -> [N, ceil(len(index) / block), H, W, block].
Shape gather_channel_blocks(const char* op, InList xs, const std::vector<int64_t>& channels, const std::vector<int64_t>& index);
// gather_channels: xs [N, H, W, C_i] (NHWC), index into their channels joined in order -> [N, H, W, len(index)].
Shape gather_channels(const char* op, InList xs, const std::vector<int64_t>& index);
Shape blocked_conv2d(const char* op, In x, In weight, In bias, In residual, const std::vector<int64_t>& stride,
                     const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t block, int64_t groups);
// fused_conv2d_maxpool: conv2d's rule (no residual), then pool2d's rule on the
// convolution's output with the pool_* attributes.
Shape conv2d_pool2d(const char* op, In x, In weight, In bias, const std::vector<int64_t>& stride,
                    const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                    const std::vector<int64_t>& pool_kernel_size,
                    const std::vector<int64_t>& pool_stride, const std::vector<int64_t>& pool_padding,
                    bool pool_ceil_mode);
Shape conv2d_transpose(const char* op, In x, In weight, In bias, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                       const std::vector<int64_t>& output_padding, const std::vector<int64_t>& dilation, int64_t groups);
Shape conv2d_grad_input(const char* op, In grad, In weight, const std::vector<int64_t>& input_shape,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& dilation, int64_t groups, bool channels_last = false);
Shape pool2d(const char* op, In x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
             const std::vector<int64_t>& padding, bool ceil_mode);
// pool2d's rule on the shape `xs` of the input named `x_name`, so that fused ops run it on their
// convolution's output without making a tensor for it; `pool_prefix`: the attributes are named
// pool_kernel_size, pool_stride and pool_padding in messages.
Shape pool2d_shape(const char* op, const char* x_name, const Shape& xs, const std::vector<int64_t>& kernel_size,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, bool ceil_mode, bool pool_prefix);
// pool2d's rule for [N, H, W, C] input and output (max_pool2d_nhwc).
Shape pool2d_nhwc(const char* op, In x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, bool ceil_mode);
Shape pool2d_grad(const char* op, In grad, const std::vector<int64_t>& input_shape,
                  const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, bool ceil_mode);
Shape adaptive_pool2d(const char* op, In x, const std::vector<int64_t>& output_size);
Shape adaptive_pool2d_grad(const char* op, In grad, const std::vector<int64_t>& input_shape);
Shape interpolate(const char* op, In x, const std::vector<int64_t>& size, const std::vector<double>& scales, const std::string& mode,
                  const std::string& coordinate_mode, const std::string& nearest_mode, double cubic_coeff_a);
Shape interpolate_grad(const char* op, In grad, const std::vector<int64_t>& input_shape, const std::vector<double>& scales,
                       const std::string& mode, const std::string& coordinate_mode, const std::string& nearest_mode, double cubic_coeff_a);
// The channel extent [C]: axis 1, or the last axis with channels_last.
Shape channel(const char* op, In x, bool channels_last = false);
Shape batch_norm(const char* op, In x, In scale, In bias, In running_mean, In running_var, bool channels_last = false);
// batch_norm_grad's dx: grad has x's shape; with fuse_relu, bias (which the relu mask is recomputed
// with) is there and has scale's shape.
Shape batch_norm_grad(const char* op, In x, In grad, In scale, In bias, bool fuse_relu, bool channels_last = false);
// batch_norm_add_relu's result: batch_norm's, with residual of x's shape.
Shape batch_norm_add(const char* op, In x, In residual, In scale, In bias, In running_mean, In running_var, bool channels_last);
// batch_norm_add_relu_grad's dx: out and grad have x's shape, scale the channels'.
Shape batch_norm_add_relu_grad(const char* op, In x, In out, In grad, In scale, bool channels_last);
Shape layer_norm(const char* op, In x, In scale, In bias, int64_t begin_norm_axis);
Shape norm_stats(const char* op, In x, int64_t begin_norm_axis);
Shape loss(const char* op, In logits, In label, int64_t axis, const std::string& reduction);
Shape embedding(const char* op, In x, In weight);
Shape concat(const char* op, InList xs, int64_t axis);
// The broadcast of all of xs, after checking `expr` (fused_elementwise's expression over them).
Shape elementwise(const char* op, InList xs, const std::string& expr);
std::vector<Shape> split(const char* op, In x, const std::vector<int64_t>& sections, int64_t axis);
Shape pad(const char* op, In x, const std::vector<int64_t>& pads);
// Indexing (index_shape_rules.cc). gather: x.shape[:axis] + index.shape + x.shape[axis+1:];
// index_select: the same with a 1-D index; gather_grad checks grad against that and gives input_shape.
Shape gather(const char* op, In x, In index, int64_t axis);
Shape index_select(const char* op, In x, In index, int64_t axis);
Shape gather_grad(const char* op, In index, In grad, const std::vector<int64_t>& input_shape, int64_t axis);
// take_along_axis: index of x's rank and extents outside axis; the result has index's shape.
Shape take_along_axis(const char* op, In x, In index, int64_t axis);
// scatter_add: take_along_axis's index rule and src of index's shape; the result has x's shape.
Shape scatter_add(const char* op, In x, In index, In src, int64_t axis);
// x's shape after checking that axis names one of its axes (0-D: 0 or -1).
Shape along_axis(const char* op, In x, int64_t axis);
// x's shape with extent k along axis; k must be in [0, extent].
Shape topk(const char* op, In x, int64_t k, int64_t axis);
// x's shape; x must be at least 2-D (batches of matrices).
Shape matrices(const char* op, In x);
Shape one_hot(const char* op, In x, int64_t num_classes);
Shape stack(const char* op, InList xs, int64_t axis);
std::vector<Shape> unbind(const char* op, In x, int64_t axis);
// numpy.tile: x's shape and repeats padded with leading 1s to one length, multiplied.
Shape tile(const char* op, In x, const std::vector<int64_t>& repeats);
// Losses (loss_shape_rules.cc): reduction none keeps the element shape, mean and sum give 0-D.
Shape pointwise_loss(const char* op, In x, In y, const std::string& reduction);
Shape bce_with_logits(const char* op, In x, In y, In pos_weight, const std::string& reduction);
Shape bce_with_logits_grad(const char* op, In x, In y, In pos_weight, In grad, const std::string& reduction);
// An optional input's shape, or [0] when it is absent (the gradient output of an absent input).
Shape optional_same_as(const char* op, In t);
Shape nll_loss(const char* op, In x, In label, const std::string& reduction);
Shape nll_loss_grad(const char* op, In x, In label, In grad, const std::string& reduction);
// Quantize / dequantize: x's shape; scale and zero_point both 0-D (per tensor) or 1-D with x's extent
// along axis (per channel). quantize_linear passes its output dtype (u8 or i8, zero_point's dtype);
// dequantize_linear's x and zero_point are u8 or i8 and its scale f32.
Shape quant_params(const char* op, In x, In scale, In zero_point, int64_t axis, DType dtype);
Shape quant_params(const char* op, In x, In scale, In zero_point, int64_t axis);
// gated_quantize: x [N, H, W, C], gate [N or 1, 1, 1, C] of x's dtype, a 0-D scale -> x's shape.
Shape gated_quantize(const char* op, In x, In gate, In scale, In zero_point, DType dtype);
// quantized_conv2d / quantized_linear: conv2d's / linear's rule on x (u8 or i8, 0-D f32 scale and
// zero point of x's dtype) and weight (i8 with f32 scales per output channel or per tensor); bias f32;
// residual f32, or u8 / i8 with a 0-D residual_scale and residual_zero_point; out_dtype f32, or u8 / i8
// with a 0-D out_scale and out_zero_point (and then no f32 residual).
// channels_last: x, residual and the result are [N, H, W, C]. quantize_x: x is the f32 [N, C, H, W]
// input the kernel quantizes (x_zero_point u8 / i8), with channels_last for the result.
Shape quantized_conv2d(const char* op, In x, In x_scale, In x_zero_point, In weight, In weight_scale, In bias, In residual,
                       In residual_scale, In residual_zero_point, In out_scale, In out_zero_point,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                       const std::vector<int64_t>& dilation, int64_t groups, bool channels_last, DType out_dtype,
                       bool quantize_x);
// quantized_conv2d_maxpool: quantized_conv2d's rule with channels_last and no residual, then
// pool2d_nhwc's on its result.
Shape quantized_conv2d_pool2d(const char* op, In x, In x_scale, In x_zero_point, In weight, In weight_scale, In bias,
                              In out_scale, In out_zero_point, const std::vector<int64_t>& stride,
                              const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                              DType out_dtype, const std::vector<int64_t>& pool_kernel_size,
                              const std::vector<int64_t>& pool_stride, const std::vector<int64_t>& pool_padding,
                              bool pool_ceil_mode, bool quantize_x);
Shape quantized_linear(const char* op, In x, In x_scale, In x_zero_point, In weight, In weight_scale, In bias, In out_scale,
                       In out_zero_point, DType out_dtype);
// weight_only_linear: linear's rule on f32 x and an i8 weight with 0-D or per-output scales.
Shape weight_only_linear(const char* op, In x, In weight, In weight_scale, In bias);

}  // namespace infer

}  // namespace pd
