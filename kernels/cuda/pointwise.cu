// Pointwise kernels: the fused activation backwards (relu_grad sigmoid_grad tanh_grad gelu_grad, through
// map_elementwise), comparisons (bool out, T = input dtype), where (bool cond, T = dtype of x and y)
// and cast (T = input dtype, the output type from out.dtype()), all with NumPy broadcasting.
#include <type_traits>

#include "cuda/elementwise.cuh"

namespace pd::kernels::cuda {
namespace {

// ---- activation backwards: f(first input, grad) in acc_t<T>, the reference formulas ----

struct ReluGradOp {
  template <typename C>
  __device__ C operator()(C x, C g) const { return x > C(0) ? g : C(0); }
};
struct SigmoidGradOp {
  template <typename C>
  __device__ C operator()(C o, C g) const { return g * o * (C(1) - o); }
};
struct TanhGradOp {
  template <typename C>
  __device__ C operator()(C o, C g) const { return g * (C(1) - o * o); }
};
struct GeluGradOp {  // Phi(x) + x * phi(x)
  template <typename C>
  __device__ C operator()(C x, C g) const {
    return g * (C(0.5) * (C(1) + ::erf(x * C(0.70710678118654752440))) + x * C(0.39894228040143267794) * ::exp(C(-0.5) * x * x));
  }
};

// ---- broadcast offsets for kernels whose operands have different element types ----

template <int N>
__device__ __forceinline__ void broadcast_offsets(const EwiseGeometry<N>& g, int64_t i, int64_t (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = g.nd - 1; d >= 0; --d) {
    const int64_t coord = i % g.shape[d];
    i /= g.shape[d];
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += coord * g.strides[k][d];
  }
}

struct EqualOp {
  template <typename C>
  __device__ bool operator()(C a, C b) const { return a == b; }
};
struct GreaterOp {
  template <typename C>
  __device__ bool operator()(C a, C b) const { return a > b; }
};
struct LessOp {
  template <typename C>
  __device__ bool operator()(C a, C b) const { return a < b; }
};
struct GreaterEqualOp {
  template <typename C>
  __device__ bool operator()(C a, C b) const { return a >= b; }
};
struct LessEqualOp {
  template <typename C>
  __device__ bool operator()(C a, C b) const { return a <= b; }
};
struct AndOp {
  __device__ bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  __device__ bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  __device__ bool operator()(bool a, bool b) const { return a != b; }
};

template <typename D, typename C, typename F>
__global__ void compare_kernel(bool* __restrict__ out, const D* __restrict__ x, const D* __restrict__ y, EwiseGeometry<2> g,
                               int64_t n, F f) {
  PD_GRID_STRIDE(i, n) {
    int64_t off[2];
    broadcast_offsets<2>(g, i, off);
    out[i] = f(load_as<C>(x[off[0]]), load_as<C>(y[off[1]]));
  }
}

template <typename T, typename F>
void compare(const KernelContext& ctx, const char* op, const Tensor& x, const Tensor& y, Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const EwiseGeometry<2> g = ewise_geometry<2>(op, out, {&x, &y});
  compare_kernel<dev_t<T>, acc_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
      reinterpret_cast<bool*>(out.raw_data()), dptr<T>(x), dptr<T>(y), g, n, f);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
}

template <typename D>
__global__ void where_kernel(D* __restrict__ out, const bool* __restrict__ cond, const D* __restrict__ x,
                             const D* __restrict__ y, EwiseGeometry<3> g, int64_t n) {
  PD_GRID_STRIDE(i, n) {
    int64_t off[3];
    broadcast_offsets<3>(g, i, off);
    out[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
  }
}

// ---- cast: the conversions of pd::convert (16-bit types go through float, bool is v != 0) ----

template <typename D>
inline constexpr bool is_16bit_v = std::is_same_v<D, __half> || std::is_same_v<D, __nv_bfloat16>;

template <typename DO, typename DI>
__device__ __forceinline__ DO convert_value(DI v) {
  if constexpr (is_16bit_v<DI>) {
    return convert_value<DO>(load_as<float>(v));
  } else if constexpr (is_16bit_v<DO>) {
    return store_as<DO>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<DO, bool>) {
    return v != DI(0);
  } else {
    return static_cast<DO>(v);
  }
}

template <typename DO, typename DI>
__global__ void cast_kernel(DO* __restrict__ out, const DI* __restrict__ x, int64_t n) {
  PD_GRID_STRIDE(i, n) { out[i] = convert_value<DO>(x[i]); }
}

}  // namespace

template <typename T>
void relu_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, Tensor& dx) {
  map_elementwise<T>(ctx, "relu_grad", ReluGradOp{}, dx, x, grad);
}

