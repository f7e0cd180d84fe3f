// The channel-blocked layout of the CPU inference passes on CUDA, as kernels/cpu/ref/channel_blocks.cc,
// so that a model pd-opt has optimised for the CPU still runs on a GPU:
//   to_channel_blocks    [N, C, H, W] -> [N, ceil(C / b), H, W, b], the lanes past C zero;
//   from_channel_blocks  the inverse, dropping the lanes past `channels`;
//   blocked_conv2d       fused_conv2d on that layout (or on a plain NCHW input).
// The layout changes move raw bits, one thread per output element (one kernel per element size).
// blocked_conv2d is the reference's composition done on the device: a blocked input is unblocked into
// a scratch NCHW tensor, cuDNN's conv2d (conv.cu, with the bias) writes a scratch NCHW output, and one
// epilogue kernel blocks it again while adding the residual (blocked like the output, so read in place)
// and applying the activation, in the reference's order: conv + bias, + residual, then activation.
#include <string>

#include "cuda/indexing.cuh"
#include "elementwise_ops.h"

namespace pd::kernels::cuda {
namespace {

// out [N, CB, HW, b] from x [N, C, HW]; U is the element's raw bits (zero bits are zero in every dtype).
template <typename U>
__global__ void to_blocks_kernel(const U* __restrict__ x, U* __restrict__ out, int64_t C, int64_t CB, int64_t HW, int64_t b,
                                 int64_t total) {
  PD_GRID_STRIDE(q, total) {
    const int64_t l = q % b, rest = q / b, p = rest % HW, nb = rest / HW, cb = nb % CB, n = nb / CB;
    const int64_t c = cb * b + l;
    out[q] = c < C ? x[(n * C + c) * HW + p] : U(0);
  }
}

// out [N, C, HW] from x [N, CB, HW, b], C <= CB * b.
template <typename U>
__global__ void from_blocks_kernel(const U* __restrict__ x, U* __restrict__ out, int64_t C, int64_t CB, int64_t HW, int64_t b,
                                   int64_t total) {
  PD_GRID_STRIDE(q, total) {
    const int64_t p = q % HW, rest = q / HW, c = rest % C, n = rest / C;
    out[q] = x[((n * CB + c / b) * HW + p) * b + c % b];
  }
}

template <typename T>
void to_blocks(const KernelContext& ctx, const Tensor& x, int64_t N, int64_t C, int64_t HW, int64_t b, Tensor& out,
               const char* op) {
  const int64_t CB = (C + b - 1) / b, total = N * CB * HW * b;
  if (total == 0) return;
  using U = bits_t<T>;
  to_blocks_kernel<U><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(static_cast<const U*>(x.raw_data()),
                                                                          static_cast<U*>(out.raw_data()), C, CB, HW, b, total);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
}

template <typename T>
void from_blocks(const KernelContext& ctx, const Tensor& x, int64_t N, int64_t C, int64_t HW, int64_t b, Tensor& out,
                 const char* op) {
  const int64_t CB = (C + b - 1) / b, total = N * C * HW;
  if (total == 0) return;
  using U = bits_t<T>;
  from_blocks_kernel<U><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(static_cast<const U*>(x.raw_data()),
                                                                            static_cast<U*>(out.raw_data()), C, CB, HW, b, total);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
}

// out [N, ceil(K / b), HW, b] = act(plain [N, K, HW] + residual), the residual blocked like out (or null);
// the lanes past K zero.
template <typename D, typename C>
__global__ void block_epilogue_kernel(const D* __restrict__ plain, const D* __restrict__ residual, D* __restrict__ out,
                                      int64_t K, int64_t KB, int64_t HW, int64_t b, ::pd::Activation act, C alpha, int64_t total) {
  PD_GRID_STRIDE(q, total) {
    const int64_t l = q % b, rest = q / b, p = rest % HW, nb = rest / HW, cb = nb % KB, n = nb / KB, k = cb * b + l;
    if (k >= K) {
      out[q] = store_as<D>(C(0));
      continue;
    }
    C v = load_as<C>(plain[(n * K + k) * HW + p]);
    if (residual) v += load_as<C>(residual[q]);
    out[q] = store_as<D>(::pd::activate<C>(act, v, alpha));
  }
}

}  // namespace

template <typename T>
void to_channel_blocks(const KernelContext& ctx, const Tensor& x, int64_t block, Tensor& out) {
  const Shape& s = x.shape();
  to_blocks<T>(ctx, x, s[0], s[1], s[2] * s[3], block, out, "to_channel_blocks");
}

template <typename T>
void from_channel_blocks(const KernelContext& ctx, const Tensor& x, int64_t channels, Tensor& out) {
  const Shape& s = x.shape();
  from_blocks<T>(ctx, x, s[0], channels, s[2] * s[3], s[4], out, "from_channel_blocks");
}

template <typename T>
void blocked_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                    const std::string& activation, double alpha, int64_t block, int64_t groups, Tensor& out) {
  const ::pd::Activation act = ::pd::parse_activation("blocked_conv2d", activation);  // before any work
  const Shape& o = out.shape();
  const int64_t channels = weight.shape()[0], plane = o[2] * o[3], total = out.numel();
  if (total == 0) return;
  Tensor plain_x = x;
  if (x.dim() == 5) {
    const Shape& s = x.shape();
    const int64_t cin = weight.shape()[1] * groups;
    plain_x = Tensor::empty({s[0], cin, s[2], s[3]}, x.dtype(), ctx.place);
    from_blocks<T>(ctx, x, s[0], cin, s[2] * s[3], s[4], plain_x, "blocked_conv2d");
  }
  Tensor plain_out = Tensor::empty({o[0], channels, o[2], o[3]}, out.dtype(), ctx.place);
  conv2d<T>(ctx, plain_x, weight, bias, stride, padding, dilation, groups, false, plain_out);
  block_epilogue_kernel<dev_t<T>, acc_t<T>><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(
      dptr<T>(plain_out), residual.defined() ? dptr<T>(residual) : nullptr, dptr<T>(out), channels, o[1], plane, block, act,
      static_cast<acc_t<T>>(alpha), total);
  PD_CUDA_CHECK_LAUNCH("blocked_conv2d");
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(to_channel_blocks, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(from_channel_blocks, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(blocked_conv2d, cuda, float, double)
