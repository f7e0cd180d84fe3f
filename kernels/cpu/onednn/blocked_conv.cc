// The channel-blocked layout through oneDNN: to_channel_blocks / from_channel_blocks as cached reorders
// between nchw and nChw16c (nChw8c, nChw4c), and blocked_conv2d as a convolution primitive whose source
// and destination are given in that layout, so it reads and writes the tensors as they are (the plain
// path of fused_conv2d reorders its input in and its output out on every call); the residual is read
// in place by a binary-add post-op.
#include <algorithm>
#include <optional>
#include <vector>

#include "cpu/onednn/conv_geometry.h"
#include "cpu/onednn/kept_args.h"
#include "cpu/onednn/post_ops.h"
#include "cpu/ref/blocked_direct_conv.h"
#include "cpu/ref/depthwise_conv.h"
#include "cpu/ref/grouped_conv.h"
#include "pd/kernels/grouped_conv_rule.h"
#include "cpu/ref/pointwise_conv.h"
#include "cpu/ref/stem_conv.h"
#include "kernels.h"
#include "pd/core/thread_pool.h"

namespace pd::kernels::onednn {
namespace {

// oneDNN's tag for blocks of `block` channels; nothing for a block it has no layout for.
std::optional<tag> block_tag(int64_t block) {
  switch (block) {
    case 4: return tag::nChw4c;
    case 8: return tag::nChw8c;
    case 16: return tag::nChw16c;
    default: return std::nullopt;
  }
}

// Below this many elements a reorder runs on one thread; above it, with at least an image a thread,
// the images are split across the kernels' pool (one-thread reorders, as the convolutions' parts below).
constexpr int64_t kSingleThreadReorder = int64_t{1} << 16;

// Parts of a batch split by images: several a thread, so that the pool evens out threads the OS runs at
// different speeds (on a shared host one core can run at half the other's for a while: a half each
// waited out the slower one).
int64_t image_parts(int64_t images, int64_t threads) {
  constexpr int64_t kPartsPerThread = 4;
  return std::min(images, threads * kPartsPerThread);
}

// A cached reorder between plain [N, C, H, W] and its blocked form; C a whole number of blocks, so that
// no padding lanes are involved.
void reorder_blocks(const char* op, const Tensor& from, Tensor& to, const dims& nchw, tag blocked, bool to_blocked) {
  const int64_t n = nchw[0], threads = parallel_threads(), image = from.numel() / std::max<int64_t>(n, 1);
  const bool small = from.numel() < kSingleThreadReorder;
  const int64_t parts = small || n < threads ? 1 : image_parts(n, threads);
  const bool one_thread = small || parts > 1;
  guarded(op, [&] {
    float* const src_data = const_cast<float*>(from.data<float>());
    float* const dst_data = to.data<float>();
    parallel_items(parts, [&](int64_t t) {
      const int64_t n0 = n * t / parts, n1 = n * (t + 1) / parts;
      dims part = nchw;
      part[0] = n1 - n0;
      const dnnl::memory::desc plain(part, dt::f32, tag::nchw), block(part, dt::f32, blocked);
      const dnnl::memory::desc& src = to_blocked ? plain : block;
      const dnnl::memory::desc& dst = to_blocked ? block : plain;
      auto r = cached<dnnl::reorder>(fmt::format("{}:{}:{}:{}", op, dims_key(part), static_cast<int>(blocked), one_thread ? "t1" : ""), [&] {
        OneThreadIf single(one_thread);  // oneDNN splits the work by the thread count it sees when the primitive is made
        return dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), src, cpu_engine(), dst));
      });
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_FROM, dnnl::memory(src, cpu_engine(), src_data + n0 * image)},
                                                 {DNNL_ARG_TO, dnnl::memory(dst, cpu_engine(), dst_data + n0 * image)}};
      run_primitive(*r, args, {}, one_thread);
    });
  });
}

// One blocked_conv2d call's operands and attributes.
struct BlockedConvOp {
  const Tensor &x, &weight, &bias, &residual;
  const std::vector<int64_t>&stride, &padding, &dilation;
  const std::string& activation;
  Activation act;
  double alpha;
  int64_t block;
  int64_t groups;  // 1, or depthwise: groups = C_in = C_out
  tag blocked;
  const Shape& out;
};

