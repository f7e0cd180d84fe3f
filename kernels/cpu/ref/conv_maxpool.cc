// fused_conv2d_maxpool: max_pool2d(activation(conv2d(x, weight, bias))).
//
// Fast path (pd/kernels/direct_conv.h: f32, groups 1, unit stride and dilation, few taps and output
// channels; AVX2+FMA, or AVX-512 with registers twice as wide): a direct convolution whose accumulators
// stay in registers over all taps, with bias, activation and the max of the pooling window applied
// before anything is stored. Two layouts, whichever wastes fewer register lanes: by columns
// (conv_maxpool_columns.h: L conv columns x a block of channels, reduced into an L1 pooled-row buffer,
// then pooled across columns) for wide rows, by channels (conv_maxpool_channels.h: L output channels x
// the pixels of one pooling window) for narrow rows. The conv output is never stored. At LeNet's shapes
// oneDNN's GEMM-style kernels spend more on packing and setup than on the few FLOPs, and the separate
// max_pool2d re-reads the conv output.
//
// Everything else (and CPUs without AVX2/FMA) runs the composition: the reference fused_conv2d into a
// temporary, then max_pool2d.

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/ref/conv_maxpool_block.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"
#include "pd/core/packed_weights.h"
#include "pd/kernels/direct_conv.h"
#include "pd/kernels/spatial_arg.h"

