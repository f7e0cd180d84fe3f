// quantized_linear on CUDA, with the semantics of kernels/cpu/ref/quantized.cc: for each row r of x
// (u8 / i8, every dim but the last) and output o, sum_k (x[r, k] - x_zero_point) * weight[o, k] exact in
// int32, then quant_common.cuh's epilogue (per-output or per-tensor weight scale, bias, activation, f32 or
// requantized u8 / i8), in the CPU's float arithmetic so that int8 results match it bit for bit.
//
// A tiled int32 GEMM: a block of 16 x 16 threads computes a 16-row x 16-output tile, staging 16-wide
// slices of x (minus its zero point) and of the weight through shared memory, so each value is read from
// global memory once per tile instead of once per product. The sums are exact, so their order is free.
// Rows beyond the grid's y extent are taken by the same blocks in turn (the loop is uniform per block,
// so the barriers inside it are safe).
#include "cuda/quant_common.cuh"

namespace pd::kernels::cuda {
namespace {

constexpr int kTile = 16;
constexpr int64_t kMaxRowBlocks = 65535;

template <typename T>
__global__ void qlinear_kernel(const T* __restrict__ x, const T* __restrict__ x_zero_point, const int8_t* __restrict__ w, int64_t M,
                               int64_t O, int64_t K, QuantEpilogue e, void* __restrict__ out) {
  __shared__ int32_t xs[kTile][kTile + 1];  // [row][k]
  __shared__ int32_t ws[kTile][kTile + 1];  // [output][k]
  const int32_t zp = static_cast<int32_t>(*x_zero_point);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * kTile, o = o0 + tx;
  const int64_t row_blocks = (M + kTile - 1) / kTile;
  for (int64_t rb = blockIdx.y; rb < row_blocks; rb += gridDim.y) {
    const int64_t r0 = rb * kTile, r = r0 + ty;
    int32_t acc = 0;
    for (int64_t k0 = 0; k0 < K; k0 += kTile) {
      const int64_t k = k0 + tx;
      xs[ty][tx] = r < M && k < K ? static_cast<int32_t>(x[r * K + k]) - zp : 0;
      ws[ty][tx] = o0 + ty < O && k < K ? static_cast<int32_t>(w[(o0 + ty) * K + k]) : 0;
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kTile; ++kk) acc += xs[ty][kk] * ws[tx][kk];
      __syncthreads();
    }
    if (r < M && o < O) epilogue_store(e, acc, o, r * O + o, out);
  }
}

}  // namespace

template <typename T>
void quantized_linear(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                      const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                      const Tensor& out_zero_point, const std::string& activation, double alpha, DType out_dtype,
                      Tensor& out) {
  const Activation act = parse_activation("quantized_linear", activation);
  if (out.numel() == 0) return;
  const int64_t O = weight.shape()[0], K = weight.shape()[1], M = out.numel() / O;
  const Tensor none;
  const QuantEpilogue e = make_quant_epilogue(x_scale, weight_scale, bias, none, none, none, out_scale, out_zero_point, act, alpha,
                                              out_dtype, direct_linear_on_cpu(act, M, O, K));
  const int64_t row_blocks = (M + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned>((O + kTile - 1) / kTile), static_cast<unsigned>(row_blocks < kMaxRowBlocks ? row_blocks : kMaxRowBlocks));
  qlinear_kernel<T><<<grid, dim3(kTile, kTile), 0, stream_of(ctx)>>>(dptr<T>(x), dptr<T>(x_zero_point), dptr<int8_t>(weight), M, O, K,
                                                                     e, out.raw_data());
  PD_CUDA_CHECK_LAUNCH("quantized_linear");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(quantized_linear, cuda, uint8_t, int8_t)
