// std::mt19937_64 run by one block of kMtThreads threads, so that GPU random ops draw exactly the
// CPU reference's sequence (kernels/cpu/ref/random.cc, dropout.cc) for the same seed.
//
// The Mersenne Twister is sequential from one draw to the next, but each regeneration of its 312-word
// state (the "twist") is two data-parallel halves: after mt_twist, thread t < 312 tempers word t into
// draw c0 + t of the 312-draw round starting at c0. One block bounds the throughput (rounds run one
// after another): the price of matching the CPU bit for bit.
//
//   __shared__ unsigned long long st[kMtN];
//   mt_seed(st, seed);
//   for (int64_t c0 = 0; c0 < n; c0 += kMtN) {
//     mt_twist(st);
//     if (threadIdx.x < kMtN && c0 + threadIdx.x < n) use(mt_unit_double(st[threadIdx.x]));
//   }
#pragma once
#include <cstdint>

namespace pd::kernels::cuda {

inline constexpr int kMtN = 312;
inline constexpr int kMtThreads = 320;  // a multiple of 32 covering the 312 words

namespace mt_detail {
constexpr int kM = 156;
constexpr unsigned long long kA = 0xb5026f5aa96619e9ull;
constexpr unsigned long long kUpper = ~0ull << 31, kLower = ~kUpper;
constexpr unsigned long long kInitMul = 6364136223846793005ull;

__device__ __forceinline__ unsigned long long twist_word(unsigned long long other, unsigned long long y) {
  return other ^ (y >> 1) ^ ((y & 1ull) ? kA : 0ull);
}
}  // namespace mt_detail

// Thread 0 runs the seeding recurrence (one word after the other); every thread waits for it.
__device__ __forceinline__ void mt_seed(unsigned long long* st, unsigned long long seed) {
  if (threadIdx.x == 0) {
    st[0] = seed;
    for (int i = 1; i < kMtN; ++i)
      st[i] = mt_detail::kInitMul * (st[i - 1] ^ (st[i - 1] >> 62)) + static_cast<unsigned long long>(i);
  }
  __syncthreads();
}

// The next 312 words: [0, n - m) from the old state only; then [n - m, n - 1) from those new words;
// the last word also pairs with the new word 0. Every thread of the block calls it. A round's
// readers of st may run until the next mt_twist: it reads the state only before its first barrier.
__device__ __forceinline__ void mt_twist(unsigned long long* st) {
  using namespace mt_detail;
  const int t = threadIdx.x;
  unsigned long long y = 0;
  if (t < kMtN - 1) y = (st[t] & kUpper) | (st[t + 1] & kLower);
  __syncthreads();
  if (t < kMtN - kM) st[t] = twist_word(st[t + kM], y);
  __syncthreads();
  if (t >= kMtN - kM && t < kMtN - 1) {
    st[t] = twist_word(st[t - (kMtN - kM)], y);
  } else if (t == kMtN - 1) {
    y = (st[t] & kUpper) | (st[0] & kLower);
    st[t] = twist_word(st[kM - 1], y);
  }
  __syncthreads();
}

// A state word tempered into the draw, as 53 random bits -> a double in [0, 1) (the reference's unit_double).
__device__ __forceinline__ double mt_unit_double(unsigned long long z) {
  z ^= (z >> 29) & 0x5555555555555555ull;
  z ^= (z << 17) & 0x71d67fffeda60000ull;
  z ^= (z << 37) & 0xfff7eee000000000ull;
  z ^= z >> 43;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace pd::kernels::cuda
