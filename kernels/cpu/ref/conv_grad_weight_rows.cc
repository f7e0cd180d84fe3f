// conv_grad_weight_direct.h's conv2d_grad_weight_rows: the weight gradient of a convolution with 1-3
// input channels (a network's first layer), with output pixels as the vector lanes. oneDNN's AVX2 kernel
// pads the input channels to blocks of 8 there, so LeNet's first layer (1 -> 6 channels, 5x5, 28x28,
// batch 64) took 1.4 ms for 7.5 M multiply-adds, a third of the whole training step.
//
// For each pair of output channels and kernel row, 2 x KW accumulators of 8 pixels stay in registers
// over a chunk of images and their rows, each input vector (one load per tap) meeting both channels'
// gradient vectors. A row's last gradient vector is read masked (zeros past its end) and the input is
// padded to every tap's reach, so there are no bounds tests. Items (below) are one input channel x a
// chunk of images; the sums do not depend on the thread count.
#include "cpu/ref/conv_grad_weight_direct.h"

#include <algorithm>
#include <vector>

#include "cpu/common/parallel.h"
#include "pd/core/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace pd::kernels::reference {
namespace {

constexpr int64_t kVec = 8;           // output pixels a vector
constexpr int64_t kMostWidth = 6;     // 2 x 6 accumulators + 2 gradients + 1 input of 16 registers
constexpr int64_t kMostChannels = 3;  // from 4 input channels on, oneDNN's blocks of 8 waste at most half
constexpr int64_t kChunkBytes = 192 << 10;  // a chunk's images: within a 256-512 KiB L2 with the rest
constexpr int64_t kLeastChunks = 8;         // enough chunks for the threads

struct RowsGeom {
  int64_t N = 0, C = 0, O = 0, KH = 0, KW = 0, OH = 0, OW = 0;
  int64_t OWp = 0;            // OW rounded up to whole vectors
  int64_t Hp = 0, Wq = 0;     // the padded input: OH + KH - 1 rows of OWp + KW - 1
  const float* xp = nullptr;  // [N][C][Hp][Wq]
  const float* dy = nullptr;  // [N][O][OH][OW]: the output gradient as it is
};

// dw[o + p][c][ky][0, KW) for the P (1 or 2) output channels from o, summed over images [n0, n1).
template <int KW, int P>
__attribute__((target("avx2,fma"))) void row_taps(const RowsGeom& g, int64_t o, int64_t c, int64_t ky, int64_t n0, int64_t n1,
                                                  float* dw) {
  __m256 acc[P][KW];
#pragma GCC unroll 2
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 6
    for (int kx = 0; kx < KW; ++kx) acc[p][kx] = _mm256_setzero_ps();
  const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(g.OW % kVec)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const float* x = g.xp + ((n * g.C + c) * g.Hp + oh + ky) * g.Wq;
      const float* d = g.dy + ((n * g.O + o) * g.OH + oh) * g.OW;
      for (int64_t v = 0; v < g.OWp; v += kVec) {
        __m256 grad[P];
        if (v + kVec <= g.OW) {
#pragma GCC unroll 2
          for (int p = 0; p < P; ++p) grad[p] = _mm256_loadu_ps(d + p * g.OH * g.OW + v);
        } else {  // the row's last pixels, zeros past its end
#pragma GCC unroll 2
          for (int p = 0; p < P; ++p) grad[p] = _mm256_maskload_ps(d + p * g.OH * g.OW + v, tail);
        }
#pragma GCC unroll 6
        for (int kx = 0; kx < KW; ++kx) {
          const __m256 in = _mm256_loadu_ps(x + v + kx);
#pragma GCC unroll 2
          for (int p = 0; p < P; ++p) acc[p][kx] = _mm256_fmadd_ps(in, grad[p], acc[p][kx]);
        }
      }
    }
  for (int p = 0; p < P; ++p)
    for (int kx = 0; kx < KW; ++kx) {
      alignas(32) float lanes[kVec];
      _mm256_store_ps(lanes, acc[p][kx]);
      float sum = 0.0f;
      for (float l : lanes) sum += l;
      dw[(((o + p) * g.C + c) * g.KH + ky) * g.KW + kx] = sum;
    }
}

