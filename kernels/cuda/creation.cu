// Creation ops on CUDA: full, zeros, ones, arange. They run where pd::default_place() says (a
// DefaultPlaceGuard, e.g. set by a GPU program's executor). Values are converted to T on the host with
// the reference's pd::convert and written as bit patterns, so every dtype fills exactly as on the CPU.
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cuda/cuda_common.cuh"

namespace pd::kernels::cuda {
namespace {

// The fill is of raw words of T's size: one kernel per width serves every type of that width.
template <typename W>
__global__ void fill_kernel(W* __restrict__ out, W bits, int64_t n) {
  PD_GRID_STRIDE(i, n) out[i] = bits;
}

template <typename T>
void fill_with(const KernelContext& ctx, Tensor& out, T value) {
  const int64_t n = out.numel();
  if (n == 0) return;
  using W = std::conditional_t<sizeof(T) == 1, uint8_t,
                               std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  static_assert(sizeof(W) == sizeof(T));
  W bits;
  std::memcpy(&bits, &value, sizeof(T));
  fill_kernel<W><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(static_cast<W*>(out.raw_data()), bits, n);
  PD_CUDA_CHECK_LAUNCH("fill");
}

// pd::convert from double on the device: integers truncate toward zero and saturate (NaN -> 0); the
// 16-bit types round through float, as on the host.
template <typename D>
__device__ __forceinline__ D from_double(double v) {
  if constexpr (std::is_same_v<D, __half> || std::is_same_v<D, __nv_bfloat16>) {
    return store_as<D>(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<D>) {
    if (!(v == v)) return D(0);
    if (v <= static_cast<double>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(v);
  } else {
    return static_cast<D>(v);
  }
}

// start + i * step (the shape rule checked step != 0) rather than repeated addition, as the reference: no accumulated rounding error.
template <typename D>
__global__ void arange_kernel(D* __restrict__ out, double start, double step, int64_t n) {
  PD_GRID_STRIDE(i, n) out[i] = from_double<D>(start + static_cast<double>(i) * step);
}

}  // namespace

template <typename T>
void full(const KernelContext& ctx, const std::vector<int64_t>& shape, double value, DType dtype, Tensor& out) {
  fill_with<T>(ctx, out, convert<T>(value));
}

template <typename T>
void zeros(const KernelContext& ctx, const std::vector<int64_t>& shape, DType dtype, Tensor& out) {
  fill_with<T>(ctx, out, convert<T>(0.0));
}

template <typename T>
void ones(const KernelContext& ctx, const std::vector<int64_t>& shape, DType dtype, Tensor& out) {
  fill_with<T>(ctx, out, convert<T>(1.0));
}

template <typename T>
void arange(const KernelContext& ctx, double start, double end, double step, DType dtype, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  arange_kernel<dev_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(out), start, step, n);
  PD_CUDA_CHECK_LAUNCH("arange");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(full, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(zeros, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(ones, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(arange, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
