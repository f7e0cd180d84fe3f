// quantized_conv2d's 3x3 stride-1 convolutions on AVX2 CPUs without VNNI, by Winograd's F(2x2, 3x3) in
// exact integer arithmetic. There an int8 product costs as much as an int16 one (vpmaddubsw + vpmaddwd
// make 32 products with two multiplies, vpmaddwd alone 16 with one), so int8 convolutions ran no faster
// than the f32 ones on Winograd's F(4x4, 3x3) (the residual example's 28x28 layers: 30 against 24 us).
// F(2x2, 3x3) makes a 2x2 output tile from a 4x4 input patch d and the filter g with 16 products per
// channel pair instead of 36: Y = A^T [U .* V] A, V = B^T d B, U = G g G^T. Its matrices are integers
// but for G's halves, so U4 = (2G) g (2G)^T = 4U is an integer too, and the sums are exact:
//   - d is x minus its zero point ([-255, 255]); V's entries sum 4 of them: within +-1020 (int16).
//   - U4's entries sum at most 9 weights, with factors 1, 2 or 4 and |sum| <= 9 x 128 (int16), so all
//     8 bits of every weight are used: oneDNN's kernels on these CPUs halve weights beyond 7 bits.
//   - the 16 point products V U4 are summed over the input channels in int32 with vpmaddwd (pairs of
//     channels a 32-bit lane); A^T M A is 4 x the convolution's exact sum, so an arithmetic shift by 2
//     gives it. Intermediate sums may wrap, but only the final value must fit: 4 x 9 x 255 x 128 x C_in
//     < 2^31 for C_in <= 1024.
// The tiles go in blocks sized for the L2 cache, as winograd_conv.cc's: the block's patches transformed
// into V[16][tiles][C_in], multiplied point by point with U4[16][C_in / 2][C_out][2] into
// M[16][tiles][C_out], and transformed back through the direct kernels' epilogue (scales, bias, residual,
// activation, requantization).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "cpu/ref/quantized_direct.h"
#include "cpu/ref/quantized_direct_common.h"

#if defined(__x86_64__)
#include "cpu/common/parallel.h"
#endif

