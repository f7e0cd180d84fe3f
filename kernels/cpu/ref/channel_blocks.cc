// to_channel_blocks, from_channel_blocks, scale_channel_blocks and blocked_conv2d, reference kernels: the
// layout change and the per-channel scale as plain loops, and the blocked convolution as fused_conv2d
// between the two (oneDNN's kernel computes in the blocked layout directly: cpu/onednn/blocked_conv.cc).
#include <algorithm>
#include <vector>

#include "cpu/common/parallel.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

// [N, C, H, W] -> [N, CB, H, W, b] (zero lanes past C), one (image, block) pair per work item.
template <typename T>
void to_blocks(const T* x, int64_t N, int64_t C, int64_t HW, int64_t b, T* out) {
  const int64_t CB = (C + b - 1) / b;
  cpu::parallel_for(N * CB, HW * b, [&](int64_t i) {
    const int64_t n = i / CB, cb = i % CB, lanes = std::min(b, C - cb * b);
    const T* src = x + (n * C + cb * b) * HW;
    T* dst = out + i * HW * b;
    for (int64_t p = 0; p < HW; ++p) {
      for (int64_t l = 0; l < lanes; ++l) dst[p * b + l] = src[l * HW + p];
      for (int64_t l = lanes; l < b; ++l) dst[p * b + l] = T(0);
    }
  });
}

// [N, CB, H, W, b] -> [N, C, H, W], C <= CB * b.
template <typename T>
void from_blocks(const T* x, int64_t N, int64_t C, int64_t HW, int64_t b, T* out) {
  const int64_t CB = (C + b - 1) / b;
  cpu::parallel_for(N * CB, HW * b, [&](int64_t i) {
    const int64_t n = i / CB, cb = i % CB, lanes = std::min(b, C - cb * b);
    const T* src = x + i * HW * b;
    T* dst = out + (n * C + cb * b) * HW;
    for (int64_t l = 0; l < lanes; ++l)
      for (int64_t p = 0; p < HW; ++p) dst[l * HW + p] = src[p * b + l];
  });
}

template <typename T>
Tensor unblocked(const Tensor& x, int64_t channels) {
  const Shape& s = x.shape();
  Tensor plain = Tensor::empty({s[0], channels, s[2], s[3]}, x.dtype());
  from_blocks(x.data<T>(), s[0], channels, s[2] * s[3], s[4], plain.data<T>());
  return plain;
}

}  // namespace

template <typename T>
void to_channel_blocks(const KernelContext& ctx, const Tensor& x, int64_t block, Tensor& out) {
  const Shape& s = x.shape();
  to_blocks(x.data<T>(), s[0], s[1], s[2] * s[3], block, out.data<T>());
}

template <typename T>
void from_channel_blocks(const KernelContext& ctx, const Tensor& x, int64_t channels, Tensor& out) {
  const Shape& s = x.shape();
  from_blocks(x.data<T>(), s[0], channels, s[2] * s[3], s[4], out.data<T>());
}

// dst[p, l] = src[p, l] * f[l] over HW pixels of kL lanes, the lane count known to the compiler.
template <typename T, int64_t kL>
void scale_rows(const T* __restrict src, const T* __restrict f, int64_t HW, T* __restrict dst) {
  T lanes[kL];
  std::copy(f, f + kL, lanes);
  for (int64_t p = 0; p < HW; ++p)
    for (int64_t l = 0; l < kL; ++l) dst[p * kL + l] = src[p * kL + l] * lanes[l];
}

constexpr int64_t kMaxLanes = 64;  // channel_block_shape_rules.cc's kMaxBlock

// One (image, block) a work item: L lanes of factors, the same for each of its H x W pixels; the lanes
// past the channels are set to zero, whatever x holds there. Whole planes, not bands of pixels as the
// convolutions around it split theirs: the squeeze-and-excitation's global pool has just read each
// plane on one thread (bands: EfficientNet-B0's 16 scales 140 -> 200 us at batch 1, 2 threads).
template <typename T>
void scale_channel_blocks(const KernelContext& ctx, const Tensor& x, const Tensor& scale, Tensor& out) {
  const Shape& s = x.shape();
  const int64_t N = s[0], CB = s[1], HW = s[2] * s[3], L = s[4], C = scale.shape()[1];
  const bool per_image = scale.shape()[0] == N && N > 1;
  const T* xd = x.data<T>();
  const T* sd = scale.data<T>();
  T* od = out.data<T>();
  cpu::parallel_for(N * CB, HW * L, [&](int64_t i) {
    const int64_t n = i / CB, cb = i % CB;
    T f[kMaxLanes] = {};  // the shape rule bounds the block
    for (int64_t l = 0; l < L && cb * L + l < C; ++l) f[l] = sd[(per_image ? n * C : 0) + cb * L + l];
    const T* src = xd + i * HW * L;
    T* dst = od + i * HW * L;
    const int64_t lanes = std::min(L, C - cb * L);
    if (lanes == L && L == 16) return scale_rows<T, 16>(src, f, HW, dst);  // whole blocks: vectorised
    if (lanes == L && L == 8) return scale_rows<T, 8>(src, f, HW, dst);
    for (int64_t p = 0; p < HW; ++p) {
      for (int64_t l = 0; l < lanes; ++l) dst[p * L + l] = src[p * L + l] * f[l];
      for (int64_t l = lanes; l < L; ++l) dst[p * L + l] = T(0);
    }
  });
}

template <typename T>
void blocked_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                    const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                    const std::string& activation, double alpha, int64_t block, int64_t groups, Tensor& out) {
  const Shape& o = out.shape();
  const int64_t channels = weight.shape()[0];  // the last block's lanes past it stay zero
  Tensor plain_out = Tensor::empty({o[0], channels, o[2], o[3]}, out.dtype());
  const Tensor plain_x = x.dim() == 5 ? unblocked<T>(x, weight.shape()[1] * groups) : x;
  const Tensor plain_residual = residual.defined() ? unblocked<T>(residual, channels) : Tensor();
  fused_conv2d<T>(ctx, plain_x, weight, bias, plain_residual, stride, padding, dilation, groups, activation, alpha, plain_out);
  to_blocks(plain_out.data<T>(), o[0], channels, o[2] * o[3], block, out.data<T>());
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(to_channel_blocks, reference, float, double)
PD_INSTANTIATE_KERNELS(from_channel_blocks, reference, float, double)
PD_INSTANTIATE_KERNELS(blocked_conv2d, reference, float, double)
PD_INSTANTIATE_KERNELS(scale_channel_blocks, reference, float, double)
