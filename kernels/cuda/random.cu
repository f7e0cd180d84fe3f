// uniform and normal on CUDA, value for value the reference's (kernels/cpu/ref/random.cc) for the same
// seed: the same std::mt19937_64 stream (run by one block, mt19937_block.cuh) and the same conversions
// in double. Draw i of the stream gives uniform's element i; normal's Box-Muller pairs take draws 2j and
// 2j + 1 into elements 2j and 2j + 1, and since a round has an even number of draws (312), a pair never
// straddles two rounds. One block bounds the speed (about a round per microsecond or two): these fill
// initial weights and test inputs, not a training step's data.
#include <cmath>
#include <cstdint>

#include "cuda/cuda_common.cuh"
#include "cuda/mt19937_block.cuh"

namespace pd::kernels::cuda {
namespace {

template <typename T>
__global__ void uniform_kernel(T* __restrict__ out, int64_t n, unsigned long long seed, double min, double max) {
  __shared__ unsigned long long st[kMtN];
  const int t = threadIdx.x;
  mt_seed(st, seed);
  for (int64_t c0 = 0; c0 < n; c0 += kMtN) {
    mt_twist(st);
    if (t < kMtN && c0 + t < n) {
      T v = static_cast<T>(min + (max - min) * mt_unit_double(st[t]));
      // Rounding can land on max itself; keep the interval half-open.
      while (min < max && static_cast<double>(v) >= max) v = ::nextafter(v, static_cast<T>(-INFINITY));
      out[c0 + t] = v;
    }
  }
}

template <typename T>
__global__ void normal_kernel(T* __restrict__ out, int64_t n, unsigned long long seed, double mean, double stddev) {
  __shared__ unsigned long long st[kMtN];
  __shared__ double u[kMtN];
  const int t = threadIdx.x;
  const double two_pi = 6.283185307179586476925;
  mt_seed(st, seed);
  for (int64_t c0 = 0; c0 < n; c0 += kMtN) {
    mt_twist(st);
    if (t < kMtN) u[t] = mt_unit_double(st[t]);
    __syncthreads();
    const int64_t i = c0 + 2 * t;  // this thread's pair
    if (2 * t < kMtN && i < n) {
      const double u1 = 1.0 - u[2 * t];  // in (0, 1]: log is finite
      const double u2 = u[2 * t + 1];
      const double r = ::sqrt(-2.0 * ::log(u1));
      out[i] = static_cast<T>(mean + stddev * r * ::cos(two_pi * u2));
      if (i + 1 < n) out[i + 1] = static_cast<T>(mean + stddev * r * ::sin(two_pi * u2));
    }
    __syncthreads();  // u is rewritten by the next round
  }
}

}  // namespace

template <typename T>
void uniform(const KernelContext& ctx, const std::vector<int64_t>& shape, double min, double max, int64_t seed, DType dtype,
             Tensor& out) {
  PD_CHECK(min <= max, ErrorCode::kInvalidArgument, "uniform: argument 'min' must be <= 'max' ({}), but received {}", max, min);
  const int64_t n = out.numel();
  if (n == 0) return;
  uniform_kernel<T><<<1, kMtThreads, 0, stream_of(ctx)>>>(dptr<T>(out), n, static_cast<unsigned long long>(seed), min, max);
  PD_CUDA_CHECK_LAUNCH("uniform");
}

template <typename T>
void normal(const KernelContext& ctx, const std::vector<int64_t>& shape, double mean, double stddev, int64_t seed, DType dtype,
            Tensor& out) {
  PD_CHECK(stddev >= 0.0, ErrorCode::kInvalidArgument, "normal: argument 'std' must be >= 0, but received {}", stddev);
  const int64_t n = out.numel();
  if (n == 0) return;
  normal_kernel<T><<<1, kMtThreads, 0, stream_of(ctx)>>>(dptr<T>(out), n, static_cast<unsigned long long>(seed), mean, stddev);
  PD_CUDA_CHECK_LAUNCH("normal");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(uniform, cuda, float, double)
PD_INSTANTIATE_KERNELS(normal, cuda, float, double)
