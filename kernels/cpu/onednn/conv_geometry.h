// The geometry of one 2-D convolution in oneDNN terms, shared by conv2d (and its gradients) and
// fused_conv2d, so that both build their primitives the same way.
#pragma once
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu/onednn/onednn_common.h"
#include "cpu/ref/conv_maxpool_block.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"
#include "pd/core/thread_pool.h"
#include "pd/kernels/direct_conv.h"

namespace pd::kernels::onednn {

using conv_fwd = dnnl::convolution_forward;

// Everything that identifies one convolution problem, in oneDNN terms.
struct ConvGeometry {
  dims src, wei, dst, strides, dilates, pad_l, pad_r;
  int64_t groups = 1;
  bool nhwc = false;  // the user's x and y are [N, H, W, C] (channels_last)

  // x: [N, C, H, W], w: [Cout, C/g, kH, kW], y: [N, Cout, OH, OW] (output sizes come from y): the
  // extents in that order for an NHWC problem too (oneDNN's dims are logical; nhwc says the layout).
  ConvGeometry(const Shape& x, const Shape& w, const Shape& y, const std::vector<int64_t>& stride,
               const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t g, bool channels_last = false)
      : src(x), dst(y), groups(g), nhwc(channels_last) {
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
    return fmt::format("{}:{}:{}:{}:{}:{}:{}:{}:{}{}", op, dims_key(src), dims_key(wei), dims_key(dst),
                       dims_key(strides), dims_key(dilates), dims_key(pad_l), dims_key(pad_r), bias, nhwc ? ":nhwc" : "");
  }
  dnnl::memory::desc any(const dims& d) const { return dnnl::memory::desc(d, dt::f32, tag::any); }
  // An activation (src / dst and their gradients) as the primitive should take it: any layout it
  // likes for NCHW users (reordered in and out), but NHWC users' own layout, which oneDNN's
  // convolutions run on as fast, so that nothing is reordered.
  dnnl::memory::desc act(const dims& d) const { return nhwc ? dnnl::memory::desc(d, dt::f32, tag::nhwc) : any(d); }
  dnnl::memory::desc plain_src() const { return nhwc ? act(src) : plain_desc(src); }
  dnnl::memory::desc plain_wei() const { return dnnl::memory::desc(wei, dt::f32, groups > 1 ? tag::goihw : tag::oihw); }
  dnnl::memory::desc plain_dst() const { return nhwc ? act(dst) : plain_desc(dst); }

  // `attr` carries the user scratchpad mode and, for fused_conv2d, the activation post-op.
  conv_fwd::primitive_desc forward_pd(dnnl::prop_kind prop, bool bias,
                                      const dnnl::primitive_attr& attr = user_scratchpad()) const {
    auto d = bias ? conv_fwd::desc(prop, dnnl::algorithm::convolution_direct, act(src), any(wei),
                                   plain_desc(dims{dst[1]}), act(dst), strides, dilates, pad_l, pad_r)
                  : conv_fwd::desc(prop, dnnl::algorithm::convolution_direct, act(src), any(wei), act(dst),
                                   strides, dilates, pad_l, pad_r);
    return conv_fwd::primitive_desc(d, attr, cpu_engine());
  }
};

// One primitive with reorders for its two inputs and its output, and the size of its scratchpad.
// `residual_in` (forward with a sum post-op) moves the residual into the primitive's output layout.
struct ConvEntry {
  dnnl::primitive prim;
  OptionalReorder in0, in1, out;
  dnnl::memory::desc scratchpad;
  OptionalReorder residual_in = {};
};

// Forward inference with the primitive cached under `key` (which must identify `attr` too). With a
// `residual`, `attr` must hold a sum post-op: the residual is put in the destination first and the
// primitive adds the convolution to it.
// Whether a forward convolution (no residual) goes to the direct kernel of fused_conv2d_maxpool, run
// with a 1x1 pool, because it is faster there than in oneDNN (direct_conv_preferred says where).
inline bool use_direct_conv(const Tensor& x, const Tensor& weight, const std::vector<int64_t>& stride,
                            const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups) {
  const Shape& ws = weight.shape();
  return direct_conv_fits(x.dtype(), x.shape()[1], ws[2], ws[3], ws[0], stride, dilation, groups) && cpu_has_avx2_fma() &&
         reference::direct::direct_conv_preferred(x.shape(), ws, padding);
}

inline void direct_conv(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                        const std::string& activation, double alpha, Tensor& out) {
  reference::fused_conv2d_maxpool<float>(ctx, x, weight, bias, stride, padding, dilation, groups, activation, alpha, {1, 1}, {1, 1},
                                         {0, 0}, false, out);
}

// Below this many FLOPs a forward convolution runs on one thread: waking the second costs more than it
// saves (batch 1: a 1 -> 32 channel 3x3 conv on 28x28 takes 16 us on one thread, 28 us on two).
inline constexpr int64_t kSingleThreadConvFlops = int64_t{1} << 20;

inline ConvEntry make_conv_entry(const ConvGeometry& g, bool has_bias, const dnnl::primitive_attr& attr, bool has_residual) {
  auto pd = g.forward_pd(dnnl::prop_kind::forward_inference, has_bias, attr);
  return ConvEntry{conv_fwd(pd), OptionalReorder::make(g.plain_src(), pd.src_desc()),
                   OptionalReorder::make(g.plain_wei(), pd.weights_desc()),
                   OptionalReorder::make(pd.dst_desc(), g.plain_dst()), pd.scratchpad_desc(),
                   // (the key tells residual and plain convs apart, so only the former build this)
                   has_residual ? OptionalReorder::make(g.plain_dst(), pd.dst_desc()) : OptionalReorder{}};
}

// Runs `e` over the images `g` describes at x / out (and residual, put into the destination first),
// with its reorders in and out; the buffers they need come from the caching allocator and are held until
// it returns (it may run on a pool worker, which must not take scratch_memory's).
inline void run_conv(const ConvEntry& e, const ConvGeometry& g, const float* x, float* out, const float* residual,
                     const dnnl::memory& weights, const Tensor& bias) {
  std::vector<std::shared_ptr<void>> held;
  dnnl::memory user_src(g.plain_src(), cpu_engine(), const_cast<float*>(x)), user_dst(g.plain_dst(), cpu_engine(), out);
  dnnl::memory src = e.in0.prim ? held_memory(e.in0.to, held) : user_src;
  if (e.in0.prim) e.in0.prim->execute(cpu_stream(), user_src, src);
  dnnl::memory dst = e.out.prim ? held_memory(e.out.from, held) : user_dst;
  if (residual) {
    dnnl::memory user_r(g.plain_dst(), cpu_engine(), const_cast<float*>(residual));
    if (e.residual_in.prim) e.residual_in.prim->execute(cpu_stream(), user_r, dst);
    else std::copy_n(residual, g.dst[0] * g.dst[1] * g.dst[2] * g.dst[3], out);
  }
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, held_memory(e.scratchpad, held)}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, wrap(plain_desc(dims{g.dst[1]}), bias));
  e.prim.execute(cpu_stream(), args);
  if (e.out.prim) e.out.prim->execute(cpu_stream(), dst, user_dst);
  wait_for_primitives();
}

