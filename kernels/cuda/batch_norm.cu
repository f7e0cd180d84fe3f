// batch_norm and its gradient on CUDA, with the semantics of kernels/cpu/ref/norm.cc: x viewed as
// [N, C, inner] (channels on axis 1; channels_last: [rows, C, 1]), statistics and per-element arithmetic in double, a two-pass
// variance, the running statistics updated in place in training (running = momentum * running +
// (1 - momentum) * batch, with the unbiased batch variance), the running statistics used in eval.
// Per-channel work runs one block per channel with a fixed-order tree reduction (deterministic).
// With fuse_relu the result is relu'd, and the gradient recomputes the value from x with the saved
// (rounded) statistics, as the forward pass computed it, to find where the relu passed it.
#include <cmath>

#include "cuda/bn_channels.cuh"

namespace pd::kernels::cuda {
namespace {

// Element value of channel statistics (mean, invstd) as stored in D, so that the forward pass and the
// gradient's relu mask compute the same value.
template <typename D>
__device__ __forceinline__ double bn_value(double xv, double mean, double invstd, double g, double b0) {
  return (xv - load_as<double>(store_as<D>(mean))) * load_as<double>(store_as<D>(invstd)) * g + b0;
}

// Training: one block per channel computes the batch statistics, updates the running ones, and
// normalises the channel.
template <typename D>
__global__ void bn_train_kernel(const D* __restrict__ x, const D* __restrict__ scale, const D* __restrict__ bias,
                                D* __restrict__ rm, D* __restrict__ rv, D* __restrict__ out, D* __restrict__ sm,
                                D* __restrict__ si, ChannelView v, double momentum, double epsilon, bool relu) {
  __shared__ double shared[kBnThreads];
  const int64_t c = blockIdx.x;
  const int64_t n = v.N * v.inner;
  const auto [mean, invstd] = train_channel_stats(x, rm, rv, sm, si, v, momentum, epsilon, shared);
  const double g = scale ? load_as<double>(scale[c]) : 1.0;
  const double b0 = bias ? load_as<double>(bias[c]) : 0.0;
  for (int64_t j = threadIdx.x; j < n; j += kBnThreads) {
    const int64_t k = channel_offset(j, c, v.C, v.inner);
    const double y = bn_value<D>(load_as<double>(x[k]), mean, invstd, g, b0);
    out[k] = store_as<D>(relu && y < 0 ? 0.0 : y);  // NaN stays NaN, as relu keeps it
  }
}

template <typename D>
__global__ void bn_eval_kernel(const D* __restrict__ x, const D* __restrict__ scale, const D* __restrict__ bias,
                               const D* __restrict__ rm, const D* __restrict__ rv, D* __restrict__ out, ChannelView v,
                               double epsilon, bool relu, int64_t total) {
  PD_GRID_STRIDE(k, total) {
    const int64_t c = (k / v.inner) % v.C;
    const double mean = load_as<double>(rm[c]);
    const double invstd = 1.0 / ::sqrt(load_as<double>(rv[c]) + epsilon);
    const double g = scale ? load_as<double>(scale[c]) : 1.0;
    const double b0 = bias ? load_as<double>(bias[c]) : 0.0;
    const double y = bn_value<D>(load_as<double>(x[k]), mean, invstd, g, b0);
    out[k] = store_as<D>(relu && y < 0 ? 0.0 : y);  // NaN stays NaN, as relu keeps it
  }
}

// One block per channel: dbias = sum(g), dscale = sum(g * xhat), then dx.
template <typename D>
__global__ void bn_grad_kernel(const D* __restrict__ x, const D* __restrict__ scale, const D* __restrict__ bias,
                               const D* __restrict__ sm, const D* __restrict__ si, const D* __restrict__ grad,
                               D* __restrict__ dx, D* __restrict__ dscale, D* __restrict__ dbias, ChannelView v,
                               bool training, bool relu) {
  __shared__ double shared[kBnThreads];
  const int64_t c = blockIdx.x;
  const int64_t n = v.N * v.inner;
  const double mean = load_as<double>(sm[c]), invstd = load_as<double>(si[c]);
  const double g = scale ? load_as<double>(scale[c]) : 1.0;
  const double b0 = bias ? load_as<double>(bias[c]) : 0.0;
  // The gradient that reaches batch_norm's value: zero where a fused relu clipped it.
  auto passed = [&](int64_t k) {
    const double gv = load_as<double>(grad[k]);
    return relu && !(bn_value<D>(load_as<double>(x[k]), mean, invstd, g, b0) > 0) ? 0.0 : gv;
  };
  double sum_g = 0, sum_gx = 0;
  for (int64_t j = threadIdx.x; j < n; j += kBnThreads) {
    const int64_t k = channel_offset(j, c, v.C, v.inner);
    const double gv = passed(k);
    sum_g += gv;
    sum_gx += gv * (load_as<double>(x[k]) - mean) * invstd;
  }
  sum_g = block_sum(sum_g, shared);
  sum_gx = block_sum(sum_gx, shared);
  if (threadIdx.x == 0) {
    if (dscale) dscale[c] = store_as<D>(sum_gx);
    if (dbias) dbias[c] = store_as<D>(sum_g);
  }
  if (dx == nullptr) return;
  const double nd = static_cast<double>(n);
  for (int64_t j = threadIdx.x; j < n; j += kBnThreads) {
    const int64_t k = channel_offset(j, c, v.C, v.inner);
    const double gv = passed(k);
    if (training) {
      // Batch statistics depend on x: dx = scale*invstd/n * (n*g - sum(g) - xhat*sum(g*xhat)).
      const double xhat = (load_as<double>(x[k]) - mean) * invstd;
      dx[k] = store_as<D>(g * invstd / nd * (nd * gv - sum_g - xhat * sum_gx));
    } else {
      dx[k] = store_as<D>(gv * g * invstd);
    }
  }
}

}  // namespace

template <typename T>
void batch_norm(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& bias,
                const Tensor& running_mean, const Tensor& running_var, double momentum, double epsilon, bool training,
                bool fuse_relu, bool channels_last, Tensor& out, Tensor& saved_mean, Tensor& saved_invstd) {
  const ChannelView v = channel_view(x.shape(), channels_last);
  if (v.C == 0) return;
  PD_CHECK(v.C <= 0x7fffffffLL, ErrorCode::kNotImplemented, "batch_norm on CUDA: {} channels", v.C);
  if (training) {
    bn_train_kernel<dev_t<T>><<<static_cast<unsigned>(v.C), kBnThreads, 0, stream_of(ctx)>>>(
        dptr<T>(x), optional_ptr<T>(scale), optional_ptr<T>(bias), dptr<T>(running_mean), dptr<T>(running_var),
        dptr<T>(out), dptr<T>(saved_mean), dptr<T>(saved_invstd), v, momentum, epsilon, fuse_relu);
    PD_CUDA_CHECK_LAUNCH("batch_norm");
    return;
  }
  eval_stats_kernel<dev_t<T>><<<blocks_for(v.C), kThreads, 0, stream_of(ctx)>>>(
      dptr<T>(running_mean), dptr<T>(running_var), dptr<T>(saved_mean), dptr<T>(saved_invstd), v.C, epsilon);
  PD_CUDA_CHECK_LAUNCH("batch_norm");
  const int64_t total = out.numel();
  if (total == 0) return;
  bn_eval_kernel<dev_t<T>><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(
      dptr<T>(x), optional_ptr<T>(scale), optional_ptr<T>(bias), dptr<T>(running_mean), dptr<T>(running_var),
      dptr<T>(out), v, epsilon, fuse_relu, total);
  PD_CUDA_CHECK_LAUNCH("batch_norm");
}

template <typename T>
void batch_norm_grad(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& saved_mean,
                     const Tensor& saved_invstd, const Tensor& grad, const Tensor& bias, bool training, bool fuse_relu,
                     bool channels_last, Tensor& dx, Tensor& dscale, Tensor& dbias) {
  const ChannelView v = channel_view(x.shape(), channels_last);
  if (v.C == 0) return;
  PD_CHECK(v.C <= 0x7fffffffLL, ErrorCode::kNotImplemented, "batch_norm_grad on CUDA: {} channels", v.C);
  bn_grad_kernel<dev_t<T>><<<static_cast<unsigned>(v.C), kBnThreads, 0, stream_of(ctx)>>>(
      dptr<T>(x), optional_ptr<T>(scale), optional_ptr<T>(bias), dptr<T>(saved_mean), dptr<T>(saved_invstd),
      dptr<T>(grad), optional_out<T>(dx), optional_out<T>(dscale), optional_out<T>(dbias), v, training, fuse_relu);
  PD_CUDA_CHECK_LAUNCH("batch_norm_grad");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(batch_norm, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(batch_norm_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
