// matmul, linear and fused_linear on cuBLAS. Row-major C = A B is computed as the column-major
// C^T = B^T A^T, so no operand is copied or transposed in memory. f32 runs true f32 products
// (CUBLAS_COMPUTE_32F: no TF32, the same numbers the CPU gives); f16/bf16 multiply on tensor cores
// and accumulate in f32; f64 in f64. linear's bias (and relu) run in cuBLASLt's epilogue where it has an
// algorithm (linear_epilogue.cu); other activations and the residual are one pass over the output.
#include <string>
#include <type_traits>

#include "cuda/cuda_common.cuh"
#include "cuda/linear_epilogue.h"
#include "elementwise_ops.h"
#include "pd/kernels/matmul_geometry.h"

namespace pd::kernels::cuda {
namespace {

template <typename T> struct GemmTypes;
template <> struct GemmTypes<float> {
  static constexpr cudaDataType_t data = CUDA_R_32F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  using Scale = float;
};
template <> struct GemmTypes<double> {
  static constexpr cudaDataType_t data = CUDA_R_64F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_64F;
  using Scale = double;
};
template <> struct GemmTypes<::pd::float16> {
  static constexpr cudaDataType_t data = CUDA_R_16F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  using Scale = float;
};
template <> struct GemmTypes<::pd::bfloat16> {
  static constexpr cudaDataType_t data = CUDA_R_16BF;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  using Scale = float;
};

// Row-major out[M, N] = op(x)[M, K] op(y)[K, N] for `batches` matrices `stride_*` elements apart
// (a stride of 0 reuses one matrix: a broadcast batch). ldx / ldy are the row lengths in memory.
template <typename T>
void gemm_rowmajor(const KernelContext& ctx, bool tx, bool ty, int64_t M, int64_t N, int64_t K, const void* x, int64_t ldx,
                   int64_t stride_x, const void* y, int64_t ldy, int64_t stride_y, void* out, int64_t batches) {
  using G = GemmTypes<T>;
  const typename G::Scale one = 1, zero = 0;
  cublasHandle_t h = cublas_handle(ctx);
  // Column-major view: out^T[N, M] = op(y)^T op(x)^T.
  const cublasOperation_t opy = ty ? CUBLAS_OP_T : CUBLAS_OP_N, opx = tx ? CUBLAS_OP_T : CUBLAS_OP_N;
  PD_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, opy, opx, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &one,
                                             y, G::data, static_cast<int>(ldy), stride_y, x, G::data, static_cast<int>(ldx),
                                             stride_x, &zero, out, G::data, static_cast<int>(N), M * N,
                                             static_cast<int>(batches), G::compute, CUBLAS_GEMM_DEFAULT));
}

// out = act(out + bias + residual), bias [cols] and residual [n] each optional; the residual may be out itself.
template <typename D, typename C>
__global__ void bias_activation_kernel(D* out, const D* __restrict__ bias, const D* residual,
                                       int64_t n, int64_t cols, ::pd::Activation act, C alpha) {
  PD_GRID_STRIDE(i, n) {
    C v = load_as<C>(out[i]);
    if (bias) v += load_as<C>(bias[i % cols]);
    if (residual) v += load_as<C>(residual[i]);
    out[i] = store_as<D>(::pd::activate<C>(act, v, alpha));
  }
}

template <typename T>
void linear_into(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                 ::pd::Activation act, double alpha, Tensor& out) {
  const int64_t in_f = weight.shape()[1], out_f = weight.shape()[0];
  const int64_t rows = out_f == 0 ? 0 : out.numel() / out_f;
  if (out.numel() == 0) return;
  // Bias and relu in cuBLASLt's epilogue where it has an algorithm: one kernel instead of two.
  const bool epilogue_fits = bias.defined() && !residual.defined() &&
                             (act == ::pd::Activation::none || act == ::pd::Activation::relu) && in_f > 0;
  if constexpr (!std::is_same_v<T, double>) {
    if (epilogue_fits && linear_bias_epilogue(ctx, GemmTypes<T>::data, rows, out_f, in_f, x.raw_data(), weight.raw_data(),
                                              bias.raw_data(), act == ::pd::Activation::relu, out.raw_data()))
      return;
  }
  if (in_f == 0) {  // an empty contraction: the product is zero
    PD_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, static_cast<size_t>(out.numel()) * sizeof(T), stream_of(ctx)));
  } else {
    // out[rows, out_f] = x[rows, in_f] weight[out_f, in_f]^T
    gemm_rowmajor<T>(ctx, false, true, rows, out_f, in_f, x.raw_data(), in_f, 0, weight.raw_data(), in_f, 0, out.raw_data(), 1);
  }
  if (bias.defined() || residual.defined() || act != ::pd::Activation::none) {
    const int64_t n = out.numel();
    bias_activation_kernel<dev_t<T>, acc_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
        dptr<T>(out), bias.defined() ? dptr<T>(bias) : nullptr, residual.defined() ? dptr<T>(residual) : nullptr, n, out_f,
        act, static_cast<acc_t<T>>(alpha));
    PD_CUDA_CHECK_LAUNCH("linear bias");
  }
}


}  // namespace