// The primitive with its weight reorder, built on the first call with these shapes and attributes;
// the post-ops too, which cost a microsecond to assemble.
struct BlockedConv {
  dnnl::primitive prim;
  OptionalReorder weights;
  dnnl::memory::desc scratchpad;
  bool activation_after;
  bool oneDNN_reference;  // oneDNN has no jit kernel for it (its impl "ref:any")
};

// One primitive of a call with the weights in its layout and the descriptors of its part of the
// tensors (offsets in floats): the whole convolution, or the images or output channels one thread runs.
struct BlockedConvPart {
  dnnl::primitive prim;
  dnnl::memory weights;
  dnnl::memory::desc src, dst, bias, scratchpad;
  int64_t src_offset = 0, dst_offset = 0, bias_offset = 0;
  bool oneDNN_reference = false;
};

// What a call needs beyond its tensors. Kept in ctx.packed across an executor's runs when the weight and
// bias are constants, so that a call skips the geometry, the cache keys and the weight lookup (several
// microseconds a convolution at batch 1). With more than one part, each part's primitive is made for one
// thread and the parts run on the kernels' pool (as a linear's row blocks: cpu/onednn/matmul_common.h),
// so that OpenMP's team is not woken and a thread the OS does not run holds nobody at a barrier.
struct BlockedConvCall {
  std::vector<BlockedConvPart> parts;
  bool activation_after = false;
  bool one_thread = false;  // one part, made for the calling thread alone
  // Some part has only oneDNN's reference kernel (padding wider than its jit kernels take: a dilated
  // convolution on a small map), 100-1000x slower than they are: the call runs on paddle-cpp's
  // reference blocked_conv2d instead (im2col and a GEMM; a stride-2 3x3 at dilation 12 on 14x14 maps,
  // 32 channels: 3.6 ms -> 0.1 ms).
  bool oneDNN_reference() const {
    return std::any_of(parts.begin(), parts.end(), [](const BlockedConvPart& p) { return p.oneDNN_reference; });
  }
};

// Below this many multiply-adds a call that does not divide runs on the calling thread: a
// squeeze-excitation's 1x1 convolutions on [N, C, 1, 1] (MobileNetV3's 576 -> 144: 83 K) took a few
// microseconds of work and woke OpenMP's team for it. The smallest stem that pays for two threads, 1 -> 32
// channels 3x3 at 28x28, is 226 K (4 us on two threads, 11 on one).
constexpr int64_t kOneThreadMacs = int64_t{1} << 17;

