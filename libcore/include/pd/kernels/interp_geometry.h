// The index arithmetic of interpolate and interpolate_grad (ops.yaml), shared by the CPU and CUDA kernels
// so that both read the same input elements with the same weights: the coordinate transforms of ONNX
// Resize in f32 (as onnxruntime computes them, so that nearest indices agree at exact halves), the
// nearest roundings, bicubic's four taps an axis, and for the gradient the outputs whose taps read an
// input index (a gather, found by bisection: the taps never move backwards as the output index grows).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define PD_INTERP_HD __host__ __device__ __forceinline__
#else
#define PD_INTERP_HD inline
#endif

namespace pd::kernels {

enum class InterpMode : int { nearest, bilinear, bicubic };
enum class InterpCoord : int { half_pixel, pytorch_half_pixel, align_corners, asymmetric };
enum class InterpRound : int { floor, ceil, round_prefer_floor, round_prefer_ceil };

// One spatial axis: extents and the scale (output / input) the transform divides by.
struct InterpAxis {
  int64_t in, out;
  float scale;
};

struct InterpGeom {
  int64_t planes;
  InterpAxis h, w;
  InterpMode mode;
  InterpCoord coord;
  InterpRound round;
  float cubic_a;  // bicubic's kernel coefficient (-0.75: torch's and ONNX's default; -0.5: Keys')
};

// The two input indices an output index reads along one axis and the weight of the second (nearest:
// one index twice, weight 0).
struct InterpTap {
  int64_t i0, i1;
  float lambda;
};

PD_INTERP_HD float interp_source(const InterpAxis& a, InterpCoord c, int64_t o) {
  const float x = static_cast<float>(o);
  switch (c) {
    case InterpCoord::half_pixel: return (x + 0.5f) / a.scale - 0.5f;
    case InterpCoord::pytorch_half_pixel: return a.out > 1 ? (x + 0.5f) / a.scale - 0.5f : 0.0f;
    case InterpCoord::align_corners:
      return a.out > 1 ? x * static_cast<float>(a.in - 1) / static_cast<float>(a.out - 1) : 0.0f;
    case InterpCoord::asymmetric: return x / a.scale;
  }
  return 0.0f;
}

PD_INTERP_HD int64_t interp_clamp(int64_t i, int64_t n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

PD_INTERP_HD InterpTap interp_tap(const InterpAxis& a, InterpMode m, InterpCoord c, InterpRound r, int64_t o) {
  const float x = interp_source(a, c, o);
  if (m == InterpMode::nearest) {
    float k = floorf(x);
    switch (r) {
      case InterpRound::floor: break;
      case InterpRound::ceil: k = ceilf(x); break;
      case InterpRound::round_prefer_floor: k = x - k > 0.5f ? k + 1.0f : k; break;
      case InterpRound::round_prefer_ceil: k = x - k >= 0.5f ? k + 1.0f : k; break;
    }
    // Clamped as a float first: a coordinate far outside the input must not overflow the conversion.
    const float hi = static_cast<float>(a.in - 1);
    const int64_t i = interp_clamp(static_cast<int64_t>(k < 0.0f ? 0.0f : (k > hi ? hi : k)), a.in);
    return {i, i, 0.0f};
  }
  const float hi = static_cast<float>(a.in - 1);
  const float xc = x < 0.0f ? 0.0f : (x > hi ? hi : x);
  const int64_t i0 = interp_clamp(static_cast<int64_t>(xc), a.in);
  return {i0, interp_clamp(i0 + 1, a.in), xc - static_cast<float>(i0)};
}

// Bicubic: the four input indices an output index reads along one axis (floor(x) - 1 .. floor(x) + 2,
// clamped to the input, so an edge value repeats as torch's and onnxruntime's do) and the fraction t of
// the coordinate (in f32, as the coordinate is). The weights are Keys' cubic convolution kernel with
// coefficient a at distances 1 + t, t, 1 - t, 2 - t, worked out in the kernel's arithmetic type. The
// coordinate is not clamped (as bilinear's is): near an edge the taps run past it.
struct CubicTap {
  int64_t i[4];
  float t;
};

PD_INTERP_HD CubicTap interp_cubic_tap(const InterpAxis& a, InterpCoord c, int64_t o) {
  float x = interp_source(a, c, o);
  // Past two extents outside the input every tap is the edge index (weights sum to 1): clamping the
  // coordinate there keeps the conversion in range and changes nothing.
  const float lo = -3.0f, hi = static_cast<float>(a.in + 2);
  x = x < lo ? lo : (x > hi ? hi : x);
  const float k = floorf(x);
  const int64_t base = static_cast<int64_t>(k);
  CubicTap r;
  for (int j = 0; j < 4; ++j) r.i[j] = interp_clamp(base - 1 + j, a.in);
  r.t = x - k;
  return r;
}

template <typename A>
PD_INTERP_HD A cubic_near(A d, A a) { return ((a + A(2)) * d - (a + A(3))) * d * d + A(1); }  // |d| <= 1
template <typename A>
PD_INTERP_HD A cubic_far(A d, A a) { return ((a * d - A(5) * a) * d + A(8) * a) * d - A(4) * a; }  // 1 < |d| < 2

template <typename A>
PD_INTERP_HD void cubic_weights(const CubicTap& tap, float coeff, A w[4]) {
  const A a = static_cast<A>(coeff), t = static_cast<A>(tap.t);
  w[0] = cubic_far(A(1) + t, a);
  w[1] = cubic_near(t, a);
  w[2] = cubic_near(A(1) - t, a);
  w[3] = cubic_far(A(2) - t, a);
}

// The weight with which a bicubic output reads input index i (clamped taps can read one index twice).
template <typename A>
PD_INTERP_HD A cubic_weight(const CubicTap& t, float coeff, int64_t i) {
  A w[4];
  cubic_weights<A>(t, coeff, w);
  A s = 0;
  for (int j = 0; j < 4; ++j) s += t.i[j] == i ? w[j] : A(0);
  return s;
}

// The first output index whose bicubic taps can read input index i (the last tap never decreases).
PD_INTERP_HD int64_t cubic_first_reader(const InterpAxis& a, InterpCoord c, int64_t i) {
  int64_t lo = 0, hi = a.out;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (interp_cubic_tap(a, c, mid).i[3] < i) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The weight with which output o's value reads input index i along the axis (0 when it does not), in
// the arithmetic type A of the forward kernels' 1 - lambda.
template <typename A>
PD_INTERP_HD A interp_weight(const InterpTap& t, int64_t i) {
  const A l = static_cast<A>(t.lambda);
  return (t.i0 == i ? A(1) - l : A(0)) + (t.i1 == i ? l : A(0));
}

// The first output index whose taps can read input index i: the first with i1 >= i (i1 never decreases).
PD_INTERP_HD int64_t interp_first_reader(const InterpAxis& a, InterpMode m, InterpCoord c, InterpRound r, int64_t i) {
  int64_t lo = 0, hi = a.out;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (interp_tap(a, m, c, r, mid).i1 < i) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Host side: the geometry of a call from its attributes (already validated by the shape rule).
inline InterpMode interp_mode(const std::string& s) {
  if (s == "bilinear") return InterpMode::bilinear;
  if (s == "bicubic") return InterpMode::bicubic;
  return InterpMode::nearest;
}

inline InterpCoord interp_coord(const std::string& s) {
  if (s == "pytorch_half_pixel") return InterpCoord::pytorch_half_pixel;
  if (s == "align_corners") return InterpCoord::align_corners;
  if (s == "asymmetric") return InterpCoord::asymmetric;
  return InterpCoord::half_pixel;
}

inline InterpRound interp_round(const std::string& s) {
  if (s == "ceil") return InterpRound::ceil;
  if (s == "round_prefer_floor") return InterpRound::round_prefer_floor;
  if (s == "round_prefer_ceil") return InterpRound::round_prefer_ceil;
  return InterpRound::floor;
}

// `in` is [N, C, H, W] and `out` [N, C, oH, oW]; scales as interpolate's attribute ([] or 2 values).
inline InterpGeom make_interp_geom(const std::vector<int64_t>& in, const std::vector<int64_t>& out, const std::vector<double>& scales,
                                   const std::string& mode, const std::string& coord, const std::string& round, double cubic_a = -0.75) {
  const auto axis = [&](int d) {
    const float s = scales.size() == 2 ? static_cast<float>(scales[d - 2])
                                       : static_cast<float>(out[d]) / static_cast<float>(in[d] > 0 ? in[d] : 1);
    return InterpAxis{in[d], out[d], s};
  };
  return {in[0] * in[1], axis(2), axis(3), interp_mode(mode), interp_coord(coord), interp_round(round), static_cast<float>(cubic_a)};
}

}  // namespace pd::kernels
