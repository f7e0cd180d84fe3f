// Naive-loop references for the indexing ops: gather, index_select, take_along_axis, scatter_add,
// one_hot, tril, triu. Indices arrive as integers; negative ones count from the end.
#include "naive_util.h"

namespace {
using namespace pd::naive;

int64_t wrap(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

// out[pre, j..., post] = x[pre, index[j...], post] over every multi-index of the output.
std::vector<pd::Tensor> take(const pd::BoxedInputs& in, const pd::AttrMap& attrs) {
  const pd::Tensor& x = in[0][0];
  Ints xs = x.shape(), is = in[1][0].shape();
  Reals v = vals(x);
  std::vector<int64_t> idx = in[1][0].to_vector<int64_t>();
  const int64_t nd = static_cast<int64_t>(xs.size());
  const int64_t axis = norm_axis(get<int64_t>(attrs, "axis", 0), nd);
  Ints os(xs.begin(), xs.begin() + axis);
  os.insert(os.end(), is.begin(), is.end());
  os.insert(os.end(), xs.begin() + axis + 1, xs.end());
  const int64_t ni = static_cast<int64_t>(is.size());
  Reals out(static_cast<size_t>(numel_of(os)));
  for (int64_t f = 0; f < numel_of(os); ++f) {
    Ints o = unravel(f, os);
    Ints j(o.begin() + axis, o.begin() + axis + ni);
    Ints src(o.begin(), o.begin() + axis);
    src.push_back(wrap(idx[ravel(j, is)], xs[axis]));
    src.insert(src.end(), o.begin() + axis + ni, o.end());
    out[f] = v[ravel(src, xs)];
  }
  return {make(out, os)};
}

int64_t axis_of(const pd::AttrMap& attrs, const Ints& s) {
  return s.empty() ? 0 : norm_axis(get<int64_t>(attrs, "axis", 0), static_cast<int64_t>(s.size()));
}

}  // namespace

PD_NAIVE_REF(gather) { return take(in, attrs); }
PD_NAIVE_REF(index_select) { return take(in, attrs); }

PD_NAIVE_REF(take_along_axis) {
  Ints xs = in[0][0].shape(), is = in[1][0].shape();
  Reals v = vals(in[0][0]);
  std::vector<int64_t> idx = in[1][0].to_vector<int64_t>();
  const int64_t axis = axis_of(attrs, xs);
  Reals out(static_cast<size_t>(numel_of(is)));
  for (int64_t f = 0; f < numel_of(is); ++f) {
    Ints p = unravel(f, is);
    if (!xs.empty()) p[axis] = wrap(idx[f], xs[axis]);
    out[f] = v[xs.empty() ? 0 : ravel(p, xs)];
  }
  return {make(out, is)};
}

PD_NAIVE_REF(scatter_add) {
  Ints xs = in[0][0].shape(), is = in[1][0].shape();
  Reals out = vals(in[0][0]), src = vals(in[2][0]);
  std::vector<int64_t> idx = in[1][0].to_vector<int64_t>();
  const int64_t axis = axis_of(attrs, xs);
  for (int64_t f = 0; f < numel_of(is); ++f) {
    Ints p = unravel(f, is);
    if (!xs.empty()) p[axis] = wrap(idx[f], xs[axis]);
    out[xs.empty() ? 0 : ravel(p, xs)] += src[f];
  }
  return {make(out, xs)};
}

PD_NAIVE_REF(one_hot) {
  std::vector<int64_t> cls = in[0][0].to_vector<int64_t>();
  const int64_t c = get<int64_t>(attrs, "num_classes", 1);
  Reals out(cls.size() * static_cast<size_t>(c), 0.0);
  for (size_t k = 0; k < cls.size(); ++k) out[k * static_cast<size_t>(c) + static_cast<size_t>(cls[k])] = 1.0;
  Ints os = in[0][0].shape();
  os.push_back(c);
  return {make(out, os)};
}

namespace {
std::vector<pd::Tensor> triangle(const pd::BoxedInputs& in, const pd::AttrMap& attrs, bool lower) {
  Ints s = in[0][0].shape();
  Reals v = vals(in[0][0]);
  const int64_t diagonal = get<int64_t>(attrs, "diagonal", 0);
  for (int64_t f = 0; f < numel_of(s); ++f) {
    Ints p = unravel(f, s);
    const int64_t d = p[s.size() - 1] - p[s.size() - 2];
    if (lower ? d > diagonal : d < diagonal) v[f] = 0.0;
  }
  return {make(v, s)};
}
}  // namespace

PD_NAIVE_REF(tril) { return triangle(in, attrs, true); }
PD_NAIVE_REF(triu) { return triangle(in, attrs, false); }
