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

// The weight [N, K] as [K, Np], its columns past N zero (Np: N rounded up to the kernel's 16 lanes).
void transpose_into(const Tensor& weight, int64_t Np, Transposed& wt) {
  const int64_t N = weight.shape()[0], K = weight.shape()[1];
  const float* w = weight.data<float>();
  wt.assign(static_cast<size_t>(Np * K), 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) wt[static_cast<size_t>(k * Np + n)] = w[n * K + k];
}

}  // namespace

bool small_linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                  Activation act, Tensor& out) {
  const auto kernel = cpu::widest<void (*)(const SmallLinear&)>(nullptr, small_linear_avx2, small_linear_avx512);
  if (kernel == nullptr || x.dtype() != DType::f32 || !vector_activation(act)) return false;
  const int64_t N = weight.shape()[0], K = weight.shape()[1];
  if (N == 0 || K == 0) return false;
  // Outputs that are not whole vectors (a classifier's 10) are computed as Np into a buffer whose first
  // N columns are kept: oneDNN's matmul on OpenMP's team took 120 us for the residual example's [64, 128]
  // x [128, 10] in the model (its threads asleep after the pool's work), 11 alone; this takes a few.
  const int64_t Np = (N + 15) / 16 * 16;
  if (Np != N && residual.defined()) return false;
  const int64_t M = out.numel() / N;
  if (M < 2 || M * Np * K > kMaxMacs) return false;  // one row: the GEMV of the reference linear
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
        transpose_into(weight, Np, *made);
        ctx.packed->store(key.str(), made);
        kept = made;
      }
      wt = static_cast<const Transposed*>(kept.get());
    }
  }
  if (wt == nullptr) {
    transpose_into(weight, Np, local);
    wt = &local;
  }
  thread_local std::vector<float> padded_bias, padded_out;  // N rounded up to 16: reused across calls
  c.x = x.data<float>();
  c.wt = wt->data();
  c.bias = bias.defined() ? bias.data<float>() : nullptr;
  c.residual = residual.defined() ? residual.data<float>() : nullptr;
  c.out = out.data<float>();
  if (Np != N) {
    padded_bias.assign(static_cast<size_t>(Np), 0.0f);
    if (c.bias) std::copy_n(c.bias, N, padded_bias.begin());
    c.bias = padded_bias.data();
    padded_out.resize(static_cast<size_t>(M * Np));
    c.out = padded_out.data();
  }
  c.M = M, c.N = Np, c.K = K, c.act = act;
  kernel(c);
  float* o = out.data<float>();
  if (Np != N)
    for (int64_t m = 0; m < M; ++m) std::copy_n(padded_out.data() + m * Np, N, o + m * N);
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
