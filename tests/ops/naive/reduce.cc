// Naive-loop references for the reductions: sum, mean, max, min, argmax, logsumexp.
#include "naive_util.h"

namespace {
using namespace pd::naive;

enum class Kind { kSum, kMean, kMax, kMin, kLse };

std::vector<pd::Tensor> reduce(const pd::BoxedInputs& in, const pd::AttrMap& attrs, Kind kind) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape();
  Reals v = vals(x);
  auto m = reduce_mask(get<Ints>(attrs, "axis", {}), static_cast<int64_t>(s.size()));
  bool keepdim = get<bool>(attrs, "keepdim", false);
  Ints ks = reduced_shape(s, m, true);
  int64_t nout = numel_of(ks);
  int64_t group = 1;
  for (size_t i = 0; i < s.size(); ++i)
    if (m[i]) group *= s[i];
  double init = kind == Kind::kMax   ? -std::numeric_limits<double>::infinity()
                : kind == Kind::kMin ? std::numeric_limits<double>::infinity()
                                     : 0.0;
  Reals acc(static_cast<size_t>(nout), init);
  if (kind == Kind::kLse) {
    Reals mx(static_cast<size_t>(nout), -std::numeric_limits<double>::infinity());
    for (int64_t f = 0; f < numel_of(s); ++f) {
      int64_t o = reduced_index(unravel(f, s), s, m);
      mx[o] = std::max(mx[o], v[f]);
    }
    for (int64_t f = 0; f < numel_of(s); ++f) {
      int64_t o = reduced_index(unravel(f, s), s, m);
      acc[o] += std::exp(v[f] - mx[o]);
    }
    for (int64_t o = 0; o < nout; ++o) acc[o] = std::isinf(mx[o]) ? mx[o] : mx[o] + std::log(acc[o]);
  } else {
    for (int64_t f = 0; f < numel_of(s); ++f) {
      int64_t o = reduced_index(unravel(f, s), s, m);
      if (kind == Kind::kMax) acc[o] = std::max(acc[o], v[f]);
      else if (kind == Kind::kMin) acc[o] = std::min(acc[o], v[f]);
      else acc[o] += v[f];
    }
    if (kind == Kind::kMean)
      for (auto& a : acc) a /= static_cast<double>(group);
  }
  return {make(acc, reduced_shape(s, m, keepdim))};
}
}  // namespace

PD_NAIVE_REF(sum) { return reduce(in, attrs, Kind::kSum); }
PD_NAIVE_REF(mean) { return reduce(in, attrs, Kind::kMean); }
PD_NAIVE_REF(max) { return reduce(in, attrs, Kind::kMax); }
PD_NAIVE_REF(min) { return reduce(in, attrs, Kind::kMin); }
PD_NAIVE_REF(logsumexp) { return reduce(in, attrs, Kind::kLse); }

PD_NAIVE_REF(argmax) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape();
  Reals v = vals(x);
  bool keepdim = get<bool>(attrs, "keepdim", false);
  int64_t nd = static_cast<int64_t>(s.size());
  if (nd == 0) return {pd::Tensor::from_vector<int64_t>({0}, {})};
  int64_t axis = norm_axis(get<int64_t>(attrs, "axis", -1), nd);
  std::vector<bool> m(static_cast<size_t>(nd), false);
  m[axis] = true;
  Ints ks = reduced_shape(s, m, true);
  int64_t nout = numel_of(ks);
  std::vector<int64_t> best(static_cast<size_t>(nout), -1);
  Reals bv(static_cast<size_t>(nout), 0.0);
  for (int64_t f = 0; f < numel_of(s); ++f) {
    Ints idx = unravel(f, s);
    int64_t o = reduced_index(idx, s, m);
    if (best[o] < 0 || v[f] > bv[o]) {  // row-major order visits the axis in increasing order
      best[o] = idx[axis];
      bv[o] = v[f];
    }
  }
  return {pd::Tensor::from_vector<int64_t>(best, reduced_shape(s, m, keepdim))};
}
