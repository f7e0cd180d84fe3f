// Warp and block reductions shared by the CUDA reduction, softmax and loss kernels.
//
// A reduction state S combines with an associative `combine(a, b)`; for the value types warp shuffles
// are the hardware ones, for a struct state (argmax's value + index) an overload of shfl_down.
#pragma once
#include <limits>
#include <type_traits>

#include "cuda/cuda_common.cuh"

namespace pd::kernels::cuda {

inline constexpr unsigned kFullMask = 0xffffffffu;

template <typename S>
__device__ __forceinline__ S shfl_down(S v, int offset) {
  return __shfl_down_sync(kFullMask, v, offset);
}
template <typename S>
__device__ __forceinline__ S shfl_xor(S v, int mask) {
  return __shfl_xor_sync(kFullMask, v, mask);
}

// Lane 0 ends with the combination of all 32 lanes' states (every lane must call it).
template <typename S, typename Combine>
__device__ __forceinline__ S warp_reduce(S s, Combine combine) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) s = combine(s, shfl_down(s, offset));
  return s;
}

// Every lane ends with the combination of all 32 lanes' values.
template <typename S, typename Combine>
__device__ __forceinline__ S warp_allreduce(S s, Combine combine) {
#pragma unroll
  for (int mask = 16; mask > 0; mask >>= 1) s = combine(s, shfl_xor(s, mask));
  return s;
}

// Every thread of a 1-D block (blockDim.x a multiple of 32, at most 1024) ends with the combination of
// all threads' states. `shared` holds at least 32 states; the call is a block-wide barrier, and it may
// be called again with the same buffer.
template <typename S, typename Combine>
__device__ __forceinline__ S block_allreduce(S s, Combine combine, S* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  s = warp_reduce(s, combine);
  __syncthreads();  // a previous call's readers are done with `shared`
  if (lane == 0) shared[warp] = s;
  __syncthreads();
  S r = shared[0];
  for (int w = 1; w < nwarps; ++w) r = combine(r, shared[w]);
  return r;
}

// v != v rather than isnan: an op named like a math function would hide it in this namespace.
template <typename A>
__device__ __forceinline__ bool is_nan_val(A v) {
  if constexpr (std::is_floating_point_v<A>) return v != v;
  else return false;
}

}  // namespace pd::kernels::cuda
