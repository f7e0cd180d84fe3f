// Winograd F(4x4, 3x3), the building blocks of winograd_conv2d: a 6x6 input patch d and a 3x3 filter g
// give a 4x4 output tile Y = A^T [(G g G^T) .* (B^T d B)] A, with the interpolation points 0, 1, -1, 2, -2
// and infinity. Per output tile that is 36 multiplications per channel pair instead of 144, and summing
// over the input channels turns the 36 elementwise products into 36 independent matrix products.
//
// The vector code works on the channels of one 32-byte vector at a time (GCC vector extensions: 8
// floats or 4 doubles); the point products also come with 64-byte vectors (WideVec) for AVX-512. Every
// function is always_inline, so each entry point of winograd_conv.cc (AVX-512, AVX2 + FMA, baseline)
// compiles all of it for its own instruction set.
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

// Vectors are passed by pointer, never by value, but GCC still notes the AVX ABI for inline helpers.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace pd::kernels::cpu::winograd {

// GCC vector extensions: Bytes / sizeof(T) lanes of T.
template <typename T, int Bytes>
struct VecOf {
  typedef T type __attribute__((vector_size(Bytes)));
};
template <typename T>
using Vec = typename VecOf<T, 32>::type;
template <typename T>
constexpr int kLanes = 32 / sizeof(T);
template <typename T>
using WideVec = typename VecOf<T, 64>::type;
// Lanes of a vector type.
template <typename V>
constexpr int lanes_of = sizeof(V) / sizeof(std::declval<V>()[0]);
static_assert(lanes_of<Vec<float>> == 8 && lanes_of<WideVec<float>> == 16 && lanes_of<WideVec<double>> == 8);


#define PD_WINO_INLINE inline __attribute__((always_inline))

constexpr int kOut = 4;     // output tile side
constexpr int kIn = 6;      // input patch side
constexpr int kPoints = 36;  // transform points per tile
constexpr int kRows = 6;    // tiles per micro-kernel call (rows of the point GEMMs)

// G (6x3): the filter transform.
constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                             {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                             {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                             {1.0 / 24, 1.0 / 12, 1.0 / 6},
                             {1.0 / 24, -1.0 / 12, 1.0 / 6},
                             {0, 0, 1}};

template <typename T, typename V = Vec<T>>
PD_WINO_INLINE V load(const T* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

template <typename T, typename V>
PD_WINO_INLINE void store(T* p, const V& v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// s in every lane: one broadcast instruction. Done on the integer bits, where `{} + b` folds to a plain
// broadcast: the float forms (`{} + s` adds a zero that cannot be folded because of -0; a lane-0 shuffle)
// compile, for 64-byte vectors under GCC 12, into one masked insert per lane (16 per splat, which made
// the AVX-512 point products 2.5x slower than the AVX2 ones).
template <typename T, typename V = Vec<T>>
PD_WINO_INLINE V splat(T s) {
  using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  typedef Bits BitsVec __attribute__((vector_size(sizeof(V))));
  Bits b;
  __builtin_memcpy(&b, &s, sizeof b);
  const BitsVec bits = BitsVec{} + b;
  V v;
  __builtin_memcpy(&v, &bits, sizeof v);
  return v;
}

// o[j][i] = r[i][j] for an 8x8 block of floats: the gathers and scatters between the channel vectors and
// NCHW rows. The masks are those of unpack, shuffle and 128-bit permutes, which GCC emits as such.
PD_WINO_INLINE void transpose8(const Vec<float>* r, Vec<float>* o) {
#define PD_LO 0, 8, 1, 9, 4, 12, 5, 13
#define PD_HI 2, 10, 3, 11, 6, 14, 7, 15
#define PD_PAIR_LO 0, 1, 8, 9, 4, 5, 12, 13
#define PD_PAIR_HI 2, 3, 10, 11, 6, 7, 14, 15
#define PD_HALF_LO 0, 1, 2, 3, 8, 9, 10, 11
#define PD_HALF_HI 4, 5, 6, 7, 12, 13, 14, 15
  Vec<float> t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shufflevector(r[i], r[i + 1], PD_LO);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], PD_HI);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = __builtin_shufflevector(t[i], t[i + 2], PD_PAIR_LO);
    u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], PD_PAIR_HI);
    u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], PD_PAIR_LO);
    u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], PD_PAIR_HI);
  }
  for (int i = 0; i < 4; ++i) {
    o[i] = __builtin_shufflevector(u[i], u[i + 4], PD_HALF_LO);
    o[i + 4] = __builtin_shufflevector(u[i], u[i + 4], PD_HALF_HI);
  }
#undef PD_LO
#undef PD_HI
#undef PD_PAIR_LO
#undef PD_PAIR_HI
#undef PD_HALF_LO
#undef PD_HALF_HI
}

