// quantized_direct.h's linear kernel for few rows: the weight packed once with outputs as the vector
// lanes (AVX-512 VNNI, and AVX2 on weights within 7 bits: u8 x s8 in groups of 4 inputs, 16 outputs a
// block, one vector or two; AVX2 on 8-bit weights: int16 pairs, 8 outputs a vector), each row's inputs
// broadcast against it, the epilogue on whole vectors.
#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12's AVX-512 intrinsics start some results from `__Y = __Y` (an undefined vector) and then warn
// about it where they are inlined.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "cpu/common/parallel.h"
#include "cpu/ref/quantized_direct.h"
#include "cpu/ref/quantized_direct_epilogue.h"

namespace pd::kernels::reference {

#if defined(__x86_64__)
namespace {

using namespace int8_direct;

// ---- linear --------------------------------------------------------------------------------------

constexpr int64_t kLinearRows = 4;  // AVX2 on int16: rows taken directly (oneDNN's matmul wins from about here on)
constexpr int64_t kBlocksAtOnce = 4;  // blocks of outputs per tile (VNNI: 16 outputs each, times 4 rows: 16
                                      // accumulators; AVX2: 8 outputs each, one row)
// VNNI and AVX2 on u8: rows taken in tiles of 4 that share each weight load, where the weight is small
// enough to be read again per tile from cache (LeNet's linears at batch 64: 36 -> 13 us on 2 threads with
// VNNI, where oneDNN's matmul spent most of its time in the threads' barriers).
constexpr int64_t kTileMostRows = 256, kTileMostWeightBytes = int64_t{1} << 20;

// Everything a call derives from its constant inputs: the epilogue (VNNI: with the zero point's offset)
// and the weight as multiplied. VNNI packs it [block of 16 outputs][K / 4][16][4], outputs as lanes, so
// 16 sums grow in one vector and none needs a horizontal add; AVX2 reads rows (halved for 7 bits).
// AVX2 packs it as int16 (halved for 7 bits) [block of 8 outputs][K2 = K / 2 rounded up][8][2]: one
// vpmaddwd per 2 products x 8 outputs against a broadcast pair of x, and the epilogue on whole vectors.
struct LinearCall {
  Path path = Path::none;  // weights_path's
  Epilogue e;
  int64_t O = 0, K = 0, K4 = 0, blocks = 0;  // VNNI: K4 groups of 4 inputs, blocks of 16 outputs
  int64_t K2 = 0, blocks8 = 0;               // AVX2: K2 pairs of inputs, blocks of 8 outputs
  std::vector<int8_t> w;     // VNNI, packed as above
  std::vector<int16_t> w16;  // AVX2, packed as above
  int32_t zp = 0;            // x's zero point (VNNI: of the u8 values, s8 shifted by 128)
  bool pairs = false;        // AVX2 on u8, weights within 6 bits, K4 even: ConvShape::pairs' sums
  VnniEpilogueFn epilogue = nullptr;       // VNNI's, for e
  Avx2EpilogueFn avx2_epilogue = nullptr;  // AVX2's
};

LinearCall make_linear_call(Path path, bool seven_bit, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                            const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                            const Tensor& out_zero_point, Activation act, double alpha, DType out_dtype) {
  LinearCall c;
  c.O = weight.shape()[0], c.K = weight.shape()[1], c.K4 = (c.K + 3) / 4, c.blocks = (c.O + kLanes - 1) / kLanes;
  c.e = make_epilogue(x_scale, weight_scale, bias, out_scale, out_zero_point, act, alpha, out_dtype, c.O, seven_bit);
  const bool u8 = x.dtype() == DType::u8;
  c.zp = u8 ? int32_t{x_zero_point.item<uint8_t>()} : int32_t{x_zero_point.item<int8_t>()};
  const int8_t* w = weight.data<int8_t>();
  c.path = weights_path(path, weight, seven_bit);
  c.avx2_epilogue = avx2_epilogue_for(c.e, /*residual=*/false);
  if (c.path == Path::avx2) {
    c.K2 = (c.K + 1) / 2, c.blocks8 = (c.O + 7) / 8;
    c.w16.assign(static_cast<size_t>(c.blocks8 * c.K2 * 16), 0);
    for (int64_t o = 0; o < c.O; ++o)
      for (int64_t k = 0; k < c.K; ++k) c.w16[((o / 8 * c.K2 + k / 2) * 8 + o % 8) * 2 + k % 2] = weight_value(w[o * c.K + k], seven_bit);
    return c;
  }
  c.epilogue = vnni_epilogue_for(c.e, /*residual=*/false);
  c.pairs = c.path == Path::avx2_u8 && !seven_bit && !cpu_has_vnni() && c.K4 % 2 == 0 && within_six_bits(weight);
  if (!u8) c.zp += 128;
  c.w.assign(static_cast<size_t>(c.blocks * c.K4 * kLanes * 4), 0);
  for (int64_t o = 0; o < c.O; ++o) {
    int32_t sum = 0;
    for (int64_t k = 0; k < c.K; ++k) {
      const int8_t v = weight_value(w[o * c.K + k], seven_bit);
      c.w[((o / kLanes * c.K4 + k / 4) * kLanes + o % kLanes) * 4 + k % 4] = v;
      sum += v;
    }
    c.e.offset[o] = c.zp * sum;
  }
  return c;
}

// The call's LinearCall: kept in the op's memo slot, else in ctx.packed, when every tensor it is built
// from is a constant.
std::shared_ptr<const LinearCall> linear_call(const KernelContext& ctx, Path path, bool seven_bit, const Tensor& x,
                                              const Tensor& x_scale, const Tensor& x_zero_point, const Tensor& weight,
                                              const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                                              const Tensor& out_zero_point, Activation act, double alpha, DType out_dtype) {
  const auto make = [&] {
    return std::make_shared<const LinearCall>(make_linear_call(path, seven_bit, x, x_scale, x_zero_point, weight, weight_scale,
                                                               bias, out_scale, out_zero_point, act, alpha, out_dtype));
  };
  const auto find_or_make = [&]() -> std::shared_ptr<const LinearCall> {
    if (!ctx.packed) return make();
    PackedKey key("int8-direct:linear_call");
    for (const Tensor* t : {&x_scale, &x_zero_point, &weight, &weight_scale, &bias, &out_scale, &out_zero_point})
      if (!key.add_constant(*ctx.packed, *t)) return make();
    key.add(x.dtype()), key.add(out_dtype), key.add(act), key.add(alpha), key.add(path), key.add(seven_bit);
    if (std::shared_ptr<void> hit = ctx.packed->find(key.str())) return std::static_pointer_cast<const LinearCall>(hit);
    auto made = make();
    ctx.packed->store(key.str(), std::const_pointer_cast<LinearCall>(made));
    return made;
  };
  // The attributes and dtypes are the op's own; the path and the input's dtype are checked.
  const int64_t variant = (static_cast<int64_t>(path) * 2 + seven_bit) * 64 + static_cast<int64_t>(x.dtype());
  return memoized<LinearCall>(ctx, "quantized_linear_direct", variant, {},
                              {&x_scale, &x_zero_point, &weight, &weight_scale, &bias, &out_scale, &out_zero_point}, find_or_make);
}

// R rows of x (u8, each with K4 * 4 readable bytes, zeros past K where K4 * 4 > K) against V blocks of
// 16 outputs from block b: R x V sums, each weight vector loaded once for the R rows.
template <int R, int V>
PD_VNNI_TARGET void vnni_linear_tile(const LinearCall& c, const uint8_t* const* x, int64_t b, void* out, int64_t row_at) {
  __m512i acc[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_si512();
  const int8_t* w = c.w.data() + b * c.K4 * kLanes * 4;
  for (int64_t k4 = 0; k4 < c.K4; ++k4) {
    __m512i wv[V];
#pragma GCC unroll 16
    for (int v = 0; v < V; ++v) wv[v] = _mm512_loadu_si512(w + (v * c.K4 + k4) * kLanes * 4);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512i xv = _mm512_set1_epi32(load_u32(x[r] + 4 * k4));
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v) acc[r][v] = vnni_dot(acc[r][v], xv, wv[v]);
    }
  }
  alignas(64) __m512i sums[R * V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < V; ++v) sums[r * V + v] = acc[r][v];
  const int64_t o0 = b * kLanes;
  c.epilogue(c.e, {sums, R, V, o0, c.O - o0, row_at + o0, c.O, out, nullptr});
}

using VnniTileFn = void (*)(const LinearCall&, const uint8_t* const*, int64_t, void*, int64_t);
template <int R>
constexpr VnniTileFn kVnniTiles[] = {vnni_linear_tile<R, 1>, vnni_linear_tile<R, 2>, vnni_linear_tile<R, 3>, vnni_linear_tile<R, 4>};

// `rows` (1-4) rows against `v` (1-4) blocks.
PD_VNNI_TARGET void vnni_linear_rows(const LinearCall& c, const uint8_t* const* x, int64_t rows, int64_t b, int64_t v, void* out,
                                     int64_t row_at) {
  static constexpr const VnniTileFn* kByRows[] = {kVnniTiles<1>, kVnniTiles<2>, kVnniTiles<3>, kVnniTiles<4>};
  kByRows[rows - 1][v - 1](c, x, b, out, row_at);
}

// AVX2: one row of x (int16, minus its zero point, zero-padded to K2 pairs) against V blocks of 8
// outputs from block b.
template <int V>
PD_AVX2_TARGET void avx2_linear_tile(const LinearCall& c, const int16_t* x, int64_t b, void* out, int64_t row_at) {
  __m256i acc[V];
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) acc[v] = _mm256_setzero_si256();
  const int16_t* w = c.w16.data() + b * c.K2 * 16;
  for (int64_t k2 = 0; k2 < c.K2; ++k2) {
    const __m256i xv = _mm256_set1_epi32(load_u32(x + 2 * k2));
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + (v * c.K2 + k2) * 16));
      acc[v] = _mm256_add_epi32(acc[v], _mm256_madd_epi16(xv, wv));
    }
  }
  alignas(32) __m256i sums[V];
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) sums[v] = acc[v];
  c.avx2_epilogue(c.e, {sums, 1, V, b * 8, c.O - b * 8, row_at + b * 8, c.O, out, nullptr, false});
}