namespace pd::kernels::reference {

#if defined(__x86_64__)
namespace {

using namespace int8_direct;

constexpr int kTile = 2;     // output tile side
constexpr int kPatch = 4;    // input patch side
constexpr int kPoints = 16;  // transform points per tile
constexpr int kRows = 6;     // tiles per micro-kernel call
constexpr int64_t kMostChannels = 1024;          // input channels at most: the sums' bound above
constexpr int64_t kBlockBytes = 256 * 1024;      // V and M of one block: about half of an L2 cache

// A point's rows in V and M start this many elements apart: the block's rows plus one cache line where
// they fill an even number of lines, so that a tile's 16 points do not all fall into one L1 cache set.
template <typename T>
int64_t point_stride(int64_t tiles, int64_t row) {
  constexpr int64_t kLine = 64 / sizeof(T);
  const int64_t lines = (tiles * row + kLine - 1) / kLine;
  return (lines % 2 == 0 ? lines + 1 : lines) * kLine;
}

struct WinoShape {
  int64_t N, H, W, C, K, OH, OW, ph, pw;
  int64_t TH, TW, tiles;  // tile rows and columns an image; tiles in the batch
  int64_t TB;             // tiles a block
  int64_t VS, MS;         // point strides of V (int16) and M (int32)
};

// What a call derives from its constant inputs and attributes (memoized per op).
struct PreparedWinograd {
  bool take = false;
  WinoShape s{};
  Epilogue e;
  bool u8 = true;             // x is u8 (else s8)
  int32_t zp = 0;             // x's zero point
  std::vector<int16_t> u;     // U4: [16][C / 2][K][2]
};

// U4 = (2G) g (2G)^T for every (output, input) channel pair, packed for vpmaddwd.
std::vector<int16_t> transform_weights(const Tensor& weight, int64_t K, int64_t C) {
  static constexpr int kG2[kPatch][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};
  std::vector<int16_t> u(static_cast<size_t>(kPoints * C * K));
  const int8_t* w = weight.data<int8_t>();
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c) {
      const int8_t* g = w + (k * C + c) * 9;
      int32_t gg[kPatch][3];  // (2G) g
      for (int i = 0; i < kPatch; ++i)
        for (int j = 0; j < 3; ++j) gg[i][j] = kG2[i][0] * g[j] + kG2[i][1] * g[3 + j] + kG2[i][2] * g[6 + j];
      for (int i = 0; i < kPatch; ++i)
        for (int j = 0; j < kPatch; ++j) {
          const int32_t v = gg[i][0] * kG2[j][0] + gg[i][1] * kG2[j][1] + gg[i][2] * kG2[j][2];
          u[static_cast<size_t>((((i * kPatch + j) * (C / 2) + c / 2) * K + k) * 2 + c % 2)] = static_cast<int16_t>(v);
        }
    }
  return u;
}

// Tiles a block: V and M within kBlockBytes, and the blocks spread evenly over the threads, counting the
// tile rows on the busiest thread plus a per-block overhead; where a thread gets several blocks, they are
// whole micro-kernel heights (winograd_tiles.h's rule for the f32 kernel).
int64_t tiles_per_block(int64_t tiles, int64_t C, int64_t K, int64_t threads) {
  const int64_t fit = std::max<int64_t>(kRows, kBlockBytes / (kPoints * (2 * C + 4 * K)));
  int64_t best = kRows, best_cost = -1;
  for (int64_t tb = kRows; tb <= std::min(fit, round_up(tiles, kRows)); ++tb) {
    const int64_t rounds = ((tiles + tb - 1) / tb + threads - 1) / threads;
    if (rounds > 1 && tb % kRows != 0) continue;
    const int64_t cost = rounds * (tb + kRows);
    if (best_cost < 0 || cost <= best_cost) best = tb, best_cost = cost;
  }
  return best;
}

bool setup(const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point, const Tensor& weight, const Tensor& weight_scale,
           const Tensor& bias, const Tensor& out_scale, const Tensor& out_zero_point, const std::vector<int64_t>& stride,
           const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation,
           double alpha, bool channels_last, DType out_dtype, const Tensor& out, int64_t threads, PreparedWinograd& p) {
  const Activation act = parse_activation("quantized_conv2d", activation);
  if (int8_path() != Path::avx2 || !channels_last || groups != 1 || !vector_activation(act) || x.dim() != 4 ||
      (x.dtype() != DType::u8 && x.dtype() != DType::i8) || weight.shape()[2] != 3 || weight.shape()[3] != 3 ||
      stride != std::vector<int64_t>{1, 1} || dilation != std::vector<int64_t>{1, 1} || padding.size() != 2)
    return false;
  WinoShape& s = p.s;
  s.N = x.shape()[0], s.H = x.shape()[1], s.W = x.shape()[2], s.C = x.shape()[3];
  s.K = weight.shape()[0], s.OH = out.shape()[1], s.OW = out.shape()[2];
  s.ph = padding[0], s.pw = padding[1];
  if (s.C % 16 != 0 || s.C > kMostChannels || s.K % 16 != 0 || s.ph < 0 || s.ph > 2 || s.pw < 0 || s.pw > 2) return false;
  s.TH = (s.OH + kTile - 1) / kTile, s.TW = (s.OW + kTile - 1) / kTile;
  s.tiles = s.N * s.TH * s.TW;
  s.TB = tiles_per_block(s.tiles, s.C, s.K, threads);
  s.VS = point_stride<int16_t>(s.TB, s.C), s.MS = point_stride<int32_t>(s.TB, s.K);
  p.e = make_epilogue(x_scale, weight_scale, bias, out_scale, out_zero_point, act, alpha, out_dtype, s.K, /*seven_bit=*/false);
  p.u8 = x.dtype() == DType::u8;
  p.zp = p.u8 ? int32_t{x_zero_point.item<uint8_t>()} : int32_t{x_zero_point.item<int8_t>()};
  p.u = transform_weights(weight, s.K, s.C);
  return true;
}

// The residual, as the epilogue adds it: f32 as it is, int8 dequantized (none: f32 and no data).
struct Residual {
  const void* data = nullptr;
  DType dtype = DType::f32;
  float scale = 1.0f;
  int32_t zp = 0;
};

// d0 - d2, d1 + d2, d2 - d1, d1 - d3: B^T applied to 4 vectors, in and out `is` / `os` apart.
PD_AVX2_TARGET __attribute__((always_inline)) inline void input_1d(const __m256i* in, int is, __m256i* out, int os) {
  const __m256i d0 = in[0], d1 = in[is], d2 = in[2 * is], d3 = in[3 * is];
  out[0] = _mm256_sub_epi16(d0, d2);
  out[os] = _mm256_add_epi16(d1, d2);
  out[2 * os] = _mm256_sub_epi16(d2, d1);
  out[3 * os] = _mm256_sub_epi16(d1, d3);
}

// Phase 1: the patches of tiles [t0, t0 + nt), 16 channels a vector, into V.
PD_AVX2_TARGET inline void transform_inputs(const WinoShape& s, bool u8, int32_t zp, const void* x, int64_t t0, int64_t nt,
                                            int16_t* V) {
  const __m256i zero_point = _mm256_set1_epi16(static_cast<int16_t>(zp));
  for (int64_t tl = 0; tl < nt; ++tl) {
    const int64_t t = t0 + tl, n = t / (s.TH * s.TW), iy0 = t / s.TW % s.TH * kTile - s.ph, ix0 = t % s.TW * kTile - s.pw;
    for (int64_t c = 0; c < s.C; c += 16) {
      __m256i d[kPoints], r[kPoints];
#pragma GCC unroll 4
      for (int i = 0; i < kPatch; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < kPatch; ++j) {
          const int64_t y = iy0 + i, xx = ix0 + j;
          if (y < 0 || y >= s.H || xx < 0 || xx >= s.W) {
            d[i * kPatch + j] = _mm256_setzero_si256();  // the padding is the real value 0
            continue;
          }
          const int64_t at = ((n * s.H + y) * s.W + xx) * s.C + c;
          const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint8_t*>(x) + at));
          d[i * kPatch + j] = _mm256_sub_epi16(u8 ? _mm256_cvtepu8_epi16(bytes) : _mm256_cvtepi8_epi16(bytes), zero_point);
        }
#pragma GCC unroll 4
      for (int j = 0; j < kPatch; ++j) input_1d(d + j, kPatch, r + j, kPatch);  // columns: B^T d
#pragma GCC unroll 4
      for (int i = 0; i < kPatch; ++i) input_1d(r + i * kPatch, 1, d + i * kPatch, 1);  // rows: (B^T d) B
#pragma GCC unroll 16
      for (int p = 0; p < kPoints; ++p) _mm256_storeu_si256(reinterpret_cast<__m256i*>(V + p * s.VS + tl * s.C + c), d[p]);
    }
  }
}

