// dropout on CUDA with the reference's mask bit for bit (kernels/cpu/ref/dropout.cc): element i is
// dropped when the i-th draw of std::mt19937_64(seed), as the uniform double (draw >> 11) * 2^-53, is
// below p; kept elements are scaled by 1 / (1 - p) (rounded to T, as the reference). Eval: identity with a
// mask of ones; p == 1: all zeros.
//
// The Mersenne Twister is sequential from one draw to the next, but each regeneration of its 312-word
// state (the "twist") is two data-parallel halves, so one block of 312+ threads runs the generator:
// thread t tempers word t into draw c0 + t of each 312-draw round. One block bounds the throughput
// (rounds run one after another), the price of matching the CPU's mask exactly.
#include <cstdint>

#include "cuda/cuda_common.cuh"

namespace pd::kernels::cuda {
namespace {

// std::mt19937_64's parameters.
constexpr int kMtN = 312, kMtM = 156;
constexpr unsigned long long kMtA = 0xb5026f5aa96619e9ull;
constexpr unsigned long long kUpper = ~0ull << 31, kLower = ~kUpper;
constexpr unsigned long long kInitMul = 6364136223846793005ull;
constexpr int kMtThreads = 320;  // a multiple of 32 covering the 312 words

__device__ __forceinline__ unsigned long long twist_word(unsigned long long other, unsigned long long y) {
  return other ^ (y >> 1) ^ ((y & 1ull) ? kMtA : 0ull);
}

__device__ __forceinline__ unsigned long long temper(unsigned long long z) {
  z ^= (z >> 29) & 0x5555555555555555ull;
  z ^= (z << 17) & 0x71d67fffeda60000ull;
  z ^= (z << 37) & 0xfff7eee000000000ull;
  z ^= z >> 43;
  return z;
}

// One block of kMtThreads.
template <typename D, typename A>
__global__ void dropout_mt_kernel(const D* __restrict__ x, D* __restrict__ out, D* __restrict__ mask, int64_t n,
                                  unsigned long long seed, double p, A keep) {
  __shared__ unsigned long long st[kMtN];
  const int t = threadIdx.x;
  if (t == 0) {  // the seeding recurrence, one word after the other
    st[0] = seed;
    for (int i = 1; i < kMtN; ++i) st[i] = kInitMul * (st[i - 1] ^ (st[i - 1] >> 62)) + static_cast<unsigned long long>(i);
  }
  __syncthreads();
  for (int64_t c0 = 0; c0 < n; c0 += kMtN) {
    // The twist: words [0, n - m) from the old state only; then [n - m, n - 1) from those new words;
    // the last word also pairs with the new word 0.
    unsigned long long y = 0;
    if (t < kMtN - 1) y = (st[t] & kUpper) | (st[t + 1] & kLower);
    __syncthreads();
    if (t < kMtN - kMtM) st[t] = twist_word(st[t + kMtM], y);
    __syncthreads();
    if (t >= kMtN - kMtM && t < kMtN - 1) {
      st[t] = twist_word(st[t - (kMtN - kMtM)], y);
    } else if (t == kMtN - 1) {
      y = (st[t] & kUpper) | (st[0] & kLower);
      st[t] = twist_word(st[kMtM - 1], y);
    }
    __syncthreads();
    const int64_t i = c0 + t;
    if (t < kMtN && i < n) {
      const double u = static_cast<double>(temper(st[t]) >> 11) * 0x1.0p-53;
      const D m = store_as<D>(u < p ? A(0) : keep);
      mask[i] = m;
      out[i] = store_as<D>(load_as<A>(x[i]) * load_as<A>(m));
    }
    // The next twist reads the state only before its first barrier, after every thread's read above.
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