// AVX2 on u8: R rows of x (as vnni_linear_tile's) against block b of 16 outputs in VNNI's packing, as
// two vectors of 8 outputs. Pairs: two groups' vpmaddubsw sums added before one vpmaddwd (c.pairs).
template <int R, bool Pairs>
PD_AVX2_TARGET void avx2_u8_linear_tile(const LinearCall& c, const uint8_t* const* x, int64_t b, void* out, int64_t row_at) {
  __m256i acc[R][2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  const int8_t* w = c.w.data() + b * c.K4 * kLanes * 4;
  for (int64_t k4 = 0; k4 < c.K4; k4 += Pairs ? 2 : 1) {
    const int8_t* wk = w + k4 * kLanes * 4;
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + 32));
    if constexpr (Pairs) {
      const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + kLanes * 4));
      const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wk + kLanes * 4 + 32));
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256i xa = _mm256_set1_epi32(load_u32(x[r] + 4 * k4)), xb = _mm256_set1_epi32(load_u32(x[r] + 4 * k4 + 4));
        acc[r][0] = avx2_dot_u8_pairs(acc[r][0], xa, w0, xb, v0);
        acc[r][1] = avx2_dot_u8_pairs(acc[r][1], xa, w1, xb, v1);
      }
    } else {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256i xv = _mm256_set1_epi32(load_u32(x[r] + 4 * k4));
        acc[r][0] = avx2_dot_u8(acc[r][0], xv, w0);
        acc[r][1] = avx2_dot_u8(acc[r][1], xv, w1);
      }
    }
  }
  alignas(32) __m256i sums[R * 2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) sums[r * 2] = acc[r][0], sums[r * 2 + 1] = acc[r][1];
  c.avx2_epilogue(c.e, {sums, R, 2, b * kLanes, c.O - b * kLanes, row_at + b * kLanes, c.O, out, nullptr, true});
}

