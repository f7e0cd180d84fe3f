// The reductions beyond reduce.cu's single folds, with the semantics of the reference kernels
// (cpu/ref/reduce.cc, moments.cc, prod.cc, any_all.cc, cumulative.cc): logsumexp, var, std, prod and
// its gradient, any, all, and cumsum.
//
// Groups come from the reduce plan (reduce_groups.cuh). As the reference, floating values accumulate in
// double (logsumexp, the two-pass variance, products, running sums) and integers in 64 bits that wrap
// (products, running sums), stored back with the dtype's wrap-around.
#include <limits>
#include <type_traits>

#include "cpu/common/along_axis.h"
#include "cuda/reduce_groups.cuh"

namespace pd::kernels::cuda {
namespace {

using cpu::make_reduce_plan;

// The accumulator of a product or running sum: double for floating types, 64-bit unsigned for integers.
template <typename T>
using WideAcc = std::conditional_t<std::is_integral_v<T>, unsigned long long, double>;

struct AddOp {
  template <typename S>
  __device__ S operator()(S a, S b) const { return a + b; }
};
struct MulOp {
  template <typename S>
  __device__ S operator()(S a, S b) const { return a * b; }
};
// max where a NaN wins, as the reference's logsumexp scan.
struct NanMaxOp {
  __device__ double operator()(double a, double b) const {
    if (a != a) return a;
    if (b != b) return b;
    return b > a ? b : a;
  }
};
struct OrOp {
  __device__ int operator()(int a, int b) const { return a | b; }
};
struct AndOp {
  __device__ int operator()(int a, int b) const { return a & b; }
};

template <typename D>
__device__ __forceinline__ bool nonzero(D v) {
  if constexpr (std::is_same_v<D, __half> || std::is_same_v<D, __nv_bfloat16>) return load_as<float>(v) != 0.0f;
  else return v != D(0);  // NaN is nonzero
}

// log(sum(exp(x))) shifted by the group's max; an empty group gives -inf, and a max of +-inf or NaN is
// the answer itself (x - max would be NaN).
template <typename D>
struct LogsumexpGroup {
  const D* __restrict__ x;
  D* __restrict__ out;
  template <int G>
  __device__ void operator()(int64_t o, int64_t base, const GroupLanes<G>& lanes, const GroupGeometry& g) const {
    const double inf = std::numeric_limits<double>::infinity();
    double m = -inf;
    for (int64_t k = lanes.lane; k < g.group; k += G) m = NanMaxOp{}(m, load_as<double>(x[base + g.reduced_offset(k)]));
    m = lanes.all(m, NanMaxOp{});
    if (m == inf || m == -inf || m != m) {
      if (lanes.lane == 0) out[o] = store_as<D>(m);
      return;
    }
    double s = 0;
    for (int64_t k = lanes.lane; k < g.group; k += G) s += ::exp(load_as<double>(x[base + g.reduced_offset(k)]) - m);
    s = lanes.all(s, AddOp{});
    if (lanes.lane == 0) out[o] = store_as<D>(m + ::log(s));
  }
};

// Two passes (the mean, then squared deviations) divided by N - 1 (unbiased) or N; Sqrt for std.
// An empty group gives 0 / -1 or 0 / 0, as the reference.
template <typename D, bool Sqrt>
struct VarianceGroup {
  const D* __restrict__ x;
  D* __restrict__ out;
  bool unbiased;
  template <int G>
  __device__ void operator()(int64_t o, int64_t base, const GroupLanes<G>& lanes, const GroupGeometry& g) const {
    const double n = static_cast<double>(g.group);
    double sum = 0;
    for (int64_t k = lanes.lane; k < g.group; k += G) sum += load_as<double>(x[base + g.reduced_offset(k)]);
    const double mean = lanes.all(sum, AddOp{}) / n;
    double ss = 0;
    for (int64_t k = lanes.lane; k < g.group; k += G) {
      const double d = load_as<double>(x[base + g.reduced_offset(k)]) - mean;
      ss += d * d;
    }
    ss = lanes.all(ss, AddOp{});
    const double v = ss / (unbiased ? n - 1 : n);
    if (lanes.lane == 0) out[o] = store_as<D>(Sqrt ? ::sqrt(v) : v);
  }
};

// An empty group's product is 1.
template <typename D, typename Acc>
struct ProdGroup {
  const D* __restrict__ x;
  D* __restrict__ out;
  template <int G>
  __device__ void operator()(int64_t o, int64_t base, const GroupLanes<G>& lanes, const GroupGeometry& g) const {
    Acc p = 1;
    for (int64_t k = lanes.lane; k < g.group; k += G) p *= load_as<Acc>(x[base + g.reduced_offset(k)]);
    p = lanes.all(p, MulOp{});
    if (lanes.lane == 0) out[o] = store_as<D>(p);
  }
};

// A thread per group (G == 1): the prefix products (exclusive) go to `prefix`, at each element's own
// index, then a backward walk multiplies in the suffix: dx = grad * prefix * suffix in the reference's
// order, so that zeros in x are right.
template <typename D>
struct ProdGradGroup {
  const D* __restrict__ x;
  const D* __restrict__ grad;
  D* __restrict__ dx;
  double* __restrict__ prefix;
  template <int G>
  __device__ void operator()(int64_t o, int64_t base, const GroupLanes<G>&, const GroupGeometry& g) const {
    static_assert(G == 1, "prod_grad walks each group in one thread");
    double pre = 1.0;
    for (int64_t k = 0; k < g.group; ++k) {
      const int64_t i = base + g.reduced_offset(k);
      prefix[i] = pre;
      pre *= load_as<double>(x[i]);
    }
    const double gv = load_as<double>(grad[o]);
    double suffix = 1.0;
    for (int64_t k = g.group - 1; k >= 0; --k) {
      const int64_t i = base + g.reduced_offset(k);
      dx[i] = store_as<D>(gv * prefix[i] * suffix);
      suffix *= load_as<double>(x[i]);
    }
  }
};

// Empty groups: false for any, true for all.
template <typename D, bool All>
struct LogicalGroup {
  const D* __restrict__ x;
  bool* __restrict__ out;
  template <int G>
  __device__ void operator()(int64_t o, int64_t base, const GroupLanes<G>& lanes, const GroupGeometry& g) const {
    int acc = All ? 1 : 0;
    for (int64_t k = lanes.lane; k < g.group; k += G) {
      const int v = nonzero(x[base + g.reduced_offset(k)]) ? 1 : 0;
      acc = All ? (acc & v) : (acc | v);
    }
    if constexpr (All) acc = lanes.all(acc, AndOp{});
    else acc = lanes.all(acc, OrOp{});
    if (lanes.lane == 0) out[o] = acc != 0;
  }
};

// cumsum of contiguous lines (inner == 1): a warp per line scans 32 elements at a time and carries the
// total into the next 32.
template <typename D, typename Acc>
__global__ void cumsum_rows_kernel(const D* __restrict__ x, D* __restrict__ out, int64_t lines, int64_t n, bool exclusive,
                                   bool reverse) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = blockDim.x >> 5;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * warps + (threadIdx.x >> 5); line < lines;
       line += static_cast<int64_t>(gridDim.x) * warps) {
    const D* in = x + line * n;
    D* o = out + line * n;
    Acc carry = 0;
    for (int64_t c0 = 0; c0 < n; c0 += 32) {
      const int64_t step = c0 + lane;
      const int64_t p = reverse ? n - 1 - step : step;
      const Acc v = step < n ? load_as<Acc>(in[p]) : Acc(0);
      Acc incl = v;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const Acc t = __shfl_up_sync(kFullMask, incl, d);
        if (lane >= d) incl += t;
      }
      Acc excl = __shfl_up_sync(kFullMask, incl, 1);
      if (lane == 0) excl = 0;
      if (step < n) o[p] = store_as<D>(carry + (exclusive ? excl : incl));
      carry += __shfl_sync(kFullMask, incl, 31);
    }
  }
}

