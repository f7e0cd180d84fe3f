// Small linears (inference at batch 1: a transformer's [50, 64] x [64, 192]) on the register-blocked GEMM
// of small_gemm.h, bias, residual and activation applied while the rows are still in cache. oneDNN's
// matmul spends 6-14 us of setup and threading on such a product where the GEMM needs 2-4 us; above
// kMaxMacs the library's packing and threads win, and the oneDNN kernels go there.
#pragma once
#include <cstdint>

#include "elementwise_ops.h"
#include "pd/core/kernel_context.h"
#include "pd/core/tensor.h"

namespace pd::kernels::reference {

// One call's operands: out[M, N] = act(x[M, K] wt[K, N] + bias[N] + residual[M, N]), rows contiguous,
// N a multiple of 16; bias and residual may be null.
struct SmallLinear {
  const float* x = nullptr;
  const float* wt = nullptr;  // the weight [N, K] transposed
  const float* bias = nullptr;
  const float* residual = nullptr;
  float* out = nullptr;
  int64_t M = 0, N = 0, K = 0;
  Activation act = Activation::none;
};

// Runs linear / fused_linear (f32) here when it is small enough and its activation is one the epilogue
// computes (none, relu, gelu) on a CPU with AVX2 and FMA; false leaves the call to the caller. Outputs
// that are not a multiple of 16 (without a residual) are computed padded and copied out. The
// transposed weight is kept in ctx.packed when the weight is a constant there (an Executor's param),
// else made for this call.
bool small_linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                  Activation act, Tensor& out);

// out = act(out + residual) for a larger linear's output (the GEMM done by the caller, its bias too)
// across threads, on the same vector code: oneDNN's gelu_erf and binary add post-ops cost more than
// this pass (AVX2: 0.25 and 0.10 ms on a [3200, 128] output). Only where linear_epilogue_runs(act): a
// CPU with AVX2 and FMA, and act one of none, relu, gelu; out f32.
bool linear_epilogue_runs(Activation act);
void linear_epilogue(const Tensor& residual, Activation act, Tensor& out);

// A linear of a few rows: out[M, N] = x[M, K] w[N, K]^T + bias[N] (bias may be null), M at most
// kGemvMostRows.
constexpr int64_t kGemvMostRows = 8;
// Whether reference::linear's vector GEMV takes `rows` rows of `in_features` (matmul.cc): up to
// kGemvMostRows in one pass over the weight; up to 32 as chunks of kGemvMostRows over each block of 64
// outputs when that block's weight rows fit in L2 (in_features <= 2048: at [32, 4096] x [4096, 4096]
// the chunks read the weight from memory again, 7.2 ms against oneDNN's 5.0).
constexpr int64_t kGemvColumns = 64;
inline bool gemv_takes(int64_t rows, int64_t in_features) {
  return rows <= kGemvMostRows || (rows <= 32 && kGemvColumns * in_features * 4 <= (int64_t{512} << 10));
}
struct Gemv {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t K = 0, M = 1, N = 0;
};

// The vector forms (isa/linear_rows.cc). gemv_rows computes outputs [n0, n1) of every row, reading each
// weight row once.
void gemv_rows_avx2(const Gemv& g, int64_t n0, int64_t n1);
void gemv_rows_avx512(const Gemv& g, int64_t n0, int64_t n1);
void small_linear_avx2(const SmallLinear& c);
void small_linear_avx512(const SmallLinear& c);
void linear_epilogue_avx2(const SmallLinear& c, int64_t r0, int64_t r1);
void linear_epilogue_avx512(const SmallLinear& c, int64_t r0, int64_t r1);

}  // namespace pd::kernels::reference
