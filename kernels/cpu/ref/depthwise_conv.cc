// depthwise_conv (depthwise_conv.h): the checks, the packed weight, and the rows across threads.
#include "cpu/ref/depthwise_conv.h"

#include "cpu/common/parallel.h"
#include "cpu/ref/block_weights.h"

namespace pd::kernels::reference {

bool depthwise_conv(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                    int64_t groups, Activation act, int64_t block, Tensor& out) {
  using Row = void (*)(const DepthwiseConv&, int64_t, int64_t, int64_t);
  const Row kernel = cpu::widest<Row>(nullptr, depthwise_row_avx2, depthwise_row_avx512);
  if (kernel == nullptr || !vector_blocks_fit(x, act, block) || residual.defined()) return false;
  const Shape& ws = weight.shape();
  const int64_t k = ws[2];
  if (groups == 1 || groups != ws[0] || ws[1] != 1 || (k != 3 && k != 5) || ws[3] != k) return false;
  if (stride[0] != stride[1] || stride[0] < 1 || stride[0] > 2 || dilation != std::vector<int64_t>{1, 1}) return false;
  if (padding[0] < 0 || padding[0] > k / 2 || padding[1] < 0 || padding[1] > k / 2) return false;
  const Shape& xs = x.shape();
  const Shape& os = out.shape();
  const BlockOperands operands(ctx, weight, bias, block, os[1]);
  DepthwiseConv c;
  c.x = x.data<float>();
  c.w = operands.w();
  c.bias = operands.bias();
  c.out = out.data<float>();
  c.k = k, c.cb = xs[1], c.h = xs[2], c.w_in = xs[3], c.oh = os[2], c.ow = os[3];
  c.stride = stride[0], c.pad_h = padding[0], c.pad_w = padding[1], c.act = act;
  // At stride 1, maps at most a vector's lanes wide a block an item, through a padded copy of the block
  // (depthwise_plane; pd-bench, 2 threads, AVX-512: 5x5 on 7x7 x 1152 38 -> 31 us, on 14x14 x 480 39 ->
  // 30, 3x3 on 14x14 x 576 30 -> 25, against a copy of its K input rows for every output row). At
  // stride 2 half the copied rows' columns are read: 10-80% slower there.
  if (c.stride == 1 && c.ow <= block) {
    using Plane = void (*)(const DepthwiseConv&, int64_t, int64_t);
    const Plane plane = cpu::widest<Plane>(nullptr, depthwise_plane_avx2, depthwise_plane_avx512);
    cpu::parallel_for(os[0] * c.cb, c.oh * c.ow * k * k * block, [&](int64_t i) { plane(c, i / c.cb, i % c.cb); });
    return true;
  }
  // One output row of one block an item, a block's rows in a row (each input row serves K of them from
  // L1). Where the images do not divide among the threads (batch 1), each image in a band of rows a
  // thread, every block: the rows the op before wrote on its core, as pointwise_conv splits them
  // (cpu::parallel_for_images).
  const int64_t parts = cpu::image_parts(os[0], c.oh), slots = (c.oh + parts - 1) / parts;  // rows a part at most
  cpu::parallel_for_images(parts, os[0] * parts * c.cb * slots, c.ow * k * k * block, [&](int64_t i) {
    const auto [row0, row1] = cpu::part_range(i / (c.cb * slots) % parts, parts, c.oh);
    const int64_t row = row0 + i % slots, b = i / slots % c.cb, n = i / (parts * c.cb * slots);
    if (row < row1) kernel(c, n, b, row);
  });
  return true;
}

}  // namespace pd::kernels::reference