// cumsum with inner > 1: a thread per (outer, inner) line; neighbouring threads read neighbours.
template <typename D, typename Acc>
__global__ void cumsum_cols_kernel(const D* __restrict__ x, D* __restrict__ out, int64_t outer, int64_t n, int64_t inner,
                                   bool exclusive, bool reverse) {
  PD_GRID_STRIDE(line, outer * inner) {
    const int64_t base = (line / inner) * n * inner + line % inner;
    Acc acc = 0;
    for (int64_t step = 0; step < n; ++step) {
      const int64_t p = base + (reverse ? n - 1 - step : step) * inner;
      const Acc v = load_as<Acc>(x[p]);
      if (!exclusive) acc += v;
      out[p] = store_as<D>(acc);
      if (exclusive) acc += v;
    }
  }
}

template <typename T, bool All>
void logical(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, Tensor& out, const char* op) {
  const GroupGeometry g = group_geometry(make_reduce_plan(x.shape(), axis, op), op);
  launch_groups(ctx, LogicalGroup<dev_t<T>, All>{dptr<T>(x), static_cast<bool*>(out.raw_data())}, g, op);
}

template <typename T, bool Sqrt>
void variance(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool unbiased, Tensor& out,
              const char* op) {
  const GroupGeometry g = group_geometry(make_reduce_plan(x.shape(), axis, op), op);
  launch_groups(ctx, VarianceGroup<dev_t<T>, Sqrt>{dptr<T>(x), dptr<T>(out), unbiased}, g, op);
}

}  // namespace

