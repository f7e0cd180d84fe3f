// Naive-loop references for var, std, prod, any and all over axis lists.
#include "naive_util.h"

namespace {
using namespace pd::naive;

// The members of each reduction group (by flat input index), and the output shape.
std::vector<std::vector<int64_t>> groups(const Ints& s, const pd::AttrMap& attrs, Ints& out_shape) {
  auto m = reduce_mask(get<Ints>(attrs, "axis", {}), static_cast<int64_t>(s.size()));
  out_shape = reduced_shape(s, m, get<bool>(attrs, "keepdim", false));
  std::vector<std::vector<int64_t>> g(static_cast<size_t>(numel_of(reduced_shape(s, m, true))));
  for (int64_t f = 0; f < numel_of(s); ++f) g[reduced_index(unravel(f, s), s, m)].push_back(f);
  return g;
}

std::vector<pd::Tensor> variance(const pd::BoxedInputs& in, const pd::AttrMap& attrs, bool take_sqrt) {
  Ints s = in[0][0].shape(), os;
  Reals v = vals(in[0][0]);
  const bool unbiased = get<bool>(attrs, "unbiased", true);
  Reals out;
  for (const auto& g : groups(s, attrs, os)) {
    double mean = 0, ss = 0;
    for (int64_t f : g) mean += v[f];
    mean /= static_cast<double>(g.size());
    for (int64_t f : g) ss += (v[f] - mean) * (v[f] - mean);
    const double var = ss / (static_cast<double>(g.size()) - (unbiased ? 1.0 : 0.0));
    out.push_back(take_sqrt ? std::sqrt(var) : var);
  }
  return {make(out, os)};
}

std::vector<pd::Tensor> logical(const pd::BoxedInputs& in, const pd::AttrMap& attrs, bool want_all) {
  Ints s = in[0][0].shape(), os;
  Reals v = vals(in[0][0]);
  std::vector<uint8_t> out;
  for (const auto& g : groups(s, attrs, os)) {
    bool acc = want_all;
    for (int64_t f : g) acc = want_all ? (acc && v[f] != 0) : (acc || v[f] != 0);
    out.push_back(acc);
  }
  pd::Tensor t = pd::Tensor::empty(os, pd::DType::boolean);
  for (size_t i = 0; i < out.size(); ++i) t.data<bool>()[i] = out[i] != 0;
  return {t};
}

}  // namespace

PD_NAIVE_REF(var) { return variance(in, attrs, false); }
PD_NAIVE_REF(std) { return variance(in, attrs, true); }
PD_NAIVE_REF(any) { return logical(in, attrs, false); }
PD_NAIVE_REF(all) { return logical(in, attrs, true); }

PD_NAIVE_REF(prod) {
  Ints s = in[0][0].shape(), os;
  Reals v = vals(in[0][0]);
  Reals out;
  for (const auto& g : groups(s, attrs, os)) {
    double p = 1;
    for (int64_t f : g) p *= v[f];
    out.push_back(p);
  }
  return {make(out, os)};
}
