// softmax and log_softmax along one axis, stabilised by subtracting the max (as the reference:
// out = exp(x - max - lse), log_softmax = x - max - lse, lse = log(sum(exp(x - max)))).
// x is viewed as [outer, C, inner]. inner == 1 (the last axis): a warp per row (C <= 1024) or a block
// per row; otherwise a thread per (outer, inner) column, which reads neighbouring columns together.
// Arithmetic runs in acc_t<T> (float for f32/f16/bf16, double for f64).
#include "cuda/reduce_common.cuh"

namespace pd::kernels::cuda {
namespace {

template <typename A>
__device__ __forceinline__ A exp_of(A v) {
  if constexpr (std::is_same_v<A, float>) return expf(v);
  else return ::exp(v);
}
template <typename A>
__device__ __forceinline__ A log_of(A v) {
  if constexpr (std::is_same_v<A, float>) return logf(v);
  else return ::log(v);
}
// std::max(m, v) as the reference: a NaN v leaves m (the NaN then shows through the sum).
template <typename A>
__device__ __forceinline__ A max_of(A m, A v) {
  return m < v ? v : m;
}

template <typename A, bool Log>
__device__ __forceinline__ A softmax_value(A v, A mx, A lse) {
  if constexpr (Log) return v - mx - lse;
  else return exp_of(v - mx - lse);
}

struct MaxOp {
  template <typename A>
  __device__ A operator()(A a, A b) const { return max_of(a, b); }
};
struct AddOp {
  template <typename A>
  __device__ A operator()(A a, A b) const { return a + b; }
};

// A warp per row of C contiguous elements.
template <typename D, typename A, bool Log>
__global__ void softmax_rows_warp_kernel(const D* __restrict__ x, D* __restrict__ out, int64_t rows, int64_t C) {
  const int lane = threadIdx.x & 31;
  const int64_t warps_per_block = blockDim.x >> 5;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * warps_per_block + (threadIdx.x >> 5); r < rows;
       r += static_cast<int64_t>(gridDim.x) * warps_per_block) {
    const D* in = x + r * C;
    D* o = out + r * C;
    A mx = -std::numeric_limits<A>::infinity();
    for (int64_t c = lane; c < C; c += 32) mx = max_of(mx, load_as<A>(in[c]));
    mx = warp_allreduce(mx, MaxOp{});
    A sum = 0;
    for (int64_t c = lane; c < C; c += 32) sum += exp_of(load_as<A>(in[c]) - mx);
    sum = warp_allreduce(sum, AddOp{});
    const A lse = log_of(sum);
    for (int64_t c = lane; c < C; c += 32) o[c] = store_as<D>(softmax_value<A, Log>(load_as<A>(in[c]), mx, lse));
  }
}

// A block per row.
template <typename D, typename A, bool Log>
__global__ void softmax_rows_block_kernel(const D* __restrict__ x, D* __restrict__ out, int64_t rows, int64_t C) {
  __shared__ A shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const D* in = x + r * C;
    D* o = out + r * C;
    A mx = -std::numeric_limits<A>::infinity();
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) mx = max_of(mx, load_as<A>(in[c]));
    mx = block_allreduce(mx, MaxOp{}, shared);
    A sum = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) sum += exp_of(load_as<A>(in[c]) - mx);
    sum = block_allreduce(sum, AddOp{}, shared);
    const A lse = log_of(sum);
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
      o[c] = store_as<D>(softmax_value<A, Log>(load_as<A>(in[c]), mx, lse));
  }
}

// A thread per column (o, i): classes at base + c * inner.
template <typename D, typename A, bool Log>
__global__ void softmax_cols_kernel(const D* __restrict__ x, D* __restrict__ out, int64_t outer, int64_t C, int64_t inner) {
  PD_GRID_STRIDE(s, outer * inner) {
    const int64_t o = s / inner, i = s % inner;
    const int64_t base = o * C * inner + i;
    A mx = -std::numeric_limits<A>::infinity();
    for (int64_t c = 0; c < C; ++c) mx = max_of(mx, load_as<A>(x[base + c * inner]));
    A sum = 0;
    for (int64_t c = 0; c < C; ++c) sum += exp_of(load_as<A>(x[base + c * inner]) - mx);
    const A lse = log_of(sum);
    for (int64_t c = 0; c < C; ++c)
      out[base + c * inner] = store_as<D>(softmax_value<A, Log>(load_as<A>(x[base + c * inner]), mx, lse));
  }
}

template <typename D>
__global__ void fill_one_kernel(D* out, float v) {
  out[0] = store_as<D>(v);
}

template <typename T, bool Log>
void run_softmax(const KernelContext& ctx, const Tensor& x, int64_t axis, Tensor& out, const char* what, const char* op) {
  using D = dev_t<T>;
  using A = acc_t<T>;
  cudaStream_t stream = stream_of(ctx);
  if (x.dim() == 0) {  // a single element is its own distribution
    fill_one_kernel<D><<<1, 1, 0, stream>>>(dptr<T>(out), Log ? 0.0f : 1.0f);
    check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
    return;
  }
  const int64_t a = normalize_axis(axis, x.dim(), what);
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < a; ++i) outer *= s[i];
  for (int64_t i = a + 1; i < x.dim(); ++i) inner *= s[i];
  const int64_t C = s[a];
  if (outer * C * inner == 0) return;
  if (inner == 1) {
    if (C <= 1024) {
      const int64_t blocks = (outer + kThreads / 32 - 1) / (kThreads / 32);
      softmax_rows_warp_kernel<D, A, Log><<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0, stream>>>(
          dptr<T>(x), dptr<T>(out), outer, C);
    } else {
      softmax_rows_block_kernel<D, A, Log><<<static_cast<unsigned>(outer < kMaxBlocks ? outer : kMaxBlocks), kThreads, 0, stream>>>(
          dptr<T>(x), dptr<T>(out), outer, C);
    }
  } else {
    softmax_cols_kernel<D, A, Log><<<blocks_for(outer * inner), kThreads, 0, stream>>>(dptr<T>(x), dptr<T>(out), outer, C, inner);
  }
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
}

}  // namespace

template <typename T>
void softmax(const KernelContext& ctx, const Tensor& x, int64_t axis, Tensor& out) {
  run_softmax<T, false>(ctx, x, axis, out, "softmax: argument 'axis'", "softmax kernel launch");
}

template <typename T>
void log_softmax(const KernelContext& ctx, const Tensor& x, int64_t axis, Tensor& out) {
  run_softmax<T, true>(ctx, x, axis, out, "log_softmax: argument 'axis'", "log_softmax kernel launch");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(softmax, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(log_softmax, cuda, float, double, ::pd::float16, ::pd::bfloat16)