namespace pd::kernels::reference {
namespace {

using namespace direct;

int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

// By columns, the output channels go in blocks of CB <= 6 (two units x six channels = 12 accumulators,
// which leaves registers for the two input vectors and the weight broadcast); the last block is padded
// with zero weights, so one CB serves the whole call.
int channel_block(int64_t cout) {
  const int64_t blocks = (cout + kMaxCB - 1) / kMaxCB;
  return static_cast<int>((cout + blocks - 1) / blocks);
}

// Multiply-adds (in L-lane registers, padding lanes included) per pooled row of each layout; the
// cheaper one runs. LeNet: 28 columns x 6 channels go by columns, 10 columns x 16 channels by channels.
bool by_channels(const Geom& g) {
  const int64_t cb = channel_block(g.Co), blocks = (g.Co + cb - 1) / cb;
  const int64_t columns = (g.pkh * g.OWv + 1) / 2 * 2 * g.L * blocks * cb;
  const int64_t cv = (g.Co + g.L - 1) / g.L;
  const int64_t per_block = cv <= 2 ? 4 : 2;  // conv_maxpool_channels.h's kPixels
  const int64_t pixels = (g.pkh * g.pkw + per_block - 1) / per_block * per_block;
  const int64_t channels = g.POW * pixels * cv * g.L;
  return channels < columns;
}

// Weights as [block][ci][kh][kw][cb] (by columns: a tap's cb broadcasts are consecutive floats) or,
// with blocks = 1 and cb = cv * L, as [ci][kh][kw][cv * L] (by channels: a tap's channel vectors).
void pack_weights(const float* w, int64_t cout, int64_t taps, int cb, std::vector<float>& packed) {
  const int64_t blocks = (cout + cb - 1) / cb;
  packed.assign(static_cast<size_t>(blocks * taps * cb), 0.0f);
  for (int64_t co = 0; co < cout; ++co)
    for (int64_t t = 0; t < taps; ++t) packed[((co / cb) * taps + t) * cb + co % cb] = w[co * taps + t];
}

// The packed weight; a param of an Executor in inference mode is packed once and kept
// (pd/core/packed_weights.h): LeNet's second conv packs 2400 floats on every call otherwise.
std::shared_ptr<const std::vector<float>> packed_weights(PackedWeights* cache, const Tensor& weight, int64_t cout,
                                                          int64_t taps, int cb) {
  const bool keep = cache && cache->is_constant(weight);
  std::string key;
  if (keep) {
    key = fmt::format("direct:{}:{}:{}:{}:{}", static_cast<const void*>(weight.storage().get()), weight.offset(), cout,
                      taps, cb);
    if (std::shared_ptr<void> hit = cache->find(key)) return std::static_pointer_cast<const std::vector<float>>(hit);
  }
  auto packed = std::make_shared<std::vector<float>>();
  pack_weights(weight.data<float>(), cout, taps, cb, *packed);
  if (keep) cache->store(key, packed);
  return packed;
}

void pack_bias(const Tensor& bias, int64_t cout, int cb, std::vector<float>& packed) {
  packed.assign(static_cast<size_t>((cout + cb - 1) / cb * cb), 0.0f);
  if (bias.defined()) std::copy(bias.data<float>(), bias.data<float>() + cout, packed.begin());
}

// Rows of pooled output per parallel item: whole images when the batch alone feeds every thread,
// otherwise the rows of an image are split so that a single image still uses them, into items that
// load the busiest thread least (5 rows on 2 threads: 3 + 2, not 2 + 2 + 1 with 4 rows on one thread).
// Ties go to fewer, larger items.
int64_t rows_per_item(const Geom& g, int threads_available) {
  const int64_t threads = std::max(threads_available, 1);
  if (g.N >= 2 * threads) return g.POH;
  int64_t best = g.POH, best_cost = -1;
  for (int64_t rows = g.POH; rows >= 1; --rows) {
    const int64_t items = g.N * ((g.POH + rows - 1) / rows);
    const int64_t cost = (items + threads - 1) / threads * rows;  // rows on the busiest thread
    if (best_cost < 0 || cost < best_cost) best = rows, best_cost = cost;
  }
  return best;
}

void run_direct(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& padding,
                Activation act, double alpha, const std::vector<int64_t>& pool_kernel_size,
                const std::vector<int64_t>& pool_stride, const std::vector<int64_t>& pool_padding, Tensor& out) {
  const Shape &xs = x.shape(), &ws = weight.shape(), &os = out.shape();
  Geom g{};
  g.L = direct_lanes();
  g.N = xs[0], g.C = xs[1], g.H = xs[2], g.W = xs[3];
  g.Co = ws[0], g.KH = ws[2], g.KW = ws[3];
  g.ph = spatial_arg(padding, 0, 0), g.pw = spatial_arg(padding, 1, 0);
  g.OH = conv_out(g.H, g.KH, 1, g.ph, 1), g.OW = conv_out(g.W, g.KW, 1, g.pw, 1);
  g.OWv = (g.OW + g.L - 1) / g.L;
  g.Wp = g.OWv * g.L + g.KW - 1;
  g.pkh = spatial_arg(pool_kernel_size, 0, 1), g.pkw = spatial_arg(pool_kernel_size, 1, 1);
  g.psh = spatial_arg(pool_stride, 0, g.pkh), g.psw = spatial_arg(pool_stride, 1, g.pkw);
  g.pph = spatial_arg(pool_padding, 0, 0), g.ppw = spatial_arg(pool_padding, 1, 0);
  g.POH = os[2], g.POW = os[3];
  g.act = act;
  g.alpha = static_cast<float>(alpha);
  if (out.numel() == 0) return;
  const bool channels = by_channels(g);
  if (channels) {
    g.cv = static_cast<int>((g.Co + g.L - 1) / g.L);
    g.blocks = 1;
  } else {
    g.cb = channel_block(g.Co);
    g.blocks = (g.Co + g.cb - 1) / g.cb;
  }
  const int pack = channels ? g.cv * g.L : g.cb;
  const auto wpack = packed_weights(ctx.packed, weight, g.Co, g.C * g.KH * g.KW, pack);
  std::vector<float> bpack;
  pack_bias(bias, g.Co, pack, bpack);
  g.x = x.data<float>(), g.w = wpack->data(), g.b = bpack.data(), g.out = out.data<float>();

  // Below about 1 MFLOP one thread is faster: waking the others costs more than they take off (LeNet's
  // second conv at batch 1: 5.5 us on one thread, 8-12 us on two).
  const bool one_thread = g.N * g.Co * g.C * g.KH * g.KW * g.OH * g.OW < (int64_t{1} << 19);
  const int64_t rows = one_thread ? g.POH : rows_per_item(g, ctx.threads), per_image = (g.POH + rows - 1) / rows;
  const auto item = [&](int64_t i) {
    const int64_t n = i / per_image, p0 = i % per_image * rows;
    const int64_t p1 = std::min(p0 + rows, g.POH);
    g.L == 16 ? pooled_rows_avx512(g, n, p0, p1) : pooled_rows_avx2(g, n, p0, p1);
  };
  if (one_thread) {
    for (int64_t i = 0; i < g.N * per_image; ++i) item(i);
    return;
  }
  const int64_t work = g.Co * g.C * g.KH * g.KW * g.OW * rows * g.psh;  // multiply-adds per item, about
  cpu::parallel_for(g.N * per_image, work / 4, item);
}

}  // namespace

namespace direct {

int direct_lanes() { return cpu_has_avx512() ? 16 : 8; }

bool direct_conv_preferred(const Shape& x, const Shape& weight, const std::vector<int64_t>& padding) {
  Geom g{};
  g.L = direct_lanes();
  g.Co = weight[0];
  g.OH = conv_out(x[2], weight[2], 1, spatial_arg(padding, 0, 0), 1), g.OW = conv_out(x[3], weight[3], 1, spatial_arg(padding, 1, 0), 1);
  g.OWv = (g.OW + g.L - 1) / g.L;
  g.pkh = g.pkw = 1, g.POW = g.OW;
  const int64_t flops = 2 * x[0] * g.Co * g.OH * g.OW * x[1] * weight[2] * weight[3];
  if (flops < (int64_t{1} << 20)) return true;
  if (by_channels(g)) return false;
  // By columns: one register block of channels always; on AVX-512 also several, where the rows fill
  // three quarters of the 16-column registers (batch 64, 2 threads: stems 1 -> 32 at 28x28 0.22 against
  // 0.54 ms, 3 -> 32 at 32x32 0.42 against 0.89, 8 -> 32 at 28x28 0.76 against 0.99; but LeNet's
  // second conv, 10 columns wide, 0.25 against 0.12).
  return g.Co <= kMaxCB || (g.L == 16 && 4 * g.OW >= 3 * g.OWv * g.L);
}

// Padded-input rows [r0, r1) of image n (row r of the conv's zero-padded input), each Wp long so that
// every unit's L-wide loads stay inside.
void fill_padded(const Geom& g, int64_t n, int64_t r0, int64_t r1, std::vector<float>& xp) {
  const int64_t rows = r1 - r0;
  xp.assign(static_cast<size_t>(g.C * rows * g.Wp), 0.0f);
  for (int64_t ci = 0; ci < g.C; ++ci)
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ih = r - g.ph;
      if (ih < 0 || ih >= g.H) continue;
      const float* src = g.x + ((n * g.C + ci) * g.H + ih) * g.W;
      std::copy(src, src + g.W, xp.data() + (ci * rows + (r - r0)) * g.Wp + g.pw);
    }
}


}  // namespace direct

