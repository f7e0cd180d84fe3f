// fused_conv2d and fused_conv2d_maxpool on CUDA, with the semantics of kernels/cpu/ref/fused.cc and
// kernels/cpu/ref/conv_maxpool.cc:
//
//   fused_conv2d:         out = activation(conv2d(x, weight) + bias + residual)
//   fused_conv2d_maxpool: out = max_pool2d(activation(conv2d(x, weight) + bias))
//
// The convolution is the CUDA conv2d kernel (cuDNN, conv.cu; NCHW, groups, dilation), run without its
// bias; one epilogue pass over its result then adds the bias and the residual and applies the
// activation, in the reference's order (conv + bias, then + residual, then the activation with the
// formulas of elementwise_ops.h). cuDNN's own fused conv-bias-activation covers only relu and identity
// and an alpha2-scaled residual, so the epilogue is ours; it costs one read and write of the output.
// fused_conv2d_maxpool writes the activated convolution to a scratch tensor and pools it with the
// CUDA max_pool2d kernel (pool.cu: the reference's window order and NaN rules), so that the max sees
// exactly what the reference's composition sees. Arithmetic runs in acc_t<T> (float for f16 / bf16).
#include <string>
#include <vector>

#include "cuda/cuda_common.cuh"
#include "pd/kernels/spatial_arg.h"
#include "elementwise_ops.h"

namespace pd::kernels::cuda {
namespace {

int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

// out [N, K, plane] in place: out = act(out + bias[k] + residual), bias and residual optional (nullptr); each
// element is read before it is written by the same thread, so the residual may share out's memory.
template <typename D, typename C, ::pd::Activation A>
__global__ void conv_epilogue_kernel(D* out, const D* __restrict__ bias, const D* residual,
                                     int64_t K, int64_t plane, int64_t n, C alpha) {
  PD_GRID_STRIDE(i, n) {
    C v = load_as<C>(out[i]);
    if (bias) v = v + load_as<C>(bias[(i / plane) % K]);
    if (residual) v = v + load_as<C>(residual[i]);
    out[i] = store_as<D>(::pd::activate<A, C>(v, alpha));
  }
}

// The epilogue over out ([N, K, H, W], NCHW); nothing to launch when there is nothing to apply.
template <typename T>
void conv_epilogue(const KernelContext& ctx, Tensor& out, const Tensor& bias, const Tensor& residual, ::pd::Activation act,
                   double alpha, const char* what) {
  const int64_t n = out.numel();
  if (n == 0 || (!bias.defined() && !residual.defined() && act == ::pd::Activation::none)) return;
  const Shape& s = out.shape();
  const int64_t K = s[1], plane = s[2] * s[3];
  using D = dev_t<T>;
  using C = acc_t<T>;
  const D* b = bias.defined() ? dptr<T>(bias) : nullptr;
  const D* r = residual.defined() ? dptr<T>(residual) : nullptr;
  ::pd::dispatch_activation(act, [&](auto a) {
    constexpr ::pd::Activation A = decltype(a)::value;
    conv_epilogue_kernel<D, C, A><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(dptr<T>(out), b, r, K, plane, n,
                                                                                    static_cast<C>(alpha));
  });
  check_cuda(cudaGetLastError(), what, __FILE__, __LINE__);
}

}  // namespace

template <typename T>
void fused_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                  Tensor& out) {
  const ::pd::Activation act = ::pd::parse_activation("fused_conv2d", activation);  // before any work, as the reference
  if (out.numel() == 0) return;
  conv2d<T>(ctx, x, weight, Tensor(), stride, padding, dilation, groups, false, out);
  conv_epilogue<T>(ctx, out, bias, residual, act, alpha, "fused_conv2d epilogue kernel launch");
}

template <typename T>
void fused_conv2d_maxpool(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias,
                          const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                          const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                          const std::vector<int64_t>& pool_kernel_size, const std::vector<int64_t>& pool_stride,
                          const std::vector<int64_t>& pool_padding, bool pool_ceil_mode, Tensor& out) {
  const ::pd::Activation act = ::pd::parse_activation("fused_conv2d_maxpool", activation);
  if (out.numel() == 0) return;
  const Shape &xs = x.shape(), &ws = weight.shape();
  const Shape conv_shape = {xs[0], ws[0],
                            conv_out(xs[2], ws[2], spatial_arg(stride, 0, 1), spatial_arg(padding, 0, 0), spatial_arg(dilation, 0, 1)),
                            conv_out(xs[3], ws[3], spatial_arg(stride, 1, 1), spatial_arg(padding, 1, 0), spatial_arg(dilation, 1, 1))};
  Tensor conv = Tensor::empty(conv_shape, x.dtype(), out.place());  // freed stream-ordered after the pool reads it
  conv2d<T>(ctx, x, weight, Tensor(), stride, padding, dilation, groups, false, conv);
  conv_epilogue<T>(ctx, conv, bias, Tensor(), act, alpha, "fused_conv2d_maxpool epilogue kernel launch");
  max_pool2d<T>(ctx, conv, pool_kernel_size, pool_stride, pool_padding, pool_ceil_mode, out);
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(fused_conv2d, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(fused_conv2d_maxpool, cuda, float, double, ::pd::float16, ::pd::bfloat16)
