// Reductions over a list of axes (sum mean max min), argmax over one axis, sum_to, and amax_mask
// (max / min's gradient share).
//
// The reduce plan (cpu/common/reduce.h, the one the reference kernels use) views the input as merged
// runs of kept dims and reduced dims. Element k of output o's group is at
// kept_offset(o) + reduced_offset(k), k row-major over the reduced dims (for one reduced axis, k is the
// position along it). Two launch shapes:
//   rows:    the innermost dim is reduced (reads along a group are contiguous): a warp per output, or a
//            block per output (split over several blocks into partial states when there are few
//            outputs and long groups);
//   columns: the innermost dim is kept (neighbouring outputs are neighbours in memory): a 32x8 block
//            takes 32 outputs, its 8 rows share each group (split over blocks the same way).
// Split groups leave one partial state per (output, split) in the workspace; a second kernel combines them.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "cpu/common/reduce.h"
#include "cuda/reduce_groups.cuh"

namespace pd::kernels::cuda {
namespace {

using cpu::ReducePlan;

// ---- reducers: In (device element type), S (state), Out; init / load / combine / finish ----

// Floating sums accumulate in acc_t (float for f32/f16/bf16, double for f64), integer sums in int64
// (an int32 sum wraps only on the final store, as the reference).
template <typename T>
using SumAcc = std::conditional_t<std::is_integral_v<T>, int64_t, acc_t<T>>;

template <typename T, bool Mean>
struct SumReducer {
  using In = dev_t<T>;
  using S = SumAcc<T>;
  using Out = dev_t<T>;
  int64_t count = 1;  // the group size, for the mean (0: 0/0 = NaN, as the reference)
  __device__ S init() const { return S(0); }
  __device__ S load(In v, int64_t) const { return load_as<S>(v); }
  __device__ S combine(S a, S b) const { return a + b; }
  __device__ Out finish(S s) const {
    if constexpr (Mean) return store_as<Out>(s / static_cast<S>(count));
    else return store_as<Out>(s);
  }
};

// max / min; a NaN anywhere in the group wins (as the reference and PyTorch).
template <typename T, bool Max>
struct ExtremeReducer {
  using In = dev_t<T>;
  using S = acc_t<T>;
  using Out = dev_t<T>;
  __device__ S init() const {
    if constexpr (std::is_floating_point_v<S>) return Max ? -std::numeric_limits<S>::infinity() : std::numeric_limits<S>::infinity();
    else return Max ? std::numeric_limits<S>::lowest() : std::numeric_limits<S>::max();
  }
  __device__ S load(In v, int64_t) const { return load_as<S>(v); }
  __device__ S combine(S a, S b) const {
    if (is_nan_val(a)) return a;
    if (is_nan_val(b)) return b;
    if constexpr (Max) return b > a ? b : a;
    else return b < a ? b : a;
  }
  __device__ Out finish(S s) const { return store_as<Out>(s); }
};

template <typename A>
struct ArgState {
  A v;
  int64_t i;
};
template <typename A>
__device__ __forceinline__ ArgState<A> shfl_down(ArgState<A> s, int offset) {
  return {::pd::kernels::cuda::shfl_down(s.v, offset), ::pd::kernels::cuda::shfl_down(s.i, offset)};
}

// argmax: the first maximum; a NaN counts as the maximum (the first NaN wins), as the reference.
template <typename T>
struct ArgmaxReducer {
  using In = dev_t<T>;
  using A = acc_t<T>;
  using S = ArgState<A>;
  using Out = int64_t;
  __device__ S init() const {
    if constexpr (std::is_floating_point_v<A>) return {-std::numeric_limits<A>::infinity(), std::numeric_limits<int64_t>::max()};
    else return {std::numeric_limits<A>::lowest(), std::numeric_limits<int64_t>::max()};
  }
  __device__ S load(In v, int64_t k) const { return {load_as<A>(v), k}; }
  __device__ S combine(S a, S b) const {
    const bool an = is_nan_val(a.v), bn = is_nan_val(b.v);
    if (an || bn) {
      if (an && bn) return a.i <= b.i ? a : b;
      return an ? a : b;
    }
    if (a.v > b.v) return a;
    if (b.v > a.v) return b;
    return a.i <= b.i ? a : b;
  }
  __device__ Out finish(S s) const { return s.i; }
};

// ---- kernels ----

// The group elements [k0, k1) of output o, strided by `step` starting at k0 + first.
template <typename R>
__device__ __forceinline__ typename R::S reduce_range(const R& r, const typename R::In* __restrict__ x,
                                                      const GroupGeometry& g, int64_t base, int64_t k0, int64_t k1,
                                                      int64_t first, int64_t step) {
  typename R::S s = r.init();
  for (int64_t k = k0 + first; k < k1; k += step) s = r.combine(s, r.load(x[base + g.reduced_offset(k)], k));
  return s;
}

// rows, a warp per output (blockDim.x a multiple of 32).
template <typename R>
__global__ void reduce_rows_warp_kernel(R r, const typename R::In* __restrict__ x, typename R::Out* __restrict__ out,
                                        GroupGeometry g) {
  const int lane = threadIdx.x & 31;
  const int64_t warps_per_block = blockDim.x >> 5;
  auto combine = [&r](typename R::S a, typename R::S b) { return r.combine(a, b); };
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * warps_per_block + (threadIdx.x >> 5); o < g.out_numel;
       o += static_cast<int64_t>(gridDim.x) * warps_per_block) {
    typename R::S s = reduce_range(r, x, g, g.kept_offset(o), 0, g.group, lane, 32);
    s = warp_reduce(s, combine);
    if (lane == 0) out[o] = r.finish(s);
  }
}

// rows, a block per (output, split): split sp covers k in [sp * chunk, (sp + 1) * chunk). With one
// split the block writes the output, else its partial state partial[o * splits + sp].
template <typename R, bool Partial>
__global__ void reduce_rows_block_kernel(R r, const typename R::In* __restrict__ x, typename R::Out* __restrict__ out,
                                         typename R::S* __restrict__ partial, GroupGeometry g, int64_t splits,
                                         int64_t chunk) {
  __shared__ typename R::S shared[32];
  auto combine = [&r](typename R::S a, typename R::S b) { return r.combine(a, b); };
  const int64_t items = g.out_numel * splits;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t o = item / splits, sp = item % splits;
    const int64_t k0 = sp * chunk, k1 = k0 + chunk < g.group ? k0 + chunk : g.group;
    typename R::S s = reduce_range(r, x, g, g.kept_offset(o), k0, k1, threadIdx.x, blockDim.x);
    s = block_allreduce(s, combine, shared);
    if (threadIdx.x == 0) {
      if constexpr (Partial) partial[item] = s;
      else out[o] = r.finish(s);
    }
  }
}