// The part of `op` that reads images [n0, n0 + n) and writes output channels [c0, c0 + c).
BlockedConvPart make_part(const KernelContext& ctx, const BlockedConvOp& op, int64_t n0, int64_t n, int64_t c0, int64_t c,
                          bool one_thread, bool& activation_after) {
  const Shape& xs = op.x.shape();
  const Shape& ws = op.weight.shape();
  // The input channels, and the floats an image takes (blocks hold zero lanes past the channels).
  const int64_t channels = ws[1] * op.groups, image_channels = op.x.dim() == 5 ? xs[1] * xs[4] : xs[1];
  const int64_t out_h = op.out[2], out_w = op.out[3];
  // A depthwise part's output channels [c0, c0 + c) read the same input channels (whole blocks of them);
  // a grouped convolution runs whole (make_blocked_conv_call splits it by images only).
  const bool depthwise = op.groups > 1 && ws[1] == 1 && ws[0] == op.groups;
  ConvGeometry g({n, depthwise ? c : channels, xs[2], xs[3]}, {c, ws[1], ws[2], ws[3]}, {n, c, out_h, out_w}, op.stride, op.padding,
                 op.dilation, depthwise ? c : op.groups);
  BlockedConvPart part;
  part.src = dnnl::memory::desc(g.src, dt::f32, op.x.dim() == 5 ? op.blocked : tag::nchw);
  part.dst = dnnl::memory::desc(g.dst, dt::f32, op.blocked);
  part.bias = plain_desc(dims{c});
  part.src_offset = n0 * image_channels * xs[2] * xs[3] + (depthwise ? c0 * xs[2] * xs[3] : 0);
  part.dst_offset = n0 * op.out[1] * op.block * out_h * out_w + c0 * out_h * out_w;  // whole blocks of c0 channels
  part.bias_offset = c0;
  const std::string key = fmt::format("{}:g{}:{}:{}:{}:{}:{}:{}", g.key("blocked_conv2d", op.bias.defined()), g.groups, op.x.dim(),
                                      op.block, op.residual.defined(), op.activation, op.alpha, one_thread ? "t1" : "");
  OneThreadIf single(one_thread);  // oneDNN splits the work by the thread count it sees when the primitive is made
  auto e = cached<BlockedConv>(key, [&] {
    // The residual as a binary add read in place (it has the destination's layout): the sum post-op would
    // need it copied into the destination first, 0.46 ms of 3.3 for a 32-channel 28x28 conv at batch 64.
    const ResidualPostOp residual{false, op.residual.defined() ? &part.dst : nullptr};
    const auto [post, apply_later] = with_activation(user_scratchpad(), residual, op.act, op.alpha);
    const dnnl::prop_kind prop = dnnl::prop_kind::forward_inference;
    const auto d = op.bias.defined() ? conv_fwd::desc(prop, dnnl::algorithm::convolution_direct, part.src, g.any(g.wei), part.bias,
                                                      part.dst, g.strides, g.dilates, g.pad_l, g.pad_r)
                                     : conv_fwd::desc(prop, dnnl::algorithm::convolution_direct, part.src, g.any(g.wei), part.dst,
                                                      g.strides, g.dilates, g.pad_l, g.pad_r);
    conv_fwd::primitive_desc pd(d, post, cpu_engine());
    return BlockedConv{conv_fwd(pd), OptionalReorder::make(g.plain_wei(), pd.weights_desc()), pd.scratchpad_desc(), apply_later,
                       std::string(pd.impl_info_str()).rfind("ref", 0) == 0};
  });
  part.prim = e->prim;
  // The weights of output channels [c0, c0 + c) are contiguous in the plain [Cout, C, kH, kW] tensor.
  float* const w = const_cast<float*>(op.weight.data<float>()) + c0 * ws[1] * ws[2] * ws[3];
  part.weights = weights_in(ctx.packed, e->weights, op.weight, [&] { return dnnl::memory(g.plain_wei(), cpu_engine(), w); },
                            fmt::format("{}:from{}", key, c0));
  part.scratchpad = e->scratchpad;
  part.oneDNN_reference = e->oneDNN_reference;
  activation_after = e->activation_after;
  return part;
}

// Parts for the pool where the work divides: groups of images when there are several (image_parts),
// else the output channels in whole blocks, one part a thread (the last may have fewer blocks, and its
// last block fewer channels). Otherwise the whole call, on the calling thread when it is small
// (kOneThreadMacs), else on OpenMP's team.
std::shared_ptr<BlockedConvCall> make_blocked_conv_call(const KernelContext& ctx, const BlockedConvOp& op) {
  auto call = std::make_shared<BlockedConvCall>();
  const int64_t n = op.out[0], c = op.weight.shape()[0], threads = ctx.threads;
  const int64_t blocks = op.out[1];
  if (threads > 1 && n >= threads) {
    const int64_t parts = image_parts(n, threads);
    for (int64_t t = 0; t < parts; ++t) {
      const int64_t n0 = n * t / parts, n1 = n * (t + 1) / parts;
      call->parts.push_back(make_part(ctx, op, n0, n1 - n0, 0, c, true, call->activation_after));
    }
  } else if (threads > 1 && n == 1 && blocks >= threads && (op.groups == 1 || op.weight.shape()[1] == 1)) {
    // Blocks that do not divide evenly go 5 + 4 (MobileNetV2's 144 channels): on OpenMP's team instead,
    // woken after the pool's work, a 56x56 depthwise convolution took 160 us of which oneDNN ran 100.
    const int64_t per = (blocks + threads - 1) / threads * op.block;
    for (int64_t c0 = 0; c0 < c; c0 += per)
      call->parts.push_back(make_part(ctx, op, 0, 1, c0, std::min(per, c - c0), true, call->activation_after));
  } else {
    const Shape& ws = op.weight.shape();
    call->one_thread = threads > 1 && n * op.out[2] * op.out[3] * c * ws[1] * ws[2] * ws[3] < kOneThreadMacs;
    call->parts.push_back(make_part(ctx, op, 0, n, 0, c, call->one_thread, call->activation_after));
  }
  return call;
}

