// Naive-loop references for batch_norm, layer_norm, softmax, log_softmax.
#include "naive_util.h"

namespace {
using namespace pd::naive;

// softmax / log_softmax along one axis; 0-D input is a single-class row.
std::vector<pd::Tensor> softmax_like(const pd::BoxedInputs& in, const pd::AttrMap& attrs, bool log) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape();
  Reals v = vals(x);
  if (s.empty()) return {make({log ? 0.0 : 1.0}, {})};
  int64_t nd = static_cast<int64_t>(s.size());
  int64_t axis = norm_axis(get<int64_t>(attrs, "axis", -1), nd);
  int64_t outer = 1, inner = 1, n = s[axis];
  for (int64_t i = 0; i < axis; ++i) outer *= s[i];
  for (int64_t i = axis + 1; i < nd; ++i) inner *= s[i];
  Reals out(v.size(), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in_ = 0; in_ < inner; ++in_) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + in_; };
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < n; ++k) m = std::max(m, v[at(k)]);
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += std::exp(v[at(k)] - m);
      for (int64_t k = 0; k < n; ++k)
        out[at(k)] = log ? v[at(k)] - m - std::log(sum) : std::exp(v[at(k)] - m) / sum;
    }
  return {make(out, s)};
}
}  // namespace

PD_NAIVE_REF(softmax) { return softmax_like(in, attrs, false); }
PD_NAIVE_REF(log_softmax) { return softmax_like(in, attrs, true); }

namespace {
// batch_norm of x with the inputs from `first` on (scale, bias, running mean and variance), then
// residual added (if given) and relu'd (with fuse_relu or a residual).
std::vector<pd::Tensor> batch_norm_ref(const pd::Tensor& x, const pd::Tensor* residual, const pd::BoxedInputs& in, size_t first,
                                       const pd::AttrMap& attrs) {
  Ints s = x.shape();
  Reals xv = vals(x), sc = vals(in[first][0]), bi = vals(in[first + 1][0]);
  Reals rm = vals(in[first + 2][0]), rv = vals(in[first + 3][0]);
  const Reals res = residual ? vals(*residual) : Reals(xv.size(), 0.0);
  double eps = get<double>(attrs, "epsilon", 1e-5);
  bool training = get<bool>(attrs, "training", true), relu = residual || get<bool>(attrs, "fuse_relu", false);
  // Viewed as [N, C, inner]; channels_last data as [rows, C, 1].
  int64_t N = s[0], C = s[1], inner = 1;
  for (size_t i = 2; i < s.size(); ++i) inner *= s[i];
  if (get<bool>(attrs, "channels_last", false)) C = s.back(), N = C > 0 ? numel_of(s) / C : 0, inner = 1;
  Reals mean(static_cast<size_t>(C), 0.0), invstd(static_cast<size_t>(C), 0.0);
  for (int64_t c = 0; c < C; ++c) {
    if (training) {
      double sum = 0, cnt = static_cast<double>(N * inner);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < inner; ++k) sum += xv[(n * C + c) * inner + k];
      double mu = sum / cnt, var = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < inner; ++k) {
          double d = xv[(n * C + c) * inner + k] - mu;
          var += d * d;
        }
      var /= cnt;
      mean[c] = mu;
      invstd[c] = 1.0 / std::sqrt(var + eps);
    } else {
      mean[c] = rm[c];
      invstd[c] = 1.0 / std::sqrt(rv[c] + eps);
    }
  }
  Reals out(xv.size(), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < inner; ++k) {
        int64_t f = (n * C + c) * inner + k;
        out[f] = (xv[f] - mean[c]) * invstd[c] * sc[c] + bi[c] + res[f];
        if (relu && out[f] < 0) out[f] = 0;
      }
  return {make(out, s), make(mean, {C}), make(invstd, {C})};
}
}  // namespace

PD_NAIVE_REF(batch_norm) { return batch_norm_ref(in[0][0], nullptr, in, 1, attrs); }
PD_NAIVE_REF(batch_norm_add_relu) { return batch_norm_ref(in[0][0], &in[1][0], in, 2, attrs); }

PD_NAIVE_REF(layer_norm) {
  const pd::Tensor& x = in[0][0];
  Ints s = x.shape();
  Reals xv = vals(x), sc = vals(in[1][0]), bi = vals(in[2][0]);
  double eps = get<double>(attrs, "epsilon", 1e-5);
  int64_t nd = static_cast<int64_t>(s.size());
  int64_t b = norm_axis(get<int64_t>(attrs, "begin_norm_axis", -1), nd);
  Ints outer_shape(s.begin(), s.begin() + b);
  int64_t outer = numel_of(outer_shape), inner = numel_of(Ints(s.begin() + b, s.end()));
  Reals mean(static_cast<size_t>(outer), 0.0), invstd(static_cast<size_t>(outer), 0.0), out(xv.size(), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    double sum = 0;
    for (int64_t k = 0; k < inner; ++k) sum += xv[o * inner + k];
    double mu = sum / static_cast<double>(inner), var = 0;
    for (int64_t k = 0; k < inner; ++k) {
      double d = xv[o * inner + k] - mu;
      var += d * d;
    }
    var /= static_cast<double>(inner);
    double is = 1.0 / std::sqrt(var + eps);
    mean[o] = mu;
    invstd[o] = is;
    for (int64_t k = 0; k < inner; ++k) out[o * inner + k] = (xv[o * inner + k] - mu) * is * sc[k] + bi[k];
  }
  return {make(out, s), make(mean, outer_shape), make(invstd, outer_shape)};
}