// columns: block (32, kColRows); threadIdx.x picks one of 32 neighbouring outputs, threadIdx.y strides
// the group. blockIdx.y is the split.
constexpr int kColRows = 8;

template <typename R, bool Partial>
__global__ void reduce_cols_kernel(R r, const typename R::In* __restrict__ x, typename R::Out* __restrict__ out,
                                   typename R::S* __restrict__ partial, GroupGeometry g, int64_t splits, int64_t chunk) {
  __shared__ typename R::S shared[kColRows][32];
  const int64_t tiles = (g.out_numel + 31) / 32;
  const int64_t sp = blockIdx.y;
  const int64_t k0 = sp * chunk, k1 = k0 + chunk < g.group ? k0 + chunk : g.group;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t o = tile * 32 + threadIdx.x;
    typename R::S s = r.init();
    if (o < g.out_numel) s = reduce_range(r, x, g, g.kept_offset(o), k0, k1, threadIdx.y, kColRows);
    shared[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && o < g.out_numel) {
      for (int y = 1; y < kColRows; ++y) s = r.combine(s, shared[y][threadIdx.x]);
      if constexpr (Partial) partial[o * splits + sp] = s;
      else out[o] = r.finish(s);
    }
    __syncthreads();
  }
}

// Combines the partial states of each output (a warp per output), in split order.
template <typename R>
__global__ void reduce_partials_kernel(R r, const typename R::S* __restrict__ partial, typename R::Out* __restrict__ out,
                                       int64_t out_numel, int64_t splits) {
  const int lane = threadIdx.x & 31;
  const int64_t warps_per_block = blockDim.x >> 5;
  auto combine = [&r](typename R::S a, typename R::S b) { return r.combine(a, b); };
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * warps_per_block + (threadIdx.x >> 5); o < out_numel;
       o += static_cast<int64_t>(gridDim.x) * warps_per_block) {
    typename R::S s = r.init();
    for (int64_t k = lane; k < splits; k += 32) s = r.combine(s, partial[o * splits + k]);
    s = warp_reduce(s, combine);
    if (lane == 0) out[o] = r.finish(s);
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kTargetBlocks = 1024;  // enough blocks to fill the GPU several times over

template <typename R>
void launch_reduce(const KernelContext& ctx, const char* op, const R& r, const ReducePlan& p,
                   const typename R::In* x, typename R::Out* out) {
  if (p.out_numel == 0) return;
  const GroupGeometry g = group_geometry(p, op);
  cudaStream_t stream = stream_of(ctx);
  using S = typename R::S;
  // The innermost non-trivial dim is reduced when the last reduced run has stride 1.
  const bool rows = g.nr > 0 && g.rstride[g.nr - 1] == 1;
  if (rows) {
    if (g.out_numel >= 256 && g.group <= 4096) {
      const int64_t blocks = ceil_div(g.out_numel, kThreads / 32);
      reduce_rows_warp_kernel<R><<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0, stream>>>(
          r, x, out, g);
      PD_CUDA_CHECK_LAUNCH("reduction");
      return;
    }
    int64_t splits = std::min(ceil_div(kTargetBlocks, g.out_numel), ceil_div(g.group, 16384));
    if (splits < 1) splits = 1;
    const int64_t chunk = splits > 1 ? ceil_div(g.group, splits) : (g.group > 0 ? g.group : 1);
    if (splits > 1) splits = ceil_div(g.group, chunk);
    const int64_t items = g.out_numel * splits;
    const unsigned blocks = static_cast<unsigned>(items < kMaxBlocks ? items : kMaxBlocks);
    if (splits == 1) {
      reduce_rows_block_kernel<R, false><<<blocks, kThreads, 0, stream>>>(r, x, out, nullptr, g, 1, chunk);
      PD_CUDA_CHECK_LAUNCH("reduction");
      return;
    }
    S* partial = static_cast<S*>(workspace(ctx, static_cast<size_t>(items) * sizeof(S)));
    reduce_rows_block_kernel<R, true><<<blocks, kThreads, 0, stream>>>(r, x, out, partial, g, splits, chunk);
    PD_CUDA_CHECK_LAUNCH("reduction");
    reduce_partials_kernel<R><<<blocks_for(g.out_numel * 32), kThreads, 0, stream>>>(r, partial, out, g.out_numel, splits);
    PD_CUDA_CHECK_LAUNCH("reduction");
    return;
  }
  const int64_t tiles = ceil_div(g.out_numel, 32);
  int64_t splits = std::min(ceil_div(kTargetBlocks, tiles), ceil_div(g.group, 1024));
  if (splits < 1) splits = 1;
  const int64_t chunk = splits > 1 ? ceil_div(g.group, splits) : (g.group > 0 ? g.group : 1);
  if (splits > 1) splits = ceil_div(g.group, chunk);
  const dim3 block(32, kColRows);
  const dim3 grid(static_cast<unsigned>(tiles < kMaxBlocks ? tiles : kMaxBlocks), static_cast<unsigned>(splits));
  if (splits == 1) {
    reduce_cols_kernel<R, false><<<grid, block, 0, stream>>>(r, x, out, nullptr, g, 1, chunk);
    PD_CUDA_CHECK_LAUNCH("reduction");
    return;
  }
  S* partial = static_cast<S*>(workspace(ctx, static_cast<size_t>(g.out_numel * splits) * sizeof(S)));
  reduce_cols_kernel<R, true><<<grid, block, 0, stream>>>(r, x, out, partial, g, splits, chunk);
  PD_CUDA_CHECK_LAUNCH("reduction");
  reduce_partials_kernel<R><<<blocks_for(g.out_numel * 32), kThreads, 0, stream>>>(r, partial, out, g.out_numel, splits);
  PD_CUDA_CHECK_LAUNCH("reduction");
}

template <typename T, bool Max>
void extreme(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, Tensor& out, const char* op) {
  const ReducePlan p = cpu::make_reduce_plan(x.shape(), axis, op);
  PD_CHECK(p.group_size > 0 || p.out_numel == 0, ErrorCode::kInvalidArgument,
           "{}: argument 'x' must have no empty reduced axis, but received shape {}", op, shape_str(x.shape()));
  launch_reduce(ctx, op, ExtremeReducer<T, Max>{}, p, dptr<T>(x), dptr<T>(out));
}

// amax_mask: a warp per group counts the elements equal to the group's reduced value, then writes
// 1 / ties to them and 0 elsewhere (all 0 when nothing matches, e.g. a NaN maximum).
template <typename T>
__global__ void amax_mask_kernel(const dev_t<T>* __restrict__ x, const dev_t<T>* __restrict__ reduced,
                                 dev_t<T>* __restrict__ mask, GroupGeometry g) {
  using A = acc_t<T>;
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (int64_t o = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; o < g.out_numel; o += warps) {
    const int64_t base = g.kept_offset(o);
    const A target = load_as<A>(reduced[o]);
    int64_t ties = 0;
    for (int64_t k = lane; k < g.group; k += 32) ties += load_as<A>(x[base + g.reduced_offset(k)]) == target ? 1 : 0;
    ties = warp_allreduce(ties, [](int64_t a, int64_t b) { return a + b; });
    const A share = ties > 0 ? static_cast<A>(A(1) / static_cast<A>(ties)) : A(0);
    for (int64_t k = lane; k < g.group; k += 32) {
      const int64_t i = base + g.reduced_offset(k);
      mask[i] = store_as<dev_t<T>>(load_as<A>(x[i]) == target ? share : A(0));
    }
  }
}

}  // namespace

