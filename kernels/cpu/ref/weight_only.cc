// weight_only_linear: the i8 weight is widened to f32 a block of output channels at a time (scale
// folded in) into a small tile that stays in cache, and every row of x is multiplied by the tile with
// Eigen's GEMM; bias and activation are applied to the block while it is hot. The full f32 weight never
// exists: memory holds 1 byte per weight, and each weight is read once per call, which is what the
// memory-bound small-batch case (LLM decoding) needs.
#include <Eigen/Dense>
#include <algorithm>
#include <vector>

#include "cpu/common/parallel.h"
#include "elementwise_ops.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr int64_t kBlock = 64;  // output channels per tile: 64 x in_features floats (256 KiB at 1024)

}  // namespace

template <typename T>
void weight_only_linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& weight_scale,
                        const Tensor& bias, const std::string& activation, double alpha, Tensor& out) {
  const Activation act = parse_activation("weight_only_linear", activation);
  if (out.numel() == 0) return;
  const int64_t O = weight.shape()[0], K = weight.shape()[1], M = out.numel() / O;
  const Tensor xc = x.contiguous();
  const float* xv = xc.data<float>();
  const int8_t* wv = weight.data<int8_t>();
  const std::vector<float> scales = weight_scale.contiguous().to_vector<float>();
  const float* bv = bias.defined() ? bias.data<float>() : nullptr;
  float* ov = out.data<float>();
  const Eigen::Map<const RowMat> X(xv, M, K);
  const int64_t blocks = (O + kBlock - 1) / kBlock;
  cpu::parallel_for(blocks, M * kBlock * K, [&](int64_t b) {
    const int64_t o0 = b * kBlock, n = std::min(kBlock, O - o0);
    RowMat tile(n, K);
    for (int64_t o = 0; o < n; ++o) {
      const float s = scales.size() == 1 ? scales[0] : scales[static_cast<size_t>(o0 + o)];
      const int8_t* row = wv + (o0 + o) * K;
      float* t = tile.data() + o * K;
      for (int64_t k = 0; k < K; ++k) t[k] = static_cast<float>(row[k]) * s;
    }
    Eigen::Map<RowMat, 0, Eigen::OuterStride<>> Y(ov + o0, M, n, Eigen::OuterStride<>(O));
    Y.noalias() = X * tile.transpose();
    dispatch_activation(act, [&](auto a) {
      constexpr Activation A = decltype(a)::value;
      const float al = static_cast<float>(alpha);
      for (int64_t m = 0; m < M; ++m) {
        float* y = ov + m * O + o0;
        for (int64_t o = 0; o < n; ++o) y[o] = activate<A>(bv ? y[o] + bv[o0 + o] : y[o], al);
      }
    });
  });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(weight_only_linear, reference, float)