using Avx2U8TileFn = void (*)(const LinearCall&, const uint8_t* const*, int64_t, void*, int64_t);
constexpr Avx2U8TileFn kAvx2U8Tiles[2][4] = {
    {avx2_u8_linear_tile<1, false>, avx2_u8_linear_tile<2, false>, avx2_u8_linear_tile<3, false>, avx2_u8_linear_tile<4, false>},
    {avx2_u8_linear_tile<1, true>, avx2_u8_linear_tile<2, true>, avx2_u8_linear_tile<3, true>, avx2_u8_linear_tile<4, true>}};

using Avx2TileFn = void (*)(const LinearCall&, const int16_t*, int64_t, void*, int64_t);
constexpr Avx2TileFn kAvx2Tiles[] = {avx2_linear_tile<1>, avx2_linear_tile<2>, avx2_linear_tile<3>, avx2_linear_tile<4>};

// Where row m of the product starts in x: rows of K values one after the other (a linear's), or the
// pixels of an NHWC map [N, H, W, K] read at strides (sh, sw), OH x OW of them an image (a 1x1
// convolution's, quantized_pointwise_direct).
struct RowSource {
  const uint8_t* base;  // x's bytes (1-byte values)
  int64_t K, H, W, OH, OW, sh, sw;
  const uint8_t* row(int64_t m) const {
    const int64_t n = m / (OH * OW), oh = m / OW % OH, ow = m % OW;
    return base + ((n * H + oh * sh) * W + ow * sw) * K;
  }
  // The starts of rows 0..M-1, in order.
  void rows(int64_t M, const uint8_t** at) const {
    for (int64_t m = 0, n = 0; m < M; ++n)
      for (int64_t oh = 0; oh < OH && m < M; ++oh)
        for (int64_t ow = 0; ow < OW && m < M; ++ow) at[m++] = base + ((n * H + oh * sh) * W + ow * sw) * K;
  }
};