template <typename T>
void amax_mask(const KernelContext& ctx, const Tensor& x, const Tensor& out, const std::vector<int64_t>& axis,
               bool keepdim, Tensor& mask) {
  const ReducePlan p = cpu::make_reduce_plan(x.shape(), axis, "amax_mask");
  PD_CHECK(out.numel() == p.out_numel, ErrorCode::kShape,
           "amax_mask: argument 'out' must have {} elements (x {} reduced over the axes), but received shape {}",
           p.out_numel, shape_str(x.shape()), shape_str(out.shape()));
  if (p.out_numel == 0 || p.group_size == 0) return;
  const GroupGeometry g = group_geometry(p, "amax_mask");
  amax_mask_kernel<T><<<blocks_for(g.out_numel * 32), kThreads, 0, stream_of(ctx)>>>(dptr<T>(x), dptr<T>(out),
                                                                                       dptr<T>(mask), g);
  PD_CUDA_CHECK_LAUNCH("amax_mask");
}

template <typename T>
void sum(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  const ReducePlan p = cpu::make_reduce_plan(x.shape(), axis, "sum");
  launch_reduce(ctx, "sum", SumReducer<T, false>{}, p, dptr<T>(x), dptr<T>(out));
}

template <typename T>
void mean(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  const ReducePlan p = cpu::make_reduce_plan(x.shape(), axis, "mean");
  SumReducer<T, true> r;
  r.count = p.group_size;
  launch_reduce(ctx, "mean", r, p, dptr<T>(x), dptr<T>(out));
}

