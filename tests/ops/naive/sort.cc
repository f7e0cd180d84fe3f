// Naive-loop references for sort, argsort and topk: a selection sort per line (stable: the first of
// equal candidates wins), NaN larger than every number.
#include "naive_util.h"

namespace {
using namespace pd::naive;

bool greater_nan(double a, double b) { return std::isnan(a) ? !std::isnan(b) : (!std::isnan(b) && a > b); }

// For each line along axis, the first `count` positions in sorted order; results laid out with extent
// `count` along axis.
void sorted_lines(const pd::Tensor& x, int64_t axis_attr, bool descending, int64_t count, Reals& values,
                  std::vector<int64_t>& indices, Ints& os) {
  Ints s = x.shape();
  Reals v = vals(x);
  Ints ls = s.empty() ? Ints{1} : s;
  const int64_t axis = s.empty() ? 0 : norm_axis(axis_attr, static_cast<int64_t>(s.size()));
  os = s;
  if (!os.empty()) os[axis] = count;
  Ints out_ls = ls;
  out_ls[axis] = count;
  values.assign(static_cast<size_t>(numel_of(out_ls)), 0.0);
  indices.assign(values.size(), 0);
  Ints line_shape = ls;
  line_shape[axis] = 1;
  for (int64_t f = 0; f < numel_of(line_shape); ++f) {
    const Ints base = unravel(f, line_shape);
    std::vector<bool> used(static_cast<size_t>(ls[axis]), false);
    for (int64_t k = 0; k < count; ++k) {
      int64_t best = -1;
      double bv = 0;
      for (int64_t q = 0; q < ls[axis]; ++q) {
        if (used[q]) continue;
        Ints p = base;
        p[axis] = q;
        const double c = v[ravel(p, ls)];
        if (best < 0 || (descending ? greater_nan(c, bv) : greater_nan(bv, c))) {
          best = q;
          bv = c;
        }
      }
      used[best] = true;
      Ints p = base;
      p[axis] = k;
      values[ravel(p, out_ls)] = bv;
      indices[ravel(p, out_ls)] = best;
    }
  }
}

int64_t extent(const pd::Tensor& x, int64_t axis) {
  return x.dim() == 0 ? 1 : x.shape()[norm_axis(axis, x.dim())];
}

}  // namespace

PD_NAIVE_REF(sort) {
  const int64_t axis = get<int64_t>(attrs, "axis", -1);
  Reals v;
  std::vector<int64_t> idx;
  Ints os;
  sorted_lines(in[0][0], axis, get<bool>(attrs, "descending", false), extent(in[0][0], axis), v, idx, os);
  return {make(v, os), pd::Tensor::from_vector<int64_t>(idx, os)};
}

PD_NAIVE_REF(argsort) {
  const int64_t axis = get<int64_t>(attrs, "axis", -1);
  Reals v;
  std::vector<int64_t> idx;
  Ints os;
  sorted_lines(in[0][0], axis, get<bool>(attrs, "descending", false), extent(in[0][0], axis), v, idx, os);
  return {pd::Tensor::from_vector<int64_t>(idx, os)};
}

PD_NAIVE_REF(topk) {
  Reals v;
  std::vector<int64_t> idx;
  Ints os;
  sorted_lines(in[0][0], get<int64_t>(attrs, "axis", -1), get<bool>(attrs, "largest", true), get<int64_t>(attrs, "k", 1), v, idx,
               os);
  return {make(v, os), pd::Tensor::from_vector<int64_t>(idx, os)};
}
