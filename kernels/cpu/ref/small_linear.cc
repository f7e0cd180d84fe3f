// small_linear: when a linear takes the small-GEMM path, and its transposed weight; linear_epilogue
// across threads (small_linear.h).
#include "cpu/ref/small_linear.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/common/widest.h"
#include "pd/core/packed_weights.h"

namespace pd::kernels::reference {
namespace {

// Products up to this many multiply-adds run here, on one thread: [50, 64] x [64, 192] (a ViT's QKV
// projection at batch 1) is 0.6M. Beyond it oneDNN's two threads take over.
constexpr int64_t kMaxMacs = int64_t{1} << 20;

using Transposed = std::vector<float>;

bool vector_activation(Activation act) {
  return act == Activation::none || act == Activation::relu || act == Activation::gelu;
}

void transpose_into(const Tensor& weight, Transposed& wt) {
  const int64_t N = weight.shape()[0], K = weight.shape()[1];
  const float* w = weight.data<float>();
  wt.resize(static_cast<size_t>(N * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) wt[static_cast<size_t>(k * N + n)] = w[n * K + k];
}

}  // namespace

bool small_linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                  Activation act, Tensor& out) {
  const auto kernel = cpu::widest<void (*)(const SmallLinear&)>(nullptr, small_linear_avx2, small_linear_avx512);
  if (kernel == nullptr || x.dtype() != DType::f32 || !vector_activation(act)) return false;
  const int64_t N = weight.shape()[0], K = weight.shape()[1];
  if (N == 0 || N % 16 != 0 || K == 0) return false;
  const int64_t M = out.numel() / N;
  if (M < 2 || M * N * K > kMaxMacs) return false;  // one row: the GEMV of the reference linear
  SmallLinear c;
  std::shared_ptr<void> kept;
  Transposed local;
  const Transposed* wt = nullptr;
  if (ctx.packed != nullptr) {
    PackedKey key("small_linear:wt");
    key.add(weight.shape());
    if (key.add_constant(*ctx.packed, weight)) {
      kept = ctx.packed->find(key.str());
      if (!kept) {
        auto made = std::make_shared<Transposed>();
        transpose_into(weight, *made);
        ctx.packed->store(key.str(), made);
        kept = made;
      }
      wt = static_cast<const Transposed*>(kept.get());
    }
  }
  if (wt == nullptr) {
    transpose_into(weight, local);
    wt = &local;
  }
  c.x = x.data<float>();
  c.wt = wt->data();
  c.bias = bias.defined() ? bias.data<float>() : nullptr;
  c.residual = residual.defined() ? residual.data<float>() : nullptr;
  c.out = out.data<float>();
  c.M = M, c.N = N, c.K = K, c.act = act;
  kernel(c);
  return true;
}

namespace {

using Epilogue = void (*)(const SmallLinear&, int64_t, int64_t);
Epilogue epilogue_kernel() { return cpu::widest<Epilogue>(nullptr, linear_epilogue_avx2, linear_epilogue_avx512); }

}  // namespace

bool linear_epilogue_runs(Activation act) { return epilogue_kernel() != nullptr && vector_activation(act); }

void linear_epilogue(const Tensor& residual, Activation act, Tensor& out) {
  const Epilogue kernel = epilogue_kernel();
  SmallLinear c;
  c.residual = residual.defined() ? residual.data<float>() : nullptr;
  c.out = out.data<float>();
  c.N = out.shape().back();
  c.M = c.N == 0 ? 0 : out.numel() / c.N;
  c.act = act;
  constexpr int64_t kRows = 16;
  cpu::parallel_for((c.M + kRows - 1) / kRows, kRows * c.N * 4, [&](int64_t b) {
    kernel(c, b * kRows, std::min(c.M, (b + 1) * kRows));
  });
}

}  // namespace pd::kernels::reference