template <typename T>
void max(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  extreme<T, true>(ctx, x, axis, out, "max");
}

template <typename T>
void min(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  extreme<T, false>(ctx, x, axis, out, "min");
}

template <typename T>
void argmax(const KernelContext& ctx, const Tensor& x, int64_t axis, bool keepdim, Tensor& out) {
  const ReducePlan p = cpu::make_reduce_plan(x.shape(), {axis}, "argmax");
  PD_CHECK(p.group_size > 0 || p.out_numel == 0, ErrorCode::kInvalidArgument,
           "argmax: argument 'x' must not be empty along 'axis' {}, but received shape {}", axis, shape_str(x.shape()));
  launch_reduce(ctx, "argmax", ArgmaxReducer<T>{}, p, dptr<T>(x), reinterpret_cast<int64_t*>(out.raw_data()));
}

// sum_to: the summed axes are x's extra leading dims and the dims where the target has extent 1.
template <typename T>
void sum_to(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& shape, Tensor& out) {
  const Shape& xs = x.shape();
  const Shape& target = out.shape();
  const int64_t nd = x.dim(), lead = nd - out.dim();
  PD_CHECK(lead >= 0, ErrorCode::kShape, "sum_to: argument 'shape' {} must broadcast to x's shape {}, but has more dims",
           shape_str(target), shape_str(xs));
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < nd; ++d) {
    if (d < lead) {
      axes.push_back(d);
      continue;
    }
    const int64_t t = target[d - lead];
    PD_CHECK(t == xs[d] || t == 1, ErrorCode::kShape,
             "sum_to: argument 'shape' {} must broadcast to x's shape {}, but dim {} has extent {}", shape_str(target),
             shape_str(xs), d - lead, t);
    if (t != xs[d]) axes.push_back(d);
  }
  if (axes.empty()) {  // nothing to sum (an empty list would mean "all axes" to the plan)
    const int64_t n = out.numel();
    if (n > 0)
      PD_CUDA_CHECK(cudaMemcpyAsync(out.raw_data(), x.raw_data(), static_cast<size_t>(n) * sizeof(T),
                                    cudaMemcpyDeviceToDevice, stream_of(ctx)));
    return;
  }
  const ReducePlan p = cpu::make_reduce_plan(xs, axes, "sum_to");
  launch_reduce(ctx, "sum_to", SumReducer<T, false>{}, p, dptr<T>(x), dptr<T>(out));
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(sum, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(mean, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(max, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(min, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(argmax, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(amax_mask, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(sum_to, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