// The kernels on M rows of `src`. The VNNI and AVX2-on-u8 paths read u8 rows in place where K is whole
// groups of 4 (a 1x1 convolution's strided pixels too: no gathered copy); s8 rows (read shifted by
// 128) and rows of a ragged K go through a copy padded with zeros, as the AVX2 path's int16 rows do.
bool linear_direct(const KernelContext& ctx, bool seven_bit, const RowSource& src, int64_t M, DType x_dtype, const Tensor& x,
                   const Tensor& x_scale, const Tensor& x_zero_point, const Tensor& weight, const Tensor& weight_scale,
                   const Tensor& bias, const Tensor& out_scale, const Tensor& out_zero_point, const std::string& activation,
                   double alpha, DType out_dtype, Tensor& out) {
  const Path path = int8_path();
  const Activation act = parse_activation("quantized_linear", activation);
  const int64_t O = weight.shape()[0], K = weight.shape()[1];
  const int64_t most_rows = O * K <= kTileMostWeightBytes ? kTileMostRows : kLinearRows;  // on u8
  if (path == Path::none || !vector_activation(act) || M == 0 || M > most_rows || K == 0) return false;
  const auto call = linear_call(ctx, path, seven_bit, x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale,
                                out_zero_point, act, alpha, out_dtype);
  const LinearCall& c = *call;
  if (c.path == Path::avx2 && M > kLinearRows) return false;
  void* o = out.raw_data();
  const bool u8 = x_dtype == DType::u8;
  if (c.path != Path::avx2) {
    // The rows as u8 (s8 shifted: v ^ 0x80 = v + 128), padded with zeros to whole groups of 4, where
    // they cannot be read in place.
    thread_local std::vector<uint8_t> rows;
    const bool in_place = u8 && c.K4 * 4 == K;
    const int64_t stride = c.K4 * 4;
    if (!in_place) {
      rows.assign(static_cast<size_t>(M * stride), 0);
      for (int64_t m = 0; m < M; ++m) {
        uint8_t* row = rows.data() + m * stride;
        const uint8_t* from = src.row(m);
        if (u8) std::memcpy(row, from, static_cast<size_t>(K));
        else
          for (int64_t k = 0; k < K; ++k) row[k] = from[k] ^ 0x80;
      }
    }
    // Where each row starts, found once (RowSource::row divides thrice: 4 rows a tile, 2 us of the
    // residual example's two projections at batch 1).
    thread_local std::vector<const uint8_t*> starts;
    starts.resize(static_cast<size_t>(M));
    if (in_place) src.rows(M, starts.data());
    else
      for (int64_t m = 0; m < M; ++m) starts[static_cast<size_t>(m)] = rows.data() + m * stride;
    const uint8_t* const* row_at = starts.data();  // the thread_locals are this thread's: the workers get pointers
    const auto tile_rows = [&](int64_t m, int64_t count, const uint8_t** at) {
      for (int64_t r = 0; r < count; ++r) at[r] = row_at[m + r];
    };
    const int64_t tiles = (M + 3) / 4;
    if (c.path == Path::vnni) {
      const int64_t groups = (c.blocks + kBlocksAtOnce - 1) / kBlocksAtOnce;
      cpu::parallel_for_bands(groups * tiles, 4 * kBlocksAtOnce * kLanes * (K / kProductsPerWork + kEpilogueWork), [&](int64_t t) {
        const int64_t m = t / groups * 4, b = t % groups * kBlocksAtOnce, count = std::min<int64_t>(4, M - m);
        const uint8_t* at[4];
        tile_rows(m, count, at);
        vnni_linear_rows(c, at, count, b, std::min(kBlocksAtOnce, c.blocks - b), o, m * O);
      });
    } else {
      cpu::parallel_for_bands(c.blocks * tiles, 4 * kLanes * (K / kProductsPerWork + kEpilogueWork), [&](int64_t t) {
        const int64_t m = t / c.blocks * 4, b = t % c.blocks, count = std::min<int64_t>(4, M - m);
        const uint8_t* at[4];
        tile_rows(m, count, at);
        kAvx2U8Tiles[c.pairs][count - 1](c, at, b, o, m * O);
      });
    }
  } else {
    thread_local std::vector<int16_t> wide;  // x minus its zero point, each row zero-padded to K2 pairs
    const int64_t stride = c.K2 * 2;
    wide.assign(static_cast<size_t>(M * stride), 0);
    const int32_t zp = c.zp;
    const auto widen = [&]<typename Q>(Q) {
      for (int64_t m = 0; m < M; ++m) {
        const Q* from = reinterpret_cast<const Q*>(src.row(m));
        std::transform(from, from + K, wide.data() + m * stride, [zp](Q v) { return static_cast<int16_t>(v - zp); });
      }
    };
    if (u8) widen(uint8_t{});
    else widen(int8_t{});
    const int16_t* xw = wide.data();  // the thread_local is this thread's: the workers get the pointer
    const int64_t groups = (c.blocks8 + kBlocksAtOnce - 1) / kBlocksAtOnce;
    cpu::parallel_for(M * groups, kBlocksAtOnce * 8 * K / kProductsPerWork, [&](int64_t t) {
      const int64_t m = t / groups, b = t % groups * kBlocksAtOnce;
      kAvx2Tiles[std::min(kBlocksAtOnce, c.blocks8 - b) - 1](c, xw + m * stride, b, o, m * O);
    });
  }
  return true;
}

}  // namespace

