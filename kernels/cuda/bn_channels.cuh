// What batch_norm.cu and batch_norm_add_relu.cu share: x viewed as [N, C, inner] (channels on axis 1;
// channels_last: [rows, C, 1]), one block of kBnThreads per channel with a fixed-order tree reduction
// (deterministic), and the training statistics: a two-pass variance in double, the running statistics
// folded in place (running = momentum * running + (1 - momentum) * batch, unbiased variance; nothing
// folded for an empty channel), the batch mean and 1 / sqrt(var + epsilon) saved.
#pragma once
#include <cmath>

#include "cuda/cuda_common.cuh"

namespace pd::kernels::cuda {

inline constexpr int kBnThreads = 512;

struct ChannelView {
  int64_t N, C, inner;
};

inline ChannelView channel_view(const Shape& s, bool channels_last) {
  if (channels_last) {
    ChannelView v{1, s.empty() ? 1 : s.back(), 1};
    for (size_t i = 0; i + 1 < s.size(); ++i) v.N *= s[i];
    return v;
  }
  ChannelView v{s.empty() ? 1 : s[0], s.size() < 2 ? 1 : s[1], 1};
  for (size_t i = 2; i < s.size(); ++i) v.inner *= s[i];
  return v;
}

// Sums a per-thread value over the block (blockDim.x == kBnThreads); every thread gets the total.
__device__ __forceinline__ double block_sum(double v, double* shared) {
  const int t = threadIdx.x;
  __syncthreads();  // `shared` may still be read from a previous call
  shared[t] = v;
  __syncthreads();
  for (int s = kBnThreads / 2; s > 0; s >>= 1) {
    if (t < s) shared[t] += shared[t + s];
    __syncthreads();
  }
  return shared[0];
}

// Element j (of the channel's N * inner) of channel c.
__device__ __forceinline__ int64_t channel_offset(int64_t j, int64_t c, int64_t C, int64_t inner) {
  return ((j / inner) * C + c) * inner + j % inner;
}

struct ChannelStats {
  double mean, invstd;
};

// Training statistics of channel c (blockIdx.x), by the whole block: running ones updated and the batch
// ones saved (sm, si) by thread 0; every thread gets them in double.
template <typename D>
__device__ ChannelStats train_channel_stats(const D* __restrict__ x, D* rm, D* rv, D* sm, D* si, ChannelView v,
                                            double momentum, double epsilon, double* shared) {
  const int64_t c = blockIdx.x;
  const int64_t n = v.N * v.inner;
  double mean = 0, var = 0;
  if (n > 0) {
    double sum = 0;
    for (int64_t j = threadIdx.x; j < n; j += kBnThreads) sum += load_as<double>(x[channel_offset(j, c, v.C, v.inner)]);
    mean = block_sum(sum, shared) / static_cast<double>(n);
    double sq = 0;  // two-pass variance: no cancellation
    for (int64_t j = threadIdx.x; j < n; j += kBnThreads) {
      const double d = load_as<double>(x[channel_offset(j, c, v.C, v.inner)]) - mean;
      sq += d * d;
    }
    sq = block_sum(sq, shared);
    var = sq / static_cast<double>(n);
    if (threadIdx.x == 0) {
      const double unbiased = n > 1 ? sq / static_cast<double>(n - 1) : var;
      rm[c] = store_as<D>(momentum * load_as<double>(rm[c]) + (1 - momentum) * mean);
      rv[c] = store_as<D>(momentum * load_as<double>(rv[c]) + (1 - momentum) * unbiased);
    }
  }
  const double invstd = 1.0 / ::sqrt(var + epsilon);
  if (threadIdx.x == 0) {
    sm[c] = store_as<D>(mean);
    si[c] = store_as<D>(invstd);
  }
  return {mean, invstd};
}

// Eval: the saved statistics are the running mean and 1 / sqrt(running_var + epsilon).
template <typename D>
__global__ void eval_stats_kernel(const D* __restrict__ rm, const D* __restrict__ rv, D* __restrict__ sm, D* __restrict__ si,
                                  int64_t C, double epsilon) {
  PD_GRID_STRIDE(c, C) {
    sm[c] = rm[c];
    si[c] = store_as<D>(1.0 / ::sqrt(load_as<double>(rv[c]) + epsilon));
  }
}

template <typename T>
const dev_t<T>* optional_ptr(const Tensor& t) {
  return t.defined() ? dptr<T>(t) : nullptr;
}

template <typename T>
dev_t<T>* optional_out(Tensor& t) {
  return t.defined() ? dptr<T>(t) : nullptr;
}

}  // namespace pd::kernels::cuda