// The call kept in ctx.packed (`kept`) under a key of the constant weight and bias and everything else the
// primitive depends on; built afresh (weights reordered for this call only) when they are not constants.
std::shared_ptr<const BlockedConvCall> blocked_conv_call(const KernelContext& ctx, const BlockedConvOp& op, bool& kept) {
  kept = false;
  if (!ctx.packed) return make_blocked_conv_call(ctx, op);
  PackedKey key("blocked_conv2d_call");
  if (!key.add_constant(*ctx.packed, op.weight) || !key.add_constant(*ctx.packed, op.bias)) return make_blocked_conv_call(ctx, op);
  kept = true;
  key.add(op.x.shape());
  key.add(op.stride);
  key.add(op.padding);
  key.add(op.dilation);
  key.add(op.block);
  key.add(op.groups);
  key.add(op.residual.defined());
  key.add(op.activation);
  key.add(op.alpha);
  key.add(ctx.threads);  // oneDNN splits the work by the thread count the primitive was made with
  if (std::shared_ptr<void> hit = ctx.packed->find(key.str())) return std::static_pointer_cast<const BlockedConvCall>(hit);
  std::shared_ptr<BlockedConvCall> made = make_blocked_conv_call(ctx, op);
  ctx.packed->store(key.str(), made);
  return made;
}

// Each part's argument map kept in the op's memo slot (kept_args.h), as quantized_conv.cc keeps its
// bands'.
ArgMap* kept_part_args(const KernelContext& ctx, const std::shared_ptr<const BlockedConvCall>& call, bool bias, bool residual) {
  return kept_arg_maps(ctx, call, [&] {
    std::vector<ArgMap> maps;
    for (const BlockedConvPart& part : call->parts) {
      ArgMap args{{DNNL_ARG_SRC, dnnl::memory(part.src, cpu_engine(), nullptr)},
                  {DNNL_ARG_WEIGHTS, part.weights},
                  {DNNL_ARG_DST, dnnl::memory(part.dst, cpu_engine(), nullptr)}};
      if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(part.bias, cpu_engine(), nullptr));
      if (residual) args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, dnnl::memory(part.dst, cpu_engine(), nullptr));
      if (part.scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(part.scratchpad, cpu_engine(), nullptr));
      maps.push_back(std::move(args));
    }
    return maps;
  });
}

}  // namespace

template <typename T>
void to_channel_blocks(const KernelContext& ctx, const Tensor& x, int64_t block, Tensor& out) {
  const Shape& s = x.shape();
  const std::optional<tag> blocked = block_tag(block);
  if (out.numel() == 0) return;
  if (!blocked || s[1] % block != 0) return reference::to_channel_blocks<T>(ctx, x, block, out);
  reorder_blocks("to_channel_blocks", x, out, to_dims(s), *blocked, true);
}

template <typename T>
void from_channel_blocks(const KernelContext& ctx, const Tensor& x, int64_t channels, Tensor& out) {
  const Shape& s = x.shape();
  const std::optional<tag> blocked = block_tag(s[4]);
  if (out.numel() == 0) return;
  if (!blocked || channels % s[4] != 0) return reference::from_channel_blocks<T>(ctx, x, channels, out);
  reorder_blocks("from_channel_blocks", x, out, to_dims(out.shape()), *blocked, false);
}

