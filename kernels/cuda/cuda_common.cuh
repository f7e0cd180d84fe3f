// What every CUDA kernel file includes: error checking, the stream and library handles a kernel gets
// from its KernelContext, the device spelling of the element types, and the launch geometry.
//
//   template <typename T>
//   void relu_grad(const KernelContext& ctx, const Tensor& grad, const Tensor& x, Tensor& out) {
//     const int64_t n = out.numel();
//     if (n == 0) return;
//     my_kernel<<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(grad), ..., n);
//     PD_CUDA_CHECK_LAUNCH("relu_grad");
//   }
//   PD_INSTANTIATE_KERNELS(relu_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
//
// Kernels never synchronise the stream unless a result must reach the host (an index check that
// raises pd::Error); tensors' memory comes from the caching device allocator (device_allocator.cc),
// which is stream-ordered, so a freed block may be reused by the next kernel on the same stream.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>

#include "kernels.h"
#include "pd/core/error.h"

namespace pd::kernels::cuda {

// Throw pd::Error (kInternal; kOutOfMemory-like text for allocation failures) naming the call and
// the CUDA error string.
void check_cuda(cudaError_t err, const char* what, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* what, const char* file, int line);
void check_cudnn(cudnnStatus_t status, const char* what, const char* file, int line);
#define PD_CUDA_CHECK(expr) ::pd::kernels::cuda::check_cuda((expr), #expr, __FILE__, __LINE__)
#define PD_CUBLAS_CHECK(expr) ::pd::kernels::cuda::check_cublas((expr), #expr, __FILE__, __LINE__)
#define PD_CUDNN_CHECK(expr) ::pd::kernels::cuda::check_cudnn((expr), #expr, __FILE__, __LINE__)
// After a <<<>>> launch: reports a bad launch configuration by the op's name.
#define PD_CUDA_CHECK_LAUNCH(op) ::pd::kernels::cuda::check_cuda(cudaGetLastError(), op " kernel launch", __FILE__, __LINE__)

inline cudaStream_t stream_of(const KernelContext& ctx) { return static_cast<cudaStream_t>(ctx.stream); }
// Loads cuBLAS (cublas_library.cu) if it is not yet; a clear pd::Error when it cannot be.
void load_cublas();
// Per device, bound to the context's stream; created on first use and kept for the process.
cublasHandle_t cublas_handle(const KernelContext& ctx);
cublasLtHandle_t cublaslt_handle(const KernelContext& ctx);
cudnnHandle_t cudnn_handle(const KernelContext& ctx);
// A scratch buffer of at least `bytes` on the context's device (cuBLASLt / cuDNN workspaces), valid
// until the next call on the same stream.
void* workspace(const KernelContext& ctx, size_t bytes);

// pd::float16 / pd::bfloat16 are bit-compatible with CUDA's __half / __nv_bfloat16.
template <typename T> struct device_type { using type = T; };
template <> struct device_type<::pd::float16> { using type = __half; };
template <> struct device_type<::pd::bfloat16> { using type = __nv_bfloat16; };
template <typename T> using dev_t = typename device_type<T>::type;

// The type arithmetic runs in: float for the 16-bit types, the type itself otherwise.
template <typename T> struct acc_type { using type = T; };
template <> struct acc_type<::pd::float16> { using type = float; };
template <> struct acc_type<::pd::bfloat16> { using type = float; };
template <typename T> using acc_t = typename acc_type<T>::type;

template <typename T>
dev_t<T>* dptr(const Tensor& t) { return reinterpret_cast<dev_t<T>*>(t.raw_data()); }

template <typename A, typename D>
__device__ __forceinline__ A load_as(D v) {
  if constexpr (std::is_same_v<D, __half>) return static_cast<A>(__half2float(v));
  else if constexpr (std::is_same_v<D, __nv_bfloat16>) return static_cast<A>(__bfloat162float(v));
  else return static_cast<A>(v);
}
template <typename D, typename A>
__device__ __forceinline__ D store_as(A v) {
  if constexpr (std::is_same_v<D, __half>) return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<D, __nv_bfloat16>) return __float2bfloat16_rn(static_cast<float>(v));
  else return static_cast<D>(v);
}

// Grid-stride launches: 64-bit element indices, at most kMaxBlocks blocks of kThreads.
inline constexpr int kThreads = 256;
inline constexpr int64_t kMaxBlocks = 65535LL * 8;
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}
#define PD_GRID_STRIDE(i, n)                                                                       \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);          \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

}  // namespace pd::kernels::cuda