bool quantized_linear_direct(const KernelContext& ctx, bool seven_bit, const Tensor& x, const Tensor& x_scale, const Tensor& x_zero_point,
                             const Tensor& weight, const Tensor& weight_scale, const Tensor& bias, const Tensor& out_scale,
                             const Tensor& out_zero_point, const std::string& activation, double alpha, DType out_dtype,
                             Tensor& out) {
  const int64_t O = weight.shape()[0], K = weight.shape()[1], M = O > 0 ? out.numel() / O : 0;
  const RowSource rows{static_cast<const uint8_t*>(x.raw_data()), K, M, 1, M, 1, 1, 1};
  return linear_direct(ctx, seven_bit, rows, M, x.dtype(), x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale,
                       out_zero_point, activation, alpha, out_dtype, out);
}

bool quantized_pointwise_direct(const KernelContext& ctx, bool seven_bit, const Tensor& x, int64_t stride_h, int64_t stride_w,
                                const Tensor& x_scale, const Tensor& x_zero_point, const Tensor& weight, const Tensor& weight_scale,
                                const Tensor& bias, const Tensor& out_scale, const Tensor& out_zero_point, const std::string& activation,
                                double alpha, DType out_dtype, Tensor& out) {
  const Shape &xs = x.shape(), &ys = out.shape();
  const RowSource pixels{static_cast<const uint8_t*>(x.raw_data()), xs[3], xs[1], xs[2], ys[1], ys[2], stride_h, stride_w};
  return linear_direct(ctx, seven_bit, pixels, ys[0] * ys[1] * ys[2], x.dtype(), x, x_scale, x_zero_point, weight, weight_scale, bias,
                       out_scale, out_zero_point, activation, alpha, out_dtype, out);
}


#else  // not x86-64: the reference loops and oneDNN take every call

bool quantized_linear_direct(const KernelContext&, bool, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                             const Tensor&, const Tensor&, const Tensor&, const std::string&, double, DType, Tensor&) {
  return false;
}

bool quantized_pointwise_direct(const KernelContext&, bool, const Tensor&, int64_t, int64_t, const Tensor&, const Tensor&, const Tensor&,
                                const Tensor&, const Tensor&, const Tensor&, const Tensor&, const std::string&, double, DType, Tensor&) {
  return false;
}


#endif

}  // namespace pd::kernels::reference
