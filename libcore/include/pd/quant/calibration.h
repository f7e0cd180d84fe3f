// Calibration for post-training quantization: an Observer collects an activation's statistics over
// the calibration batches (min, max, a histogram; NaN and Inf counted apart), each method turns them
// into a clipping range, and qparams_for maps a range onto the u8 / i8 grid. Deterministic: the same
// tensors in the same order give the same ranges, bit for bit.
//
//   pd::quant::Observer obs;
//   for (const Tensor& batch : activations) obs.observe(batch);
//   pd::quant::Range r = obs.range(pd::quant::Method::percentile);       // 99.99th by default
//   pd::quant::QParams q = pd::quant::qparams_for(r, pd::DType::u8);     // scale, zero point
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pd/core/dtype.h"
#include "pd/core/tensor.h"

namespace pd::quant {

enum class Method { minmax, percentile, kl, mse };
// "minmax", "percentile", "kl", "mse"; throws pd::Error listing them.
Method parse_method(const std::string& name);
const char* method_name(Method m);

struct Range {
  double lo = 0, hi = 0;
};

struct QParams {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

// The affine map of [lo, hi] (widened to hold 0, so that 0 is exact) onto u8 (asymmetric, 0..255) or
// i8 (symmetric, -127..127, zero point 0). A zero range gives scale 1: every value is then 0 exactly.
QParams qparams_for(Range r, DType dtype);

class Observer {
 public:
  explicit Observer(int bins = 2048);
  // Any float tensor. Values outside the range seen so far widen the histogram (its bins merge).
  void observe(const Tensor& t);

  int64_t count() const { return count_; }            // finite values seen
  int64_t non_finite() const { return non_finite_; }  // NaN and Inf, left out of every statistic
  double min() const { return min_; }
  double max() const { return max_; }
  const std::vector<int64_t>& histogram() const { return hist_; }  // bins over [-limit(), limit()]
  double limit() const { return limit_; }

  // The clipping range each method picks: minmax [min, max]; percentile the `percentile`-th and
  // (100 - percentile)-th values; mse and kl a symmetric threshold T (or [0, T] when min >= 0)
  // minimising the quantization error's mean square / the KL divergence of the quantized
  // distribution (TensorRT's entropy calibration) for `levels` levels.
  Range range(Method m, double percentile = 99.99, int levels = 256) const;

  // Everything the observer has seen, to store and restore it (the statistics cache): restore checks
  // that the pieces fit together and throws pd::Error when they do not.
  struct State {
    std::vector<int64_t> histogram;
    double limit = 0, min = 0, max = 0;
    int64_t count = 0, non_finite = 0;
  };
  State state() const { return {hist_, limit_, min_, max_, count_, non_finite_}; }
  static Observer restore(const State& s);

 private:
  void grow(double limit);
  double threshold_mse(int levels) const;
  double threshold_kl(int levels) const;
  std::vector<int64_t> magnitudes() const;  // the histogram folded onto |x|: bins/2 bins over [0, limit]

  int bins_;
  std::vector<int64_t> hist_;
  double limit_ = 0;
  double min_ = 0, max_ = 0;
  int64_t count_ = 0, non_finite_ = 0;
};

// Symmetric s8 scales of a weight, one per slice along `axis` (output channels): max |w| / 127; an
// all-zero slice gets scale 1.
std::vector<float> weight_scales(const Tensor& weight, int64_t axis = 0, int qmax = 127);

}  // namespace pd::quant
