// winograd_weight and winograd_conv2d on CUDA, as kernels/cpu/ref/winograd_conv.cc (Winograd's
// F(4x4, 3x3): a 6x6 input patch d and a 3x3 filter g give the 4x4 output tile
// Y = A^T [(G g G^T) .* (B^T d B)] A; the weight comes already transformed, U [36, C_in, C_out]).
//
// The convolution runs the reference's three phases, so that it computes the same sums in the same
// transforms (winograd_f43.h's input_1d / output_1d formulas) rather than a plain convolution with
// another rounding:
//   1. one thread per (tile, input channel) gathers its 6x6 patch (zero outside the image) and writes
//      B^T d B to V [36][tiles][C_in];
//   2. the 36 point products M[p] = V[p] U[p] ([tiles, C_in] x [C_in, C_out]) as one strided-batched
//      cuBLAS GEMM (f32 in true f32, as matmul.cu);
//   3. one thread per (tile, output channel) transforms its 36 products back (A^T m A + bias), adds the
//      residual and applies the activation to the tile's pixels inside the output.
// x, the residual and the result are NCHW, or with block > 0 to_channel_blocks' layout. The tiles go
// through in chunks so that V and M stay within a bounded scratch size.
#include <algorithm>
#include <climits>
#include <string>

#include "cuda/cuda_common.cuh"
#include "elementwise_ops.h"

