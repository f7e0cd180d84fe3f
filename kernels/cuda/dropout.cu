// dropout on CUDA with the reference's mask bit for bit (kernels/cpu/ref/dropout.cc): element i is
// dropped when the i-th draw of std::mt19937_64(seed), as the uniform double (draw >> 11) * 2^-53, is
// below p; kept elements are scaled by 1 / (1 - p) (rounded to T, as the reference). Eval: identity with a
// mask of ones; p == 1: all zeros. The generator runs in one block (mt19937_block.cuh).
#include <cstdint>

#include "cuda/cuda_common.cuh"
#include "cuda/mt19937_block.cuh"

namespace pd::kernels::cuda {
namespace {

// One block of kMtThreads.
template <typename D, typename A>
__global__ void dropout_mt_kernel(const D* __restrict__ x, D* __restrict__ out, D* __restrict__ mask, int64_t n,
                                  unsigned long long seed, double p, A keep) {
  __shared__ unsigned long long st[kMtN];
  const int t = threadIdx.x;
  mt_seed(st, seed);
  for (int64_t c0 = 0; c0 < n; c0 += kMtN) {
    mt_twist(st);
    const int64_t i = c0 + t;
    if (t < kMtN && i < n) {
      const double u = mt_unit_double(st[t]);
      const D m = store_as<D>(u < p ? A(0) : keep);
      mask[i] = m;
      out[i] = store_as<D>(load_as<A>(x[i]) * load_as<A>(m));
    }
  }
}

template <typename D>
__global__ void dropout_eval_kernel(const D* __restrict__ x, D* __restrict__ out, D* __restrict__ mask, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    out[i] = x[i];
    mask[i] = store_as<D>(1.0f);
  }
}

}  // namespace

template <typename T>
void dropout(const KernelContext& ctx, const Tensor& x, double p, bool training, int64_t seed, Tensor& out, Tensor& mask) {
  using D = dev_t<T>;
  using A = acc_t<T>;
  PD_CHECK(p >= 0.0 && p <= 1.0, ErrorCode::kInvalidArgument, "dropout: argument 'p' must be in [0, 1], but received {}", p);
  const int64_t n = x.numel();
  if (n == 0) return;
  cudaStream_t stream = stream_of(ctx);
  if (!training) {
    dropout_eval_kernel<D><<<blocks_for(n), kThreads, 0, stream>>>(dptr<T>(x), dptr<T>(out), dptr<T>(mask), n);
    PD_CUDA_CHECK_LAUNCH("dropout");
    return;
  }
  if (p == 1.0) {  // everything dropped; 1/(1-p) would be infinite
    PD_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, static_cast<size_t>(n) * sizeof(T), stream));
    PD_CUDA_CHECK(cudaMemsetAsync(mask.raw_data(), 0, static_cast<size_t>(n) * sizeof(T), stream));
    return;
  }
  // The scale is rounded to T in the kernel (through A: float for the 16-bit types).
  const A keep = static_cast<A>(1.0 / (1.0 - p));
  dropout_mt_kernel<D, A><<<1, kMtThreads, 0, stream>>>(dptr<T>(x), dptr<T>(out), dptr<T>(mask), n,
                                                        static_cast<unsigned long long>(seed), p, keep);
  PD_CUDA_CHECK_LAUNCH("dropout");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(dropout, cuda, float, double, ::pd::float16, ::pd::bfloat16)
