// Strided gather into contiguous memory (Tensor::clone / contiguous of a device view), by element size.
#include "cuda/device_runtime.h"

namespace pd::kernels::cuda {
namespace {

constexpr int kMaxDims = 12;

struct Geometry {
  int nd;
  int64_t shape[kMaxDims];
  int64_t strides[kMaxDims];
};

template <typename U>
__global__ void gather_kernel(U* __restrict__ dst, const U* __restrict__ src, Geometry g, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    for (int d = g.nd - 1; d >= 0; --d) {
      off += (rem % g.shape[d]) * g.strides[d];
      rem /= g.shape[d];
    }
    dst[i] = src[off];
  }
}

template <typename U>
void gather(cudaStream_t stream, void* dst, const void* src, const Geometry& g, int64_t n) {
  gather_kernel<U><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<U*>(dst), static_cast<const U*>(src), g, n);
  PD_CUDA_CHECK_LAUNCH("strided copy");
}

}  // namespace

void strided_copy(cudaStream_t stream, void* dst, const void* src, size_t elem, const Shape& shape, const Shape& strides) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  // Dense (a contiguous tensor, or one whose only gaps are size-1 dimensions): one copy.
  Geometry g{};
  int64_t expected = 1;
  bool dense = true;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    dense = dense && strides[d] == expected;
    expected *= shape[d];
  }
  if (dense) {
    PD_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * elem, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    PD_CHECK(g.nd < kMaxDims, ErrorCode::kNotImplemented, "copying a view of rank {} on CUDA (at most {})", shape.size(),
             kMaxDims);
    g.shape[g.nd] = shape[d];
    g.strides[g.nd] = strides[d];
    ++g.nd;
  }
  switch (elem) {
    case 1: return gather<uint8_t>(stream, dst, src, g, n);
    case 2: return gather<uint16_t>(stream, dst, src, g, n);
    case 4: return gather<uint32_t>(stream, dst, src, g, n);
    case 8: return gather<uint64_t>(stream, dst, src, g, n);
  }
  raise(ErrorCode::kInternal, "strided copy: element size {} bytes", elem);
}

}  // namespace pd::kernels::cuda
