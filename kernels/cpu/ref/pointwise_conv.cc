// pointwise_conv (pointwise_conv.h): the checks, the packed weight, and the work split across threads.
#include "cpu/ref/pointwise_conv.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/ref/block_weights.h"

namespace pd::kernels::reference {
namespace {

// Where the kernel beats oneDNN's (pd-bench blocked_conv2d, 1 and 2 threads, AVX-512, Zen 5; ms on one
// thread, this / oneDNN): up to 64 input channels at any size (16 -> 96 at 112x112 0.19 / 0.52, 24 -> 144
// at 56x56 0.10 / 0.26, 64 -> 384 at 14x14 0.046 / 0.046), up to 256 on maps of 28x28 and more (ResNet-50's
// 256 -> 64 at 56x56 0.42 / 0.55, MobileNetV2's 192 -> 32 at 28x28 0.040 / 0.044); with more channels on
// smaller maps oneDNN's packing pays (576 -> 96 at 14x14 0.10 / 0.094, 512 -> 2048 at 7x7 0.83 / 0.49).
// An expansion (outputs at least 4x the inputs) takes it with up to 128 inputs on any map: each tile's
// weights stay in L1 across the pixels (MobileNetV2's 96 -> 576 at 14x14 in the model on 2 threads: 73-80
// us with oneDNN, 59-60 here); a projection of as many inputs into few outputs streams its weights from
// L2 for every tile (576 -> 96 at 14x14: 117 us here, 70 with oneDNN).
constexpr int64_t kMaxPointwiseInputs = 64;
constexpr int64_t kMaxPointwiseInputsLargeMap = 256;
constexpr int64_t kMaxExpansionInputs = 128;
constexpr int64_t kExpansion = 4;
constexpr int64_t kLargeMap = 28 * 28;
// Pixels a work item at most: a few tiles.
constexpr int64_t kPixelsPerItem = 96;

// The pixel runs of a map split across threads: each image one part where the images divide evenly
// among the threads (cpu::parallel_for_images then hands out chunks), else near-equal parts, one a
// thread's band (cpu::image_parts, cpu::part_range: edges on multiples of 4, the kernel's smallest
// whole tile); each part in runs of at most kPixelsPerItem pixels, also multiples of 4.
struct PixelRuns {
  int64_t parts, part, runs, run;  // parts of an image, pixels a part at most, runs a part, pixels a run
  PixelRuns(int64_t images, int64_t hw) {
    parts = cpu::image_parts(images, hw, 4);
    part = 0;
    for (int64_t q = 0; q < parts; ++q) {
      const auto [p0, p1] = cpu::part_range(q, parts, hw, 4);
      part = std::max(part, p1 - p0);
    }
    runs = (part + kPixelsPerItem - 1) / kPixelsPerItem;
    run = round_up4((part + runs - 1) / runs);
  }
  static int64_t round_up4(int64_t v) { return (v + 3) / 4 * 4; }
};

}  // namespace

bool pointwise_conv(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, int64_t groups, Activation act,
                    int64_t block, Tensor& out) {
  using Rows = void (*)(const PointwiseConv&, int64_t, int64_t, int64_t, int64_t);
  const Rows kernel = cpu::widest<Rows>(nullptr, pointwise_rows_avx2, pointwise_rows_avx512);
  if (kernel == nullptr || !vector_blocks_fit(x, act, block) || groups != 1) return false;
  const Shape& ws = weight.shape();
  if (ws[2] != 1 || ws[3] != 1 || stride != std::vector<int64_t>{1, 1} || padding != std::vector<int64_t>{0, 0}) return false;
  const int64_t map = out.shape()[2] * out.shape()[3];
  const bool expansion = ws[1] <= kMaxExpansionInputs && ws[0] >= kExpansion * ws[1];
  if (ws[1] > (map >= kLargeMap ? kMaxPointwiseInputsLargeMap : kMaxPointwiseInputs) && !expansion) return false;
  const Shape& xs = x.shape();
  const Shape& os = out.shape();
  const BlockOperands operands(ctx, weight, bias, block, os[1]);
  PointwiseConv c;
  c.x = x.data<float>();
  c.w = operands.w();
  c.bias = operands.bias();
  c.residual = residual.defined() ? residual.data<float>() : nullptr;
  c.out = out.data<float>();
  c.cin = ws[1], c.cib = xs[1], c.cbo = os[1], c.hw = os[2] * os[3], c.act = act;
  c.group = pointwise_group(c.cbo, block);
  // Items (image, part, group of output blocks, run): at batch 1 a part a thread, the pixels the op
  // before wrote on its core and the next reads there, as depthwise_conv splits its rows
  // (cpu::parallel_for_images); within a part a group's weights stay in L1 across its runs.
  const int64_t out_groups = (c.cbo + c.group - 1) / c.group;
  const PixelRuns split(os[0], c.hw);
  const int64_t runs = split.parts * split.runs, items = os[0] * runs * out_groups;
  cpu::parallel_for_images(split.parts, items, split.run * c.cin * c.group * block, [&](int64_t i) {
    const int64_t r = i % split.runs, g = (i / split.runs) % out_groups, q = i / (split.runs * out_groups) % split.parts;
    const int64_t n = i / (split.runs * out_groups * split.parts);
    const auto [part0, part1] = cpu::part_range(q, split.parts, c.hw, 4);
    const int64_t p0 = part0 + r * split.run, p1 = std::min(part1, p0 + split.run);
    if (p0 < p1) kernel(c, n, g, p0, p1);
  });
  // The residual's lanes past C_out were added in: they hold zeros where our ops made it, but the
  // result's must be zero whatever they held.
  if (residual.defined() && ws[0] % block != 0) {
    float* last = c.out + (c.cbo - 1) * c.hw * block;
    for (int64_t n = 0; n < os[0]; ++n, last += c.cbo * c.hw * block)
      for (int64_t p = 0; p < c.hw; ++p) std::fill(last + p * block + ws[0] % block, last + (p + 1) * block, 0.0f);
  }
  return true;
}

}  // namespace pd::kernels::reference
