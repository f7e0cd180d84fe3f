// sort, argsort and topk on CUDA, with the semantics of kernels/cpu/ref/sort.cc: stable (equal values
// keep their order), NaN larger than every number (last ascending, first descending), along any axis,
// indices i64; topk is the first k of the sorted line (always in sorted order).
//
// How: each line along the axis becomes one contiguous segment of a scratch buffer (a strided gather
// moves the axis innermost) of order-preserving unsigned keys, which CUB's stable segmented sort sorts
// together with the positions 0 .. n-1. The keys make unsigned order the reference's order: a float's
// sign bit is flipped (and, for negatives, every bit), -0 is folded into +0 (they compare equal, so
// their order must stay), and every NaN, whatever its bits, becomes the largest key (a radix sort of the
// raw bits would put negative NaNs first). Descending sorts the complemented keys: a stable ascending
// sort of ~key is the stable descending sort with NaN first. The first `count` positions of each line
// are then scattered to [outer, count, inner] and the values read from x at them, so they keep x's
// exact bits. f16 / bf16 keys go through float (exact), so they sort as the reference does in f32.
#include <cub/device/device_segmented_sort.cuh>

#include <type_traits>

#include "cpu/common/along_axis.h"
#include "cuda/indexing.cuh"

namespace pd::kernels::cuda {
namespace {

// The unsigned key type of each element type: 64-bit for f64 and i64, 32-bit otherwise.
template <typename D> struct key_of { using type = uint32_t; };
template <> struct key_of<double> { using type = unsigned long long; };
template <> struct key_of<int64_t> { using type = unsigned long long; };
template <typename D> using sort_key_t = typename key_of<D>::type;

template <typename D>
__device__ __forceinline__ sort_key_t<D> sort_key(D v) {
  if constexpr (std::is_same_v<D, double>) {
    if (v != v) return ~0ULL;
    if (v == 0.0) v = 0.0;  // -0 -> +0
    const auto b = static_cast<unsigned long long>(__double_as_longlong(v));
    return (b >> 63) ? ~b : (b | (1ULL << 63));
  } else if constexpr (std::is_same_v<D, int64_t>) {
    return static_cast<unsigned long long>(v) ^ (1ULL << 63);
  } else if constexpr (std::is_same_v<D, int32_t>) {
    return static_cast<uint32_t>(v) ^ 0x80000000u;
  } else {  // float, __half, __nv_bfloat16: as float
    float f = load_as<float>(v);
    if (f != f) return 0xffffffffu;
    if (f == 0.0f) f = 0.0f;
    const uint32_t b = __float_as_uint(f);
    return (b >> 31) ? ~b : (b | 0x80000000u);
  }
}

// keys / pos [rows, n] (row r = o * inner + i) from x [outer, n, inner].
template <typename D>
__global__ void make_keys_kernel(const D* __restrict__ x, sort_key_t<D>* __restrict__ keys, int64_t* __restrict__ pos,
                                 int64_t n, int64_t inner, bool descending, int64_t total) {
  PD_GRID_STRIDE(p, total) {
    const int64_t k = p % n, r = p / n, o = r / inner, i = r % inner;
    const sort_key_t<D> key = sort_key<D>(x[(o * n + k) * inner + i]);
    keys[p] = descending ? ~key : key;
    pos[p] = k;
  }
}

__global__ void segment_offsets_kernel(int64_t* __restrict__ offsets, int64_t n, int64_t rows) {
  PD_GRID_STRIDE(r, rows + 1) { offsets[r] = r * n; }
}

// indices / values [outer, count, inner] from the sorted positions `order` [rows, n]. U: x's raw bits.
template <typename U>
__global__ void write_sorted_kernel(const U* __restrict__ x, const int64_t* __restrict__ order, U* __restrict__ values,
                                    int64_t* __restrict__ indices, int64_t n, int64_t count, int64_t inner, int64_t total) {
  PD_GRID_STRIDE(q, total) {
    const int64_t i = q % inner, rest = q / inner, k = rest % count, o = rest / count;
    const int64_t id = order[(o * inner + i) * n + k];
    indices[q] = id;
    if (values) values[q] = x[(o * n + id) * inner + i];
  }
}

inline size_t align_up(size_t v) { return (v + 255) / 256 * 256; }

// The reference's write_sorted: the first `count` of each sorted line into values (optional) and indices.
template <typename T>
void write_sorted(const KernelContext& ctx, const Tensor& x, int64_t axis, bool descending, int64_t count, Tensor* values,
                  Tensor& indices, const char* op) {
  const cpu::AlongAxis g = cpu::along_axis(x.shape(), axis, op);  // raises for a bad axis, as the reference
  if (x.numel() == 0 || count == 0) return;
  using D = dev_t<T>;
  using K = sort_key_t<D>;
  cudaStream_t stream = stream_of(ctx);
  const int64_t rows = g.outer * g.inner, total = rows * g.n;

  // One scratch buffer (the size query takes the same argument types as the sort): keys in / out, positions in / out, segment offsets, CUB's temporary storage.
  size_t cub_bytes = 0;
  PD_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(nullptr, cub_bytes, static_cast<const K*>(nullptr),
                                                          static_cast<K*>(nullptr), static_cast<const int64_t*>(nullptr),
                                                          static_cast<int64_t*>(nullptr), total, rows,
                                                          static_cast<int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
                                                          stream));
  const size_t key_bytes = align_up(sizeof(K) * static_cast<size_t>(total));
  const size_t pos_bytes = align_up(sizeof(int64_t) * static_cast<size_t>(total));
  const size_t off_bytes = align_up(sizeof(int64_t) * static_cast<size_t>(rows + 1));
  const size_t bytes = 2 * key_bytes + 2 * pos_bytes + off_bytes + align_up(cub_bytes);
  Tensor scratch = Tensor::empty({static_cast<int64_t>(bytes)}, DType::u8, ctx.place);
  char* base = static_cast<char*>(scratch.raw_data());
  K* keys_in = reinterpret_cast<K*>(base);
  K* keys_out = reinterpret_cast<K*>(base + key_bytes);
  int64_t* pos_in = reinterpret_cast<int64_t*>(base + 2 * key_bytes);
  int64_t* pos_out = reinterpret_cast<int64_t*>(base + 2 * key_bytes + pos_bytes);
  int64_t* offsets = reinterpret_cast<int64_t*>(base + 2 * key_bytes + 2 * pos_bytes);
  void* temp = base + 2 * key_bytes + 2 * pos_bytes + off_bytes;