// R tiles' rows of one point's product, output channels [k, k + 16): pairs of input channels a step.
template <int R>
PD_AVX2_TARGET inline void multiply_rows(int64_t C, int64_t K, const int16_t* A, const int16_t* U, int64_t k, int32_t* out) {
  __m256i acc[R][2];  // in registers: every loop over r unrolled
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t c = 0; c < C; c += 2) {
    const int16_t* u = U + (c / 2 * K + k) * 2;
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(u));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + 16));
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256i a = _mm256_set1_epi32(load_u32(A + r * C + c));
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(a, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(a, b1));
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + r * K + k), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + r * K + k + 8), acc[r][1]);
  }
}

// Phase 2: M[p] = V[p] U4[p] for the 16 points, output channels [k0, k1).
PD_AVX2_TARGET inline void multiply_points(const WinoShape& s, const int16_t* U, int64_t nt, int64_t k0, int64_t k1, const int16_t* V,
                                           int32_t* M) {
  using RowsFn = void (*)(int64_t, int64_t, const int16_t*, const int16_t*, int64_t, int32_t*);
  static constexpr RowsFn kRowsFn[] = {multiply_rows<1>, multiply_rows<2>, multiply_rows<3>,
                                       multiply_rows<4>, multiply_rows<5>, multiply_rows<6>};
  for (int p = 0; p < kPoints; ++p) {
    const int16_t* Up = U + p * s.C * s.K;
    for (int64_t r0 = 0; r0 < nt; r0 += kRows) {
      const RowsFn rows = kRowsFn[std::min<int64_t>(kRows, nt - r0) - 1];
      for (int64_t k = k0; k < k1; k += 16) rows(s.C, s.K, V + p * s.VS + r0 * s.C, Up, k, M + p * s.MS + r0 * s.K);
    }
  }
}