// out[k * os] = (B^T in)[k] for the 6 values in[0], in[is], ..., in[5 * is].
template <typename T, typename V = Vec<T>>
PD_WINO_INLINE void input_1d(const V* in, int is, V* out, int os) {
  const V d0 = in[0], d1 = in[is], d2 = in[2 * is], d3 = in[3 * is], d4 = in[4 * is], d5 = in[5 * is];
  out[0] = d0 * T(4) - d2 * T(5) + d4;
  out[os] = (d3 + d4) - (d1 + d2) * T(4);
  out[2 * os] = (d1 - d2) * T(4) + (d4 - d3);
  out[3 * os] = (d3 - d1) * T(2) + (d4 - d2);
  out[4 * os] = (d1 - d3) * T(2) + (d4 - d2);
  out[5 * os] = d1 * T(4) - d3 * T(5) + d5;
}

// out[k * os] = (A^T in)[k] for k < 4.
template <typename T, typename V = Vec<T>>
PD_WINO_INLINE void output_1d(const V* in, int is, V* out, int os) {
  const V s12 = in[is] + in[2 * is], d12 = in[is] - in[2 * is];
  const V s34 = in[3 * is] + in[4 * is], d34 = in[3 * is] - in[4 * is];
  out[0] = in[0] + s12 + s34;
  out[os] = d12 + d34 * T(2);
  out[2 * os] = s12 + s34 * T(4);
  out[3 * os] = d12 + d34 * T(8) + in[5 * is];
}

// out[k * os] = (A in)[k] for the 4 values in[0], in[is], in[2 * is], in[3 * is]: the adjoint of
// output_1d, which takes an output tile's gradient back to the 6 points (the weight gradient).
template <typename T, typename V = Vec<T>>
PD_WINO_INLINE void grad_1d(const V* in, int is, V* out, int os) {
  const V y0 = in[0], y1 = in[is], y2 = in[2 * is], y3 = in[3 * is];
  const V s02 = y0 + y2, s13 = y1 + y3, f02 = y0 + y2 * T(4), f13 = (y1 + y3 * T(4)) * T(2);
  out[0] = y0;
  out[os] = s02 + s13;
  out[2 * os] = s02 - s13;
  out[3 * os] = f02 + f13;
  out[4 * os] = f02 - f13;
  out[5 * os] = y3;
}

// d: the 6x6 patch of a vector of channels, its rows row_stride vectors apart ->
// V[p * point_stride + lanes) = (B^T d B)[p].
template <typename T, typename V = Vec<T>>
PD_WINO_INLINE void input_transform(const V* d, int row_stride, T* out, int64_t point_stride) {
  V t[kPoints];
#pragma GCC unroll 6
  for (int j = 0; j < kIn; ++j) input_1d<T>(d + j, row_stride, t + j, kIn);
#pragma GCC unroll 6
  for (int i = 0; i < kIn; ++i) {
    V r[kIn];
    input_1d<T>(t + i * kIn, 1, r, 1);
#pragma GCC unroll 6
    for (int j = 0; j < kIn; ++j) store(out + (i * kIn + j) * point_stride, r[j]);
  }
}

// M[p * point_stride + lanes): the 36 products of a vector of output channels -> o = A^T M A + bias
// (4x4, row-major).
template <typename T, typename V = Vec<T>>
PD_WINO_INLINE void output_transform(const T* M, int64_t point_stride, const V& bias, V* o) {
  V m[kPoints], t[kOut * kIn];
#pragma GCC unroll 36
  for (int p = 0; p < kPoints; ++p) m[p] = load<T, V>(M + p * point_stride);
#pragma GCC unroll 6
  for (int j = 0; j < kIn; ++j) output_1d<T>(m + j, kIn, t + j, kIn);
#pragma GCC unroll 4
  for (int i = 0; i < kOut; ++i) {
    output_1d<T>(t + i * kIn, 1, o + i * kOut, 1);
#pragma GCC unroll 4
    for (int j = 0; j < kOut; ++j) o[i * kOut + j] += bias;
  }
}

// C[r * ldc + NV vectors) = sum_k A[r * lda + k] * B[k * ldb + NV vectors) for the R <= 6 rows r: the
// register-blocked inner kernel of the per-point matrix products (12 accumulators for R = 6, NV = 2).
// kTransA reads A[k * lda + r] and kAccumulate adds to C: the weight gradient's products, whose long
// dimension k (the tiles) is the rows of both operands, summed over blocks of tiles.
template <typename T, int R, int NV, typename V = Vec<T>, bool kTransA = false, bool kAccumulate = false>
PD_WINO_INLINE void gemm_rows(int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc) {
  constexpr int L = lanes_of<V>;
  V acc[R][NV];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[r][v] = splat<T, V>(T(0));
  for (int64_t k = 0; k < K; ++k) {
    V b[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) b[v] = load<T, V>(B + k * ldb + L * v);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const V a = splat<T, V>(kTransA ? A[k * lda + r] : A[r * lda + k]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[r][v] += a * b[v];
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) store(C + r * ldc + L * v, kAccumulate ? load<T, V>(C + r * ldc + L * v) + acc[r][v] : acc[r][v]);
}

}  // namespace pd::kernels::cpu::winograd
