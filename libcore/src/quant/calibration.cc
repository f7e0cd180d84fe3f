// Observers and clipping-range methods. The histogram spans [-limit, limit] with an even bin count; it
// only ever grows by powers of two, so old bins merge exactly into new ones and the result does not
// depend on how the data was split into batches beyond its order.
#include "pd/quant/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "pd/core/error.h"
#include "pd/core/tensor_inl.h"

namespace pd::quant {

Method parse_method(const std::string& name) {
  for (Method m : {Method::minmax, Method::percentile, Method::kl, Method::mse})
    if (name == method_name(m)) return m;
  raise(ErrorCode::kInvalidArgument, "unknown calibration method '{}' (valid: minmax, percentile, kl, mse)", name);
}

const char* method_name(Method m) {
  switch (m) {
    case Method::minmax: return "minmax";
    case Method::percentile: return "percentile";
    case Method::kl: return "kl";
    case Method::mse: return "mse";
  }
  return "?";
}

QParams qparams_for(Range r, DType dtype) {
  const double lo = std::min(r.lo, 0.0), hi = std::max(r.hi, 0.0);
  if (dtype == DType::u8) {
    if (hi - lo <= 0) return {};
    const double scale = (hi - lo) / 255.0;
    const double zp = std::clamp(std::nearbyint(-lo / scale), 0.0, 255.0);
    return {static_cast<float>(scale), static_cast<int32_t>(zp)};
  }
  PD_CHECK(dtype == DType::i8, ErrorCode::kDType, "qparams_for: dtype must be u8 or i8, but received {}", dtype_name(dtype));
  const double amax = std::max(-lo, hi);
  if (amax <= 0) return {};
  return {static_cast<float>(amax / 127.0), 0};
}

Observer::Observer(int bins) : bins_(bins), hist_(static_cast<size_t>(bins), 0) {
  PD_CHECK(bins >= 2 && bins % 2 == 0, ErrorCode::kInvalidArgument, "Observer: bins must be even and >= 2, but received {}", bins);
}

Observer Observer::restore(const State& s) {
  int64_t total = 0;
  bool counts_ok = true;
  for (int64_t n : s.histogram) counts_ok &= n >= 0, total += n;
  PD_CHECK(counts_ok && s.histogram.size() >= 2 && s.histogram.size() % 2 == 0 && s.histogram.size() <= (1u << 20) &&
               std::isfinite(s.limit) && s.limit >= 0 && std::isfinite(s.min) && std::isfinite(s.max) && s.min <= s.max &&
               s.count >= 0 && s.non_finite >= 0 && total == s.count,
           ErrorCode::kInvalidArgument, "Observer: the stored statistics are inconsistent ({} bins, {} values counted, {} binned)",
           s.histogram.size(), s.count, total);
  Observer o(static_cast<int>(s.histogram.size()));
  o.hist_ = s.histogram;
  o.limit_ = s.limit, o.min_ = s.min, o.max_ = s.max, o.count_ = s.count, o.non_finite_ = s.non_finite;
  return o;
}

void Observer::grow(double needed) {
  if (limit_ == 0) {  // first non-zero value: zeros counted so far sit in the bins around 0
    limit_ = needed;
    return;
  }
  int factor = 1;
  while (limit_ * factor < needed) factor *= 2;
  if (factor == 1) return;
  // Old bin i starts at -L + i w, which in the range [-fL, fL] of f-times wider bins is new bin
  // ((f - 1) bins / 2 + i) / f, exactly (bins is even).
  std::vector<int64_t> merged(hist_.size(), 0);
  const int64_t offset = static_cast<int64_t>(bins_) * (factor - 1) / 2;  // old bins left of -L, in old widths
  for (int64_t i = 0; i < bins_; ++i) merged[static_cast<size_t>((offset + i) / factor)] += hist_[static_cast<size_t>(i)];
  hist_ = std::move(merged);
  limit_ *= factor;
}

void Observer::observe(const Tensor& t) {
  PD_CHECK(t.defined() && (t.dtype() == DType::f32 || t.dtype() == DType::f64), ErrorCode::kDType,
           "Observer: calibration values must be f32 or f64, but received {}", t.defined() ? dtype_name(t.dtype()) : "nothing");
  const std::vector<double> v = t.to_vector<double>();
  double amax = 0;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    amax = std::max(amax, std::fabs(x));
    if (count_ == 0) min_ = max_ = x;
    min_ = std::min(min_, x), max_ = std::max(max_, x);
    ++count_;
  }
  if (amax > limit_) grow(amax);
  const double width = 2 * limit_ / bins_;
  for (double x : v) {
    if (!std::isfinite(x)) {
      ++non_finite_;
      continue;
    }
    const int64_t k = width > 0 ? static_cast<int64_t>(std::floor((x + limit_) / width)) : bins_ / 2;
    ++hist_[static_cast<size_t>(std::clamp<int64_t>(k, 0, bins_ - 1))];
  }
}

std::vector<int64_t> Observer::magnitudes() const {
  const int64_t half = bins_ / 2;
  std::vector<int64_t> m(static_cast<size_t>(half));
  for (int64_t k = 0; k < half; ++k) m[static_cast<size_t>(k)] = hist_[static_cast<size_t>(half + k)] + hist_[static_cast<size_t>(half - 1 - k)];
  return m;
}

