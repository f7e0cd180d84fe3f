// The reduce plan (cpu/common/reduce.h) on the device, and a launcher that hands each group of it to a
// thread, a warp or a block. For the reductions that are more than one fold (logsumexp's max then sum,
// var's mean then squared deviations, prod_grad's prefix products), where reduce.cu's single-state
// reducers do not fit; reduce.cu's launches read the same geometry.
//
// Element k of output o's group is at kept_offset(o) + reduced_offset(k), k row-major over the reduced
// dims (for one reduced axis, k is the position along it).
#pragma once
#include "cpu/common/reduce.h"
#include "cuda/reduce_common.cuh"

namespace pd::kernels::cuda {

inline constexpr int kMaxGroupDims = 12;

struct GroupGeometry {
  int nk = 0, nr = 0;
  int64_t kshape[kMaxGroupDims] = {}, kstride[kMaxGroupDims] = {};
  int64_t rshape[kMaxGroupDims] = {}, rstride[kMaxGroupDims] = {};
  int64_t out_numel = 0, group = 0;

  __device__ int64_t kept_offset(int64_t o) const {
    int64_t off = 0;
    for (int d = nk - 1; d >= 0; --d) {
      off += (o % kshape[d]) * kstride[d];
      o /= kshape[d];
    }
    return off;
  }
  __device__ int64_t reduced_offset(int64_t k) const {
    if (nr == 1) return k * rstride[0];
    int64_t off = 0;
    for (int d = nr - 1; d >= 0; --d) {
      off += (k % rshape[d]) * rstride[d];
      k /= rshape[d];
    }
    return off;
  }
  // The innermost dim is reduced: a group's elements are contiguous runs.
  bool rows() const { return nr > 0 && rstride[nr - 1] == 1; }
};

inline GroupGeometry group_geometry(const cpu::ReducePlan& p, const char* op) {
  PD_CHECK(p.kept_shape.size() <= kMaxGroupDims && p.red_shape.size() <= kMaxGroupDims, ErrorCode::kNotImplemented,
           "{}: reducing a tensor with more than {} non-mergeable dimensions on CUDA", op, kMaxGroupDims);
  GroupGeometry g;
  g.nk = static_cast<int>(p.kept_shape.size());
  g.nr = static_cast<int>(p.red_shape.size());
  for (int d = 0; d < g.nk; ++d) {
    g.kshape[d] = p.kept_shape[d];
    g.kstride[d] = p.kept_strides[d];
  }
  for (int d = 0; d < g.nr; ++d) {
    g.rshape[d] = p.red_shape[d];
    g.rstride[d] = p.red_strides[d];
  }
  g.out_numel = p.out_numel;
  g.group = p.group_size;
  return g;
}

// The G lanes (1, 32 or the whole block) that share one group: lane walks k = lane, lane + G, ...;
// all() combines a value over the lanes and gives every lane the result.
template <int G>
struct GroupLanes {
  int lane;
  void* shared;  // 32 slots of up to 8 bytes, for the block form
  template <typename S, typename C>
  __device__ __forceinline__ S all(S s, C combine) const {
    if constexpr (G == 1) return s;
    else if constexpr (G == 32) return warp_allreduce(s, combine);
    else return block_allreduce(s, combine, static_cast<S*>(shared));
  }
};

// f(o, base, lanes, g) for every output o, G lanes each; base = g.kept_offset(o).
template <int G, typename F>
__global__ void group_kernel(F f, GroupGeometry g) {
  __shared__ double shared[32];  // 8-byte slots for any state type
  const int lane = G == 1 ? 0 : static_cast<int>(threadIdx.x % G);
  const int64_t per_block = blockDim.x / G;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * per_block + threadIdx.x / G; o < g.out_numel;
       o += static_cast<int64_t>(gridDim.x) * per_block)
    f(o, g.kept_offset(o), GroupLanes<G>{lane, shared}, g);
}

template <int G, typename F>
void launch_groups_as(const KernelContext& ctx, const F& f, const GroupGeometry& g, const char* op) {
  if (g.out_numel == 0) return;
  const int64_t per_block = kThreads / G;
  const int64_t blocks = (g.out_numel + per_block - 1) / per_block;
  group_kernel<G, F><<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0, stream_of(ctx)>>>(f, g);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
}

// Picks the lanes per group: a thread when neighbouring outputs are neighbours in memory (or groups are
// tiny) and there are enough outputs, a block for a few long groups, else a warp.
template <typename F>
void launch_groups(const KernelContext& ctx, const F& f, const GroupGeometry& g, const char* op) {
  if (g.group <= 4 || (!g.rows() && g.out_numel >= 4096)) launch_groups_as<1>(ctx, f, g, op);
  else if (g.out_numel < 512 && g.group > 2048) launch_groups_as<kThreads>(ctx, f, g, op);
  else launch_groups_as<32>(ctx, f, g, op);
}

}  // namespace pd::kernels::cuda
