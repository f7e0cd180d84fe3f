// quantized_winograd.h's kernel. Per row of 2 x 2 output tiles: the input transform of every tile of the
// row into V [16 positions][tiles][channels] (int16), then per block of tiles and 16 output channels the
// 16 products V_xi U_xi over channel pairs (vpmaddwd; U the weights transformed once, [16][C / 2][CO][2]),
// the output transform, and the direct kernels' AVX2 epilogue over each output row.
//   U = (2G) g (2G)^T, V = B^T d B, y = A^T (U . V) A / 4, with Lavin and Gray's F(2, 3) matrices
//   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
//   A^T = [1 1 1 0; 0 1 -1 -1].
// The int32 bound: an output sums 9 of the 16 positions' products, whose weights reach 4 x 127 (one
// corner), 6 x 127 (four edges) and 9 x 127 (four inner ones), 8128 in all, times 1020 for V: below
// 2^31 for up to 259 channels.
#include "cpu/ref/quantized_winograd.h"
#include "cpu/ref/quantized_direct_epilogue.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "cpu/common/parallel.h"
#include "pd/core/cpu_features.h"
#include "pd/core/packed_weights.h"

namespace pd::kernels::reference {

#if defined(__x86_64__)
namespace {

using namespace int8_direct;

constexpr int64_t kFewestChannels = 8;  // below, the direct kernels' few-channel forms are faster
constexpr int64_t kMostChannels = 256;  // the int32 bound above
constexpr int kMostTiles = 6;           // a block's tiles: 6 x 2 accumulators, 2 weights and a broadcast in 16 registers

struct WinogradConv {
  int64_t N, H, W, C, CO, OH, OW, ph, pw;
  int64_t TH, TW;  // tile rows and columns: ceil(OH / 2), ceil(OW / 2)
  int64_t Cp;      // C rounded up to a pair
  int64_t COp;     // CO rounded up to a vector of 8
};

struct PreparedWinograd {
  bool take = false;
  WinogradConv s{};
  Epilogue e;
  bool u8 = true;
  int32_t zp = 0;
  std::shared_ptr<const std::vector<int16_t>> u;  // [16][Cp / 2][COp][2]
};

std::vector<int16_t> transform_weights(const WinogradConv& s, const Tensor& weight) {
  static constexpr int kG[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};  // 2G
  std::vector<int16_t> u(static_cast<size_t>(16 * s.Cp * s.COp), 0);
  const int8_t* w = weight.data<int8_t>();  // [CO][C][3][3]
  const int64_t pairs = s.Cp / 2;
  for (int64_t o = 0; o < s.CO; ++o)
    for (int64_t c = 0; c < s.C; ++c) {
      const int8_t* g = w + (o * s.C + c) * 9;
      int t[4][3];  // (2G) g
      for (int a = 0; a < 4; ++a)
        for (int j = 0; j < 3; ++j) t[a][j] = kG[a][0] * g[j] + kG[a][1] * g[3 + j] + kG[a][2] * g[6 + j];
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) {
          const int v = t[a][0] * kG[b][0] + t[a][1] * kG[b][1] + t[a][2] * kG[b][2];
          u[static_cast<size_t>((((a * 4 + b) * pairs + c / 2) * s.COp + o) * 2 + c % 2)] = static_cast<int16_t>(v);
        }
    }
  return u;
}

// Channels [c0, c0 + 16) of input pixel (ih, iw) of image n minus the zero point, in int16: zero outside
// the image (the padding is the zero point); past C, values that meet zero weights.
PD_AVX2_TARGET inline __m256i load_pixel(const WinogradConv& s, const uint8_t* x, bool u8, __m256i zp, int64_t n, int64_t ih, int64_t iw,
                                         int64_t c0) {
  if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) return _mm256_setzero_si256();
  const uint8_t* p = x + ((n * s.H + ih) * s.W + iw) * s.C + c0;
  __m128i b;
  if (c0 + 16 <= s.C) {
    b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  } else {
    alignas(16) uint8_t tail[16] = {};
    std::memcpy(tail, p, static_cast<size_t>(s.C - c0));
    b = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
  }
  return _mm256_sub_epi16(u8 ? _mm256_cvtepu8_epi16(b) : _mm256_cvtepi8_epi16(b), zp);
}

