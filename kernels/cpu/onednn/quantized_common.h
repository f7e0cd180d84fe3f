// What quantized_conv2d and quantized_linear share on oneDNN's int8 primitives: the scales and zero
// points of a call in oneDNN's terms, the primitive attributes (output scales, zero points, residual sum,
// activation, requantization), the s8 weights as the primitive reads them, and the runtime zero points.
//
// oneDNN 2.x computes dst = output_scale[c] * (acc + bias[c]) (bias in accumulator units), so the
// kernels pass bias / output_scale. Scales are baked into the primitive (its jit code has no runtime
// per-channel scales), so a primitive's cache key carries a hash of them (Int8Params::hash).
//
// Without VNNI, oneDNN multiplies u8 by s8 with vpmaddubsw, whose 16-bit sums of two products saturate
// once both operands are large (255 * 127 * 2 > 32767). For u8 activations, weights beyond 7 bits
// (|w| > 64) then go in halved (rounded half to even, scale doubled): 255 * 64 * 2 fits. Weights
// quantized at 7 bits (pd-quant --reduce-range) go in as they are and stay exact. s8 activations go in
// shifted to u8 there (x + 128, zero point + 128): oneDNN's own s8 path halves every weight.
#pragma once
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu/onednn/onednn_common.h"
#include "elementwise_ops.h"
#include "pd/core/kernel_context.h"

namespace pd::kernels::onednn::int8 {

dt onednn_dtype(DType d);

// The scales and zero points of one call, in oneDNN's terms.
struct Int8Params {
  std::vector<float> output_scales;  // x_scale * weight_scale[c] (doubled for 7-bit weights)
  std::vector<float> bias;           // bias[c] / output_scales[c]; empty without a bias
  int32_t x_zero_point = 0;
  float inv_out_scale = 1.0f;  // 1 / out_scale for an int8 output
  int32_t out_zero_point = 0;
  bool seven_bit = false;
  // The residual. The sum post-op reads `residual_dtype`: an int8 residual of an int8 result as it is,
  // real = residual_scale * (r - residual_zero_point); an f32 one, or an int8 one the kernel widens to
  // f32 first (`widen_residual`: an f32 result adds real values), as real values.
  bool residual = false;
  DType residual_dtype = DType::f32;
  bool widen_residual = false;
  float residual_scale = 1.0f;
  int32_t residual_zero_point = 0;
  uint64_t hash = 1469598103934665603ull;  // FNV-1a of everything baked into the primitive

  void mix(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) hash = (hash ^ b[i]) * 1099511628211ull;
  }
};

// Whether some weight lies beyond 7 bits (|w| > 64); remembered in ctx.packed for a constant weight.
bool beyond_seven_bits(const KernelContext& ctx, const Tensor& weight);

// The activation as the primitive reads it: as it is, or shifted from s8 to u8 where the CPU lacks VNNI.
Tensor int8_source(const Tensor& x);
// The zero point of that activation.
int32_t source_zero_point(const Tensor& x, const Tensor& x_zero_point);

// `source_dtype` / `source_zp`: the activation as int8_source gives it. `out_scale` / `out_zero_point`
// are read only for an int8 result.
Int8Params int8_params(const KernelContext& ctx, DType source_dtype, int32_t source_zp, const Tensor& x_scale,
                       const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                       const Tensor& out_zero_point, DType out_dtype);

// The residual's terms in `p` (mixed into its hash where the sum post-op bakes them in).
void residual_terms(Int8Params& p, DType residual_dtype, const Tensor& scale, const Tensor& zero_point, DType out_dtype);

// Output scales (per channel: mask `channel_mask`), zero points, and the post-ops: the residual sum,
// then the activation in real units, scaled by 1 / out_scale for an int8 output. Nothing when oneDNN
// has no exact form of the activation; the caller runs the reference kernel.
std::optional<dnnl::primitive_attr> int8_attr(const Int8Params& p, int channel_mask, Activation act, double alpha,
                                              DType out_dtype);

dnnl::memory wrap_any(const dnnl::memory::desc& md, const Tensor& t);

// The s8 weight as the primitive reads it (7-bit when p.seven_bit), reordered once and kept in
// ctx.packed when the weight is a constant. `keep` holds a halved copy alive while the memory is used.
dnnl::memory int8_weights(const KernelContext& ctx, const OptionalReorder& r, const dnnl::memory::desc& plain,
                          const Tensor& weight, const Int8Params& p, const std::string& key, Tensor& keep);

// The runtime zero points the attributes asked for, over `storage` (2 values that must outlive the call).
void add_zero_points(std::unordered_map<int, dnnl::memory>& args, const Int8Params& p, DType out_dtype, int32_t* storage);

}  // namespace pd::kernels::onednn::int8