namespace pd::kernels::cuda {
namespace {

constexpr int kOut = 4, kIn = 6, kPoints = 36;
constexpr int64_t kScratchBytes = int64_t{256} << 20;  // V and M of one chunk of tiles

// G (6x3), the filter transform (winograd_f43.h's kG).
__constant__ double kWinoG[6][3] = {{1.0 / 4, 0, 0},
                                    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                    {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                    {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                    {0, 0, 1}};

// u[((i * 6 + j) * C + c) * K + k] = (G g G^T)[i][j] for the filter g = w[k, c], in double as the reference.
template <typename T>
__global__ void weight_transform_kernel(const T* __restrict__ w, T* __restrict__ u, int64_t C, int64_t K, int64_t total) {
  PD_GRID_STRIDE(idx, total) {
    const int64_t k = idx % K, c = idx / K;
    const T* g = w + (k * C + c) * 9;
    double gg[kIn][3];
    for (int i = 0; i < kIn; ++i)
      for (int j = 0; j < 3; ++j)
        gg[i][j] = kWinoG[i][0] * static_cast<double>(g[j]) + kWinoG[i][1] * static_cast<double>(g[3 + j]) +
                   kWinoG[i][2] * static_cast<double>(g[6 + j]);
    for (int i = 0; i < kIn; ++i)
      for (int j = 0; j < kIn; ++j)
        u[((i * kIn + j) * C + c) * K + k] =
            static_cast<T>(gg[i][0] * kWinoG[j][0] + gg[i][1] * kWinoG[j][1] + gg[i][2] * kWinoG[j][2]);
  }
}

struct WinoGeom {
  int64_t N, C, H, W, K, OH, OW, ph, pw;
  int64_t B, BK;  // channels per block of x / of the output (to_channel_blocks); 0: NCHW
  int64_t TH, TW, tiles;
};

// out[k * os] = (B^T in)[k] for the 6 values in[0], in[is], ..., in[5 * is] (winograd_f43.h's input_1d).
template <typename T>
__device__ __forceinline__ void input_1d(const T* in, int is, T* out, int os) {
  const T d0 = in[0], d1 = in[is], d2 = in[2 * is], d3 = in[3 * is], d4 = in[4 * is], d5 = in[5 * is];
  out[0] = d0 * T(4) - d2 * T(5) + d4;
  out[os] = (d3 + d4) - (d1 + d2) * T(4);
  out[2 * os] = (d1 - d2) * T(4) + (d4 - d3);
  out[3 * os] = (d3 - d1) * T(2) + (d4 - d2);
  out[4 * os] = (d1 - d3) * T(2) + (d4 - d2);
  out[5 * os] = d1 * T(4) - d3 * T(5) + d5;
}

// out[k * os] = (A^T in)[k] for k < 4 (output_1d).
template <typename T>
__device__ __forceinline__ void output_1d(const T* in, int is, T* out, int os) {
  const T s12 = in[is] + in[2 * is], d12 = in[is] - in[2 * is];
  const T s34 = in[3 * is] + in[4 * is], d34 = in[3 * is] - in[4 * is];
  out[0] = in[0] + s12 + s34;
  out[os] = d12 + d34 * T(2);
  out[2 * os] = s12 + s34 * T(4);
  out[3 * os] = d12 + d34 * T(8) + in[5 * is];
}

// Phase 1: V[p][tl][c] (row length C, point stride TB * C) for tiles [t0, t0 + nt).
template <typename T>
__global__ void input_transform_kernel(const T* __restrict__ x, T* __restrict__ V, WinoGeom g, int64_t t0, int64_t nt,
                                       int64_t TB) {
  PD_GRID_STRIDE(idx, nt * g.C) {
    const int64_t c = idx % g.C, tl = idx / g.C, t = t0 + tl;
    const int64_t n = t / (g.TH * g.TW), ty = t / g.TW % g.TH, tx = t % g.TW;
    const int64_t iy0 = ty * kOut - g.ph, ix0 = tx * kOut - g.pw;
    // Where (y, x) of channel c is: x_at + (y * W + x) * step.
    int64_t base, step;
    if (g.B > 0) {
      base = (n * (g.C / g.B) + c / g.B) * g.H * g.W * g.B + c % g.B;
      step = g.B;
    } else {
      base = (n * g.C + c) * g.H * g.W;
      step = 1;
    }
    T d[kPoints];
    for (int r = 0; r < kIn; ++r) {
      const int64_t y = iy0 + r;
      for (int q = 0; q < kIn; ++q) {
        const int64_t xx = ix0 + q;
        d[r * kIn + q] = y >= 0 && y < g.H && xx >= 0 && xx < g.W ? x[base + (y * g.W + xx) * step] : T(0);
      }
    }
    T t6[kPoints];
#pragma unroll
    for (int j = 0; j < kIn; ++j) input_1d<T>(d + j, kIn, t6 + j, kIn);
    const int64_t point_stride = TB * g.C;
    T* v = V + tl * g.C + c;
#pragma unroll
    for (int i = 0; i < kIn; ++i) {
      T r[kIn];
      input_1d<T>(t6 + i * kIn, 1, r, 1);
#pragma unroll
      for (int j = 0; j < kIn; ++j) v[(i * kIn + j) * point_stride] = r[j];
    }
  }
}

// Phase 3: the 4x4 output tiles of tiles [t0, t0 + nt) from M[p][tl][k] (point stride TB * K), with
// bias, residual (laid out as out) and activation.
template <typename T>
__global__ void output_transform_kernel(const T* __restrict__ M, const T* __restrict__ bias, const T* __restrict__ residual,
                                        T* __restrict__ out, WinoGeom g, int64_t t0, int64_t nt, int64_t TB,
                                        ::pd::Activation act, T alpha) {
  PD_GRID_STRIDE(idx, nt * g.K) {
    const int64_t k = idx % g.K, tl = idx / g.K, t = t0 + tl;
    const int64_t n = t / (g.TH * g.TW), ty = t / g.TW % g.TH, tx = t % g.TW;
    const int64_t oy0 = ty * kOut, ox0 = tx * kOut;
    const int64_t rows = ::min(int64_t{kOut}, g.OH - oy0), cols = ::min(int64_t{kOut}, g.OW - ox0);
    const int64_t point_stride = TB * g.K;
    const T* mp = M + tl * g.K + k;
    T m[kPoints], t6[kOut * kIn], o[kOut * kOut];
#pragma unroll
    for (int p = 0; p < kPoints; ++p) m[p] = mp[p * point_stride];
#pragma unroll
    for (int j = 0; j < kIn; ++j) output_1d<T>(m + j, kIn, t6 + j, kIn);
    const T b = bias ? bias[k] : T(0);
#pragma unroll
    for (int i = 0; i < kOut; ++i) {
      output_1d<T>(t6 + i * kIn, 1, o + i * kOut, 1);
#pragma unroll
      for (int j = 0; j < kOut; ++j) o[i * kOut + j] += b;
    }
    int64_t base, step;
    if (g.BK > 0) {
      base = (n * (g.K / g.BK) + k / g.BK) * g.OH * g.OW * g.BK + k % g.BK;
      step = g.BK;
    } else {
      base = (n * g.K + k) * g.OH * g.OW;
      step = 1;
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t q = 0; q < cols; ++q) {
        const int64_t at = base + ((oy0 + r) * g.OW + ox0 + q) * step;
        T v = o[r * kOut + q];
        if (residual) v += residual[at];
        out[at] = ::pd::activate<T>(act, v, alpha);
      }
  }
}

template <typename T> struct WinoGemm;
template <> struct WinoGemm<float> {
  static constexpr cudaDataType_t data = CUDA_R_32F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
};
template <> struct WinoGemm<double> {
  static constexpr cudaDataType_t data = CUDA_R_64F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_64F;
};

// Phase 2, row-major M[p][nt, K] = V[p][nt, C] U[p][C, K] for the 36 points: the column-major product
// M^T = U^T V^T, with no operand transposed in memory.
template <typename T>
void point_products(const KernelContext& ctx, const WinoGeom& g, const T* U, const T* V, T* M, int64_t nt, int64_t TB) {
  const T one = 1, zero = 0;
  PD_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_handle(ctx), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(g.K),
                                             static_cast<int>(nt), static_cast<int>(g.C), &one, U, WinoGemm<T>::data,
                                             static_cast<int>(g.K), g.C * g.K, V, WinoGemm<T>::data, static_cast<int>(g.C),
                                             TB * g.C, &zero, M, WinoGemm<T>::data, static_cast<int>(g.K), TB * g.K,
                                             kPoints, WinoGemm<T>::compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

template <typename T>
void winograd_weight(const KernelContext& ctx, const Tensor& weight, Tensor& out) {
  const int64_t K = weight.shape()[0], C = weight.shape()[1], total = K * C;
  if (total == 0) return;
  weight_transform_kernel<T><<<blocks_for(total), kThreads, 0, stream_of(ctx)>>>(dptr<T>(weight), dptr<T>(out), C, K, total);
  PD_CUDA_CHECK_LAUNCH("winograd_weight");
}

template <typename T>
void winograd_conv2d(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                     const std::vector<int64_t>& padding, const std::string& activation, double alpha, int64_t block,
                     Tensor& out) {
  const ::pd::Activation act = ::pd::parse_activation("winograd_conv2d", activation);
  if (out.numel() == 0) return;
  WinoGeom g{};
  // H and W sit at dims 2 and 3 in both layouts; C is the weight's (a blocked x has C / B blocks of B).
  g.N = x.shape()[0], g.C = weight.shape()[1], g.H = x.shape()[2], g.W = x.shape()[3];
  g.B = x.dim() == 5 ? x.shape()[4] : 0;
  g.BK = out.dim() == 5 ? out.shape()[4] : 0;
  g.K = weight.shape()[2], g.OH = out.shape()[2], g.OW = out.shape()[3];
  g.ph = padding[0], g.pw = padding[1];
  g.TH = (g.OH + kOut - 1) / kOut, g.TW = (g.OW + kOut - 1) / kOut;
  g.tiles = g.N * g.TH * g.TW;
  PD_CHECK(g.C <= INT_MAX && g.K <= INT_MAX, ErrorCode::kNotImplemented,
           "winograd_conv2d on CUDA: {} input or {} output channels beyond int", g.C, g.K);

  // Tiles per chunk: V and M of a chunk within kScratchBytes (at least one tile, at most INT_MAX).
  const int64_t per_tile = kPoints * (g.C + g.K) * static_cast<int64_t>(sizeof(T));
  const int64_t TB = std::max<int64_t>(1, std::min<int64_t>({g.tiles, kScratchBytes / per_tile, INT_MAX}));
  Tensor V = Tensor::empty({kPoints, TB, g.C}, out.dtype(), ctx.place);
  Tensor M = Tensor::empty({kPoints, TB, g.K}, out.dtype(), ctx.place);
  cudaStream_t stream = stream_of(ctx);
  const T* bd = bias.defined() ? static_cast<const T*>(bias.raw_data()) : nullptr;
  const T* rd = residual.defined() ? static_cast<const T*>(residual.raw_data()) : nullptr;
  for (int64_t t0 = 0; t0 < g.tiles; t0 += TB) {
    const int64_t nt = std::min(TB, g.tiles - t0);
    if (g.C > 0) {
      input_transform_kernel<T><<<blocks_for(nt * g.C), kThreads, 0, stream>>>(dptr<T>(x), dptr<T>(V), g, t0, nt, TB);
      PD_CUDA_CHECK_LAUNCH("winograd_conv2d input transform");
      point_products<T>(ctx, g, dptr<T>(weight), dptr<T>(V), dptr<T>(M), nt, TB);
    } else {  // no input channels: every product is zero
      PD_CUDA_CHECK(cudaMemsetAsync(M.raw_data(), 0, static_cast<size_t>(M.numel()) * sizeof(T), stream));
    }
    output_transform_kernel<T><<<blocks_for(nt * g.K), kThreads, 0, stream>>>(dptr<T>(M), bd, rd, dptr<T>(out), g, t0, nt, TB,
                                                                               act, static_cast<T>(alpha));
    PD_CUDA_CHECK_LAUNCH("winograd_conv2d output transform");
  }
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(winograd_weight, cuda, float, double)
PD_INSTANTIATE_KERNELS(winograd_conv2d, cuda, float, double)