// V = B^T d B of every tile of tile row ty of image n, into v [16][TW][Cp].
PD_AVX2_TARGET void transform_tile_row(const WinogradConv& s, const uint8_t* x, bool u8, int32_t zero_point, int64_t n, int64_t ty,
                                       int16_t* v) {
  const __m256i zp = _mm256_set1_epi16(static_cast<int16_t>(zero_point));
  const int64_t plane = s.TW * s.Cp;
  for (int64_t tx = 0; tx < s.TW; ++tx)
    for (int64_t c0 = 0; c0 < s.C; c0 += 16) {
      __m256i d[4][4], r[4][4];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) d[i][j] = load_pixel(s, x, u8, zp, n, 2 * ty - s.ph + i, 2 * tx - s.pw + j, c0);
      for (int j = 0; j < 4; ++j) {  // B^T d
        r[0][j] = _mm256_sub_epi16(d[0][j], d[2][j]);
        r[1][j] = _mm256_add_epi16(d[1][j], d[2][j]);
        r[2][j] = _mm256_sub_epi16(d[2][j], d[1][j]);
        r[3][j] = _mm256_sub_epi16(d[1][j], d[3][j]);
      }
      const int64_t count = std::min<int64_t>(16, s.Cp - c0);
      for (int a = 0; a < 4; ++a) {  // (B^T d) B
        const __m256i t[4] = {_mm256_sub_epi16(r[a][0], r[a][2]), _mm256_add_epi16(r[a][1], r[a][2]),
                              _mm256_sub_epi16(r[a][2], r[a][1]), _mm256_sub_epi16(r[a][1], r[a][3])};
        for (int b = 0; b < 4; ++b) {
          int16_t* dst = v + (a * 4 + b) * plane + tx * s.Cp + c0;
          if (count == 16) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), t[b]);
          } else {
            alignas(32) int16_t part[16];
            _mm256_store_si256(reinterpret_cast<__m256i*>(part), t[b]);
            std::memcpy(dst, part, static_cast<size_t>(count) * sizeof(int16_t));
          }
        }
      }
    }
}

// The exact sums of P tiles (from t0) x V vectors of 8 output channels (from o0): the 16 products over
// the channel pairs, then A^T M A / 4, into sums [2 output rows][OW][Vs] at vector vs0.
template <int P, int V>
PD_AVX2_TARGET void tile_block(const WinogradConv& s, const int16_t* v, const int16_t* u, int64_t t0, int64_t o0, __m256i* sums,
                               int64_t Vs, int64_t vs0) {
  const int64_t pairs = s.Cp / 2, plane = s.TW * s.Cp;
  __m256i m[16][P][V];
  for (int xi = 0; xi < 16; ++xi) {
    __m256i acc[P][V];
    #pragma GCC unroll 16
    for (int p = 0; p < P; ++p)
      #pragma GCC unroll 16
      for (int k = 0; k < V; ++k) acc[p][k] = _mm256_setzero_si256();
    const int16_t* vx = v + xi * plane + t0 * s.Cp;
    const int16_t* ux = u + (xi * pairs * s.COp + o0) * 2;
    for (int64_t q = 0; q < pairs; ++q) {
      __m256i w[V];
      #pragma GCC unroll 16
      for (int k = 0; k < V; ++k) w[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ux + (q * s.COp + 8 * k) * 2));
      #pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const __m256i b = _mm256_set1_epi32(load_u32(vx + p * s.Cp + 2 * q));
        #pragma GCC unroll 16
        for (int k = 0; k < V; ++k) acc[p][k] = _mm256_add_epi32(acc[p][k], _mm256_madd_epi16(b, w[k]));
      }
    }
    #pragma GCC unroll 16
    for (int p = 0; p < P; ++p)
      #pragma GCC unroll 16
      for (int k = 0; k < V; ++k) m[xi][p][k] = acc[p][k];
  }
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < V; ++k) {
      __m256i a[2][4];  // A^T M
      for (int b = 0; b < 4; ++b) {
        a[0][b] = _mm256_add_epi32(_mm256_add_epi32(m[b][p][k], m[4 + b][p][k]), m[8 + b][p][k]);
        a[1][b] = _mm256_sub_epi32(_mm256_sub_epi32(m[4 + b][p][k], m[8 + b][p][k]), m[12 + b][p][k]);
      }
      for (int r = 0; r < 2; ++r) {
        const __m256i y0 = _mm256_add_epi32(_mm256_add_epi32(a[r][0], a[r][1]), a[r][2]);
        const __m256i y1 = _mm256_sub_epi32(_mm256_sub_epi32(a[r][1], a[r][2]), a[r][3]);
        const int64_t ow = 2 * (t0 + p);
        __m256i* row = sums + r * s.OW * Vs + vs0 + k;
        row[ow * Vs] = _mm256_srai_epi32(y0, 2);  // exact: 4 x an integer
        if (ow + 1 < s.OW) row[(ow + 1) * Vs] = _mm256_srai_epi32(y1, 2);
      }
    }
}

