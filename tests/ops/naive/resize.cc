// Naive-loop reference for interpolate: ONNX Resize's formulas written out per output element, the
// coordinates in f32 as the op defines them (onnxruntime's arithmetic) and the blend in double, with the
// taps found from the coordinate directly (no shared tables).
#include "naive_util.h"

namespace {
using namespace pd::naive;

// Output index o along one axis of `in` -> `out` as an input coordinate.
double source(const std::string& mode, int64_t o, int64_t in, int64_t out, float scale) {
  const auto x = static_cast<float>(o);
  if (mode == "asymmetric") return x / scale;
  if (mode == "align_corners") return out == 1 ? 0.0f : x * static_cast<float>(in - 1) / static_cast<float>(out - 1);
  if (mode == "pytorch_half_pixel" && out == 1) return 0.0f;
  return (x + 0.5f) / scale - 0.5f;  // half_pixel
}

int64_t nearest(const std::string& rounding, double x, int64_t in) {
  double k = std::floor(x);
  const double frac = x - k;
  if (rounding == "ceil") k = std::ceil(x);
  else if (rounding == "round_prefer_floor") k += frac > 0.5 ? 1 : 0;
  else if (rounding == "round_prefer_ceil") k += frac >= 0.5 ? 1 : 0;
  return std::clamp<int64_t>(static_cast<int64_t>(k), 0, in - 1);
}

// Keys' cubic convolution kernel at distance d with coefficient a, in its textbook expanded form.
double keys(double d, double a) {
  d = std::fabs(d);
  if (d <= 1) return (a + 2) * d * d * d - (a + 3) * d * d + 1;
  if (d < 2) return a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a;
  return 0;
}

// Bicubic at coordinate (y, x): the 16 samples around it, each index clamped to the plane (edge values
// repeat), weighted by the kernel at its distance from the coordinate (the fraction taken in f32).
double bicubic(const double* plane, int64_t H, int64_t W, double y, double x, double a) {
  const double fy = std::floor(y), fx = std::floor(x);
  const double ty = static_cast<float>(y - fy), tx = static_cast<float>(x - fx);
  double r = 0;
  for (int j = -1; j <= 2; ++j)
    for (int k = -1; k <= 2; ++k) {
      const int64_t iy = std::clamp<int64_t>(static_cast<int64_t>(fy) + j, 0, H - 1), ix = std::clamp<int64_t>(static_cast<int64_t>(fx) + k, 0, W - 1);
      r += keys(j - ty, a) * keys(k - tx, a) * plane[iy * W + ix];
    }
  return r;
}

}  // namespace

PD_NAIVE_REF(interpolate) {
  const pd::Tensor& x = in[0][0];
  const Ints xs = x.shape();
  const Ints size = get<Ints>(attrs, "size", {});
  const Reals scales = get<Reals>(attrs, "scales", {});
  const std::string mode = get<std::string>(attrs, "mode", "nearest"), coord = get<std::string>(attrs, "coordinate_mode", "half_pixel");
  const std::string rounding = get<std::string>(attrs, "nearest_mode", "floor");
  const int64_t NC = xs[0] * xs[1], H = xs[2], W = xs[3], OH = size[0], OW = size[1];
  // The factor each axis divides by: the one asked for, else out / in (in f32, as the ONNX spec's scales are).
  const float sh = scales.empty() ? static_cast<float>(OH) / static_cast<float>(H) : static_cast<float>(scales[0]);
  const float sw = scales.empty() ? static_cast<float>(OW) / static_cast<float>(W) : static_cast<float>(scales[1]);
  const Reals v = vals(x);
  Reals out(static_cast<size_t>(NC * OH * OW), 0.0);
  for (int64_t p = 0; p < NC; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const double y = source(coord, oh, H, OH, sh), xw = source(coord, ow, W, OW, sw);
        const double* plane = v.data() + p * H * W;
        double r;
        if (mode == "nearest") {
          r = plane[nearest(rounding, y, H) * W + nearest(rounding, xw, W)];
        } else if (mode == "bicubic") {
          r = bicubic(plane, H, W, y, xw, get<double>(attrs, "cubic_coeff_a", -0.75));
        } else {
          const double cy = std::clamp(y, 0.0, static_cast<double>(H - 1)), cx = std::clamp(xw, 0.0, static_cast<double>(W - 1));
          const int64_t y0 = static_cast<int64_t>(std::floor(cy)), x0 = static_cast<int64_t>(std::floor(cx));
          const int64_t y1 = std::min(y0 + 1, H - 1), x1 = std::min(x0 + 1, W - 1);
          const double ly = static_cast<float>(cy - static_cast<double>(y0)), lx = static_cast<float>(cx - static_cast<double>(x0));
          r = (1 - ly) * (1 - lx) * plane[y0 * W + x0] + (1 - ly) * lx * plane[y0 * W + x1] + ly * (1 - lx) * plane[y1 * W + x0] +
              ly * lx * plane[y1 * W + x1];
        }
        out[(p * OH + oh) * OW + ow] = r;
      }
  return {make(out, {xs[0], xs[1], OH, OW})};
}