// m0 + m1 + m2, m1 - m2 - m3: A^T applied to 4 vectors.
PD_AVX2_TARGET __attribute__((always_inline)) inline void output_1d(const __m256i* in, int is, __m256i* out, int os) {
  const __m256i s12 = _mm256_add_epi32(in[is], in[2 * is]), d12 = _mm256_sub_epi32(in[is], in[2 * is]);
  out[0] = _mm256_add_epi32(in[0], s12);
  out[os] = _mm256_sub_epi32(d12, in[3 * is]);
}

// Phase 3: the 2x2 output tiles of channels [k0, k1) through the epilogue.
PD_AVX2_TARGET inline void transform_outputs(const WinoShape& s, const Epilogue& e, const Residual& res, int64_t t0, int64_t nt,
                                             int64_t k0, int64_t k1, const int32_t* M, void* out) {
  const __m256 residual_scale = _mm256_set1_ps(res.scale);
  const __m256i residual_zp = _mm256_set1_epi32(res.zp);
  for (int64_t tl = 0; tl < nt; ++tl) {
    const int64_t t = t0 + tl, n = t / (s.TH * s.TW), oy0 = t / s.TW % s.TH * kTile, ox0 = t % s.TW * kTile;
    for (int64_t k = k0; k < k1; k += 8) {
      __m256i m[kPoints], r[kTile * kPatch], y[kTile * kTile];
#pragma GCC unroll 16
      for (int p = 0; p < kPoints; ++p) m[p] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(M + p * s.MS + tl * s.K + k));
#pragma GCC unroll 4
      for (int j = 0; j < kPatch; ++j) output_1d(m + j, kPatch, r + j, kPatch);  // A^T M: 2 x 4
#pragma GCC unroll 2
      for (int i = 0; i < kTile; ++i) output_1d(r + i * kPatch, 1, y + i * kTile, 1);  // (A^T M) A: 2 x 2
      const __m256 scale = _mm256_loadu_ps(e.scale.data() + k), bias = _mm256_loadu_ps(e.bias.data() + k);
#pragma GCC unroll 2
      for (int i = 0; i < kTile; ++i)
#pragma GCC unroll 2
        for (int j = 0; j < kTile; ++j) {
          const int64_t oy = oy0 + i, ox = ox0 + j;
          if (oy >= s.OH || ox >= s.OW) continue;
          const int64_t at = ((n * s.OH + oy) * s.OW + ox) * s.K + k;
          __m256 v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srai_epi32(y[i * kTile + j], 2)), scale, bias);
          if (res.dtype == DType::f32) {
            if (res.data) v = _mm256_add_ps(v, _mm256_loadu_ps(static_cast<const float*>(res.data) + at));
          } else {
            const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(static_cast<const uint8_t*>(res.data) + at));
            const __m256i q = res.dtype == DType::u8 ? _mm256_cvtepu8_epi32(bytes) : _mm256_cvtepi8_epi32(bytes);
            v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, residual_zp)), residual_scale, v);
          }
          avx2_finish(e, v, 8, out, at);
        }
    }
  }
}