template <typename T>
void blocked_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                    const std::string& activation, double alpha, int64_t block, int64_t groups, Tensor& out) {
  const Activation act = parse_activation("blocked_conv2d", activation);
  const std::optional<tag> blocked = block_tag(block);
  if (out.numel() == 0) return;
  if (reference::pointwise_conv(ctx, x, weight, bias, residual, stride, padding, groups, act, block, out) ||
      reference::depthwise_conv(ctx, x, weight, bias, residual, stride, padding, dilation, groups, act, block, out) ||
      reference::stem_conv(ctx, x, weight, bias, residual, stride, padding, dilation, groups, act, block, out) ||
      reference::grouped_conv(ctx, x, weight, bias, residual, stride, padding, dilation, groups, act, block, out) ||
      reference::blocked_direct_conv(ctx, x, weight, bias, residual, stride, padding, dilation, groups, act, block, out))
    return;
  // Groups of 8 in blocks of 16 that grouped_conv declined (no AVX-512): oneDNN has no such layout.
  if (block == 2 * kGroupWidth && grouped8_fits(weight.shape()[1] * groups, weight.shape()[0], groups, weight.shape()[2], weight.shape()[3]))
    return reference::blocked_conv2d<T>(ctx, x, weight, bias, residual, stride, padding, dilation, activation, alpha, block, groups, out);
  if (!blocked)
    return reference::blocked_conv2d<T>(ctx, x, weight, bias, residual, stride, padding, dilation, activation, alpha, block, groups,
                                        out);
  const BlockedConvOp op{x, weight, bias, residual, stride, padding, dilation, activation, act, alpha, block, groups, *blocked,
                         out.shape()};
  bool after = false, reference_kernel = false;
  guarded("blocked_conv2d", [&] {
    bool kept_call = false;
    const std::shared_ptr<const BlockedConvCall> call = blocked_conv_call(ctx, op, kept_call);
    if ((reference_kernel = call->oneDNN_reference())) return;
    after = call->activation_after;
    float* const xs = const_cast<float*>(x.data<float>());
    float* const rs = residual.defined() ? const_cast<float*>(residual.data<float>()) : nullptr;
    float* const bs = bias.defined() ? const_cast<float*>(bias.data<float>()) : nullptr;
    ArgMap* const kept = kept_call ? kept_part_args(ctx, call, bs != nullptr, rs != nullptr) : nullptr;
    const bool on_pool = call->parts.size() > 1 || call->one_thread;
    parallel_items(static_cast<int64_t>(call->parts.size()), [&](int64_t i) {
      const BlockedConvPart& part = call->parts[static_cast<size_t>(i)];
      if (kept) {
        ArgMap& args = kept[i];
        args.at(DNNL_ARG_SRC).set_data_handle(xs + part.src_offset);
        args.at(DNNL_ARG_DST).set_data_handle(out.data<float>() + part.dst_offset);
        if (bs) args.at(DNNL_ARG_BIAS).set_data_handle(bs + part.bias_offset);
        if (rs) args.at(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1).set_data_handle(rs + part.dst_offset);
        const std::shared_ptr<void> scratch = point_scratchpad(args, part.scratchpad);
        return run_primitive(part.prim, args, {}, on_pool);
      }
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(part.src, cpu_engine(), xs + part.src_offset)},
                                                 {DNNL_ARG_WEIGHTS, part.weights},
                                                 {DNNL_ARG_DST, dnnl::memory(part.dst, cpu_engine(), out.data<float>() + part.dst_offset)}};
      if (bs) args.emplace(DNNL_ARG_BIAS, dnnl::memory(part.bias, cpu_engine(), bs + part.bias_offset));
      if (rs) args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, dnnl::memory(part.dst, cpu_engine(), rs + part.dst_offset));
      run_primitive(part.prim, args, part.scratchpad, on_pool);  // one part a thread, a small call on this one, or OpenMP's team
    });
  });
  if (reference_kernel)
    return reference::blocked_conv2d<T>(ctx, x, weight, bias, residual, stride, padding, dilation, activation, alpha, block, groups, out);
  if (after) apply_after(out, act, alpha);
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(to_channel_blocks, onednn, float)
PD_INSTANTIATE_KERNELS(from_channel_blocks, onednn, float)
PD_INSTANTIATE_KERNELS(blocked_conv2d, onednn, float)