using RowTapsFn = void (*)(const RowsGeom&, int64_t, int64_t, int64_t, int64_t, int64_t, float*);

template <int P>
constexpr RowTapsFn kRowTaps[] = {row_taps<1, P>, row_taps<2, P>, row_taps<3, P>, row_taps<4, P>, row_taps<5, P>, row_taps<6, P>};

}  // namespace

bool conv2d_grad_weight_rows(const Tensor& grad, const Tensor& x, const std::vector<int64_t>& weight_shape,
                             const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation, int64_t groups, Tensor& dw) {
  const auto ones = [](const std::vector<int64_t>& v) { return v.size() == 2 && v[0] == 1 && v[1] == 1; };
  // AVX2 hosts only: on AVX-512 (host C, session 16) a kernel of this kind was no faster than oneDNN's.
  if (x.dtype() != DType::f32 || !cpu_has_avx2_fma() || cpu_has_avx512() || groups != 1 || !ones(stride) || !ones(dilation) ||
      x.dim() != 4 || grad.dim() != 4 || padding.size() != 2 || padding[0] < 0 || padding[1] < 0)
    return false;
  RowsGeom g;
  g.N = x.shape()[0], g.C = x.shape()[1], g.O = weight_shape[0], g.KH = weight_shape[2], g.KW = weight_shape[3];
  g.OH = grad.shape()[2], g.OW = grad.shape()[3];
  if (g.C > kMostChannels || g.KW > kMostWidth || g.N == 0 || g.OH <= 0 || g.OW <= 0) return false;
  g.OWp = (g.OW + kVec - 1) / kVec * kVec;
  g.Hp = g.OH + g.KH - 1, g.Wq = g.OWp + g.KW - 1;

  const Tensor xp = zero_padded_planes(x, g.Hp, g.Wq, padding[0], padding[1]);
  g.xp = xp.data<float>(), g.dy = grad.data<float>();

  // Items of one input channel x a chunk of images, each making every tap of that channel from its
  // chunk: the chunk's input plane and output gradients stay in the L2 cache while every output pair
  // and kernel row reads them (one item a tap over all images streamed them from memory each time: 4 ms
  // for 128 images of 28x28 into 32 channels). The chunks' partial sums are added in chunk order, and
  // the chunk size depends on the shapes only, so the result does not depend on the thread count.
  const int64_t per_image = (g.C * g.Hp * g.Wq + g.O * g.OH * g.OW) * static_cast<int64_t>(sizeof(float));
  const int64_t images = std::max<int64_t>(1, std::min(kChunkBytes / per_image, (g.N + kLeastChunks - 1) / kLeastChunks));
  const int64_t chunks = (g.N + images - 1) / images, taps = g.O * g.C * g.KH * g.KW, pairs = (g.O + 1) / 2;
  std::vector<float> partial(static_cast<size_t>(chunks * taps));
  cpu::parallel_for(g.C * chunks, images * g.OH * g.OWp * g.KW * g.KH * g.O, [&](int64_t item) {
    const int64_t c = item / chunks, chunk = item % chunks, n0 = chunk * images, n1 = std::min(g.N, n0 + images);
    for (int64_t pair = 0; pair < pairs; ++pair)
      for (int64_t ky = 0; ky < g.KH; ++ky) {
        const int64_t o = 2 * pair;
        (o + 1 < g.O ? kRowTaps<2> : kRowTaps<1>)[g.KW - 1](g, o, c, ky, n0, n1, partial.data() + chunk * taps);
      }
  });
  float* dwv = dw.data<float>();
  for (int64_t i = 0; i < taps; ++i) {
    float sum = 0.0f;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += partial[static_cast<size_t>(chunk * taps + i)];
    dwv[i] = sum;
  }
  return true;
}

}  // namespace pd::kernels::reference

#else  // not x86-64: oneDNN takes every call

namespace pd::kernels::reference {
bool conv2d_grad_weight_rows(const Tensor&, const Tensor&, const std::vector<int64_t>&, const std::vector<int64_t>&,
                             const std::vector<int64_t>&, const std::vector<int64_t>&, int64_t, Tensor&) {
  return false;
}
}  // namespace pd::kernels::reference
#endif
