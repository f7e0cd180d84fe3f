// stem_conv (stem_conv.h): the checks, the packed weight, and the rows across threads.
#include "cpu/ref/stem_conv.h"

#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/ref/block_weights.h"

namespace pd::kernels::reference {
namespace {

constexpr int64_t kStemMostChannels = 4;  // RGB(A): beyond it oneDNN's blocked kernels have enough to sum

// Where it beats oneDNN (in the model, 2 threads, AVX-512, 4 alternating rounds): MobileNetV2's stem into
// 32 channels with relu6 115-128 -> 85-92 us, MnasNet's with relu 96-102 -> 82-94. Into one block (16
// channels, MobileNetV3's) each broadcast input feeds one multiply-add and oneDNN is faster (pd-bench
// 33 against 45 us); oneDNN's fused silu and hardswish cost less than the vector epilogue's (level to 25%
// slower into 32 channels).
bool stem_takes(Activation act, int64_t out_blocks) {
  return out_blocks >= 2 && (act == Activation::none || act == Activation::relu || act == Activation::relu6);
}

}  // namespace

bool stem_conv(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
               const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
               int64_t groups, Activation act, int64_t block, Tensor& out) {
  using Row = void (*)(const StemConv&, int64_t, int64_t, float*);
  const Row kernel = cpu::widest<Row>(nullptr, stem_row_avx2, stem_row_avx512);
  if (kernel == nullptr || block != cpu::widest<int64_t>(0, 8, 16) || x.dtype() != DType::f32 || x.dim() != 4 ||
      !x.is_contiguous() || x.shape()[1] > kStemMostChannels || groups != 1 || residual.defined() || !stem_takes(act, out.shape()[1]) ||
      dilation != std::vector<int64_t>{1, 1} || padding[0] < 0 || padding[1] < 0)
    return false;
  const Shape& xs = x.shape();
  const Shape& ws = weight.shape();
  const Shape& os = out.shape();
  const BlockOperands operands(ctx, weight, bias, block, os[1]);
  StemConv c;
  c.x = x.data<float>();
  c.w = operands.w();
  c.bias = operands.bias();
  c.out = out.data<float>();
  c.c = xs[1], c.h = xs[2], c.w_in = xs[3], c.kh = ws[2], c.kw = ws[3], c.cbo = os[1], c.oh = os[2], c.ow = os[3];
  c.stride_h = stride[0], c.stride_w = stride[1], c.pad_h = padding[0], c.pad_w = padding[1], c.act = act;
  const int64_t strip = c.c * c.kh * ((c.ow - 1) * c.stride_w + c.kw);
  // One output row of an image an item (every block): the threads share the rows at batch 1, each
  // writing those the next op (depthwise_conv, pointwise_conv) reads on its core (parallel_for_images).
  cpu::parallel_for_images(cpu::image_parts(os[0], c.oh), os[0] * c.oh, c.ow * c.cbo * block * c.c * c.kh * c.kw, [&](int64_t i) {
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(strip));
    kernel(c, i / c.oh, i % c.oh, scratch.data());
  });
  return true;
}

}  // namespace pd::kernels::reference
