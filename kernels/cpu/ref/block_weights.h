// What the vector kernels on channel blocks (pointwise_conv, depthwise_conv) share: the calls they take,
// and their weights in their own layout, made once and kept in ctx.packed when the weight is a constant
// there (an Executor's param), else made for this call.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "cpu/common/widest.h"
#include "elementwise_ops.h"
#include "pd/core/kernel_context.h"
#include "pd/core/packed_weights.h"
#include "pd/core/tensor.h"

namespace pd::kernels::reference {

using BlockWeights = std::vector<float>;

// A call the vector kernels take: f32 blocks of the widest vector this CPU runs (16 lanes on AVX-512, 8
// on AVX2), activation none, relu, relu6, silu or hardswish (isa/vector_activation.h).
inline bool vector_blocks_fit(const Tensor& x, Activation act, int64_t block) {
  const int64_t lanes = cpu::widest<int64_t>(0, 8, 16);
  return block == lanes && x.dtype() == DType::f32 && x.dim() == 5 &&
         (act == Activation::none || act == Activation::relu || act == Activation::relu6 || act == Activation::silu ||
          act == Activation::hardswish);
}

// A weight [C_out, ...] as [ceil(C_out / L), R, L] (R: the values of one output channel, C_in for a 1x1
// convolution, K * K for a depthwise one), each output channel a lane, lanes past C_out zero.
inline void pack_output_lanes(const Tensor& weight, int64_t L, BlockWeights& w) {
  const int64_t cout = weight.shape()[0], per = cout == 0 ? 0 : weight.numel() / cout, cbo = (cout + L - 1) / L;
  const float* src = weight.data<float>();
  w.assign(static_cast<size_t>(cbo * per * L), 0.0f);
  for (int64_t co = 0; co < cout; ++co)
    for (int64_t r = 0; r < per; ++r) w[static_cast<size_t>(((co / L) * per + r) * L + co % L)] = src[co * per + r];
}

// The weight as `pack(weight, out)` lays it out (`layout` names that layout in the cache key), kept in
// ctx.packed when it is a constant there, else packed into `local`; `kept` holds the cached copy for as
// long as the caller uses it.
template <typename Pack>
const BlockWeights& packed_block_weights(const KernelContext& ctx, const Tensor& weight, const char* layout, int64_t block,
                                         Pack pack, BlockWeights& local, std::shared_ptr<void>& kept) {
  if (ctx.packed != nullptr) {
    PackedKey key(layout);
    key.add(weight.shape());
    key.add(block);
    if (key.add_constant(*ctx.packed, weight)) {
      kept = ctx.packed->find(key.str());
      if (!kept) {
        auto made = std::make_shared<BlockWeights>();
        pack(weight, *made);
        ctx.packed->store(key.str(), made);
        kept = made;
      }
      return *static_cast<const BlockWeights*>(kept.get());
    }
  }
  pack(weight, local);
  return local;
}

// The weight in output lanes (pack_output_lanes), cached as packed_block_weights says.
inline const BlockWeights& output_lane_weights(const KernelContext& ctx, const Tensor& weight, int64_t block, BlockWeights& local,
                                               std::shared_ptr<void>& kept) {
  return packed_block_weights(
      ctx, weight, "output_lanes", block, [&](const Tensor& w, BlockWeights& out) { pack_output_lanes(w, block, out); }, local, kept);
}

// The bias [C] zero-padded to `lanes` (whole blocks), or null without one.
inline const float* padded_bias(const Tensor& bias, int64_t lanes, BlockWeights& out) {
  if (!bias.defined()) return nullptr;
  out.assign(static_cast<size_t>(lanes), 0.0f);
  const float* b = bias.data<float>();
  for (int64_t c = 0; c < bias.numel(); ++c) out[static_cast<size_t>(c)] = b[c];
  return out.data();
}

// A call's weight in output lanes (output_lane_weights) and its bias padded to whole blocks
// (padded_bias), held for as long as the kernel reads them.
class BlockOperands {
 public:
  BlockOperands(const KernelContext& ctx, const Tensor& weight, const Tensor& bias, int64_t block, int64_t out_blocks)
      : w_(output_lane_weights(ctx, weight, block, local_, kept_).data()), bias_(padded_bias(bias, out_blocks * block, bias_lanes_)) {}
  BlockOperands(const BlockOperands&) = delete;
  BlockOperands& operator=(const BlockOperands&) = delete;
  const float* w() const { return w_; }
  const float* bias() const { return bias_; }  // null without a bias

 private:
  std::shared_ptr<void> kept_;          // the cached packed weight
  BlockWeights local_, bias_lanes_;     // declared before the pointers into them
  const float* w_;
  const float* bias_;
};

}  // namespace pd::kernels::reference