using BlockFn = void (*)(const WinogradConv&, const int16_t*, const int16_t*, int64_t, int64_t, __m256i*, int64_t, int64_t);

constexpr BlockFn kBlocks[2][kMostTiles] = {
  {tile_block<1, 1>, tile_block<2, 1>, tile_block<3, 1>, tile_block<4, 1>, tile_block<5, 1>, tile_block<6, 1>},
  {tile_block<1, 2>, tile_block<2, 2>, tile_block<3, 2>, tile_block<4, 2>, tile_block<5, 2>, tile_block<6, 2>}};

// Tile row ty of image n, output channel vectors [vb, ve): transforms, products, epilogue.
void winograd_tile_row(const PreparedWinograd& p, Avx2EpilogueFn epilogue, const uint8_t* x, const void* residual, void* out, int64_t n,
                       int64_t ty, int64_t vb, int64_t ve) {
  const WinogradConv& s = p.s;
  thread_local std::vector<int16_t> v;
  thread_local std::vector<int32_t> sums;  // vectors of 8, aligned by hand (std::vector keeps 16 bytes)
  v.resize(static_cast<size_t>(16 * s.TW * s.Cp));
  transform_tile_row(s, x, p.u8, p.zp, n, ty, v.data());
  const int64_t Vs = ve - vb;
  sums.resize(static_cast<size_t>(2 * s.OW * Vs * 8 + 8));
  auto* const row_sums = reinterpret_cast<__m256i*>((reinterpret_cast<uintptr_t>(sums.data()) + 31) & ~uintptr_t{31});
  for (int64_t k = vb; k < ve; k += 2) {
    const int wide = k + 1 < ve ? 1 : 0;
    balanced_blocks(s.TW, kMostTiles, [&](int64_t t0, int64_t tiles) {
      kBlocks[wide][tiles - 1](s, v.data(), p.u->data(), t0, 8 * k, row_sums, Vs, k - vb);
    });
  }
  const int64_t o0 = 8 * vb, channels = std::min(s.CO, 8 * ve) - o0;
  for (int64_t r = 0; r < 2 && 2 * ty + r < s.OH; ++r) {
    const int64_t at = (n * s.OH + 2 * ty + r) * s.OW * s.CO + o0;
    epilogue(p.e, Avx2Tile{row_sums + r * s.OW * Vs, s.OW, Vs, o0, channels, at, s.CO, out, residual, /*offsets=*/false});
  }
}