  make_keys_kernel<D><<<blocks_for(total), kThreads, 0, stream>>>(dptr<T>(x), keys_in, pos_in, g.n, g.inner, descending,
                                                                  total);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
  segment_offsets_kernel<<<blocks_for(rows + 1), kThreads, 0, stream>>>(offsets, g.n, rows);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
  PD_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(temp, cub_bytes, keys_in, keys_out, pos_in, pos_out, total, rows,
                                                          offsets, offsets + 1, stream));

  const int64_t out_total = g.outer * count * g.inner;
  using U = bits_t<T>;
  write_sorted_kernel<U><<<blocks_for(out_total), kThreads, 0, stream>>>(
      static_cast<const U*>(x.raw_data()), pos_out, values ? static_cast<U*>(values->raw_data()) : nullptr,
      static_cast<int64_t*>(indices.raw_data()), g.n, count, g.inner, out_total);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
}

}  // namespace

template <typename T>
void sort(const KernelContext& ctx, const Tensor& x, int64_t axis, bool descending, Tensor& values, Tensor& indices) {
  write_sorted<T>(ctx, x, axis, descending, cpu::along_axis(x.shape(), axis, "sort").n, &values, indices, "sort");
}

template <typename T>
void argsort(const KernelContext& ctx, const Tensor& x, int64_t axis, bool descending, Tensor& indices) {
  write_sorted<T>(ctx, x, axis, descending, cpu::along_axis(x.shape(), axis, "argsort").n, nullptr, indices, "argsort");
}

// sorted = false allows any order; the sorted one is as good.
template <typename T>
void topk(const KernelContext& ctx, const Tensor& x, int64_t k, int64_t axis, bool largest, bool sorted, Tensor& values,
          Tensor& indices) {
  write_sorted<T>(ctx, x, axis, largest, k, &values, indices, "topk");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(sort, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(argsort, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(topk, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
