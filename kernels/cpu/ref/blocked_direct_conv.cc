// blocked_direct_conv (blocked_direct_conv.h): the checks, the packed weight, the padded input, and the
// work split across threads.
#include "cpu/ref/blocked_direct_conv.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/ref/block_weights.h"
#include "pd/core/cpu_features.h"
#include "pd/core/thread_pool.h"

namespace pd::kernels::reference {
namespace {

// Where the kernel beats oneDNN's (AVX-512, Zen 5, in ResNet-50 on 2 threads, us, this / oneDNN): at
// batch 1 the 3x3 layers at 7x7 x 512 580-690 / 880-920, the strided one into 7x7 620-730 / 950-970, at
// 14x14 x 256 545-630 / 590-660; at batch 8 the 7x7 ones 4300-4900 / 4750-5100. With more pixels
// oneDNN's kernel is near the FMA peak and wins: at batch 8 the strided 3x3 into 14x14 x 256 5100-5400 /
// 4400-4900, and at batch 1 a 28x28 x 128 map (from 56x56 at stride 2) 665 / 585. (Stride-1 3x3 layers
// on larger maps are Winograd's: conv_winograd.)
constexpr int64_t kMinChannels = 256;
constexpr int64_t kMaxPixels = 2 * 14 * 14;  // output pixels of the whole batch

bool rule_fits(const Tensor& x, const Tensor& weight, const std::vector<int64_t>& dilation, int64_t groups, Activation act,
               int64_t block, const Tensor& out) {
  if (!cpu_has_avx512() || !vector_blocks_fit(x, act, block) || groups != 1) return false;
  if (dilation != std::vector<int64_t>{1, 1}) return false;
  const Shape& ws = weight.shape();
  if (ws[0] % block != 0 || ws[1] % block != 0 || ws[0] < kMinChannels || ws[1] < kMinChannels) return false;
  // 1x1: oneDNN's jit_1x1 or pointwise_conv. (A form of this kernel for them, spans of 9 input blocks
  // and 16 channels unrolled, ran ResNet-50's 1x1 layers at 7x7 and 14x14 no faster than jit_1x1, and
  // its strided ones 1.4x slower.)
  if (ws[2] == 1 && ws[3] == 1) return false;
  return out.shape()[0] * out.shape()[2] * out.shape()[3] <= kMaxPixels;
}

// The weight [C_out, C_in, KH, KW] as blocked_direct_conv.h lays it out: groups of kDirectBlocks output
// blocks (the last may have fewer), each [C_in][KH][KW][blocks][L].
void pack_groups(const Tensor& weight, int64_t L, BlockWeights& w) {
  const Shape& s = weight.shape();
  const int64_t cout = s[0], cin = s[1], taps = s[2] * s[3], cbo = cout / L;
  const float* src = weight.data<float>();
  w.assign(static_cast<size_t>(weight.numel()), 0.0f);
  for (int64_t co = 0; co < cout; ++co) {
    const int64_t ob = co / L, g = ob / kDirectBlocks, blocks = std::min(kDirectBlocks, cbo - g * kDirectBlocks);
    float* wg = w.data() + g * kDirectBlocks * L * cin * taps;
    for (int64_t ci = 0; ci < cin; ++ci)
      for (int64_t tap = 0; tap < taps; ++tap)
        wg[((ci * taps + tap) * blocks + ob % kDirectBlocks) * L + co % L] = src[(co * cin + ci) * taps + tap];
  }
}

// x [N, cib, H, W, L] into `padded` [N, cib, H + 2 ph, W + 2 pw, L], zeros around each map.
void pad_input(const Tensor& x, int64_t ph, int64_t pw, std::vector<float>& padded) {
  const Shape& s = x.shape();
  const int64_t maps = s[0] * s[1], H = s[2], W = s[3], L = s[4], Hp = H + 2 * ph, Wp = W + 2 * pw;
  padded.assign(static_cast<size_t>(maps * Hp * Wp * L), 0.0f);
  const float* src = x.data<float>();
  cpu::parallel_for(maps, Hp * Wp * L, [&](int64_t m) {
    for (int64_t h = 0; h < H; ++h)
      std::memcpy(padded.data() + ((m * Hp + h + ph) * Wp + pw) * L, src + (m * H + h) * W * L, static_cast<size_t>(W * L) * sizeof(float));
  });
}

}  // namespace

bool blocked_direct_conv(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                         int64_t groups, Activation act, int64_t block, Tensor& out) {
  if (!rule_fits(x, weight, dilation, groups, act, block, out)) return false;
  const Shape& ws = weight.shape();
  const Shape& os = out.shape();
  BlockWeights local;
  std::shared_ptr<void> kept;
  const BlockWeights& w = packed_block_weights(
      ctx, weight, "direct_groups", block, [&](const Tensor& wt, BlockWeights& to) { pack_groups(wt, block, to); }, local, kept);
  BlockWeights bias_lanes;
  thread_local std::vector<float> padded;
  const bool unpadded = padding[0] == 0 && padding[1] == 0;
  if (!unpadded) pad_input(x, padding[0], padding[1], padded);
  BlockedDirectConv c;
  c.x = unpadded ? x.data<float>() : padded.data();  // the thread_local is this thread's: the workers get the pointer
  c.w = w.data();
  c.bias = padded_bias(bias, os[1] * block, bias_lanes);
  c.residual = residual.defined() ? residual.data<float>() : nullptr;
  c.out = out.data<float>();
  c.cib = x.shape()[1], c.cbo = os[1];
  c.Hp = x.shape()[2] + 2 * padding[0], c.Wp = x.shape()[3] + 2 * padding[1];
  c.OH = os[2], c.OW = os[3], c.KH = ws[2], c.KW = ws[3], c.sh = stride[0], c.sw = stride[1];
  c.act = act;
  // Items: (group of output blocks, band of the batch's pixels), a group's weights read once a band:
  // bands only where the groups are too few to give each thread two.
  const int64_t pixels = os[0] * c.OH * c.OW, group_count = (c.cbo + kDirectBlocks - 1) / kDirectBlocks;
  const int64_t wanted = 2 * std::max(1, pd::parallel_threads());
  const int64_t bands = std::clamp<int64_t>(wanted / group_count, 1, pixels);
  const int64_t band = (pixels + bands - 1) / bands;
  cpu::parallel_for(group_count * bands, band * ws[1] * ws[2] * ws[3] * kDirectBlocks * block, [&](int64_t i) {
    const int64_t b = i % bands, g = i / bands;
    blocked_direct_rows_avx512(c, g, b * band, std::min(pixels, (b + 1) * band));
  });
  return true;
}

}  // namespace pd::kernels::reference
