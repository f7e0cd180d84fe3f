// Scatter-adds on CUDA: gather_grad (the adjoint of gather and index_select), scatter_add (of
// take_along_axis) and embedding_grad, as the reference kernels in cpu/ref/index.cc and embedding.cc.
// Every tensor is contiguous (the op API makes it so). The indices are range-checked on the device
// before anything is written (indexing.cuh: one stream synchronisation per call).
//
// Repeated indices accumulate into one slot through atomicAdd, one thread per added element; the
// floating-point results are therefore not bit-deterministic (the order of the additions varies).
// Under `deterministic: true` the floating kernels refuse to run (pd/core/determinism.h).
// f32 / f64 add in place; f16 / bf16 add into a float buffer that is rounded into the output once at
// the end; i32 / i64 (scatter_add) add with two's-complement atomics, so overflow wraps as the
// reference's cpu::wrapping does.
#include <type_traits>

#include "cpu/common/along_axis.h"
#include "cuda/indexing.cuh"
#include "pd/core/determinism.h"

namespace pd::kernels::cuda {
namespace {

template <typename T>
inline constexpr bool kViaFloat = std::is_same_v<T, ::pd::float16> || std::is_same_v<T, ::pd::bfloat16>;

// What a slot accumulates in: float for f16 / bf16, the element type otherwise.
template <typename T>
using slot_t = std::conditional_t<kViaFloat<T>, float, dev_t<T>>;

template <typename A>
__device__ __forceinline__ void atomic_add(A* p, A v) {
  if constexpr (std::is_same_v<A, int64_t>)  // unsigned: the same bits, wrapping
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  else
    atomicAdd(p, v);  // float, double, int
}

// slots[o, index[j], :] += grad[o, j, :] over [outer, m, inner] (slots [outer, n, inner]); rows whose
// index is `skip` are left out (embedding's padding_idx; -1 never matches).
template <typename A, typename D, typename I>
__global__ void add_rows_kernel(A* __restrict__ slots, const D* __restrict__ grad, const I* __restrict__ idx, int64_t m,
                                int64_t n, int64_t inner, int64_t skip, int64_t total) {
  PD_GRID_STRIDE(p, total) {
    const int64_t i = p % inner, r = p / inner, j = r % m, o = r / m;
    const int64_t k = wrap_index(idx[j], n);
    if (k == skip) continue;
    atomic_add(slots + (o * n + k) * inner + i, load_as<A>(grad[p]));
  }
}

// slots[o, index[o, j, i], i] += src[o, j, i]; index and src are [outer, k, inner], slots [outer, xn, x_inner].
template <typename A, typename D, typename I>
__global__ void add_along_kernel(A* __restrict__ slots, const D* __restrict__ src, const I* __restrict__ idx, int64_t xn,
                                 int64_t x_inner, int64_t k, int64_t inner, int64_t total) {
  PD_GRID_STRIDE(p, total) {
    const int64_t i = p % inner, o = p / (k * inner);
    atomic_add(slots + (o * xn + wrap_index(idx[p], xn)) * x_inner + i, load_as<A>(src[p]));
  }
}

template <typename D>
__global__ void widen_kernel(const D* __restrict__ x, float* __restrict__ buf, int64_t n) {
  PD_GRID_STRIDE(i, n) { buf[i] = load_as<float>(x[i]); }
}

template <typename D>
__global__ void narrow_kernel(const float* __restrict__ buf, D* __restrict__ out, int64_t n) {
  PD_GRID_STRIDE(i, n) { out[i] = store_as<D>(buf[i]); }
}

// The slots the adds land in, starting as `init` (zeros when null): out itself, or for f16 / bf16 a
// float buffer that finish() rounds into out. out must not be empty.
template <typename T>
class Slots {
 public:
  Slots(const KernelContext& ctx, Tensor& out, const Tensor* init) : ctx_(ctx), out_(out) {
    const int64_t n = out.numel();
    cudaStream_t stream = stream_of(ctx);
    if constexpr (kViaFloat<T>) {
      buf_ = Tensor::empty(out.shape(), DType::f32, ctx.place);  // from the stream-ordered caching allocator
      float* b = static_cast<float*>(buf_.raw_data());
      if (init != nullptr) {
        widen_kernel<dev_t<T>><<<blocks_for(n), kThreads, 0, stream>>>(dptr<T>(*init), b, n);
        PD_CUDA_CHECK_LAUNCH("scatter-add widen");
      } else {
        PD_CUDA_CHECK(cudaMemsetAsync(b, 0, static_cast<size_t>(n) * sizeof(float), stream));
      }
      slots_ = b;
    } else {
      const size_t bytes = static_cast<size_t>(n) * sizeof(T);
      if (init != nullptr)
        PD_CUDA_CHECK(cudaMemcpyAsync(out.raw_data(), init->raw_data(), bytes, cudaMemcpyDeviceToDevice, stream));
      else
        PD_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, bytes, stream));  // 0 is all-zero bits
      slots_ = dptr<T>(out);
    }
  }
  slot_t<T>* get() const { return slots_; }
  void finish() {
    if constexpr (kViaFloat<T>) {
      const int64_t n = out_.numel();
      narrow_kernel<dev_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx_)>>>(slots_, dptr<T>(out_), n);
      PD_CUDA_CHECK_LAUNCH("scatter-add narrow");
    }
  }

 private:
  const KernelContext& ctx_;
  Tensor& out_;
  Tensor buf_;
  slot_t<T>* slots_ = nullptr;
};