// The threshold T minimising the mean square error of clipping to T plus rounding on a grid of
// `levels` values spanning [-T, T] (or [0, T] for non-negative data).
double Observer::threshold_mse(int levels) const {
  const std::vector<int64_t> m = magnitudes();
  const double w = limit_ / static_cast<double>(m.size());
  const double span = min_ >= 0 ? 1.0 : 2.0;
  double best_t = limit_, best_err = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < m.size(); ++k) {
    const double t = static_cast<double>(k + 1) * w, step = span * t / (levels - 1);
    double err = 0;
    for (size_t j = 0; j < m.size(); ++j) {
      const double c = (static_cast<double>(j) + 0.5) * w;
      err += static_cast<double>(m[j]) * (c > t ? (c - t) * (c - t) : step * step / 12.0);
    }
    if (err < best_err) best_err = err, best_t = t;
  }
  return best_t;
}

// TensorRT's entropy calibration: the threshold whose clipped histogram, merged into `levels` / 2 (or
// `levels` for non-negative data) bins and spread back, is closest in KL divergence to the clipped
// histogram with its outliers folded into the last bin.
double Observer::threshold_kl(int levels) const {
  const std::vector<int64_t> m = magnitudes();
  const size_t nb = m.size(), q = std::min(nb, static_cast<size_t>(min_ >= 0 ? levels : levels / 2));
  double best_t = limit_, best_kl = std::numeric_limits<double>::infinity();
  for (size_t i = q; i <= nb; ++i) {
    std::vector<double> p(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(i));
    for (size_t j = i; j < nb; ++j) p[i - 1] += static_cast<double>(m[j]);  // outliers into the last bin
    std::vector<double> e(i, 0.0);
    for (size_t g = 0; g < q; ++g) {
      const size_t a = g * i / q, b = (g + 1) * i / q;
      double sum = 0;
      size_t nonzero = 0;
      // Q from the clipped histogram without the folded outliers (as TensorRT and MXNet do), so a
      // threshold that cuts off much of the mass shows as a spike P has and Q lacks.
      for (size_t j = a; j < b; ++j) sum += static_cast<double>(m[j]), nonzero += p[j] > 0;
      for (size_t j = a; j < b; ++j) e[j] = p[j] > 0 ? std::max(sum / static_cast<double>(nonzero), 1e-4) : 0;
    }
    double ps = 0, es = 0;
    for (size_t j = 0; j < i; ++j) ps += p[j], es += e[j];
    if (ps <= 0 || es <= 0) continue;
    double kl = 0;
    for (size_t j = 0; j < i; ++j)
      if (p[j] > 0) kl += p[j] / ps * std::log((p[j] / ps) / (e[j] / es));
    if (kl < best_kl) best_kl = kl, best_t = static_cast<double>(i) * limit_ / static_cast<double>(nb);
  }
  return best_t;
}

Range Observer::range(Method m, double percentile, int levels) const {
  if (count_ == 0) return {};
  switch (m) {
    case Method::minmax: return {min_, max_};
    case Method::percentile: {
      PD_CHECK(percentile > 50 && percentile <= 100, ErrorCode::kInvalidArgument,
               "percentile must be in (50, 100], but received {}", percentile);
      // Whole bins are dropped from each end while what they hold stays within the cut.
      const double width = 2 * limit_ / bins_, cut = static_cast<double>(count_) * (100 - percentile) / 100;
      auto bin = [&](int64_t k) { return static_cast<double>(hist_[static_cast<size_t>(k)]); };
      double below = 0, above = 0;
      int64_t lo = 0, hi = bins_ - 1;
      while (lo < bins_ - 1 && below + bin(lo) <= cut) below += bin(lo++);
      while (hi > 0 && above + bin(hi) <= cut) above += bin(hi--);
      return {std::max(min_, -limit_ + static_cast<double>(lo) * width),
              std::min(max_, -limit_ + static_cast<double>(hi + 1) * width)};
    }
    case Method::kl:
    case Method::mse: {
      const double t = m == Method::kl ? threshold_kl(levels) : threshold_mse(levels);
      return {min_ >= 0 ? 0.0 : std::max(min_, -t), std::min(max_, t)};
    }
  }
  return {min_, max_};
}

std::vector<float> weight_scales(const Tensor& weight, int64_t axis, int qmax) {
  PD_CHECK(weight.defined() && weight.dim() >= 1, ErrorCode::kShape, "weight_scales: the weight must be at least 1-D");
  const int64_t a = normalize_axis(axis, weight.dim(), "weight_scales");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < a; ++d) outer *= weight.shape()[d];
  for (int64_t d = a + 1; d < weight.dim(); ++d) inner *= weight.shape()[d];
  const int64_t channels = weight.shape()[a];
  const std::vector<double> v = weight.to_vector<double>();
  std::vector<double> amax(static_cast<size_t>(channels), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        const double x = v[static_cast<size_t>((o * channels + c) * inner + i)];
        if (std::isfinite(x)) amax[static_cast<size_t>(c)] = std::max(amax[static_cast<size_t>(c)], std::fabs(x));
      }
  std::vector<float> scales;
  for (double m : amax) scales.push_back(m > 0 ? static_cast<float>(m / qmax) : 1.0f);
  return scales;
}

}  // namespace pd::quant
