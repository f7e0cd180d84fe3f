// map_elementwise: out[i] = f(inputs at i) with NumPy broadcasting, for the ops whose formula ops.yaml
// gives as `scalar:` (their kernels are generated into cuda_elementwise.cu) and for hand-written
// pointwise kernels. Arithmetic runs in acc_t<T> (float for f16/bf16); indices are 64-bit.
#pragma once
#include <array>
#include <cstdint>

#include "cuda/cuda_common.cuh"

namespace pd::kernels::cuda {

inline constexpr int kMaxEwiseDims = 8;

template <int N>
struct EwiseGeometry {
  int nd = 0;
  int64_t shape[kMaxEwiseDims] = {};
  int64_t strides[N][kMaxEwiseDims] = {};  // per input, in elements; 0 where it is broadcast
};

template <typename D, int N>
struct EwiseInputs {
  const D* p[N];
};

// Each thread handles kUnroll elements spaced a grid apart, so loads stay coalesced.
inline constexpr int kUnroll = 4;

template <typename D, typename C, int N, bool Flat, typename F>
__global__ void ewise_kernel(D* __restrict__ out, EwiseInputs<D, N> in, EwiseGeometry<N> g, int64_t n, F f) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; base < n; base += stride * kUnroll) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * stride;
      if (i >= n) break;
      C v[N];
#pragma unroll
      for (int k = 0; k < N; ++k) {
        int64_t off = i;
        if constexpr (!Flat) {
          off = 0;
          int64_t rem = i;
          for (int d = g.nd - 1; d >= 0; --d) {
            const int64_t coord = rem % g.shape[d];
            rem /= g.shape[d];
            off += coord * g.strides[k][d];
          }
        }
        v[k] = load_as<C>(in.p[k][off]);
      }
      if constexpr (N == 1) out[i] = store_as<D>(f(v[0]));
      else if constexpr (N == 2) out[i] = store_as<D>(f(v[0], v[1]));
      else out[i] = store_as<D>(f(v[0], v[1], v[2]));
    }
  }
}

// The flat case with 16-byte loads and stores: each thread maps kVec<D> adjacent elements (8 for the
// 16-bit types, 4 for f32), which is what it takes for the 16-bit types to approach the memory
// bandwidth; the n % kVec<D> trailing elements go one per thread. Every pointer must be 16-byte aligned.
template <typename D>
inline constexpr int kVec = 16 / static_cast<int>(sizeof(D));

template <typename D, typename C, int N, typename F>
__global__ void ewise_vec_kernel(D* __restrict__ out, EwiseInputs<D, N> in, int64_t n, F f) {
  constexpr int V = kVec<D>;
  const int64_t packs = n / V;
  PD_GRID_STRIDE(j, packs) {
    uint4 raw[N];
#pragma unroll
    for (int k = 0; k < N; ++k) raw[k] = reinterpret_cast<const uint4*>(in.p[k])[j];
    uint4 packed;
    D* o = reinterpret_cast<D*>(&packed);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      C v[N];
#pragma unroll
      for (int k = 0; k < N; ++k) v[k] = load_as<C>(reinterpret_cast<const D*>(&raw[k])[e]);
      if constexpr (N == 1) o[e] = store_as<D>(f(v[0]));
      else if constexpr (N == 2) o[e] = store_as<D>(f(v[0], v[1]));
      else o[e] = store_as<D>(f(v[0], v[1], v[2]));
    }
    reinterpret_cast<uint4*>(out)[j] = packed;
  }
  const int64_t i = packs * V + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    C v[N];
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = load_as<C>(in.p[k][i]);
    if constexpr (N == 1) out[i] = store_as<D>(f(v[0]));
    else if constexpr (N == 2) out[i] = store_as<D>(f(v[0], v[1]));
    else out[i] = store_as<D>(f(v[0], v[1], v[2]));
  }
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Broadcast strides of each input against out's shape, with adjacent dimensions merged where every
// operand allows it (so a [64, 256, 1024] + [1024] add walks two dimensions, not three).
template <int N>
EwiseGeometry<N> ewise_geometry(const char* op, const Tensor& out, const std::array<const Tensor*, N>& ins) {
  const Shape& os = out.shape();
  const int nd = static_cast<int>(os.size());
  std::vector<int64_t> shape(os.begin(), os.end());
  std::vector<std::vector<int64_t>> st(N, std::vector<int64_t>(nd, 0));
  for (int k = 0; k < N; ++k) {
    const Shape& s = ins[k]->shape();
    int64_t acc = 1;
    for (int d = nd - 1, sd = static_cast<int>(s.size()) - 1; d >= 0; --d, --sd) {
      if (sd < 0) break;
      st[k][d] = s[sd] == 1 ? 0 : acc;
      acc *= s[sd];
    }
  }
  // Merge dimension d into d+1 when, for every input, stride[d] == stride[d+1] * shape[d+1].
  std::vector<int64_t> ms;
  std::vector<std::vector<int64_t>> mst(N);
  for (int d = 0; d < nd; ++d) {
    if (os[d] == 1) continue;
    bool merge = !ms.empty();
    for (int k = 0; k < N && merge; ++k) merge = mst[k].back() == st[k][d] * os[d];
    if (merge) {
      ms.back() *= os[d];
      for (int k = 0; k < N; ++k) mst[k].back() = st[k][d];
    } else {
      ms.push_back(os[d]);
      for (int k = 0; k < N; ++k) mst[k].push_back(st[k][d]);
    }
  }
  PD_CHECK(static_cast<int>(ms.size()) <= kMaxEwiseDims, ErrorCode::kNotImplemented,
           "{}: broadcasting over {} non-mergeable dimensions on CUDA (at most {})", op, ms.size(), kMaxEwiseDims);
  EwiseGeometry<N> g;
  g.nd = static_cast<int>(ms.size());
  for (int d = 0; d < g.nd; ++d) {
    g.shape[d] = ms[d];
    for (int k = 0; k < N; ++k) g.strides[k][d] = mst[k][d];
  }
  return g;
}

template <typename T, typename F, typename... Ins>
void map_elementwise(const KernelContext& ctx, const char* op, F f, Tensor& out, const Ins&... inputs) {
  constexpr int N = sizeof...(Ins);
  const int64_t n = out.numel();
  if (n == 0) return;
  using D = dev_t<T>;
  using C = acc_t<T>;
  EwiseInputs<D, N> in{{dptr<T>(inputs)...}};
  bool flat = true;
  ((flat = flat && inputs.numel() == n), ...);
  const unsigned blocks = blocks_for((n + kUnroll - 1) / kUnroll);
  bool aligned = aligned16(out.raw_data());
  ((aligned = aligned && aligned16(inputs.raw_data())), ...);
  if (flat && aligned) {
    // A block at least: its first n % kVec threads take the trailing elements.
    ewise_vec_kernel<D, C, N><<<blocks_for(n / kVec<D>), kThreads, 0, stream_of(ctx)>>>(dptr<T>(out), in, n, f);
  } else if (flat) {
    ewise_kernel<D, C, N, true><<<blocks, kThreads, 0, stream_of(ctx)>>>(dptr<T>(out), in, EwiseGeometry<N>{}, n, f);
  } else {
    const EwiseGeometry<N> g = ewise_geometry<N>(op, out, {&inputs...});
    ewise_kernel<D, C, N, false><<<blocks, kThreads, 0, stream_of(ctx)>>>(dptr<T>(out), in, g, n, f);
  }
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
}

}  // namespace pd::kernels::cuda
