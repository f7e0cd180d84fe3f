// weight_only_linear on CUDA (f32), with the semantics of kernels/cpu/ref/weight_only.cc:
// y = activation(x @ (float(weight) * weight_scale[o])^T + bias), the i8 weight widened to f32 inside the
// kernel as it is read, so memory holds and the kernel reads 1 byte per weight (the point of weight-only
// quantization: small-batch inference is bound by reading the weight). Sums in f32 as the reference's
// GEMM, in another order (the CUDA tests' f32 tolerance).
//  - Few rows (up to kFewRows, LLM decoding): a warp per output channel reads its weight row once,
//    coalesced along k, with every row of x beside it, and reduces across the warp by shuffles.
//  - More rows: a tiled GEMM, 16 x 16 threads per 16-row x 16-output tile, slices of x and of the widened
//    weight staged through shared memory.
#include "cuda/quant_common.cuh"

namespace pd::kernels::cuda {
namespace {

constexpr int kFewRows = 8;
constexpr int kWarpsPerBlock = 8;
constexpr int kTile = 16;
constexpr int64_t kMaxRowBlocks = 65535;

__device__ __forceinline__ float finish(float y, const float* __restrict__ bias, int64_t o, Activation act, float alpha) {
  return activate(act, bias ? __fadd_rn(y, bias[o]) : y, alpha);
}

__global__ void weight_only_rows_kernel(const float* __restrict__ x, const int8_t* __restrict__ w, const float* __restrict__ scale,
                                        bool per_channel, const float* __restrict__ bias, Activation act, float alpha, int64_t M,
                                        int64_t O, int64_t K, float* __restrict__ out) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; o < O; o += warps) {
    const float s = scale[per_channel ? o : 0];
    const int8_t* wr = w + o * K;
    float acc[kFewRows] = {};
    for (int64_t k = lane; k < K; k += 32) {
      const float wv = __fmul_rn(static_cast<float>(wr[k]), s);  // the reference's widened tile value
#pragma unroll
      for (int m = 0; m < kFewRows; ++m)
        if (m < M) acc[m] = __fmaf_rn(x[m * K + k], wv, acc[m]);
    }
#pragma unroll
    for (int m = 0; m < kFewRows; ++m) {
      float v = acc[m];
      for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
      if (lane == 0 && m < M) out[m * O + o] = finish(v, bias, o, act, alpha);
    }
  }
}

__global__ void weight_only_tiled_kernel(const float* __restrict__ x, const int8_t* __restrict__ w, const float* __restrict__ scale,
                                         bool per_channel, const float* __restrict__ bias, Activation act, float alpha, int64_t M,
                                         int64_t O, int64_t K, float* __restrict__ out) {
  __shared__ float xs[kTile][kTile + 1];  // [row][k]
  __shared__ float ws[kTile][kTile + 1];  // [output][k], widened and scaled
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * kTile, o = o0 + tx, wo = o0 + ty;
  const float ws_scale = wo < O ? scale[per_channel ? wo : 0] : 0.0f;
  const int64_t row_blocks = (M + kTile - 1) / kTile;
  for (int64_t rb = blockIdx.y; rb < row_blocks; rb += gridDim.y) {
    const int64_t r = rb * kTile + ty;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < K; k0 += kTile) {
      const int64_t k = k0 + tx;
      xs[ty][tx] = r < M && k < K ? x[r * K + k] : 0.0f;
      ws[ty][tx] = wo < O && k < K ? __fmul_rn(static_cast<float>(w[wo * K + k]), ws_scale) : 0.0f;
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kTile; ++kk) acc = __fmaf_rn(xs[ty][kk], ws[tx][kk], acc);
      __syncthreads();
    }
    if (r < M && o < O) out[r * O + o] = finish(acc, bias, o, act, alpha);
  }
}

}  // namespace

template <typename T>
void weight_only_linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& weight_scale,
                        const Tensor& bias, const std::string& activation, double alpha, Tensor& out) {
  const Activation act = parse_activation("weight_only_linear", activation);
  if (out.numel() == 0) return;
  const int64_t O = weight.shape()[0], K = weight.shape()[1], M = out.numel() / O;
  const float* b = bias.defined() ? dptr<float>(bias) : nullptr;
  const bool per_channel = weight_scale.dim() == 1;
  const float al = static_cast<float>(alpha);
  cudaStream_t stream = stream_of(ctx);
  if (M <= kFewRows) {
    weight_only_rows_kernel<<<blocks_for(O, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream>>>(
        dptr<float>(x), dptr<int8_t>(weight), dptr<float>(weight_scale), per_channel, b, act, al, M, O, K, dptr<float>(out));
  } else {
    const int64_t row_blocks = (M + kTile - 1) / kTile;
    const dim3 grid(static_cast<unsigned>((O + kTile - 1) / kTile),
                    static_cast<unsigned>(row_blocks < kMaxRowBlocks ? row_blocks : kMaxRowBlocks));
    weight_only_tiled_kernel<<<grid, dim3(kTile, kTile), 0, stream>>>(dptr<float>(x), dptr<int8_t>(weight), dptr<float>(weight_scale),
                                                                      per_channel, b, act, al, M, O, K, dptr<float>(out));
  }
  PD_CUDA_CHECK_LAUNCH("weight_only_linear");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(weight_only_linear, cuda, float)