template <typename T>
void logsumexp(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  const GroupGeometry g = group_geometry(make_reduce_plan(x.shape(), axis, "logsumexp"), "logsumexp");
  launch_groups(ctx, LogsumexpGroup<dev_t<T>>{dptr<T>(x), dptr<T>(out)}, g, "logsumexp");
}

template <typename T>
void var(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, bool unbiased, Tensor& out) {
  variance<T, false>(ctx, x, axis, unbiased, out, "var");
}

template <typename T>
void std(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, bool unbiased, Tensor& out) {
  variance<T, true>(ctx, x, axis, unbiased, out, "std");
}

template <typename T>
void prod(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  const GroupGeometry g = group_geometry(make_reduce_plan(x.shape(), axis, "prod"), "prod");
  launch_groups(ctx, ProdGroup<dev_t<T>, WideAcc<T>>{dptr<T>(x), dptr<T>(out)}, g, "prod");
}

template <typename T>
void prod_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, const std::vector<int64_t>& axis, bool keepdim,
               Tensor& dx) {
  const GroupGeometry g = group_geometry(make_reduce_plan(x.shape(), axis, "prod_grad"), "prod_grad");
  if (g.out_numel == 0 || g.group == 0) return;  // no element of x
  double* prefix = static_cast<double*>(workspace(ctx, static_cast<size_t>(x.numel()) * sizeof(double)));
  launch_groups_as<1>(ctx, ProdGradGroup<dev_t<T>>{dptr<T>(x), dptr<T>(grad), dptr<T>(dx), prefix}, g, "prod_grad");
}

template <typename T>
void any(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  logical<T, false>(ctx, x, axis, out, "any");
}

template <typename T>
void all(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  logical<T, true>(ctx, x, axis, out, "all");
}

template <typename T>
void cumsum(const KernelContext& ctx, const Tensor& x, int64_t axis, bool exclusive, bool reverse, Tensor& out) {
  using D = dev_t<T>;
  using Acc = WideAcc<T>;
  const cpu::AlongAxis a = cpu::along_axis(x.shape(), axis, "cumsum");
  if (a.outer * a.n * a.inner == 0) return;
  cudaStream_t stream = stream_of(ctx);
  if (a.inner == 1) {
    const int64_t blocks = (a.outer + kThreads / 32 - 1) / (kThreads / 32);
    cumsum_rows_kernel<D, Acc><<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0, stream>>>(
        dptr<T>(x), dptr<T>(out), a.outer, a.n, exclusive, reverse);
  } else {
    cumsum_cols_kernel<D, Acc><<<blocks_for(a.outer * a.inner), kThreads, 0, stream>>>(dptr<T>(x), dptr<T>(out), a.outer, a.n,
                                                                                    a.inner, exclusive, reverse);
  }
  PD_CUDA_CHECK_LAUNCH("cumsum");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(logsumexp, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(var, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(std, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(prod, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(prod_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(any, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(all, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(cumsum, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