template <typename T>
void matmul(const KernelContext& ctx, const Tensor& x, const Tensor& y, bool transpose_x, bool transpose_y, Tensor& out) {
  const MatView xv = split_matrix(x.shape(), true), yv = split_matrix(y.shape(), false);
  if (x.dim() == 1) transpose_x = false;
  if (y.dim() == 1) transpose_y = false;
  const int64_t M = transpose_x ? xv.cols : xv.rows, K = transpose_x ? xv.rows : xv.cols;
  const int64_t N = transpose_y ? yv.rows : yv.cols, Ky = transpose_y ? yv.cols : yv.rows;
  PD_CHECK(K == Ky, ErrorCode::kShape, "matmul: contraction dims of 'x' ({}) and 'y' ({}) must match, got shapes {} and {}",
           K, Ky, shape_str(x.shape()), shape_str(y.shape()));
  const size_t nb = std::max(xv.batch.size(), yv.batch.size());
  Shape ob(nb, 1), xb(nb, 1), yb(nb, 1);
  for (size_t i = 0; i < xv.batch.size(); ++i) xb[nb - xv.batch.size() + i] = xv.batch[i];
  for (size_t i = 0; i < yv.batch.size(); ++i) yb[nb - yv.batch.size() + i] = yv.batch[i];
  for (size_t i = 0; i < nb; ++i) {
    PD_CHECK(xb[i] == yb[i] || xb[i] == 1 || yb[i] == 1, ErrorCode::kShape,
             "matmul: cannot broadcast batch dims of 'x' {} and 'y' {}", shape_str(x.shape()), shape_str(y.shape()));
    ob[i] = xb[i] == 1 ? yb[i] : xb[i];
  }
  const int64_t batches = shape_numel(ob);
  if (out.numel() == 0) return;
  if (K == 0) {
    PD_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, static_cast<size_t>(out.numel()) * sizeof(T), stream_of(ctx)));
    return;
  }
  const int64_t xmat = xv.rows * xv.cols, ymat = yv.rows * yv.cols;
  const int64_t ldx = xv.cols, ldy = yv.cols;
  // One strided-batched call when each operand is either the full batch or a single matrix.
  const bool x_full = xb == ob, y_full = yb == ob;
  const bool x_single = shape_numel(xb) == 1, y_single = shape_numel(yb) == 1;
  const char* xd = static_cast<const char*>(x.raw_data());
  const char* yd = static_cast<const char*>(y.raw_data());
  char* od = static_cast<char*>(out.raw_data());
  if ((x_full || x_single) && (y_full || y_single)) {
    gemm_rowmajor<T>(ctx, transpose_x, transpose_y, M, N, K, xd, ldx, x_single ? 0 : xmat, yd, ldy, y_single ? 0 : ymat, od,
                     batches);
    return;
  }
  // Mixed broadcasting (x [2, 1, ...] with y [1, 3, ...]): one call per output matrix.
  for (int64_t b = 0; b < batches; ++b) {
    int64_t rem = b, xi = 0, yi = 0, accx = 1, accy = 1;
    for (int64_t i = static_cast<int64_t>(nb) - 1; i >= 0; --i) {
      const int64_t c = rem % ob[i];
      rem /= ob[i];
      if (xb[i] != 1) xi += c * accx;
      if (yb[i] != 1) yi += c * accy;
      accx *= xb[i];
      accy *= yb[i];
    }
    gemm_rowmajor<T>(ctx, transpose_x, transpose_y, M, N, K, xd + xi * xmat * sizeof(T), ldx, 0, yd + yi * ymat * sizeof(T), ldy,
                     0, od + b * M * N * sizeof(T), 1);
  }
}

template <typename T>
void linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  linear_into<T>(ctx, x, weight, bias, Tensor(), ::pd::Activation::none, 0.0, out);
}

template <typename T>
void fused_linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                  const std::string& activation, double alpha, Tensor& out) {
  linear_into<T>(ctx, x, weight, bias, residual, ::pd::parse_activation("fused_linear", activation), alpha, out);
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(matmul, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(linear, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(fused_linear, cuda, float, double, ::pd::float16, ::pd::bfloat16)
