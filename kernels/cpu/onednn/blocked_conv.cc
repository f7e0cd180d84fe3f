// The channel-blocked layout through oneDNN: to_channel_blocks / from_channel_blocks as cached reorders
// between nchw and nChw16c (nChw8c, nChw4c), and blocked_conv2d as a convolution primitive whose source
// and destination are given in that layout, so it reads and writes the tensors as they are (the plain
// path of fused_conv2d reorders its input in and its output out on every call); the residual is read
// in place by a binary-add post-op.
#include <optional>

#include "cpu/onednn/conv_geometry.h"
#include "cpu/onednn/post_ops.h"
#include "kernels.h"

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

// A cached reorder between plain [N, C, H, W] and its blocked form; C a whole number of blocks, so that
// no padding lanes are involved.
void reorder_blocks(const char* op, const Tensor& from, Tensor& to, const dims& nchw, tag blocked, bool to_blocked) {
  guarded(op, [&] {
    const dnnl::memory::desc plain(nchw, dt::f32, tag::nchw), block(nchw, dt::f32, blocked);
    const dnnl::memory::desc& src = to_blocked ? plain : block;
    const dnnl::memory::desc& dst = to_blocked ? block : plain;
    auto r = cached<dnnl::reorder>(fmt::format("{}:{}:{}", op, dims_key(nchw), static_cast<int>(blocked)),
                                   [&] { return dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), src, cpu_engine(), dst)); });
    dnnl::memory in = wrap(src, from), result = wrap(dst, to);
    r->execute(cpu_stream(), in, result);
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
};

// What a call needs beyond its tensors: the primitive, the weights in its layout and the descriptors.
// Kept in ctx.packed across an executor's runs when the weight and bias are constants, so that a call
// skips the geometry, the cache keys and the weight lookup (several microseconds a convolution at batch 1).
struct BlockedConvCall {
  dnnl::primitive prim;
  dnnl::memory weights;
  dnnl::memory::desc src, dst, bias, scratchpad;
  bool activation_after;
};

std::shared_ptr<BlockedConvCall> make_blocked_conv_call(const KernelContext& ctx, const BlockedConvOp& op) {
  const Shape& xs = op.x.shape();
  const Shape x_nchw = op.x.dim() == 5 ? Shape{xs[0], xs[1] * xs[4], xs[2], xs[3]} : xs;
  ConvGeometry g(x_nchw, op.weight.shape(), {op.out[0], op.out[1] * op.block, op.out[2], op.out[3]}, op.stride, op.padding,
                 op.dilation, 1);
  auto call = std::make_shared<BlockedConvCall>();
  call->src = dnnl::memory::desc(g.src, dt::f32, op.x.dim() == 5 ? op.blocked : tag::nchw);
  call->dst = dnnl::memory::desc(g.dst, dt::f32, op.blocked);
  call->bias = plain_desc(dims{g.dst[1]});
  // Both threads even for small problems: at batch 1 a 1 -> 32 channel stem takes 4 us on two, 11 on one.
  const std::string key = fmt::format("{}:{}:{}:{}:{}:{}", g.key("blocked_conv2d", op.bias.defined()), op.x.dim(), op.block,
                                      op.residual.defined(), op.activation, op.alpha);
  auto e = cached<BlockedConv>(key, [&] {
    // The residual as a binary add read in place (it has the destination's layout): the sum post-op would
    // need it copied into the destination first, 0.46 ms of 3.3 for a 32-channel 28x28 conv at batch 64.
    const ResidualPostOp residual{false, op.residual.defined() ? &call->dst : nullptr};
    const auto [post, apply_later] = with_activation(user_scratchpad(), residual, op.act, op.alpha);
    const dnnl::prop_kind prop = dnnl::prop_kind::forward_inference;
    const auto d = op.bias.defined() ? conv_fwd::desc(prop, dnnl::algorithm::convolution_direct, call->src, g.any(g.wei), call->bias,
                                                      call->dst, g.strides, g.dilates, g.pad_l, g.pad_r)
                                     : conv_fwd::desc(prop, dnnl::algorithm::convolution_direct, call->src, g.any(g.wei), call->dst,
                                                      g.strides, g.dilates, g.pad_l, g.pad_r);
    conv_fwd::primitive_desc pd(d, post, cpu_engine());
    return BlockedConv{conv_fwd(pd), OptionalReorder::make(g.plain_wei(), pd.weights_desc()), pd.scratchpad_desc(), apply_later};
  });
  call->prim = e->prim;
  call->weights = weights_in(ctx.packed, e->weights, op.weight, [&] { return wrap(g.plain_wei(), op.weight); }, key);
  call->scratchpad = e->scratchpad;
  call->activation_after = e->activation_after;
  return call;
}

// The call kept in ctx.packed under a key of the constant weight and bias and everything else the
// primitive depends on; built afresh (weights reordered for this call only) when they are not constants.
std::shared_ptr<const BlockedConvCall> blocked_conv_call(const KernelContext& ctx, const BlockedConvOp& op) {
  if (!ctx.packed) return make_blocked_conv_call(ctx, op);
  PackedKey key("blocked_conv2d_call");
  if (!key.add_constant(*ctx.packed, op.weight) || !key.add_constant(*ctx.packed, op.bias)) return make_blocked_conv_call(ctx, op);
  key.add(op.x.shape());
  key.add(op.stride);
  key.add(op.padding);
  key.add(op.dilation);
  key.add(op.block);
  key.add(op.residual.defined());
  key.add(op.activation);
  key.add(op.alpha);
  key.add(ctx.threads);  // oneDNN splits the work by the thread count the primitive was made with
  if (std::shared_ptr<void> hit = ctx.packed->find(key.str())) return std::static_pointer_cast<const BlockedConvCall>(hit);
  std::shared_ptr<BlockedConvCall> made = make_blocked_conv_call(ctx, op);
  ctx.packed->store(key.str(), made);
  return made;
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
                    const std::string& activation, double alpha, int64_t block, Tensor& out) {
  const Activation act = parse_activation("blocked_conv2d", activation);
  const std::optional<tag> blocked = block_tag(block);
  if (out.numel() == 0) return;
  if (!blocked)
    return reference::blocked_conv2d<T>(ctx, x, weight, bias, residual, stride, padding, dilation, activation, alpha, block, out);
  const BlockedConvOp op{x, weight, bias, residual, stride, padding, dilation, activation, act, alpha, block, *blocked, out.shape()};
  bool after = false;
  guarded("blocked_conv2d", [&] {
    const std::shared_ptr<const BlockedConvCall> call = blocked_conv_call(ctx, op);
    after = call->activation_after;
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, wrap(call->src, x)},
                                               {DNNL_ARG_WEIGHTS, call->weights},
                                               {DNNL_ARG_DST, wrap(call->dst, out)},
                                               {DNNL_ARG_SCRATCHPAD, scratch_memory(call->scratchpad)}};
    if (bias.defined()) args.emplace(DNNL_ARG_BIAS, wrap(call->bias, bias));
    if (residual.defined()) args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, wrap(call->dst, residual));
    call->prim.execute(cpu_stream(), args);
  });
  if (after) apply_after(out, act, alpha);
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(to_channel_blocks, onednn, float)
PD_INSTANTIATE_KERNELS(from_channel_blocks, onednn, float)
PD_INSTANTIATE_KERNELS(blocked_conv2d, onednn, float)
