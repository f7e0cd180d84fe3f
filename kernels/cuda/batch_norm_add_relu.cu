// batch_norm_add_relu and its gradient on CUDA, with the semantics of kernels/cpu/ref/norm.cc:
//
//   out = relu(batch_norm(x) + residual)
//   g'  = grad where out > 0, else 0       (dresidual = g')
//   dx, dscale, dbias = batch_norm's gradient of g'
//
// x is viewed as [N, C, inner] (channels on axis 1; channels_last: [rows, C, 1]). The structure is
// batch_norm.cu's: in training one block per channel computes the batch statistics in double (two-pass
// variance), folds them into the running ones in place (running = momentum * running + (1 - momentum) *
// batch, with the unbiased variance; nothing is folded for an empty channel), saves them, and writes
// the channel's outputs; in eval a grid-stride pass uses the running statistics. The per-element value
// uses the saved statistics rounded to acc_t<T> (the reference's f32 / f64; float for f16 / bf16, whose
// reference is the f32 one) and the residual and relu are applied in the same pass, so x and the residual
// are each read once after the statistics. The gradient is one block per channel: the sums of g' and
// g' * (x - mean) with a fixed-order tree reduction (deterministic), then dx and dresidual.
#include <cmath>

#include "cuda/bn_channels.cuh"

