// What the data-movement kernels share (shape_ops.cu, index_ops.cu, index_grad.cu).
//
// Copies do no arithmetic, so they move each element as the raw bits of its size: one kernel per
// element size rather than per dtype (bool and the 16-bit types included), and rows move in units of
// up to 16 bytes where every row length and pointer allows it.
//
// Index tensors (i32 or i64; the op API rejects the other dtypes) are range-checked on the device: a
// kernel finds the first value, in flat order as the reference reads them, outside the valid range,
// and the host copies that position back (one stream synchronisation per call, and a second to fetch
// the bad value when there is one) to raise the reference kernel's pd::Error.
#pragma once
#include <cstring>
#include <limits>
#include <type_traits>

#include "cuda/cuda_common.cuh"

namespace pd::kernels::cuda {

// ---- raw bits ----

template <size_t Bytes> struct bits_of_size;
template <> struct bits_of_size<1> { using type = uint8_t; };
template <> struct bits_of_size<2> { using type = uint16_t; };
template <> struct bits_of_size<4> { using type = uint32_t; };
template <> struct bits_of_size<8> { using type = unsigned long long; };
template <typename T> using bits_t = typename bits_of_size<sizeof(T)>::type;

// T's value as its bits (a fill value converted to T on the host first).
template <typename T>
bits_t<T> to_bits(T v) {
  bits_t<T> b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// The widest unit (16, 8, 4, 2 or 1 bytes) that divides every byte count and address OR-ed into `all`.
inline int widest_unit(uint64_t all) {
  all |= 16;
  return static_cast<int>(all & (~all + 1));  // the lowest set bit
}
inline uint64_t address_bits(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

// Calls fn.template operator()<U>() with the unsigned type of `bytes` (16: uint4).
template <typename Fn>
void visit_unit(int bytes, Fn&& fn) {
  switch (bytes) {
    case 16: return fn.template operator()<uint4>();
    case 8: return fn.template operator()<unsigned long long>();
    case 4: return fn.template operator()<uint32_t>();
    case 2: return fn.template operator()<uint16_t>();
    default: return fn.template operator()<uint8_t>();
  }
}

// ---- index tensors ----

// Calls fn.template operator()<I>() with the element type of `index` (int32_t or int64_t).
template <typename Fn>
void visit_index(const Tensor& index, const char* op, const char* arg, Fn&& fn) {
  if (index.dtype() == DType::i32) return fn.template operator()<int32_t>();
  if (index.dtype() == DType::i64) return fn.template operator()<int64_t>();
  raise(ErrorCode::kDType, "{}: argument '{}' must be an integer tensor (i32 or i64), but received {}", op, arg,
        dtype_name(index.dtype()));
}

template <typename I>
__global__ void first_outside_kernel(const I* __restrict__ idx, int64_t n, int64_t lo, int64_t hi,
                                     unsigned long long* __restrict__ first) {
  PD_GRID_STRIDE(k, n) {
    const int64_t v = static_cast<int64_t>(idx[k]);
    if (v < lo || v >= hi) atomicMin(first, static_cast<unsigned long long>(k));
  }
}

struct OutsideIndex {
  int64_t pos = -1;  // -1: every value is in range
  int64_t value = 0;
};

// The first value of `index` outside [lo, hi).
template <typename I>
OutsideIndex first_outside(const KernelContext& ctx, const Tensor& index, int64_t lo, int64_t hi, const char* op) {
  const int64_t n = index.numel();
  if (n == 0) return {};
  cudaStream_t stream = stream_of(ctx);
  const I* idx = reinterpret_cast<const I*>(index.raw_data());
  auto* flag = static_cast<unsigned long long*>(workspace(ctx, sizeof(unsigned long long)));
  PD_CUDA_CHECK(cudaMemsetAsync(flag, 0xff, sizeof(unsigned long long), stream));
  first_outside_kernel<I><<<blocks_for(n), kThreads, 0, stream>>>(idx, n, lo, hi, flag);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
  unsigned long long pos = 0;
  PD_CUDA_CHECK(cudaMemcpyAsync(&pos, flag, sizeof pos, cudaMemcpyDeviceToHost, stream));
  PD_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (pos == std::numeric_limits<unsigned long long>::max()) return {};
  I value{};
  PD_CUDA_CHECK(cudaMemcpyAsync(&value, idx + pos, sizeof value, cudaMemcpyDeviceToHost, stream));
  PD_CUDA_CHECK(cudaStreamSynchronize(stream));
  return {static_cast<int64_t>(pos), static_cast<int64_t>(value)};
}

// cpu::read_indices (cpu/common/along_axis.h) on the device: every value in [-extent, extent).
template <typename I>
void check_axis_indices(const KernelContext& ctx, const Tensor& index, int64_t extent, int64_t axis, const char* op) {
  const OutsideIndex bad = first_outside<I>(ctx, index, -extent, extent, op);
  PD_CHECK(bad.pos < 0, ErrorCode::kOutOfRange, "{}: index {} is out of range for axis {} of extent {}", op, bad.value,
           axis, extent);
}

// The embedding kernels' read_ids (cpu/ref/embedding.cc): every id in [0, num_embeddings).
template <typename I>
void check_ids(const KernelContext& ctx, const Tensor& x, int64_t num_embeddings, const char* op) {
  const OutsideIndex bad = first_outside<I>(ctx, x, 0, num_embeddings, op);
  PD_CHECK(bad.pos < 0, ErrorCode::kOutOfRange, "{}: argument 'x' value {} at index {} is out of range [0, {})", op,
           bad.value, bad.pos, num_embeddings);
}

// A checked index in [-n, n) as a position in [0, n).
template <typename I>
__device__ __forceinline__ int64_t wrap_index(I v, int64_t n) {
  const int64_t k = static_cast<int64_t>(v);
  return k < 0 ? k + n : k;
}

}  // namespace pd::kernels::cuda