bool setup(const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point, const Tensor& weight, const Tensor& weight_scale,
           const Tensor& bias, const Tensor& residual, const Tensor& residual_scale, const Tensor& residual_zero_point,
           const Tensor& out_scale, const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
           const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha, bool channels_last,
           DType out_dtype, const Tensor& out, PreparedWinograd& p) {
  const Activation act = parse_activation("quantized_conv2d", activation);
  const auto ones = [](const std::vector<int64_t>& v) { return v.size() == 2 && v[0] == 1 && v[1] == 1; };
  const Shape &xs = x.shape(), &ws = weight.shape(), &ys = out.shape();
  if (!channels_last || groups != 1 || !ones(stride) || !ones(dilation) || padding.size() != 2 || !vector_activation(act) ||
      x.dtype() == DType::f32 || ws[2] != 3 || ws[3] != 3 || xs[3] < kFewestChannels || xs[3] > kMostChannels)
    return false;
  WinogradConv& s = p.s;
  s.N = xs[0], s.H = xs[1], s.W = xs[2], s.C = xs[3], s.CO = ws[0];
  s.OH = ys[1], s.OW = ys[2], s.ph = padding[0], s.pw = padding[1];
  s.TH = (s.OH + 1) / 2, s.TW = (s.OW + 1) / 2;
  s.Cp = round_up(s.C, 2), s.COp = round_up(s.CO, 8);
  p.e = make_epilogue(x_scale, weight_scale, bias, out_scale, out_zero_point, act, alpha, out_dtype, s.CO, /*seven_bit=*/false);
  set_residual(p.e, residual, residual_scale, residual_zero_point);
  p.u8 = x_zero_point.dtype() == DType::u8;
  p.zp = p.u8 ? int32_t{x_zero_point.item<uint8_t>()} : int32_t{x_zero_point.item<int8_t>()};
  return true;
}

}  // namespace

bool quantized_conv2d_winograd(const KernelContext& ctx, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                               const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& residual,
                               const Tensor& residual_scale, const Tensor& residual_zero_point, const Tensor& out_scale,
                               const Tensor& out_zero_point, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                               const std::vector<int64_t>& dilation, int64_t groups, const std::string& activation, double alpha,
                               bool channels_last, DType out_dtype, Tensor& out) {
  if (int8_path() != Path::avx2 || cpu_has_vnni() || out.numel() == 0 || x.numel() == 0) return false;
  const int64_t variant = static_cast<int64_t>(x.dtype()) * 64 + (residual.defined() ? static_cast<int64_t>(residual.dtype()) + 1 : 0);
  const auto prepared = memoized<PreparedWinograd>(
      ctx, "quantized_conv2d_winograd", variant, x.shape(),
      {&x_scale, &x_zero_point, &weight, &weight_scale, &bias, &residual_scale, &residual_zero_point, &out_scale, &out_zero_point}, [&] {
        auto p = std::make_shared<PreparedWinograd>();
        p->take = setup(x, x_scale, x_zero_point, weight, weight_scale, bias, residual, residual_scale, residual_zero_point, out_scale,
                        out_zero_point, stride, padding, dilation, groups, activation, alpha, channels_last, out_dtype, out, *p);
        if (p->take)
          p->u = packed_once<std::vector<int16_t>>(ctx, weight, "winograd", false, [&] { return transform_weights(p->s, weight); });
        return p;
      });
  if (!prepared->take) return false;
  const PreparedWinograd& p = *prepared;
  const WinogradConv& s = p.s;
  const Avx2EpilogueFn epilogue = avx2_epilogue_for(p.e, residual.defined());
  const auto* in = static_cast<const uint8_t*>(x.raw_data());
  const void* res = residual.defined() ? residual.raw_data() : nullptr;
  void* o = out.raw_data();
  // Where the tile rows do not divide among the threads (a 14 x 14 map's 7 at batch 1), each row's
  // output channels are cut into one part a thread, in whole pairs of vectors.
  const int64_t threads = std::max(1, pd::parallel_threads()), rows = s.N * s.TH, vectors = s.COp / 8;
  const int64_t parts = rows % threads != 0 && vectors >= 2 * threads ? threads : 1;
  const auto edge = [&](int64_t q) { return q >= parts ? vectors : q * (vectors / 2) / parts * 2; };
  const int64_t work = (s.TW * 16 * s.Cp / kProductsPerWork + 2 * s.OW * kEpilogueWork) * s.COp / parts;
  cpu::parallel_for(rows * parts, work, [&](int64_t i) {
    const int64_t r = i / parts, q = i % parts;
    winograd_tile_row(p, epilogue, in, res, o, r / s.TH, r % s.TH, edge(q), edge(q + 1));
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