template <typename T>
void fused_conv2d_maxpool(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const std::vector<int64_t>& stride,
                          const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups,
                          const std::string& activation, double alpha, const std::vector<int64_t>& pool_kernel_size,
                          const std::vector<int64_t>& pool_stride, const std::vector<int64_t>& pool_padding,
                          bool pool_ceil_mode, Tensor& out) {
  const auto act = parse_activation("fused_conv2d_maxpool", activation);
  const Shape &xs = x.shape(), &ws = weight.shape();
  if (direct_conv_fits(x.dtype(), xs[1], ws[2], ws[3], ws[0], stride, dilation, groups) && cpu_has_avx2_fma()) {
    run_direct(ctx, x, weight, bias, padding, act, alpha, pool_kernel_size, pool_stride, pool_padding, out);
    return;
  }
  const Shape conv_shape = {xs[0], ws[0],
                            conv_out(xs[2], ws[2], spatial_arg(stride, 0, 1), spatial_arg(padding, 0, 0), spatial_arg(dilation, 0, 1)),
                            conv_out(xs[3], ws[3], spatial_arg(stride, 1, 1), spatial_arg(padding, 1, 0), spatial_arg(dilation, 1, 1))};
  Tensor conv = Tensor::empty(conv_shape, x.dtype());
  fused_conv2d<T>(ctx, x, weight, bias, Tensor(), stride, padding, dilation, groups, activation, alpha, conv);
  max_pool2d<T>(ctx, conv, pool_kernel_size, pool_stride, pool_padding, pool_ceil_mode, out);
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(fused_conv2d_maxpool, reference, float, double)