namespace pd::kernels::cuda {
namespace {

// A statistic as the reference holds it: rounded to the arithmetic type (f32 for f32 / f16 / bf16, f64 for f64).
template <typename A>
__device__ __forceinline__ double rounded(double v) {
  return static_cast<double>(static_cast<A>(v));
}

// relu(batch_norm value + residual); NaN stays NaN (as std::max(v, 0) keeps it).
__device__ __forceinline__ double add_relu(double xv, double mean, double invstd, double g, double b0, double r) {
  const double y = (xv - mean) * invstd * g + b0 + r;
  return y < 0 ? 0.0 : y;
}

template <typename D, typename A>
__global__ void bnar_train_kernel(const D* __restrict__ x, const D* __restrict__ res, const D* __restrict__ scale,
                                  const D* __restrict__ bias, D* __restrict__ rm, D* __restrict__ rv, D* __restrict__ out,
                                  D* __restrict__ sm, D* __restrict__ si, ChannelView v, double momentum, double epsilon) {
  __shared__ double shared[kBnThreads];
  const int64_t c = blockIdx.x;
  const int64_t n = v.N * v.inner;
  const auto [mean, invstd] = train_channel_stats(x, rm, rv, sm, si, v, momentum, epsilon, shared);
  const double mr = rounded<A>(mean), ir = rounded<A>(invstd);
  const double g = scale ? load_as<double>(scale[c]) : 1.0;
  const double b0 = bias ? load_as<double>(bias[c]) : 0.0;
  for (int64_t j = threadIdx.x; j < n; j += kBnThreads) {
    const int64_t k = channel_offset(j, c, v.C, v.inner);
    out[k] = store_as<D>(add_relu(load_as<double>(x[k]), mr, ir, g, b0, load_as<double>(res[k])));
  }
}

template <typename D, typename A>
__global__ void bnar_eval_kernel(const D* __restrict__ x, const D* __restrict__ res, const D* __restrict__ scale,
                                 const D* __restrict__ bias, const D* __restrict__ rm, const D* __restrict__ rv,
                                 D* __restrict__ out, ChannelView v, double epsilon, int64_t total) {
  PD_GRID_STRIDE(k, total) {
    const int64_t c = (k / v.inner) % v.C;
    const double mean = load_as<double>(rm[c]);
    const double invstd = rounded<A>(1.0 / ::sqrt(load_as<double>(rv[c]) + epsilon));
    const double g = scale ? load_as<double>(scale[c]) : 1.0;
    const double b0 = bias ? load_as<double>(bias[c]) : 0.0;
    out[k] = store_as<D>(add_relu(load_as<double>(x[k]), mean, invstd, g, b0, load_as<double>(res[k])));
  }
}

// One block per channel: g' = grad where out > 0; dbias = sum(g'), dscale = sum(g' * (x - mean)) * invstd;
// dx = a * g' + kx * (x - mean) + k0 with a = scale * invstd (training: kx = -a * invstd * dscale / n,
// k0 = -a * dbias / n; eval: kx = k0 = 0), as the reference's grad_constants.
template <typename D>
__global__ void bnar_grad_kernel(const D* __restrict__ x, const D* __restrict__ scale, const D* __restrict__ sm,
                                 const D* __restrict__ si, const D* __restrict__ out, const D* __restrict__ grad,
                                 D* __restrict__ dx, D* __restrict__ dres, D* __restrict__ dscale, D* __restrict__ dbias,
                                 ChannelView v, bool training) {
  __shared__ double shared[kBnThreads];
  const int64_t c = blockIdx.x;
  const int64_t n = v.N * v.inner;
  const double mean = load_as<double>(sm[c]), invstd = load_as<double>(si[c]);
  const double a = (scale ? load_as<double>(scale[c]) : 1.0) * invstd;
  auto passed = [&](int64_t k) { return load_as<double>(out[k]) > 0 ? load_as<double>(grad[k]) : 0.0; };
  double sum_g = 0, sum_gd = 0;
  for (int64_t j = threadIdx.x; j < n; j += kBnThreads) {
    const int64_t k = channel_offset(j, c, v.C, v.inner);
    const double gv = passed(k);
    sum_g += gv;
    sum_gd += gv * (load_as<double>(x[k]) - mean);
  }
  sum_g = block_sum(sum_g, shared);
  sum_gd = block_sum(sum_gd, shared);
  const double sum_gx = sum_gd * invstd;
  if (threadIdx.x == 0) {
    if (dscale) dscale[c] = store_as<D>(sum_gx);
    if (dbias) dbias[c] = store_as<D>(sum_g);
  }
  const double nn = n > 0 ? static_cast<double>(n) : 1.0;
  const double kx = training ? -a * invstd * sum_gx / nn : 0.0, k0 = training ? -a * sum_g / nn : 0.0;
  for (int64_t j = threadIdx.x; j < n; j += kBnThreads) {
    const int64_t k = channel_offset(j, c, v.C, v.inner);
    const double gv = passed(k);
    if (dres) dres[k] = store_as<D>(gv);
    if (dx) dx[k] = store_as<D>(a * gv + kx * (load_as<double>(x[k]) - mean) + k0);
  }
}

}  // namespace

template <typename T>
void batch_norm_add_relu(const KernelContext& ctx, const Tensor& x, const Tensor& residual, const Tensor& scale,
                         const Tensor& bias, const Tensor& running_mean, const Tensor& running_var, double momentum,
                         double epsilon, bool training, bool channels_last, Tensor& out, Tensor& saved_mean,
                         Tensor& saved_invstd) {
  const ChannelView v = channel_view(x.shape(), channels_last);
  if (v.C == 0) return;
  PD_CHECK(v.C <= 0x7fffffffLL, ErrorCode::kNotImplemented, "batch_norm_add_relu on CUDA: {} channels", v.C);
  using D = dev_t<T>;
  using A = acc_t<T>;
  if (training) {
    bnar_train_kernel<D, A><<<static_cast<unsigned>(v.C), kBnThreads, 0, stream_of(ctx)>>>(
        dptr<T>(x), dptr<T>(residual), optional_ptr<T>(scale), optional_ptr<T>(bias), dptr<T>(running_mean),
        dptr<T>(running_var), dptr<T>(out), dptr<T>(saved_mean), dptr<T>(saved_invstd), v, momentum, epsilon);
    PD_CUDA_CHECK_LAUNCH("batch_norm_add_relu");
    return;
  }
  eval_stats_kernel<D><<<blocks_for(v.C), kThreads, 0, stream_of(ctx)>>>(
      dptr<T>(running_mean), dptr<T>(running_var), dptr<T>(saved_mean), dptr<T>(saved_invstd), v.C, epsilon);
  PD_CUDA_CHECK_LAUNCH("batch_norm_add_relu");
  const int64_t total = out.numel();
  if (total == 0) return;
  bnar_eval_kernel<D, A><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(
      dptr<T>(x), dptr<T>(residual), optional_ptr<T>(scale), optional_ptr<T>(bias), dptr<T>(running_mean),
      dptr<T>(running_var), dptr<T>(out), v, epsilon, total);
  PD_CUDA_CHECK_LAUNCH("batch_norm_add_relu");
}

template <typename T>
void batch_norm_add_relu_grad(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& saved_mean,
                              const Tensor& saved_invstd, const Tensor& out, const Tensor& grad, bool training,
                              bool channels_last, Tensor& dx, Tensor& dresidual, Tensor& dscale, Tensor& dbias) {
  const ChannelView v = channel_view(x.shape(), channels_last);
  if (v.C == 0) return;
  PD_CHECK(v.C <= 0x7fffffffLL, ErrorCode::kNotImplemented, "batch_norm_add_relu_grad on CUDA: {} channels", v.C);
  bnar_grad_kernel<dev_t<T>><<<static_cast<unsigned>(v.C), kBnThreads, 0, stream_of(ctx)>>>(
      dptr<T>(x), optional_ptr<T>(scale), dptr<T>(saved_mean), dptr<T>(saved_invstd), dptr<T>(out), dptr<T>(grad),
      optional_out<T>(dx), optional_out<T>(dresidual), optional_out<T>(dscale), optional_out<T>(dbias), v, training);
  PD_CUDA_CHECK_LAUNCH("batch_norm_add_relu_grad");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(batch_norm_add_relu, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(batch_norm_add_relu_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