template <typename T>
void sigmoid_grad(const KernelContext& ctx, const Tensor& out, const Tensor& grad, Tensor& dx) {
  map_elementwise<T>(ctx, "sigmoid_grad", SigmoidGradOp{}, dx, out, grad);
}

template <typename T>
void tanh_grad(const KernelContext& ctx, const Tensor& out, const Tensor& grad, Tensor& dx) {
  map_elementwise<T>(ctx, "tanh_grad", TanhGradOp{}, dx, out, grad);
}

template <typename T>
void gelu_grad(const KernelContext& ctx, const Tensor& x, const Tensor& grad, Tensor& dx) {
  map_elementwise<T>(ctx, "gelu_grad", GeluGradOp{}, dx, x, grad);
}

template <typename T>
void equal(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  compare<T>(ctx, "equal", x, y, out, EqualOp{});
}

template <typename T>
void greater(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  compare<T>(ctx, "greater", x, y, out, GreaterOp{});
}

template <typename T>
void less(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  compare<T>(ctx, "less", x, y, out, LessOp{});
}

template <typename T>
void greater_equal(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  compare<T>(ctx, "greater_equal", x, y, out, GreaterEqualOp{});
}

template <typename T>
void less_equal(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  compare<T>(ctx, "less_equal", x, y, out, LessEqualOp{});
}

template <typename T>
void logical_and(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  compare<T>(ctx, "logical_and", x, y, out, AndOp{});
}

template <typename T>
void logical_or(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  compare<T>(ctx, "logical_or", x, y, out, OrOp{});
}

template <typename T>
void logical_xor(const KernelContext& ctx, const Tensor& x, const Tensor& y, Tensor& out) {
  compare<T>(ctx, "logical_xor", x, y, out, XorOp{});
}

template <typename T>
void where(const KernelContext& ctx, const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const EwiseGeometry<3> g = ewise_geometry<3>("where", out, {&cond, &x, &y});
  where_kernel<dev_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(
      dptr<T>(out), reinterpret_cast<const bool*>(cond.raw_data()), dptr<T>(x), dptr<T>(y), g, n);
  PD_CUDA_CHECK_LAUNCH("where");
}

template <typename T>
void cast(const KernelContext& ctx, const Tensor& x, DType dtype, Tensor& out) {
  const int64_t n = x.numel();
  if (n == 0) return;
  visit_dtype(out.dtype(), [&]<typename O>() {
    cast_kernel<dev_t<O>, dev_t<T>><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<O>(out), dptr<T>(x), n);
  });
  PD_CUDA_CHECK_LAUNCH("cast");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(relu_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(sigmoid_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(tanh_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(gelu_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(equal, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t, bool)
PD_INSTANTIATE_KERNELS(greater, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(less, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(greater_equal, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(less_equal, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(logical_and, cuda, bool)
PD_INSTANTIATE_KERNELS(logical_or, cuda, bool)
PD_INSTANTIATE_KERNELS(logical_xor, cuda, bool)
PD_INSTANTIATE_KERNELS(where, cuda, float, double, ::pd::float16, ::pd::bfloat16, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(cast, cuda, float, double, ::pd::float16, ::pd::bfloat16, int8_t, uint8_t, int32_t, int64_t, bool)