// The images of an inference batch in parts, one a thread of the kernels' pool, each through one-thread
// primitives (its reorders too), when OpenMP's team is asleep: on the team every convolution ends at a
// barrier, which beside another busy process waits out that process's time slice, and it marks the team
// awake, so that the linears after it go there too (the ViT's patch convolution at batch 64). Training
// keeps the team (it is awake there, and ctx.packed is an inference executor's).
inline void conv_forward_parts(const KernelContext& ctx, const ConvGeometry& g, const std::string& key, const dnnl::primitive_attr& attr,
                               const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out, const Tensor& residual,
                               int64_t parts) {
  const int64_t n = g.src[0], per = (n + parts - 1) / parts;
  parts = (n + per - 1) / per;
  struct Part {
    ConvGeometry g;
    std::shared_ptr<ConvEntry> e;
    dnnl::memory weights;
  };
  const auto part = [&](int64_t images) {
    ConvGeometry pg = g;
    pg.src[0] = pg.dst[0] = images;
    const std::string k = fmt::format("{}:images{}:t1", key, images);
    OneThreadIf single(true);  // oneDNN splits the work by the thread count it sees when the primitive is made
    auto e = cached<ConvEntry>(k, [&] { return make_conv_entry(pg, bias.defined(), attr, residual.defined()); });
    return Part{pg, e, weights_in(ctx.packed, e->in1, weight, wrap(pg.plain_wei(), weight), k)};
  };
  const Part full = part(per), last = n - (parts - 1) * per == per ? full : part(n - (parts - 1) * per);
  const int64_t x_image = g.src[1] * g.src[2] * g.src[3], y_image = g.dst[1] * g.dst[2] * g.dst[3];
  parallel_items(parts, [&](int64_t i) {
    const Part& p = i + 1 == parts ? last : full;
    const int64_t n0 = i * per;
    OneThreadIf single(true);
    run_conv(*p.e, p.g, x.data<float>() + n0 * x_image, out.data<float>() + n0 * y_image,
             residual.defined() ? residual.data<float>() + n0 * y_image : nullptr, p.weights, bias);
  });
}

inline void conv_forward(const KernelContext& ctx, const ConvGeometry& g, const std::string& key, const dnnl::primitive_attr& attr, const Tensor& x,
                         const Tensor& weight, const Tensor& bias, Tensor& out, const Tensor& residual = Tensor()) {
  const int64_t flops = 2 * out.numel() * weight.numel() / std::max<int64_t>(g.dst[1], 1);
  const bool small = flops < kSingleThreadConvFlops;
  if (!small && ctx.packed && g.src[0] > 1 && parallel_threads() > 1 && !openmp_team_awake())
    return conv_forward_parts(ctx, g, key, attr, x, weight, bias, out, residual, std::min<int64_t>(g.src[0], parallel_threads()));
  // oneDNN splits the work by the thread count it sees when the primitive is made and when it runs.
  OneThreadIf one_thread(small);
  const std::string prim_key = one_thread ? key + ":t1" : key;
  auto e = cached<ConvEntry>(prim_key, [&] { return make_conv_entry(g, bias.defined(), attr, residual.defined()); });
  run_conv(*e, g, x.data<float>(), out.data<float>(), residual.defined() ? residual.data<float>() : nullptr,
           weights_in(ctx.packed, e->in1, weight, wrap(g.plain_wei(), weight), prim_key), bias);
}

}  // namespace pd::kernels::onednn