// grad [outer, m, inner] added into the rows of out [outer, n, inner] that index (m values, checked) names.
template <typename T, typename I>
void add_rows(const KernelContext& ctx, const Tensor& grad, const Tensor& index, int64_t outer, int64_t n, int64_t inner,
              int64_t skip, Tensor& out, const char* op) {
  if (out.numel() == 0) return;
  Slots<T> slots(ctx, out, nullptr);
  const int64_t m = index.numel(), total = outer * m * inner;
  if (total > 0) {
    add_rows_kernel<slot_t<T>, dev_t<T>, I><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(
        slots.get(), dptr<T>(grad), reinterpret_cast<const I*>(index.raw_data()), m, n, inner, skip, total);
    check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
  }
  slots.finish();
}

}  // namespace

template <typename T>
void gather_grad(const KernelContext& ctx, const Tensor& index, const Tensor& grad, const std::vector<int64_t>& input_shape,
                 int64_t axis, Tensor& dx) {
  if constexpr (!std::is_integral_v<T>) require_nondeterministic_allowed("gather_grad", "CUDA");
  const int64_t a = normalize_axis(axis, dx.dim(), "gather_grad");
  const cpu::AlongAxis g = cpu::along_axis(dx.shape(), a, "gather_grad");
  visit_index(index, "gather_grad", "index", [&]<typename I>() {
    check_axis_indices<I>(ctx, index, g.n, a, "gather_grad");
    add_rows<T, I>(ctx, grad, index, g.outer, g.n, g.inner, -1, dx, "gather_grad kernel launch");
  });
}

// out = x; out[o, index[o, j, i], i] += src[o, j, i] (repeated indices accumulate).
template <typename T>
void scatter_add(const KernelContext& ctx, const Tensor& x, const Tensor& index, const Tensor& src, int64_t axis,
                 Tensor& out) {
  if constexpr (!std::is_integral_v<T>) require_nondeterministic_allowed("scatter_add", "CUDA");
  const cpu::AlongAxis g = cpu::along_axis(x.shape(), axis, "scatter_add");
  const cpu::AlongAxis gi = cpu::along_axis(index.shape(), axis, "scatter_add");
  const int64_t a = x.dim() == 0 ? 0 : normalize_axis(axis, x.dim(), "scatter_add");
  visit_index(index, "scatter_add", "index", [&]<typename I>() {
    check_axis_indices<I>(ctx, index, g.n, a, "scatter_add");
    if (out.numel() == 0) return;
    Slots<T> slots(ctx, out, &x);
    const int64_t total = index.numel();
    if (total > 0) {
      add_along_kernel<slot_t<T>, dev_t<T>, I><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(
          slots.get(), dptr<T>(src), reinterpret_cast<const I*>(index.raw_data()), g.n, g.inner, gi.n, gi.inner, total);
      PD_CUDA_CHECK_LAUNCH("scatter_add");
    }
    slots.finish();
  });
}

template <typename T>
void embedding_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, const std::vector<int64_t>& weight_shape,
                    int64_t padding_idx, Tensor& dweight) {
  if constexpr (!std::is_integral_v<T>) require_nondeterministic_allowed("embedding_grad", "CUDA");
  const int64_t V = dweight.shape()[0], D = dweight.shape()[1];
  visit_index(x, "embedding_grad", "x", [&]<typename I>() {
    check_ids<I>(ctx, x, V, "embedding_grad");
    // The padding row is frozen: it receives no gradient.
    add_rows<T, I>(ctx, grad, x, 1, V, D, padding_idx >= 0 ? padding_idx : -1, dweight, "embedding_grad kernel launch");
  });
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(gather_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(scatter_add, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(embedding_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
