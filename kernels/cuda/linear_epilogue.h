// linear's bias (and relu) in cuBLASLt's epilogue: one matmul kernel writes act(x W^T + b), rather
// than a GEMM and a second pass over the output.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_common.cuh"

namespace pd::kernels::cuda {

// Row-major out[M, N] = x[M, K] weight[N, K]^T + bias[N], then relu when asked, all of `type` (f32
// computes in true f32, the 16-bit types accumulate in f32). Returns false, having queued nothing,
// where cuBLASLt has no algorithm for it; the caller then runs its GEMM and its own bias pass.
bool linear_bias_epilogue(const KernelContext& ctx, cudaDataType_t type, int64_t M, int64_t N, int64_t K, const void* x,
                          const void* weight, const void* bias, bool relu, void* out);

}  // namespace pd::kernels::cuda