PD_AVX2_TARGET void run_block(const PreparedWinograd& p, const Residual& res, const void* x, int64_t t0, int64_t nt, int64_t k0,
                              int64_t k1, int16_t* V, int32_t* M, void* out) {
  transform_inputs(p.s, p.u8, p.zp, x, t0, nt, V);
  multiply_points(p.s, p.u.data(), nt, k0, k1, V, M);
  transform_outputs(p.s, p.e, res, t0, nt, k0, k1, M, out);
}

}  // namespace

bool quantized_conv2d_winograd(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                               const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& residual,
                               const Tensor& residual_scale, const Tensor& residual_zero_point, const Tensor& out_scale,
                               const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                               const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                               bool channels_last, DType out_dtype, Tensor& out) {
  if (out.numel() == 0 || int8_path() != Path::avx2) return false;
  const int64_t threads = std::max(ctx.threads, 1);
  const auto prepared = memoized<PreparedWinograd>(
      ctx, "quantized_conv2d_winograd", threads * 64 + static_cast<int64_t>(x.dtype()), x.shape(),
      {&x_scale, &x_zero_point, &weight, &weight_scale, &bias, &out_scale, &out_zero_point}, [&] {
        auto p = std::make_shared<PreparedWinograd>();
        p->take = setup(x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale, out_zero_point, stride, padding, dilation,
                        groups, activation, alpha, channels_last, out_dtype, out, threads, *p);
        return p;
      });
  if (!prepared->take) return false;
  const WinoShape& s = prepared->s;
  Residual res;
  if (residual.defined()) {
    res.data = residual.raw_data(), res.dtype = residual.dtype();
    if (res.dtype != DType::f32) {
      res.scale = residual_scale.item<float>();
      res.zp = res.dtype == DType::u8 ? int32_t{residual_zero_point.item<uint8_t>()} : int32_t{residual_zero_point.item<int8_t>()};
    }
  }
  // Blocks of tiles go to the threads; with fewer blocks than threads (small images at batch 1) the
  // output channels are split too, in whole micro-kernel columns of 16.
  const int64_t blocks = (s.tiles + s.TB - 1) / s.TB;
  const int64_t slices = blocks >= threads ? 1 : std::min((threads + blocks - 1) / blocks, s.K / 16);
  const int64_t slice_k = round_up((s.K + slices - 1) / slices, 16);
  const void* xd = x.raw_data();
  void* od = out.raw_data();
  cpu::parallel_for(blocks * slices, s.TB * kPoints * s.C * s.K / slices / kProductsPerWork, [&](int64_t i) {
    thread_local std::vector<int16_t> V;
    thread_local std::vector<int32_t> M;
    V.resize(std::max<size_t>(V.size(), kPoints * s.VS));
    M.resize(std::max<size_t>(M.size(), kPoints * s.MS));
    const int64_t t0 = i / slices * s.TB, k0 = i % slices * slice_k, k1 = std::min(s.K, k0 + slice_k);
    if (k0 < k1) run_block(*prepared, res, xd, t0, std::min(s.TB, s.tiles - t0), k0, k1, V.data(), M.data(), od);
  });
  return true;
}

#else  // not x86-64

bool quantized_conv2d_winograd(const KernelContext&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                               const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                               const std::vector<int64_t>&, const std::vector<int64_t>&, const std::vector<int64_t>&, int64_t,
                               const std::string&, double, bool, DType, Tensor&) {
  return false;
}

#endif

}  // namespace pd::kernels::reference
